/**
 * Calls benchmark. Prints:
 *
 * 1. webhook → `call.offered` on the agent socket, at 100 calls/s with 50 agents, for the
 *    in-memory store and (when `redis-server` is installed) a private Redis: p50, p99, lost.
 *    Goals: p50 ≤ 3 ms, p99 ≤ 15 ms, 0 lost. Each call is a signed `chat.call.connect`
 *    posted to the real receiver (as the Service would); the caller "hangs up" (signed
 *    terminate) 100 ms after its offer arrived, so agents free up and keep taking calls.
 *    Latency = offer frame received by the agent's ws client − start of the webhook POST.
 *    The bridge runs as its own process (`server/main.ts`, `--single-threaded-gc` as `npm start`); load generator and agents here.
 * 2. agent answer → audio flowing, with the real emulator (werift ice-lite caller) and a
 *    Chromium peer per call: from sending `call.answer` to both the ack (accept returned
 *    200) and ICE+DTLS connected in the browser. Goal p50 ≤ 300 ms.
 *
 * 3. the same webhook → `call.offered` with `--hung` (default 50) recording downloads hanging
 *    at the Service (emulator `mediaDownloadHang`) for the whole run: call events have a
 *    lane of their own, so the figures should match (1). The media lane holds 8 downloads
 *    at the Service at a time; the rest wait their turn in it.
 *
 * 4. the same with `--flood` (default 1000) signed `chat.message.updated` events a second
 *    sent alongside by a process of their own: an offer must not wait behind message events.
 *    Goal p99 ≤ 20 ms.
 *
 * (1) runs each store with each history (`--history embedded,postgres`: PGlite in the run's
 * DATA_DIR, and a PostgreSQL database of the run's own, dropped after); (3) and (4) run on
 * the Redis store, production's shape. Each line also gives the bridge's CPU per call (the
 * whole process, and its event-loop thread alone) and its event-loop delay over the run (its
 * `/metrics`).
 *
 *   npx tsx bench/calls.ts [--seconds 10] [--rate 100] [--agents 50] [--answers 20] [--hung 50] [--flood 1000] [--history embedded,postgres] [--parallel-gc]
 *   npx tsx bench/calls.ts --only memory|redis|hung|answer|split   # split: in-process, where an offer's time goes (ingest vs engine) per store and history
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type WebSocket from 'ws';
import { hashPassword } from '../server/auth/users.ts';
import { startEmulator } from '../test/emulator/index.ts';
import { PASSWORD, agentClient, fakeConnect, postEvent, sleep, startBridge, type Bridge } from '../test/e2e/harness.ts';
import { PeerHost } from '../test/e2e/program-agent.ts';
import { createTestDatabase } from '../test/support/postgres.ts';
import { redisServerAvailable, startRedis } from '../test/support/redis.ts';
import { bucketShares, commandStats, flood, loopDelay, offerBuckets, printPerCall, rawAgent, spawnBridge, webhookPoster, type HistoryKind } from './calls-rig.ts';
import { figure } from './figures.ts';
import { pct } from './stats.ts';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    rate: { type: 'string', default: '100' },
    agents: { type: 'string', default: '50' },
    answers: { type: 'string', default: '20' },
    hung: { type: 'string', default: '50' },
    flood: { type: 'string', default: '1000' },
    history: { type: 'string', default: 'embedded,postgres' },
    only: { type: 'string' },
    'redis-stats': { type: 'boolean', default: false },
    'parallel-gc': { type: 'boolean', default: false },
  },
});
/**
 * The bridge runs as `npm start` runs it: `--single-threaded-gc` (V8's collector on the
 * event-loop thread only; README "Performance"). `--parallel-gc`: V8's helper threads, to compare.
 */
const GC_FLAGS = args['parallel-gc'] ? [] : ['--single-threaded-gc'];
const SECONDS = Number(args.seconds);
const RATE = Number(args.rate);
const AGENTS = Number(args.agents);
const ANSWERS = Number(args.answers);
const HUNG = Number(args.hung);
const FLOOD = Number(args.flood);
const HISTORIES = args.history.split(',').filter(Boolean) as HistoryKind[];
for (const h of HISTORIES) if (h !== 'embedded' && h !== 'postgres') throw new Error(`--history: embedded or postgres, not ${h}`);

const f = (ms: number) => (Number.isFinite(ms) ? `${ms.toFixed(2)} ms` : 'n/a');

interface Run {
  history: HistoryKind;
  /** Recording downloads hung at the Service for the whole run. */
  hung?: number;
  /** Message-status events a second sent alongside the calls. */
  flood?: number;
  /** Webhooks on the intake thread (`WEBHOOK_PORT`). */
  intake?: boolean;
}

async function offeredLatency(label: string, redisUrl: string | undefined, run: Run): Promise<{ p50: number; p99: number; lost: number; n: number; hanging: number; loop: string; inBridge: string; cpuPerCall: number; loopCpuPerCall: number; flooded?: string }> {
  const hung = run.hung ?? 0;
  const names = Array.from({ length: AGENTS }, (_, i) => `bench${String(i).padStart(2, '0')}`);
  const b = await spawnBridge(names, redisUrl, run.history, GC_FLAGS, run.intake === true);
  const sockets: WebSocket[] = [];
  // Kept-alive node:http posts: fetch's own CPU was the bridge's loss on 2 cores (calls-rig.ts).
  const poster = webhookPoster(b.hookUrl, b.secret);
  const post = poster.post;
  try {
    const sentAt = new Map<string, number>();
    const latency = new Map<string, number>();
    const onOffer = (wacid: string, t: number) => {
      const t0 = sentAt.get(wacid);
      if (t0 === undefined || latency.has(wacid)) return;
      latency.set(wacid, t - t0);
      // The caller hangs up a little later: the agent is free for the next call.
      setTimeout(() => void post('chat.call.terminate', 'callingTerminate', { wacid, phoneId: 'phone-1', status: 'FAILED', duration: 0 }).catch(() => -1), 100);
    };
    for (const n of names) sockets.push(await rawAgent(b.url, n, onOffer));
    // Warm-up (JIT, connections): not measured.
    for (let i = 0; i < 50; i++) {
      const w = `warm-${label}-${i}`;
      sentAt.set(w, performance.now());
      await post('chat.call.connect', 'callingConnect', fakeConnect(w));
    }
    await sleep(1_000);
    latency.clear();
    sentAt.clear();
    if (hung > 0) {
      // Recording downloads that hang at the Service for the whole run.
      b.emu.ctx.faults.mediaDownloadHang = 'headers';
      for (let i = 0; i < hung; i++) {
        await post('chat.call.recording.updated', 'callingMedia', { wacid: `hung-${label}-${i}`, phoneId: 'phone-1', type: 'recording', result: 'AVAILABLE', status: 'AVAILABLE', mediaAssetId: `cma_hung_${i}` });
      }
      const until = Date.now() + 10_000;
      while (b.emu.capture.hangingDownloads() < Math.min(hung, 8) && Date.now() < until) await sleep(20);
    }

    const total = Math.round(SECONDS * RATE);
    // The delay window starts here (a scrape resets it): start-up and warm-up are not the run's.
    await loopDelay(b.url);
    const buckets0 = await offerBuckets(b.url);
    const cpu0 = b.cpuMs();
    const loopCpu0 = b.loopCpuMs();
    const statsBefore = redisUrl && args['redis-stats'] ? await commandStats(redisUrl) : undefined;
    const flooding = run.flood ? flood(b.hookUrl, b.secret, run.flood, SECONDS + 1) : undefined;
    if (flooding) await sleep(500);
    const start = performance.now();
    const posts: Promise<number>[] = [];
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      const wacid = `bench-${label}-${i}`;
      sentAt.set(wacid, performance.now());
      posts.push(post('chat.call.connect', 'callingConnect', fakeConnect(wacid)).catch(() => -1));
    }
    const statuses = await Promise.all(posts);
    const flooded = await flooding;
    await sleep(2_000);
    const cpuPerCall = (b.cpuMs() - cpu0) / total;
    const loopCpuPerCall = (b.loopCpuMs() - loopCpu0) / total;
    const loop = await loopDelay(b.url);
    const inBridge = bucketShares(buckets0, await offerBuckets(b.url));
    if (statsBefore) printPerCall(statsBefore, await commandStats(redisUrl!), total);
    const xs = [...sentAt.keys()].map((w) => latency.get(w)).filter((x): x is number => x !== undefined);
    const non2xx = statuses.filter((s) => s < 200 || s > 299).length;
    if (non2xx) console.log(`  (${non2xx} webhook posts failed or were not answered 2xx: the Service would deliver them again)`);
    return {
      p50: pct(xs, 50),
      p99: pct(xs, 99),
      lost: total - xs.length,
      n: total,
      hanging: b.emu.capture.hangingDownloads(),
      loop,
      inBridge,
      cpuPerCall,
      loopCpuPerCall,
      ...(flooded ? { flooded: `${flooded.ok}/${flooded.sent} message events answered 2xx` } : {}),
    };
  } finally {
    for (const s of sockets) s.close();
    poster.close();
    await b.close();
  }
}

/**
 * The call engine's own share, in-process: from the webhook handler being called (event
 * accepted and read from the stream) to the `call.offered` frame handed to the socket.
 */
async function engineShare(redisUrl?: string, history?: HistoryKind): Promise<{ p50: number; p99: number; n: number; ingest50: number; ingest99: number }> {
  const names = Array.from({ length: AGENTS }, (_, i) => `eng${String(i).padStart(2, '0')}`);
  const pg = history === 'postgres' ? await createTestDatabase('sb_bench') : undefined;
  const b = await startBridge({
    agents: names,
    supervisors: [],
    ...(redisUrl ? { redisUrl } : {}),
    ...(history ? { history: true } : {}),
    env: { WRAP_UP_MS: 'off', ACCEPT_WINDOW_MS: '60000', ...(pg ? { DATABASE_URL: pg.url } : {}) },
  });
  const sockets: WebSocket[] = [];
  const started = new Map<string, number>();
  const posted = new Map<string, number>();
  const share: number[] = [];
  const engine = b.sb.engine;
  const handle = engine.handleEvent.bind(engine);
  engine.handleEvent = async (event, receivedAt) => {
    if (event.type === 'chat.call.connect') started.set(event.payload.wacid, performance.now());
    return handle(event, receivedAt);
  };
  const hub = b.sb.hub;
  const toUser = hub.toUser.bind(hub);
  hub.toUser = (n, m, x) => {
    if (m.type === 'call.offered' && started.has(m.wacid)) share.push(performance.now() - started.get(m.wacid)!);
    toUser(n, m, x);
  };
  try {
    const onOffer = (wacid: string) => {
      setTimeout(() => void postEvent(b, 'chat.call.terminate', 'callingTerminate', { wacid, phoneId: 'phone-1', status: 'FAILED', duration: 0 }).catch(() => -1), 100);
    };
    for (const n of names) sockets.push(await rawAgent(b.url, n, onOffer));
    const total = Math.round(SECONDS * RATE);
    const t0 = performance.now();
    for (let i = 0; i < total; i++) {
      const wait = t0 + (i * 1000) / RATE - performance.now();
      if (wait > 1) await sleep(wait);
      posted.set(`eng-${i}`, performance.now());
      void postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(`eng-${i}`)).catch(() => -1);
    }
    await sleep(2_000);
    const ingest = [...posted].filter(([w]) => started.has(w)).map(([w, t]) => started.get(w)! - t);
    return { p50: pct(share, 50), p99: pct(share, 99), n: share.length, ingest50: pct(ingest, 50), ingest99: pct(ingest, 99) };
  } finally {
    for (const s of sockets) s.close();
    await b.close();
    await pg?.drop();
  }
}

async function answerToAudio(): Promise<{ p50: number; p50ack: number; p50ice: number; n: number; failed: number }> {
  const b: Bridge = await startBridge({ agents: ['agent1'], supervisors: [], env: { WRAP_UP_MS: 'off' } });
  const host = await PeerHost.start(b.url);
  const agent = await agentClient(b.url, 'agent1');
  const total: number[] = [];
  const ackMs: number[] = [];
  const iceMs: number[] = [];
  let failed = 0;
  try {
    for (let i = 0; i < ANSWERS + 2; i++) {
      const r = await fetch(`${b.emu.controlUrl}/calls`, { method: 'POST', headers: { 'x-api-key': b.emu.apiKey, 'content-type': 'application/json' }, body: '{}' });
      const wacid = ((await r.json()) as { wacid: string }).wacid;
      const offer = await agent.next('call.offered', (m) => m.wacid === wacid, 10_000, agent.received.length - 1);
      const sdp = await host.answer(wacid, offer.sdp);
      const t0 = Date.now();
      const reply = await agent.request({ type: 'call.answer', wacid, sdp });
      const tAck = Date.now();
      if (reply.type !== 'ack') {
        failed++;
        continue;
      }
      await host.unmute(wacid);
      const tIce = await host.connectedAt(wacid).catch(() => undefined);
      if (tIce === undefined) {
        failed++;
      } else if (i >= 2) {
        // the first two are warm-up (first getUserMedia, werift load)
        ackMs.push(tAck - t0);
        iceMs.push(tIce - t0);
        total.push(Math.max(tAck, tIce) - t0);
      }
      await agent.request({ type: 'call.hangup', wacid });
      await agent.next('call.state', (m) => m.wacid === wacid && m.state === 'ended', 10_000);
      await host.closePeer(wacid);
    }
  } finally {
    agent.close();
    await host.close();
    await b.close();
  }
  return { p50: pct(total, 50), p50ack: pct(ackMs, 50), p50ice: pct(iceMs, 50), n: total.length, failed };
}

async function main(): Promise<void> {
  console.log(`webhook → call.offered: ${RATE} calls/s for ${SECONDS} s, ${AGENTS} agents, history ${HISTORIES.join(' and ')} (goals p50 ≤ 3 ms, p99 ≤ 15 ms, 0 lost; with ${HUNG} hung downloads or ${FLOOD} message events/s p99 ≤ 20 ms)`);
  const line = (what: string, r: Awaited<ReturnType<typeof offeredLatency>>) =>
    console.log(`  ${what}: p50 ${f(r.p50)}  p99 ${f(r.p99)}  lost ${r.lost}/${r.n}  (bridge CPU ${r.cpuPerCall.toFixed(2)} ms a call, ${r.loopCpuPerCall.toFixed(2)} of it on the event loop, ${r.loop}${r.flooded ? `; ${r.flooded}` : ''})\n    in the bridge (call created → offer pushed): ${r.inBridge}`);
  const stores: Array<'memory' | 'redis'> = args.only === 'memory' ? ['memory'] : args.only === 'redis' || args.only === 'hung' ? ['redis'] : args.only === 'answer' || args.only === 'split' ? [] : ['memory', 'redis'];
  const haveRedis = stores.includes('redis') && redisServerAvailable();
  if (stores.includes('redis') && !haveRedis) console.log('  redis store: skipped (redis-server not installed)');
  // Each run gets a Redis of its own: one shared by the runs handed the next bridge the last
  // one's leftovers (its stale events to claim, calls whose Service is gone, agents' stored
  // state), and the hung run then offered nothing at all on a loaded machine.
  const measure = async (label: string, store: 'memory' | 'redis', run: Run) => {
    const redis = store === 'redis' ? await startRedis() : undefined;
    try {
      return await offeredLatency(label, redis?.url, run);
    } finally {
      await redis?.close();
    }
  };
  for (const store of stores) {
    if (store === 'redis' && !haveRedis) continue;
    for (const history of HISTORIES) {
      const tag = `${store} store, ${history} history`;
      if (args.only !== 'hung') {
        const r = await measure(`${store}-${history}`, store, { history });
        line(tag, r);
        figure('calls', `offer p50, ${tag}`, r.p50, 'ms', { max: 3 });
        figure('calls', `offer p99, ${tag}`, r.p99, 'ms', { max: 15 });
        figure('calls', `lost, ${tag}`, r.lost, 'calls', { max: 0 });
      }
      // Production's shape (Redis) under the two loads that must not hold offers up.
      if (store !== 'redis') continue;
      if (HUNG > 0) {
        const h = await measure(`${store}-${history}-hung`, store, { history, hung: HUNG });
        line(`${tag}, ${HUNG} media downloads hung at the Service (${h.hanging} held there at the end)`, h);
        figure('calls', `offer p99, ${tag}, ${HUNG} hung downloads`, h.p99, 'ms', { max: 20 });
      }
      if (FLOOD > 0) {
        const fl = await measure(`${store}-${history}-flood`, store, { history, flood: FLOOD });
        line(`${tag}, ${FLOOD} message-status events/s alongside`, fl);
        figure('calls', `offer p99, ${tag}, ${FLOOD} message events/s`, fl.p99, 'ms', { max: 20 });
        // The same flood with webhooks on the intake thread (WEBHOOK_PORT): the node's loop keeps the calls.
        const ft = await measure(`${store}-${history}-flood-intake`, store, { history, flood: FLOOD, intake: true });
        line(`${tag}, ${FLOOD} message-status events/s alongside, webhooks on the intake thread (WEBHOOK_PORT)`, ft);
        figure('calls', `offer p99, ${tag}, ${FLOOD} message events/s, intake thread`, ft.p99, 'ms', { max: 20 });
      }
    }
  }
  if (args.only === undefined || args.only === 'memory' || args.only === 'split') {
    const eng = await engineShare();
    console.log(`  split, in-process (memory, no history): webhook POST → handler called p50 ${f(eng.ingest50)}  p99 ${f(eng.ingest99)}; call engine, handler → offer frame sent p50 ${f(eng.p50)}  p99 ${f(eng.p99)}  n=${eng.n}`);
  }
  if (args.only === 'split' && redisServerAvailable()) {
    const r = await startRedis();
    try {
      for (const h of HISTORIES) {
        const eng = await engineShare(r.url, h);
        console.log(`  split, in-process (redis, ${h} history): webhook POST → handler called p50 ${f(eng.ingest50)}  p99 ${f(eng.ingest99)}; call engine, handler → offer frame sent p50 ${f(eng.p50)}  p99 ${f(eng.p99)}  n=${eng.n}`);
      }
    } finally {
      await r.close();
    }
  }
  if (args.only === undefined || args.only === 'answer') {
    console.log(`agent answer → audio flowing (accept 200 + ICE/DTLS connected), ${ANSWERS} calls (goal p50 ≤ 300 ms)`);
    const a = await answerToAudio();
    console.log(`  p50 ${f(a.p50)}  (ack p50 ${f(a.p50ack)}, ICE+DTLS connected p50 ${f(a.p50ice)})  n=${a.n} failed=${a.failed}`);
    figure('calls', 'answer → audio p50', a.p50, 'ms', { max: 300 });
  }
  console.log(`machine load average: ${loadavg().map((x) => x.toFixed(2)).join(' ')} on ${cpus().length} CPUs (other test runs share this machine)`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
