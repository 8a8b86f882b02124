/**
 * End-to-end harness: the real bridge (foundation app + webhook workers + switchboard) on a
 * real port, wired to the real Service emulator over HTTP, with a MemoryStore or a private
 * redis-server. Plus small protocol clients (ws) for tests that drive agents as programs.
 */
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createAdaptorServer } from '@hono/node-server';
import { createServer as createHttpServer, type RequestListener } from 'node:http';
import WebSocket from 'ws';
import { parseServerMsg, type ClientMsg, type ServerMsg } from '../../shared/protocol.ts';
import { usersFromEntries, hashPassword } from '../../server/auth/users.ts';
import type { LoginLimits } from '../../server/auth/index.ts';
import { loadConfig, secretsOf } from '../../server/config/config.ts';
import { createLogger } from '../../server/log/logger.ts';
import { MemoryStore } from '../../server/store/memory.ts';
import { RedisStore } from '../../server/store/redis.ts';
import type { Store } from '../../server/store/store.ts';
import type { Policy } from '../../server/calls/lifecycle.ts';
import type { SocketLimits } from '../../server/gateway/index.ts';
import { createSwitchboard, withCalling, type Calling, type Switchboard } from '../../server/switchboard.ts';
import { guardUpgrades } from '../../server/gateway/index.ts';
import type { RateLimitOptions } from '../../server/service/ratelimit.ts';
import { openHistory } from '../../server/history/index.ts';
import { Metrics } from '../../server/ops/metrics.ts';
import { rmSync } from 'node:fs';
import { tempDataDir } from '../support/data-dir.ts';
import type { WebAsset } from '../../server/web/index.ts';
import type { CallView as EmuCall } from '../emulator/calls/index.ts';
import { signatureHeader, startEmulator, type Emulator, type EmulatorOptions } from '../emulator/index.ts';
import { until as waitUntil } from '../support/wait.ts';
import { uniquePrefix } from '../support/redis.ts';
import { closeServer } from '../support/close-server.ts';

type WithoutId<T> = T extends unknown ? Omit<T, 'id'> : never;

export const PASSWORD = 'correct horse battery';

export interface Bridge {
  url: string;
  /** The webhook signing secret the bridge verifies with. */
  secret: string;
  emu: Emulator;
  sb: Switchboard & Calling;
  store: Store;
  /** Password checks (scrypt runs) this node has made: counted around `Users.check`. */
  passwordChecks(): number;
  close(): Promise<void>;
}

export interface BridgeOptions {
  /**
   * Call history on (PGlite in a fresh DATA_DIR, its queue beside the store's keys). Off
   * by default: opening an embedded database costs a second and 300 MB per bridge.
   */
  history?: boolean;
  agents?: string[];
  supervisors?: string[];
  /** Users with role `admin` only (default none). */
  admins?: string[];
  emulator?: EmulatorOptions;
  env?: Record<string, string>;
  redisUrl?: string;
  /** Key prefix in Redis: two bridges with the same prefix are two nodes of one deployment. */
  storePrefix?: string;
  /** Reuse a running emulator (a second node of the same deployment); its webhooks stay where they are. */
  sharedEmulator?: { emu: Emulator; secret: string };
  assets?: Map<string, WebAsset>;
  policy?: Partial<Policy>;
  /** Anchor mode: the music file a room plays while its caller waits (a transfer). */
  musicFile?: string;
  heartbeatMs?: number;
  deadAfterMs?: number;
  socketLimits?: SocketLimits;
  reconnectGraceMs?: number;
  sweepMs?: number;
  demo?: boolean;
  /** Login session lifetime (default 12 h). */
  sessionTtlMs?: number;
  loginLimits?: Partial<LoginLimits>;
  /** Client-side Service limits (match `emulator.rateLimits` when a test shrinks the quota). */
  serviceLimits?: RateLimitOptions;
  /** Life of minted TURN credentials, seconds, below TURN_TTL_S's minimum (renewal tests). */
  iceTtlS?: number;
}

let passwordHash: Promise<string> | undefined;

export async function startBridge(o: BridgeOptions = {}): Promise<Bridge> {
  // The server is bound first (port 0) and handed to the adapter below: a port picked free
  // and bound later could be taken meanwhile by another test process (EADDRINUSE).
  const listening = createHttpServer();
  await new Promise<void>((resolve, reject) => {
    listening.once('error', reject);
    listening.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (listening.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${port}`;
  const secret = o.sharedEmulator?.secret ?? `whsec_${randomBytes(16).toString('hex')}`;
  const emu =
    o.sharedEmulator?.emu ??
    (await startEmulator({
      webhookSecret: secret,
      webhookEndpoints: [{ url: `${url}/webhooks/service`, secret }],
      ...o.emulator,
    }));
  // The bridge's own history and archive (~40 MB), removed when it closes: left behind, a
  // full run filled 8 GB of /tmp, and repeated runs the disk.
  const dataDir = tempDataDir();
  const config = loadConfig({
    PORT: String(port),
    SERVICE_BASE_URL: emu.baseUrl,
    SERVICE_API_KEY: emu.apiKey,
    SERVICE_WEBHOOK_SECRETS: secret,
    SESSION_SECRET: randomBytes(24).toString('base64url'),
    USERS_FILE: '/nonexistent/users.json', // users are handed in below
    PUBLIC_URL: url,
    LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? 'silent',
    DATA_DIR: dataDir,
    ...(o.redisUrl ? { REDIS_URL: o.redisUrl } : {}),
    ...o.env,
  });
  const log = createLogger({ level: config.logLevel, secrets: [config.serviceApiKey, config.sessionSecret, secret, ...secretsOf(config)] });
  const prefix = o.storePrefix ?? uniquePrefix('e2e');
  const store: Store = o.redisUrl
    ? new RedisStore({
        url: o.redisUrl,
        prefix,
        // env REDIS_SENTINELS: the primary is found through the sentinels, as createStore does.
        ...(config.redisSentinels ? { sentinels: config.redisSentinels, sentinelName: config.redisSentinelName } : {}),
      })
    : new MemoryStore();
  // One hash for every bridge, as every node of a deployment reads one users file (a session
  // carries its password hash's fingerprint: a node with another hash would refuse it).
  const hash = await (passwordHash ??= hashPassword(PASSWORD));
  const agents = o.agents ?? ['agent1', 'agent2'];
  const supervisors = o.supervisors ?? ['boss'];
  const users = await usersFromEntries([
    ...agents.map((name) => ({ name, roles: ['agent' as const], passwordHash: hash })),
    ...supervisors.map((name) => ({ name, roles: ['supervisor' as const, 'agent' as const], passwordHash: hash })),
    { name: 'ops', roles: ['ops' as const], passwordHash: hash },
    ...(o.admins ?? []).map((name) => ({ name, roles: ['admin' as const], passwordHash: hash })),
  ]);
  let passwordChecks = 0;
  const check = users.check.bind(users);
  users.check = (name, password) => {
    passwordChecks++;
    return check(name, password);
  };
  // One registry for the app and history, so /metrics shows the history writer's lag.
  const metrics = new Metrics();
  const sb = withCalling(await createSwitchboard({
    metrics,
    config: o.demo ? { ...config, demo: true } : config,
    store,
    log,
    users,
    // Pages only when a test asks for them (building them takes a while).
    assets: o.assets ?? new Map(),
    workers: { blockMs: 200 },
    ...(o.policy ? { policy: o.policy } : {}),
    ...(o.musicFile ? { musicFile: o.musicFile } : {}),
    ...(o.heartbeatMs !== undefined ? { heartbeatMs: o.heartbeatMs } : {}),
    ...(o.deadAfterMs !== undefined ? { deadAfterMs: o.deadAfterMs } : {}),
    ...(o.socketLimits ? { socketLimits: o.socketLimits } : {}),
    ...(o.reconnectGraceMs !== undefined ? { reconnectGraceMs: o.reconnectGraceMs } : {}),
    ...(o.sweepMs !== undefined ? { sweepMs: o.sweepMs } : {}),
    ...(o.sessionTtlMs !== undefined ? { sessionTtlMs: o.sessionTtlMs } : {}),
    ...(o.loginLimits ? { loginLimits: o.loginLimits } : {}),
    ...(o.serviceLimits ? { serviceLimits: o.serviceLimits } : {}),
    ...(o.iceTtlS !== undefined ? { iceTtlS: o.iceTtlS } : {}),
    history: o.history ? await openHistory(config, { log, prefix, metrics }) : null,
  }));
  await sb.start();
  const server = createAdaptorServer({
    fetch: sb.app.fetch,
    hostname: '127.0.0.1',
    ...(sb.wss ? { websocket: { server: sb.wss } } : {}),
    // The adapter's request listener on the server already bound above.
    createServer: ((_options: unknown, listener: RequestListener) => listening.on('request', listener)) as typeof createHttpServer,
  });
  guardUpgrades(server as import('node:http').Server, sb.auth.hostAllowed);
  let closed = false;
  return {
    url,
    secret,
    emu,
    sb,
    store,
    passwordChecks: () => passwordChecks,
    async close() {
      if (closed) return;
      closed = true;
      await sb.close();
      await closeServer(server);
      if (!o.sharedEmulator) await emu.close();
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * A request to the emulator with its API key: `path` under its control API
 * (`/calls`, ...) or a full URL (its `/v2` API). Throws on a non-2xx answer.
 */
export async function emulatorRequest<T = Record<string, unknown>>(emu: Pick<Emulator, 'controlUrl' | 'apiKey'>, method: string, path: string, body?: unknown): Promise<T> {
  const url = /^https?:/.test(path) ? path : `${emu.controlUrl}${path}`;
  const r = await fetch(url, {
    method,
    headers: { 'x-api-key': emu.apiKey, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const json: unknown = await r.json();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(json)}`);
  return json as T;
}

/** Deliver one signed event to the bridge's receiver, as the Service would. */
export async function postEvent(b: Pick<Bridge, 'url' | 'secret'>, type: string, payloadName: string, payload: Record<string, unknown>): Promise<number> {
  const body = JSON.stringify({ id: `evt_${randomBytes(8).toString('hex')}`, type, apiVersion: 'v2', createTime: new Date().toISOString(), [payloadName]: payload });
  const r = await fetch(`${b.url}/webhooks/service`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'service-signature': signatureHeader(b.secret, body, Math.floor(Date.now() / 1000)) },
    body,
  });
  await r.text();
  return r.status;
}

/** A user-initiated connect event with a syntactically complete offer (no real peer behind it). */
export function fakeConnect(wacid: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    wacid,
    phoneId: 'phone-1',
    from: '+15550100',
    to: '+15550200',
    direction: 'USER_INITIATED',
    dialTime: Date.now(),
    sdpType: 'offer',
    sdp: 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n',
    ...over,
  };
}

/** Log in; returns the Cookie header value. */
export async function login(url: string, name: string, password = PASSWORD): Promise<string> {
  const r = await fetch(`${url}/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: url },
    body: JSON.stringify({ name, password }),
  });
  if (r.status !== 200) throw new Error(`login ${name}: ${r.status} ${await r.text()}`);
  const set = r.headers.get('set-cookie') ?? '';
  return set.split(';')[0]!;
}

/** An agent client speaking the protocol over ws (a program, not a browser). */
export class ProtocolClient {
  readonly ws: WebSocket;
  readonly received: ServerMsg[] = [];
  private waiters: Array<{ pred: (m: ServerMsg) => boolean; resolve: (m: ServerMsg) => void }> = [];
  private seq = 0;
  readonly opened: Promise<void>;
  readonly closed: Promise<number>;

  /** `tab`: the tab id a page sends (`/ws?tab=`), the same on each of its reconnects. */
  constructor(url: string, cookie: string, opts: { origin?: string; respondToPings?: boolean; tab?: string } = {}) {
    const query = opts.tab ? `?tab=${encodeURIComponent(opts.tab)}` : '';
    this.ws = new WebSocket(url.replace(/^http/, 'ws') + '/ws' + query, { headers: { cookie }, origin: opts.origin ?? url, autoPong: opts.respondToPings ?? true });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
      this.ws.once('error', reject);
    });
    this.closed = new Promise((resolve) => this.ws.once('close', (code) => resolve(code)));
    this.ws.on('message', (data) => {
      const r = parseServerMsg(String(data));
      if (!r.ok) throw new Error(`server sent an invalid frame: ${r.message}`);
      this.received.push(r.msg);
      this.waiters = this.waiters.filter((w) => {
        if (!w.pred(r.msg)) return true;
        w.resolve(r.msg);
        return false;
      });
    });
  }

  /** The next message (already received ones count) matching `pred`. */
  next<T extends ServerMsg['type']>(type: T, pred: (m: Extract<ServerMsg, { type: T }>) => boolean = () => true, timeoutMs = 10_000, fromIndex = 0): Promise<Extract<ServerMsg, { type: T }>> {
    const match = (m: ServerMsg) => m.type === type && pred(m as Extract<ServerMsg, { type: T }>);
    const seen = this.received.slice(fromIndex).find(match);
    if (seen) return Promise.resolve(seen as Extract<ServerMsg, { type: T }>);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no ${type} within ${timeoutMs} ms; got ${this.received.map((m) => m.type).join(',')}`)), timeoutMs);
      this.waiters.push({
        pred: match,
        resolve: (m) => {
          clearTimeout(t);
          resolve(m as Extract<ServerMsg, { type: T }>);
        },
      });
    });
  }

  /** Send a request and wait for its ack or error. */
  async request(msg: WithoutId<Exclude<ClientMsg, { type: 'pong' }>>, timeoutMs = 15_000): Promise<Extract<ServerMsg, { type: 'ack' | 'error' }>> {
    const id = `r${++this.seq}`;
    const p = new Promise<Extract<ServerMsg, { type: 'ack' | 'error' }>>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no reply to ${msg.type} within ${timeoutMs} ms`)), timeoutMs);
      const pred = (m: ServerMsg) => (m.type === 'ack' || m.type === 'error') && (m as { id?: string }).id === id;
      this.waiters.push({
        pred,
        resolve: (m) => {
          clearTimeout(t);
          resolve(m as Extract<ServerMsg, { type: 'ack' | 'error' }>);
        },
      });
    });
    this.ws.send(JSON.stringify({ ...msg, id }));
    return p;
  }

  close(): void {
    this.ws.close();
  }
}

export async function agentClient(url: string, name: string, opts: { available?: boolean; tab?: string } = {}): Promise<ProtocolClient> {
  const c = new ProtocolClient(url, await login(url, name), opts.tab ? { tab: opts.tab } : {});
  await c.opened;
  await c.next('welcome');
  if (opts.available ?? true) {
    const r = await c.request({ type: 'presence.set', status: 'available' });
    if (r.type !== 'ack') throw new Error(`presence.set refused: ${r.message}`);
  }
  return c;
}

export { sleep, until } from '../support/wait.ts';

/** The emulator's record of one call (its control API, `GET /calls/:wacid`). */
export async function emulatorCall(emu: Pick<Emulator, 'controlUrl' | 'apiKey'>, wacid: string): Promise<EmuCall> {
  return emulatorRequest<EmuCall>(emu, 'GET', `/calls/${encodeURIComponent(wacid)}`);
}

/**
 * The caller's listening window, opened as soon as the caller has its peer (the emulator says
 * 409 before): what it heard since is kept (pitches rounded to 50 Hz), so a short sound is not
 * missed by a poll that came late on a loaded machine. `callerPitches` reads it.
 */
export async function listenCaller(emu: Pick<Emulator, 'controlUrl' | 'apiKey'>, wacid: string, timeoutMs = 20_000): Promise<void> {
  await waitUntil('the caller has audio', async () => {
    const r = await fetch(`${emu.controlUrl}/calls/${encodeURIComponent(wacid)}/window`, { method: 'POST', headers: { 'x-api-key': emu.apiKey } });
    await r.text();
    return r.ok;
  }, timeoutMs);
}
export const callerPitches = async (emu: Pick<Emulator, 'controlUrl' | 'apiKey'>, wacid: string): Promise<number[]> => (await emulatorRequest(emu, 'GET', `/calls/${encodeURIComponent(wacid)}/window`)).pitches as number[];
/** Whether one of `pitches` is within 50 Hz of `hz`. */
export const nearHz = (pitches: number[], hz: number) => pitches.some((p) => Math.abs(p - hz) <= 50);

/** What an anchor-mode e2e file starts (each part optional: a failed start leaves some unset). */
export interface AnchorParts {
  clients?: ProtocolClient[];
  browser?: { close(): Promise<unknown> } | undefined;
  bridge?: Bridge | undefined;
  control?: { close(): void } | undefined;
  janus?: { close(): Promise<unknown> } | undefined;
  ns?: { close(): Promise<unknown> } | undefined;
  dir?: string | undefined;
}

/** Closes an anchor-mode file's parts in order: clients, the browser, the bridge, Janus, the namespace, the temp folder. */
export async function closeAnchorParts(p: AnchorParts): Promise<void> {
  for (const c of p.clients?.splice(0) ?? []) c.close();
  await p.browser?.close();
  await p.bridge?.close();
  p.control?.close();
  await p.janus?.close();
  await p.ns?.close();
  if (p.dir) rmSync(p.dir, { recursive: true, force: true });
}
