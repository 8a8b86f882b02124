/**
 * The calls bench's rig (bench/calls.ts): the bridge as its own process, bare agent sockets,
 * a flood of message events from another process, and what the bridge and Redis report.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Agent as HttpAgent, request as httpRequest } from 'node:http';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import WebSocket from 'ws';
import { hashPassword } from '../server/auth/users.ts';
import { signatureHeader, startEmulator, type Emulator } from '../test/emulator/index.ts';
import { PASSWORD, login } from '../test/e2e/harness.ts';
import { createTestDatabase } from '../test/support/postgres.ts';
import { freePort } from '../test/support/redis.ts';
import { processCpuMs } from './stats.ts';

/** Where the bridge keeps history: PGlite in its DATA_DIR, or a PostgreSQL database of the run's own. */
export type HistoryKind = 'embedded' | 'postgres';

/** Bridges still running, killed if this process exits first. */
const liveBridges = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of liveBridges) c.kill('SIGKILL');
});

/** The bridge as its own process (`server/main.ts`), so the load generator and the 50 agent sockets don't share its event loop. */
export async function spawnBridge(
  agents: string[],
  redisUrl: string | undefined,
  history: HistoryKind,
  gcFlags: readonly string[],
  /** `WEBHOOK_PORT`: webhooks to the intake thread's own port (server/webhooks/intake.ts). */
  intake = false,
): Promise<{ url: string; hookUrl: string; secret: string; emu: Emulator; dir: string; cpuMs(): number; loopCpuMs(): number; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-calls-'));
  // PostgreSQL: a database of this run only (dropped at the end); embedded: PGlite in DATA_DIR.
  const pg = history === 'postgres' ? await createTestDatabase('sb_bench') : undefined;
  const hash = await hashPassword(PASSWORD);
  writeFileSync(join(dir, 'users.json'), JSON.stringify({ users: agents.map((name) => ({ name, roles: ['agent'], passwordHash: hash })) }));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const hookPort = intake ? await freePort() : undefined;
  const secret = `whsec_${randomBytes(16).toString('hex')}`;
  const emu = await startEmulator({ webhookSecret: secret, webhookEndpoints: [] });
  // BENCH_BRIDGE_NODE_ARGS: extra node flags for the bridge (e.g. --cpu-prof).
  const extra = (process.env.BENCH_BRIDGE_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...gcFlags, ...extra, '--import', 'tsx', 'server/main.ts'], {
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
      WRAP_UP_MS: 'off',
      ACCEPT_WINDOW_MS: '60000',
      // History (PGlite) and archive of this run only: a shared ./data grew run after run, and
      // each repeat caller's open call-back task (its misses) with it.
      DATA_DIR: dir,
      LOG_LEVEL: 'warn',
      ...(redisUrl ? { REDIS_URL: redisUrl } : { REDIS_URL: '' }),
      DATABASE_URL: pg?.url ?? '',
      WEBHOOK_PORT: hookPort === undefined ? '' : String(hookPort),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // Never leave the bridge running if this process dies first (one exit listener for all of them).
  liveBridges.add(child);
  child.once('exit', () => liveBridges.delete(child));
  await new Promise<void>((resolve, reject) => {
    // 90 s: a start takes 3-4 s on a quiet machine, many times that on a shared one.
    const t = setTimeout(() => reject(new Error('bridge did not start in 90 s')), 90_000);
    child.stdout!.on('data', (d: Buffer) => {
      if (process.env.BENCH_BRIDGE_LOG) process.stderr.write(d);
      if (String(d).includes('listening on')) {
        clearTimeout(t);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`bridge exited ${code}`)));
  });
  return {
    url,
    // Where webhooks go (a base URL: `/webhooks/service` is added by the posters).
    hookUrl: hookPort === undefined ? url : `http://127.0.0.1:${hookPort}`,
    secret,
    emu,
    dir,
    cpuMs: () => processCpuMs(child.pid!),
    // The event-loop thread alone (its task id is the process id): what the hot path pays.
    loopCpuMs: () => processCpuMs(child.pid!, child.pid!),
    async close() {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      await emu.close();
      rmSync(dir, { recursive: true, force: true });
      await pg?.drop();
    },
  };
}

/** Redis's command counts (`INFO commandstats`). */
export async function commandStats(url: string): Promise<Map<string, number>> {
  const r = new Redis(url, { lazyConnect: true });
  await r.connect();
  const text = await r.info('commandstats');
  r.disconnect();
  return new Map([...text.matchAll(/^cmdstat_(\S+?):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
}

/** What one call cost Redis: commands per call over the measured part, by command. */
export function printPerCall(before: Map<string, number>, after: Map<string, number>, calls: number): void {
  const rows = [...after].map(([k, v]) => [k, (v - (before.get(k) ?? 0)) / calls] as const).filter(([, v]) => v >= 0.01).sort((a, b) => b[1] - a[1]);
  const sum = rows.reduce((a, [, v]) => a + v, 0);
  console.log(`    Redis commands per call: ${sum.toFixed(1)} (${rows.map(([k, v]) => `${k} ${v.toFixed(2)}`).join(', ')})`);
}

/** The bridge's event-loop delay since the previous scrape, as its `/metrics` shows it (`switchboard_event_loop_delay_seconds`). */
export async function loopDelay(url: string): Promise<string> {
  const text = await (await fetch(`${url}/metrics`)).text().catch(() => '');
  const q = (k: string) => new RegExp(`^switchboard_event_loop_delay_seconds\\{quantile="${k}"\\} (\\S+)$`, 'm').exec(text)?.[1];
  const ms = (v: string | undefined) => (v === undefined ? 'n/a' : `${(Number(v) * 1000).toFixed(1)} ms`);
  return `event-loop delay p50 ${ms(q('0.5'))} p99 ${ms(q('0.99'))} max ${ms(q('1'))}`;
}

/** The bridge's own offer-latency histogram (webhook's call created → offer pushed), cumulative counts by bucket bound in ms. */
export async function offerBuckets(url: string): Promise<Map<number, number>> {
  const text = await (await fetch(`${url}/metrics`)).text().catch(() => '');
  const out = new Map<number, number>();
  for (const m of text.matchAll(/^switchboard_offer_latency_seconds_bucket\{le="([^"]+)"\} (\S+)$/gm)) out.set(m[1] === '+Inf' ? Infinity : Number(m[1]) * 1000, Number(m[2]));
  return out;
}

/** "≤5 ms 97.0 %, ≤15 ms 99.5 %, …" of the offers between two scrapes of `offerBuckets`. */
export function bucketShares(before: Map<number, number>, after: Map<number, number>, bounds: readonly number[] = [2, 5, 15, 20, 50]): string {
  const total = (after.get(Infinity) ?? 0) - (before.get(Infinity) ?? 0);
  if (total <= 0) return 'no offers counted';
  return bounds.map((b) => `≤${b} ms ${((100 * ((after.get(b) ?? 0) - (before.get(b) ?? 0))) / total).toFixed(1)} %`).join(', ');
}

/** `rate` signed message-status events a second for `seconds`, from a process of their own. */
export function flood(url: string, secret: string, rate: number, seconds: number): Promise<{ sent: number; ok: number; failed: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/_flood.ts', JSON.stringify({ url, secret, rate, seconds, connections: 32 })], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += String(d)));
  return new Promise((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as { sent: number; ok: number; failed: number }) : reject(new Error(`flood exited ${code}`)))));
}

/** A bare agent socket: logs in, becomes available, and reports offers (no zod in the hot path). */
export async function rawAgent(url: string, name: string, onOffer: (wacid: string, t: number) => void): Promise<WebSocket> {
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

/**
 * Signed webhooks posted as the Service would, on kept-alive `node:http` connections. The
 * harness's `postEvent` (fetch, i.e. undici: streams, an AbortSignal and a body copy a
 * request) cost this process ~1.5 ms of CPU a post; on a 2-core machine that is CPU the
 * bridge under test did not get, and time before the request left counted in its latency.
 */
export function webhookPoster(url: string, secret: string, connections = 64): { post(type: string, payloadName: string, payload: Record<string, unknown>): Promise<number>; close(): void } {
  const agent = new HttpAgent({ keepAlive: true, maxSockets: connections });
  const target = new URL('/webhooks/service', url);
  let seq = 0;
  return {
    post(type, payloadName, payload) {
      const body = JSON.stringify({ id: `evt_${process.pid}_${seq++}_${randomBytes(4).toString('hex')}`, type, apiVersion: 'v2', createTime: new Date().toISOString(), [payloadName]: payload });
      return new Promise((resolve, reject) => {
        const req = httpRequest(target, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'service-signature': signatureHeader(secret, body, Math.floor(Date.now() / 1000)), 'content-length': Buffer.byteLength(body) } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end(body);
      });
    },
    close: () => agent.destroy(),
  };
}
