/**
 * werift ↔ werift connects through the whole answer path: the emulator's ice-lite
 * werift caller rings, a werift program agent (test/e2e/werift-agent.ts) answers over the
 * WebSocket, the bridge preAccepts/accepts, and the caller applies the answer. A connect
 * counts as good when both peers reach `connected` and each has received the other's RTP.
 * Prints the failures (with the reason) and the failure rate; goal 0.
 *
 * `--par` calls run at once (one agent each). `--lag ms` delays every DTLS handshake packet
 * the caller sends (test/support/dtls-lag.ts: a long or loaded path to the provider, its
 * answers come back after the agent's 500 ms retransmission timer, the case werift 0.24
 * breaks on without test/emulator/calls/werift-dtls.ts). The default run does both: no lag, then 700 ms.
 *
 *   npx tsx bench/werift-connect.ts [--runs 30] [--par 3] [--role server|client] [--lag 700]
 */
import { parseArgs } from 'node:util';
import { agentClient, emulatorCall, emulatorRequest, startBridge, until, type ProtocolClient } from '../test/e2e/harness.ts';
import { WeriftAgent } from '../test/e2e/werift-agent.ts';
import { lagCallerDtls } from '../test/support/dtls-lag.ts';
import { figure } from './figures.ts';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '30' },
    par: { type: 'string', default: '3' },
    role: { type: 'string', default: 'server' },
    lag: { type: 'string' },
  },
});
const runs = Number(values.runs);
const par = Number(values.par);
const role = values.role === 'client' ? 'client' : 'server';
const lags = values.lag !== undefined ? [Number(values.lag)] : [0, 700];

const names = Array.from({ length: par }, (_, i) => `agent${i + 1}`);
const b = await startBridge({ agents: names, supervisors: [], env: { WRAP_UP_MS: 'off' } });
const clients: ProtocolClient[] = [];
for (const n of names) clients.push(await agentClient(b.url, n));

/** One call: ring, answer with werift, wait for media both ways; returns the failure or undefined. */
async function connectOnce(agent: ProtocolClient): Promise<string | undefined> {
  const from = agent.received.length;
  const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', {})).wacid as string;
  let peer: WeriftAgent | undefined;
  try {
    const offer = await agent.next('call.offered', (m) => m.wacid === wacid, 10_000, from);
    peer = await WeriftAgent.answer(offer.sdp, { dtlsRole: role });
    const ack = await agent.request({ type: 'call.answer', wacid, sdp: peer.sdp });
    if (ack.type !== 'ack') return `answer refused: ${ack.message}`;
    peer.speak();
    await peer.connected(10_000);
    await until('media both ways', async () => peer!.stats().packetsReceived > 5 && ((await emulatorCall(b.emu, wacid)).media?.packetsReceived ?? 0) > 5, 5_000, 50);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  } finally {
    await agent.request({ type: 'call.hangup', wacid }).catch(() => undefined);
    await peer?.close();
    // The next call for this agent rings once it is free again.
    await agent.next('agent.state', (m) => m.status === 'available', 10_000, from).catch(() => undefined);
  }
}

let failed = 0;
for (const lag of lags) {
  lagCallerDtls(lag, role);
  const failures: string[] = [];
  const started = Date.now();
  let next = 0;
  await Promise.all(
    clients.map(async (c) => {
      while (next < runs) {
        const i = next++;
        const why = await connectOnce(c);
        if (why) {
          failures.push(why);
          process.stdout.write(`connect ${i}: FAILED (${why})\n`);
        }
      }
    }),
  );
  process.stdout.write(`werift-connect: agent DTLS ${role}, caller lag ${lag} ms, ${runs} connects, ${par} at a time: ${failures.length} failed, ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  figure('werift-connect', `failed connects (agent DTLS ${role}, lag ${lag} ms, ${runs} runs)`, (100 * failures.length) / runs, '%', { max: 0 });
  failed += failures.length;
}
for (const c of clients) c.close();
await b.close();
process.exit(failed === 0 ? 0 : 1);
