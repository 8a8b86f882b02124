/**
 * Calls benchmark (issue 5). Prints:
 *
 * 1. webhook → `call.offered` on the agent socket, at 100 calls/s with 50 agents, for the
 *    in-memory store and (when `redis-server` is installed) a private Redis: p50, p99, lost.
 *    Goals: p50 ≤ 3 ms, p99 ≤ 15 ms, 0 lost. Each call is a signed `chat.call.connect`
 *    posted to the real receiver (as the Service would); the caller "hangs up" (signed
 *    terminate) 100 ms after its offer arrived, so agents free up and keep taking calls.
 *    Latency = offer frame received by the agent's ws client − start of the webhook POST.
 *    The bridge runs as its own process (`server/main.ts`); load generator and agents here.
 * 2. agent answer → audio flowing, with the real emulator (werift ice-lite caller) and a
 *    Chromium peer per call: from sending `call.answer` to both the ack (accept returned
 *    200) and ICE+DTLS connected in the browser. Goal p50 ≤ 300 ms.
 *
 * 3. the same webhook → `call.offered` with `--hung` (default 50) recording downloads hanging
 *    at the Service (emulator `mediaDownloadHang`) for the whole run: call events have a
 *    lane of their own, so the figures should match (1). The media lane holds 8 downloads
 *    at the Service at a time; the rest wait their turn in it.
 *
 *   npx tsx bench/calls.ts [--seconds 10] [--rate 100] [--agents 50] [--answers 20] [--hung 50]
 *   npx tsx bench/calls.ts --only hung     # (1) and (3) on the Redis store only
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { hashPassword } from '../server/auth/users.ts';
import { startEmulator, type Emulator } from '../test/emulator/index.ts';
import { PASSWORD, agentClient, fakeConnect, login, postEvent, sleep, startBridge, type Bridge } from '../test/e2e/harness.ts';
import { PeerHost } from '../test/e2e/program-agent.ts';
import { freePort, redisServerAvailable, startRedis } from '../test/support/redis.ts';
import { figure } from './figures.ts';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    rate: { type: 'string', default: '100' },
    agents: { type: 'string', default: '50' },
    answers: { type: 'string', default: '20' },
    hung: { type: 'string', default: '50' },
    only: { type: 'string' },
  },
});
const SECONDS = Number(args.seconds);
const RATE = Number(args.rate);
const AGENTS = Number(args.agents);
const ANSWERS = Number(args.answers);
const HUNG = Number(args.hung);

const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};
const f = (ms: number) => (Number.isFinite(ms) ? `${ms.toFixed(2)} ms` : 'n/a');

/** The bridge as its own process (`server/main.ts`), so the load generator and the 50 agent sockets don't share its event loop. */
async function spawnBridge(agents: string[], redisUrl: string | undefined): Promise<{ url: string; secret: string; emu: Emulator; dir: string; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-calls-'));
  const hash = await hashPassword(PASSWORD);
  writeFileSync(join(dir, 'users.json'), JSON.stringify({ users: agents.map((name) => ({ name, roles: ['agent'], passwordHash: hash })) }));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const secret = `whsec_${randomBytes(16).toString('hex')}`;
  const emu = await startEmulator({ webhookSecret: secret, webhookEndpoints: [] });
  // BENCH_BRIDGE_NODE_ARGS: extra node flags for the bridge (e.g. --cpu-prof).
  const extra = (process.env.BENCH_BRIDGE_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...extra, '--import', 'tsx', 'server/main.ts'], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      SERVICE_BASE_URL: emu.baseUrl,
      SERVICE_API_KEY: emu.apiKey,
      SERVICE_WEBHOOK_SECRETS: secret,
      SESSION_SECRET: randomBytes(24).toString('base64url'),
      USERS_FILE: join(dir, 'users.json'),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      WRAP_UP_MS: '0',
      ACCEPT_WINDOW_MS: '60000',
      // History (PGlite) and archive of this run only: a shared ./data grew run after run, and
      // each repeat caller's open call-back task (its misses) with it.
      DATA_DIR: dir,
      LOG_LEVEL: 'warn',
      ...(redisUrl ? { REDIS_URL: redisUrl } : { REDIS_URL: '' }),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // Never leave the bridge running if this process dies first.
  const killChild = () => child.kill('SIGKILL');
  process.once('exit', killChild);
  await new Promise<void>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error('bridge did not start in 30 s')), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      if (String(d).includes('listening on')) {
        clearTimeout(t);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`bridge exited ${code}`)));
  });
  return {
    url,
    secret,
    emu,
    dir,
    async close() {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      await emu.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A bare agent socket: logs in, becomes available, and reports offers (no zod in the hot path). */
async function rawAgent(url: string, name: string, onOffer: (wacid: string, t: number) => void): Promise<WebSocket> {
  const cookie = await login(url, name);
  const ws = new WebSocket(url.replace(/^http/, 'ws') + '/ws', { headers: { cookie }, origin: url });
  await new Promise<void>((resolve, reject) => {
    ws.once('error', reject);
    ws.on('message', (data) => {
      const t = performance.now();
      const text = String(data);
      if (text.startsWith('{"type":"welcome"')) ws.send(JSON.stringify({ type: 'presence.set', id: 'p', status: 'available' }));
      else if (text.startsWith('{"type":"ack","id":"p"')) resolve();
      else if (text.startsWith('{"type":"call.offered"')) onOffer((JSON.parse(text) as { wacid: string }).wacid, t);
    });
  });
  return ws;
}

async function offeredLatency(label: string, redisUrl?: string, hung = 0): Promise<{ p50: number; p99: number; lost: number; n: number; hanging: number }> {
  const names = Array.from({ length: AGENTS }, (_, i) => `bench${String(i).padStart(2, '0')}`);
  const b = await spawnBridge(names, redisUrl);
  const sockets: WebSocket[] = [];
  try {
    const sentAt = new Map<string, number>();
    const latency = new Map<string, number>();
    const onOffer = (wacid: string, t: number) => {
      const t0 = sentAt.get(wacid);
      if (t0 === undefined || latency.has(wacid)) return;
      latency.set(wacid, t - t0);
      // The caller hangs up a little later: the agent is free for the next call.
      setTimeout(() => void postEvent(b, 'chat.call.terminate', 'callingTerminate', { wacid, phoneId: 'phone-1', status: 'FAILED', duration: 0 }).catch(() => -1), 100);
    };
    for (const n of names) sockets.push(await rawAgent(b.url, n, onOffer));
    // Warm-up (JIT, connections): not measured.
    for (let i = 0; i < 50; i++) {
      const w = `warm-${label}-${i}`;
      sentAt.set(w, performance.now());
      await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(w));
    }
    await sleep(1_000);
    latency.clear();
    sentAt.clear();
    if (hung > 0) {
      // Recording downloads that hang at the Service for the whole run.
      b.emu.ctx.faults.mediaDownloadHang = 'headers';
      for (let i = 0; i < hung; i++) {
        await postEvent(b, 'chat.call.recording.updated', 'callingMedia', { wacid: `hung-${label}-${i}`, phoneId: 'phone-1', type: 'recording', result: 'AVAILABLE', status: 'AVAILABLE', mediaAssetId: `cma_hung_${i}` });
      }
      const until = Date.now() + 10_000;
      while (b.emu.capture.hangingDownloads() < Math.min(hung, 8) && Date.now() < until) await sleep(20);
    }

    const total = Math.round(SECONDS * RATE);
    const start = performance.now();
    const posts: Promise<number>[] = [];
    for (let i = 0; i < total; i++) {
      const due = start + (i * 1000) / RATE;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      const wacid = `bench-${label}-${i}`;
      sentAt.set(wacid, performance.now());
      posts.push(postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(wacid)).catch(() => -1));
    }
    const statuses = await Promise.all(posts);
    await sleep(2_000);
    const xs = [...sentAt.keys()].map((w) => latency.get(w)).filter((x): x is number => x !== undefined);
    const non2xx = statuses.filter((s) => s < 200 || s > 299).length;
    if (non2xx) console.log(`  (${non2xx} webhook posts failed or were not answered 2xx: the Service would deliver them again)`);
    return { p50: pct(xs, 50), p99: pct(xs, 99), lost: total - xs.length, n: total, hanging: b.emu.capture.hangingDownloads() };
  } finally {
    for (const s of sockets) s.close();
    await b.close();
  }
}

/**
 * The call engine's own share, in-process: from the webhook handler being called (event
 * accepted and read from the stream) to the `call.offered` frame handed to the socket.
 */
async function engineShare(): Promise<{ p50: number; p99: number; n: number; ingest50: number; ingest99: number }> {
  const names = Array.from({ length: AGENTS }, (_, i) => `eng${String(i).padStart(2, '0')}`);
  const b = await startBridge({ agents: names, supervisors: [], env: { WRAP_UP_MS: '0', ACCEPT_WINDOW_MS: '60000' } });
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
  const hub = b.sb.hub as unknown as { toUser(n: string, m: { type: string; wacid?: string }, x?: string): void };
  const toUser = hub.toUser.bind(hub);
  hub.toUser = (n, m, x) => {
    if (m.type === 'call.offered' && m.wacid && started.has(m.wacid)) share.push(performance.now() - started.get(m.wacid)!);
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
  }
}

async function answerToAudio(): Promise<{ p50: number; p50ack: number; p50ice: number; n: number; failed: number }> {
  const b: Bridge = await startBridge({ agents: ['agent1'], supervisors: [] });
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
  console.log(`webhook → call.offered: ${RATE} calls/s for ${SECONDS} s, ${AGENTS} agents (goals p50 ≤ 3 ms, p99 ≤ 15 ms, 0 lost)`);
  if (args.only === 'hung') {
    if (!redisServerAvailable()) throw new Error('--only hung needs redis-server');
    const redis = await startRedis();
    try {
      const r = await offeredLatency('redis', redis.url);
      console.log(`  redis store:  p50 ${f(r.p50)}  p99 ${f(r.p99)}  lost ${r.lost}/${r.n}`);
      const h = await offeredLatency('redis-hung', redis.url, HUNG);
      console.log(`  redis store, ${HUNG} media downloads hung at the Service (${h.hanging} held there at the end): p50 ${f(h.p50)}  p99 ${f(h.p99)}  lost ${h.lost}/${h.n}`);
    } finally {
      await redis.close();
    }
    console.log(`machine load average: ${loadavg().map((x) => x.toFixed(2)).join(' ')} on ${cpus().length} CPUs (other test runs share this machine)`);
    return;
  }
  if (args.only !== 'redis' && args.only !== 'answer') {
    const mem = await offeredLatency('memory');
    console.log(`  memory store: p50 ${f(mem.p50)}  p99 ${f(mem.p99)}  lost ${mem.lost}/${mem.n}`);
    figure('calls', 'offer p50, memory store', mem.p50, 'ms', { max: 3 });
    figure('calls', 'offer p99, memory store', mem.p99, 'ms', { max: 15 });
    figure('calls', 'lost, memory store', mem.lost, 'calls', { max: 0 });
  }
  if (args.only === 'memory' || args.only === 'answer') {
    // skipped
  } else if (redisServerAvailable()) {
    const redis = await startRedis();
    try {
      const r = await offeredLatency('redis', redis.url);
      console.log(`  redis store:  p50 ${f(r.p50)}  p99 ${f(r.p99)}  lost ${r.lost}/${r.n}`);
      figure('calls', 'offer p50, redis store', r.p50, 'ms', { max: 3 });
      figure('calls', 'offer p99, redis store', r.p99, 'ms', { max: 15 });
      figure('calls', 'lost, redis store', r.lost, 'calls', { max: 0 });
      if (HUNG > 0) {
        const h = await offeredLatency('redis-hung', redis.url, HUNG);
        console.log(`  redis store, ${HUNG} media downloads hung at the Service (${h.hanging} held there at the end): p50 ${f(h.p50)}  p99 ${f(h.p99)}  lost ${h.lost}/${h.n}`);
      }
    } finally {
      await redis.close();
    }
  } else {
    console.log('  redis store: skipped (redis-server not installed)');
  }
  const eng = await engineShare();
  console.log(`  split, in-process (memory): webhook POST → handler called p50 ${f(eng.ingest50)}  p99 ${f(eng.ingest99)}; call engine, handler → offer frame sent p50 ${f(eng.p50)}  p99 ${f(eng.p99)}  n=${eng.n}`);
  if (args.only === 'memory' || args.only === 'redis') return;
  console.log(`agent answer → audio flowing (accept 200 + ICE/DTLS connected), ${ANSWERS} calls (goal p50 ≤ 300 ms)`);
  const a = await answerToAudio();
  console.log(`  p50 ${f(a.p50)}  (ack p50 ${f(a.p50ack)}, ICE+DTLS connected p50 ${f(a.p50ice)})  n=${a.n} failed=${a.failed}`);
  figure('calls', 'answer → audio p50', a.p50, 'ms', { max: 300 });
  console.log(`machine load average: ${loadavg().map((x) => x.toFixed(2)).join(' ')} on ${cpus().length} CPUs (other test runs share this machine)`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
