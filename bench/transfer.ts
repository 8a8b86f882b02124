/**
 * Transfers on the media anchor, measured from the caller's ear (the emulator's werift caller,
 * energy per frequency in 100 ms windows polled every 20 ms): the rig of the transfer e2e files
 * (test/e2e/transfer-rig.ts: a private Janus in a network namespace, the bridge in anchor mode,
 * werift program agents speaking the WebSocket protocol, each with its own tone).
 *
 * Prints, over `--runs` calls each:
 * - cold transfer: `call.transfer` sent → the caller hears the music (goal ≤ 500 ms: never
 *   silence while the call changes hands), p50/p95;
 * - cold transfer: the target's `call.answer` sent → the caller hears the target, p50/p95;
 * - warm transfer: `complete` sent → the caller hears the target (goal ≤ 300 ms), p50/p95.
 *
 *   npx tsx bench/transfer.ts [--runs 8]
 *
 * Needs root (the namespace) and Debian's `janus`.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { ProtocolClient } from '../test/e2e/harness.ts';
import { HEARD, startTransferRig, type AgentName, type RunningRig } from '../test/e2e/transfer-rig.ts';
import { figure } from './figures.ts';

const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '8' } } });
const RUNS = Number(args.runs);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`--runs must be a whole number of at least 1 (got ${args.runs})`);

const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** ms from `since` until the caller hears `who` (music or an agent). */
async function heard(rig: RunningRig, wacid: string, who: AgentName | 'music', since: number, timeoutMs = 10_000): Promise<number> {
  for (;;) {
    if ((await rig.callerHears(wacid, 100))[who] > HEARD) return performance.now() - since;
    if (performance.now() - since > timeoutMs) throw new Error(`${wacid}: the caller never heard ${who}`);
    await sleep(20);
  }
}

/** A request the bench needs acknowledged (anything else stops it, saying what came back). */
async function request(c: ProtocolClient, msg: Parameters<ProtocolClient['request']>[0]): Promise<void> {
  const r = await c.request(msg);
  if (r.type !== 'ack') throw new Error(`${msg.type}: ${JSON.stringify(r)}`);
}

const rig = await startTransferRig();
const cold = { music: [] as number[], target: [] as number[] };
const warm: number[] = [];
try {
  for (let i = 0; i < RUNS; i++) {
    // Cold: agent1 takes a call (alone: it rings agent1), hands it to agent2, who answers and hangs up.
    {
      const a1 = await rig.agent('agent1');
      const { wacid } = await rig.talking(a1, 'agent1');
      const a2 = await rig.agent('agent2');
      const t0 = performance.now();
      await request(a1, { type: 'call.transfer', wacid, mode: 'cold', to: { agent: 'agent2' } });
      cold.music.push(await heard(rig, wacid, 'music', t0));
      await a2.next('call.offered', (m) => m.wacid === wacid, 10_000);
      const t1 = performance.now();
      const answered = rig.answer(a2, 'agent2', wacid);
      cold.target.push(await heard(rig, wacid, 'agent2', t1));
      await answered;
      await request(a2, { type: 'call.hangup', wacid });
      await rig.release();
    }
    // Warm: agent1 consults agent2, then completes.
    {
      const a1 = await rig.agent('agent1');
      const { wacid } = await rig.talking(a1, 'agent1');
      const a2 = await rig.agent('agent2');
      await request(a1, { type: 'call.transfer', wacid, mode: 'warm', to: { agent: 'agent2' } });
      await a2.next('call.offered', (m) => m.wacid === wacid, 10_000);
      await rig.answer(a2, 'agent2', wacid);
      await a1.next('call.state', (m) => m.wacid === wacid && m.consult?.phase === 'talking', 10_000);
      const t0 = performance.now();
      await request(a1, { type: 'call.transfer', wacid, action: 'complete' });
      warm.push(await heard(rig, wacid, 'agent2', t0));
      await request(a2, { type: 'call.hangup', wacid });
      await rig.release();
    }
  }
} finally {
  await rig.close();
}
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
console.log(`transfers on the anchor: ${RUNS} cold and ${RUNS} warm, load ${load}`);
figure('transfer', 'cold: transfer sent → caller hears music, p50', q(cold.music, 0.5), 'ms', { max: 500 });
figure('transfer', 'cold: transfer sent → caller hears music, p95', q(cold.music, 0.95), 'ms', { max: 500 });
figure('transfer', "cold: target's answer → caller hears the target, p50", q(cold.target, 0.5), 'ms');
figure('transfer', "cold: target's answer → caller hears the target, p95", q(cold.target, 0.95), 'ms');
figure('transfer', 'warm: complete → caller hears the target, p50', q(warm, 0.5), 'ms', { max: 300 });
figure('transfer', 'warm: complete → caller hears the target, p95', q(warm, 0.95), 'ms', { max: 300 });
