/**
 * The calling half of the server, assembled: users and sessions, call engine, routing,
 * the WebSocket gateway and the pages. `main.ts` (and the end-to-end tests) build it with
 * `createSwitchboard(...)`, then:
 *
 * ```ts
 * const app = createApp({ ..., mount: [sb.mount] });
 * const workers = createWorkers({ ..., handlers: { ...sb.handlers } });
 * serve({ fetch: app.fetch, websocket: { server: sb.wss }, ... });
 * sb.start(); ... await sb.close();
 * ```
 */
import type { Hono } from 'hono';
import type { WebSocketServer } from 'ws';
import { secretsOf, type Config } from '../config/config.ts';
import type { Logger } from '../log/logger.ts';
import type { Store } from '../store/store.ts';
import type { StreamEntry } from '../store/store.ts';
import { createAuth, Sessions, demoUsers, loadUsersFile, type Auth, type LoginLimits, type Users } from '../auth/index.ts';
import { SESSION_TTL_MS } from '../auth/session.ts';
import { CallEngine, type CallSignalEvent, type ServiceCalls } from '../calls/engine.ts';
import type { HandlerRegistry } from '../webhooks/workers.ts';
import type { Policy } from '../calls/lifecycle.ts';
import { loadQueues } from '../calls/routing.ts';
import { createGateway, createWsServer, type Gateway } from '../gateway/index.ts';
import { Hub } from '../push/hub.ts';
import { createWebRoutes, type DemoCaller, type WebAsset } from './index.ts';
import { createArchive } from '../archive/index.ts';
import { createArchiveRoutes } from '../archive/routes.ts';
import { createDeadLetterRoutes } from '../ops/dead-letters.ts';
import { createPermissions, type Permissions, type PermissionMessages, type PermissionNumbers } from '../permissions/index.ts';
import type { Metrics } from '../ops/metrics.ts';
import type { Calls } from '../service/resources/calls.ts';

export interface SwitchboardOptions {
  config: Pick<
    Config,
    'archiveDir' | 'demo' | 'sessionSecret' | 'usersFile' | 'acceptWindowMs' | 'ringTimeoutMs' | 'wrapUpMs' | 'queuesFile' | 'redisUrl' | 'serviceApiKey' | 'webhookSecrets'
  > &
    Partial<Pick<Config, 'publicUrl' | 'host'>>;
  store: Store;
  log: Logger;
  calls: ServiceCalls;
  /**
   * Media download (the Service client's `calls`): with it, recording and transcription
   * events are archived under ARCHIVE_DIR and announced with `media.available`.
   */
  media?: Pick<Calls, 'downloadMedia'>;
  /**
   * Messages (the Service client's `messages`): with it, `POST /api/permissions/request`
   * sends call permission requests; without it that route answers 503.
   */
  messages?: PermissionMessages;
  /** Phone numbers (the Service client's `phoneNumbers`): `GET /api/numbers`; without it 503. */
  phoneNumbers?: PermissionNumbers;
  /** Pages and assets (`buildWebAgent()` from web-agent/build.ts); empty map: API only. */
  assets?: Map<string, WebAsset>;
  /** Demo mode: starts a simulated call for the page's button. */
  demo?: DemoCaller;
  /** The app's metrics registry (replays of dead letters are counted there). */
  metrics?: Metrics;
  /** Pre-built users (tests); default: USERS_FILE, or the demo users in demo mode. */
  users?: Users;
  /** Lifecycle timing beyond the config (tests shorten margins). */
  policy?: Partial<Policy>;
  heartbeatMs?: number;
  deadAfterMs?: number;
  reconnectGraceMs?: number;
  /** Period of the engine's sweep over stored calls (default 2 s). */
  sweepMs?: number;
  /** Login session lifetime (default 12 h; tests shorten it). */
  sessionTtlMs?: number;
  /** Login limits (default `LOGIN_LIMITS`). */
  loginLimits?: Partial<LoginLimits>;
  now?: () => number;
}

export interface Switchboard {
  auth: Auth;
  engine: CallEngine;
  hub: Hub;
  gateway: Gateway;
  /** Calling permissions (book, routes, reply handler, dial check). */
  permissions: Permissions;
  /** Pass to `serve({ websocket: { server } })`. */
  wss: WebSocketServer;
  routes: Hono;
  /** For `createApp({ mount: [sb.mount] })`. */
  mount(app: Hono<any>): void; // eslint-disable-line @typescript-eslint/no-explicit-any
  /** Webhook handlers by event type, for `createWorkers({ handlers })`. */
  handlers: HandlerRegistry;
  start(): Promise<void>;
  close(): Promise<void>;
}

/** The Service's phone id of one business number (E.164), from its phone number list. */
async function phoneIdOf(numbers: PermissionNumbers, phoneNumber: string): Promise<string | undefined> {
  for await (const n of numbers.iterate()) if (n.phoneNumber === phoneNumber && typeof n.id === 'string') return n.id;
  return undefined;
}

export async function createSwitchboard(o: SwitchboardOptions): Promise<Switchboard> {
  const { config, store, log } = o;
  const users = o.users ?? (config.usersFile ? await loadUsersFile(config.usersFile) : config.demo ? await demoUsers() : undefined);
  if (!users) throw new Error('USERS_FILE: is required outside demo mode');
  const now = o.now ?? Date.now;
  const auth = createAuth({
    users,
    sessions: new Sessions(store, config.sessionSecret, o.sessionTtlMs ?? SESSION_TTL_MS, now),
    store,
    origin: { publicUrl: config.publicUrl, bindHost: config.host },
    ...(o.loginLimits ? { loginLimits: o.loginLimits } : {}),
    log: log.child({ part: 'auth' }),
    demo: config.demo,
  });
  // With Redis other nodes may hold some agents' sockets: pushes then also go through pub/sub.
  const hub = new Hub(log.child({ part: 'hub' }), config.redisUrl ? store : undefined);
  const permissions = createPermissions({ store, hub, auth, log: log.child({ part: 'permissions' }), messages: o.messages, phoneNumbers: o.phoneNumbers, now });
  const engine = new CallEngine({
    store,
    calls: o.calls,
    hub,
    log: log.child({ part: 'calls' }),
    policy: { acceptWindowMs: config.acceptWindowMs, ringTimeoutMs: config.ringTimeoutMs, ...o.policy },
    wrapUpMs: config.wrapUpMs,
    queues: loadQueues(config.queuesFile),
    now,
    ...(config.redisUrl ? { shared: store } : {}),
    permissions,
    // Rarely needed (a dialed call the store could not take): looked up when it is.
    ...(o.phoneNumbers ? { phoneIdOf: (n: string) => phoneIdOf(o.phoneNumbers!, n) } : {}),
    ...(o.sweepMs !== undefined ? { sweepMs: o.sweepMs } : {}),
    ...(o.reconnectGraceMs !== undefined ? { reconnectGraceMs: o.reconnectGraceMs } : {}),
  });
  const gateway = createGateway({
    auth,
    engine,
    hub,
    log: log.child({ part: 'gateway' }),
    now,
    ...(o.heartbeatMs !== undefined ? { heartbeatMs: o.heartbeatMs } : {}),
    ...(o.deadAfterMs !== undefined ? { deadAfterMs: o.deadAfterMs } : {}),
  });
  const routes = createWebRoutes({
    auth,
    store,
    ws: gateway.routes,
    assets: o.assets ?? new Map(),
    log: log.child({ part: 'web' }),
    demo: o.demo,
  }) as unknown as Hono;
  const wss = createWsServer();
  const archive = o.media ? createArchive({ dir: config.archiveDir, calls: o.media, log: log.child({ part: 'archive' }), announce: { hub, store } }) : undefined;
  const archiveRoutes = createArchiveRoutes({ auth, dir: config.archiveDir });
  const deadLetterRoutes = createDeadLetterRoutes({
    auth,
    store,
    log: log.child({ part: 'ops' }),
    secrets: secretsOf(config),
    ...(o.metrics ? { metrics: o.metrics } : {}),
  });
  const onCallEvent = (event: CallSignalEvent, entry: StreamEntry) => engine.handleEvent(event, entry.receivedAt);
  let closed = false;
  return {
    auth,
    engine,
    hub,
    gateway,
    permissions,
    wss,
    routes,
    mount: (app) => {
      app.route('/', archiveRoutes);
      app.route('/', deadLetterRoutes);
      app.route('/', permissions.routes);
      app.route('/', routes);
    },
    handlers: {
      'chat.call.connect': onCallEvent,
      'chat.call.terminate': onCallEvent,
      'chat.call.status.updated': onCallEvent,
      // Call permission replies; other inbound messages are ignored there.
      'chat.inbound_message.received': permissions.onInboundMessage,
      ...archive?.handlers,
    },
    async start() {
      await hub.start();
      await gateway.start();
      engine.start();
    },
    async close() {
      if (closed) return;
      closed = true;
      engine.close();
      permissions.close();
      gateway.close();
      wss.close();
      await hub.close();
    },
  };
}
