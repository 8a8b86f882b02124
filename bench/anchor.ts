/**
 * The media anchor beside browser-direct media, in the same run: one bridge per mode (the
 * real server on loopback, the emulator's werift callers), werift program agents answering
 * through the WebSocket protocol (direct: the caller's offer; anchor: their own leg into the
 * call's Janus room), and a private Janus in a network namespace (test/support/janus.ts).
 *
 * Prints, per mode:
 * - answer → audio flowing: from sending `call.answer` to the caller first hearing the
 *   agent's tone (the emulator's energy at 730 Hz in 100 ms windows, polled every 20 ms), p50/p95;
 * - mouth to ear: the agent switches from silence to its tone; how long until the caller
 *   hears it (same polling), p50 — the anchor's figure minus direct's is what the room adds;
 * - queue audio (QUEUE_AUDIO_FILE with a tone stand-in of the greeting, 2.5 s at GREETING_HZ:
 *   test/support/tone-sounds.ts): from the caller's connect to the caller first hearing the
 *   greeting, and the music after it (nobody answers), p50/p95;
 * - anchor only: Janus CPU per concurrent two-party call (its /proc CPU time over 10 s with
 *   `--calls` calls talking, both legs sending) and memory per call (its RSS with them, less
 *   idle), and the calls per core that makes;
 * - transfers (bench/transfer.ts, run last as a process of its own with `--runs`: its rig is
 *   the transfer e2e files' — own namespace, Janus and program agents): cold transfer sent →
 *   the caller hears the music (goal ≤ 500 ms, the caller's silence while the call changes
 *   hands), the target's answer → the caller hears the target, and warm complete → the caller
 *   hears the target (goal ≤ 300 ms), p50/p95.
 *
 * - with `--ramp 10,20,40` (off by default: long): the largest number of concurrent two-party
 *   calls this machine held with clean audio — per step that many calls at once, both sides
 *   sending; clean when, over 5 s, every caller received at least 95 % of the mix's packets
 *   (50 a second) and heard the agent's tone in each second. The callers and agents (werift,
 *   in this process) share the machine with Janus: where they run out first, the figure is
 *   theirs, and the Janus CPU per call of each step says how far Janus itself was.
 *
 *   npx tsx bench/anchor.ts [--runs 8] [--calls 10] [--ramp 10,20,40]
 *
 * Needs root (the namespace) and Debian's `janus`.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { startJanus } from '../test/support/janus.ts';
import { createNetns } from '../test/support/netns.ts';
import { agentClient, emulatorRequest, startBridge, type Bridge, type ProtocolClient } from '../test/e2e/harness.ts';
import { AGENT_HZ, WeriftAgent } from '../test/e2e/werift-agent.ts';
import { figure } from './figures.ts';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GREETING_HZ, writeToneSounds } from '../test/support/tone-sounds.ts';
import { BED_HZ } from '../scripts/make-hold-music.ts';

const { values: args } = parseArgs({ options: { runs: { type: 'string', default: '8' }, calls: { type: 'string', default: '10' }, ramp: { type: 'string', default: '' } } });
const RUNS = Number(args.runs);
const CALLS = Number(args.calls);
const RAMP = args.ramp
  ? args.ramp.split(',').map((s) => {
      const n = Number(s);
      if (!Number.isInteger(n) || n < 1 || n > 500) throw new Error(`--ramp: ${JSON.stringify(s)} is not a number of calls from 1 to 500`);
      return n;
    })
  : [];
const HEARD = 0.05;

const q = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function firstHeard(b: Bridge, wacid: string, since: number, timeoutMs = 20_000, hz = AGENT_HZ, level = HEARD): Promise<number> {
  for (;;) {
    const r = await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(wacid)}/hears?hz=${hz}&ms=100`).catch(() => ({ levels: [0] })); // 409 until the caller has its peer
    if ((r.levels as number[])[0]! > level) return performance.now() - since;
    if (performance.now() - since > timeoutMs) throw new Error(`${wacid}: the caller never heard ${hz} Hz`);
    await sleep(20);
  }
}

interface Talking {
  wacid: string;
  agent: ProtocolClient;
  leg: WeriftAgent;
  /** answer sent → the caller hears the agent, ms */
  answerMs: number;
}

/** One call answered by whichever of `agents` it rings, in `mode`, the agent speaking from the ack on. */
async function call(b: Bridge, agents: ProtocolClient[], mode: 'direct' | 'anchor'): Promise<Talking> {
  const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', {})).wacid as string;
  const [agent, offered] = await Promise.any(agents.map((a) => a.next('call.offered', (m) => m.wacid === wacid, 15_000).then((o) => [a, o] as const)));
  const i = agent.received.length;
  if (mode === 'direct') {
    const leg = await WeriftAgent.answer(offered.sdp);
    const t0 = performance.now();
    const ack = await agent.request({ type: 'call.answer', wacid, sdp: leg.sdp }, 20_000);
    if (ack.type !== 'ack') throw new Error(`answer refused: ${JSON.stringify(ack)}`);
    leg.speak();
    return { wacid, agent, leg, answerMs: await firstHeard(b, wacid, t0) };
  }
  const t0 = performance.now();
  const answered = agent.request({ type: 'call.answer', wacid }, 20_000);
  const offer = await agent.next('call.legOffer', (m) => m.wacid === wacid, 10_000, i);
  const leg = await WeriftAgent.answer(offer.sdp, { network: 'machine' });
  await agent.request({ type: 'call.legAnswer', wacid, sdp: leg.sdp });
  const ack = await answered;
  if (ack.type !== 'ack') throw new Error(`answer refused: ${JSON.stringify(ack)}`);
  leg.speak();
  return { wacid, agent, leg, answerMs: await firstHeard(b, wacid, t0) };
}

/** Silence, then the tone at t0: how long until the caller hears it. */
async function mouthToEar(b: Bridge, c: Talking): Promise<number> {
  c.leg.peer.switchSource({ kind: 'silence' });
  const quiet = performance.now();
  for (;;) {
    const r = await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(c.wacid)}/hears?hz=${AGENT_HZ}&ms=100`);
    if ((r.levels as number[])[0]! < 0.01) break;
    if (performance.now() - quiet > 5_000) throw new Error('the caller kept hearing the agent after it went silent');
    await sleep(20);
  }
  await sleep(300);
  const t0 = performance.now();
  c.leg.resume();
  return firstHeard(b, c.wacid, t0);
}

async function hangup(b: Bridge, c: Talking): Promise<void> {
  await c.agent.request({ type: 'call.hangup', wacid: c.wacid }).catch(() => undefined);
  await c.leg.close();
  for (let t = 0; t < 50; t++) {
    const e = await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(c.wacid)}`);
    if (e.state === 'ended') return;
    await sleep(100);
  }
}

function cpuTicks(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return Number(f[11]) + Number(f[12]); // utime + stime (fields 14, 15)
}
const rssKb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);

/**
 * `--ramp`: per step, that many concurrent calls, both sides sending; the largest step whose
 * audio stayed clean (see the header) is printed, with Janus's CPU per call at each step.
 */
async function ramp(b: Bridge, a1: ProtocolClient, agents: string[]): Promise<void> {
  let held = 0;
  for (const n of RAMP) {
    const clients = [a1, ...(await Promise.all(agents.slice(1, n).map((name) => agentClient(b.url, name))))];
    const talking: Talking[] = [];
    let clean = true;
    let why = '';
    try {
      for (let i = 0; i < n; i++) talking.push(await call(b, clients, 'anchor'));
      await sleep(2_000);
      const packets = async () => Promise.all(talking.map(async (c) => ((await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(c.wacid)}`)).media as { packetsReceived?: number } | undefined)?.packetsReceived ?? 0));
      const p0 = await packets();
      const c0 = cpuTicks(janus.pid);
      const t0 = performance.now();
      for (let s = 0; s < 5; s++) {
        await sleep(1_000);
        const levels = await Promise.all(talking.map(async (c) => ((await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(c.wacid)}/hears?hz=${AGENT_HZ}&ms=1000`)).levels as number[])[0]!));
        const deaf = levels.filter((l) => !(l > HEARD)).length;
        if (deaf > 0 && clean) [clean, why] = [false, `${deaf} of ${n} callers did not hear their agent in second ${s + 1}`];
      }
      const secs = (performance.now() - t0) / 1000;
      const cpu = ((cpuTicks(janus.pid) - c0) / 100 / secs) * 100;
      const p1 = await packets();
      const short = p1.map((p, i) => p - p0[i]!).filter((got) => got < 0.95 * 50 * secs).length;
      if (short > 0 && clean) [clean, why] = [false, `${short} of ${n} callers received under 95 % of the mix's packets`];
      console.log(`  ramp: ${n} calls — ${clean ? 'clean' : `not clean (${why})`}; Janus ${cpu.toFixed(0)} % of a core, ${(cpu / n).toFixed(2)} % a call`);
    } catch (err) {
      clean = false;
      console.log(`  ramp: ${n} calls — not held (${(err as Error).message})`);
    }
    for (const c of talking) await hangup(b, c);
    for (const c of clients.slice(1)) c.close();
    if (!clean) break;
    held = n;
  }
  figure('anchor', `largest number of concurrent two-party calls held with clean audio (steps ${RAMP.join(', ')})`, held, 'calls');
}

const ns = await createNetns();
const janus = await startJanus(ns);
const results: Record<string, { answer: number[]; m2e: number[] }> = {};
try {
  for (const mode of ['direct', 'anchor'] as const) {
    const agents = Array.from({ length: mode === 'anchor' ? Math.max(CALLS, ...RAMP) : CALLS }, (_, i) => `agent${i + 1}`);
    const b = await startBridge({ agents, env: { WRAP_UP_MS: 'off', ...(mode === 'anchor' ? { MEDIA_MODE: 'anchor', JANUS_URLS: janus.url } : {}) } });
    const a1 = await agentClient(b.url, 'agent1');
    const r = (results[mode] = { answer: [] as number[], m2e: [] as number[] });
    for (let i = 0; i < RUNS; i++) {
      const c = await call(b, [a1], mode);
      r.answer.push(c.answerMs);
      r.m2e.push(await mouthToEar(b, c));
      await hangup(b, c);
    }
    figure('anchor', `${mode}: answer → audio flowing p50`, q(r.answer, 0.5), 'ms');
    figure('anchor', `${mode}: answer → audio flowing p95`, q(r.answer, 0.95), 'ms');
    figure('anchor', `${mode}: mouth to ear p50 (polled, 100 ms windows)`, q(r.m2e, 0.5), 'ms');
    if (mode === 'anchor') {
      figure('anchor', 'anchor − direct: answer → audio flowing p50', q(r.answer, 0.5) - q(results.direct!.answer, 0.5), 'ms', { max: 100 });
      figure('anchor', 'mouth to ear added by the anchor (p50 difference)', q(r.m2e, 0.5) - q(results.direct!.m2e, 0.5), 'ms', { max: 60 });
      // Concurrent two-party calls, both sides sending: Janus's CPU and memory per call.
      const rss0 = rssKb(janus.pid);
      const clients = [a1, ...(await Promise.all(agents.slice(1, CALLS).map((n) => agentClient(b.url, n))))];
      const talking: Talking[] = [];
      for (let i = 0; i < clients.length; i++) talking.push(await call(b, clients, mode));
      await sleep(2_000);
      const hz = 100; // USER_HZ
      const c0 = cpuTicks(janus.pid);
      const t0 = performance.now();
      await sleep(10_000);
      const cpu = (cpuTicks(janus.pid) - c0) / hz / ((performance.now() - t0) / 1000); // cores busy
      const perCall = (cpu * 100) / talking.length;
      figure('anchor', `Janus CPU per concurrent two-party call (${talking.length} calls)`, perCall, '% of a core');
      figure('anchor', 'two-party calls per core at that rate', 100 / perCall, 'calls', { min: 50 });
      figure('anchor', 'Janus memory per call', (rssKb(janus.pid) - rss0) / talking.length, 'KiB');
      for (const c of talking) await hangup(b, c);
      for (const c of clients.slice(1)) c.close();
      if (RAMP.length) await ramp(b, a1, agents);
    }
    a1.close();
    await b.close();
  }
  // Queue audio: the bridge answers the caller at once; greeting, then music, nobody answering.
  const dir = mkdtempSync(join(tmpdir(), 'sb-bench-queue-'));
  try {
    const file = join(dir, 'queue-audio.json');
    writeFileSync(file, JSON.stringify({ '*': { greetings: { en: writeToneSounds(dir).greeting } } }));
    const b = await startBridge({ agents: ['agent1'], env: { WRAP_UP_MS: 'off', MEDIA_MODE: 'anchor', JANUS_URLS: janus.url, QUEUE_AUDIO_FILE: file } });
    const greeting: number[] = [];
    const music: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const t0 = performance.now();
      const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', {})).wacid as string;
      greeting.push(await firstHeard(b, wacid, t0, 20_000, GREETING_HZ));
      music.push(await firstHeard(b, wacid, t0, 20_000, BED_HZ, 0.03)); // the bed plays at 0.12 under the melody
      await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/hangup`, {});
    }
    figure('anchor', 'queue audio: greeting within (caller connect → first heard) p50', q(greeting, 0.5), 'ms');
    figure('anchor', 'queue audio: greeting within p95', q(greeting, 0.95), 'ms');
    figure('anchor', 'queue audio: music within (caller connect → first heard, after the 2.5 s greeting) p50', q(music, 0.5), 'ms');
    figure('anchor', 'queue audio: music within p95', q(music, 0.95), 'ms');
    await b.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
} finally {
  await janus.close();
  await ns.close();
}
if (RAMP.length === 0) {
  // Transfers: their own rig, in a process of their own (its figures print there).
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/transfer.ts', '--runs', String(RUNS)], { stdio: 'inherit' });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) console.log(`bench/transfer.ts exited ${code}`);
}
process.exit(0);
