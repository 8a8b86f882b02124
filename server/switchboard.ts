/**
 * The one wiring function: `createSwitchboard(options)` builds every production part —
 * Service client (from the config unless one is given), users and sessions, push hub,
 * permissions, call engine, WebSocket gateway, archive, pages, dead-letter routes, the
 * HTTP app with all of them mounted, and the webhook workers with every handler — all
 * statically imported. `main.ts` serves what it returns (`app.fetch`, `wss`) and adds only
 * the demo emulator (the one lazy import) and signal handling; end-to-end tests call it
 * with their own users, timings and parts.
 *
 * Without a Service (demo mode when the emulator cannot be loaded) only the foundation is
 * built: webhook intake, health and metrics.
 */
import { Hono } from 'hono';
import type { WebSocketServer } from 'ws';
import { createAppWithMetrics, type App, type ReadinessCheck } from './app.ts';
import { join } from 'node:path';
import { createArchive } from './archive/index.ts';
import { createArchiveRoutes } from './archive/routes.ts';
import { createAuth, Sessions, demoUsers, loadUsersFile, type Auth, type AuthEnv, type LoginLimits, type Users } from './auth/index.ts';
import { createNumberScope } from './auth/scope.ts';
import { SESSION_TTL_MS } from './auth/session.ts';
import { recordUserChanges } from './auth/changes.ts';
import { CallEngine, type CallSignalEvent, type ServiceCalls } from './calls/engine.ts';
import type { CallBusEvents, VoicemailSettings } from './calls/apply.ts';
import type { Policy } from './calls/lifecycle.ts';
import { loadQueues } from './calls/routing.ts';
import { adminRoutes, openDirectory } from './admin/wire.ts';
import { secretsOf, type Config } from './config/config.ts';
import { createIceIssuer } from './ice/ice.ts';
import { createGateway, createWsServer, type Gateway, type SocketLimits } from './gateway/index.ts';
import type { Logger } from './log/logger.ts';
import { Bus } from './events/bus.ts';
import { factsOfMedia, factsOfTransition } from './history/recorder.ts';
import { openHistory, type History, type HistoryFact } from './history/index.ts';
import { createHistoryRoutes } from './history/routes.ts';
import { CallbackStore } from './callbacks/store.ts';
import { MessagingStore } from './messaging/store.ts';
import { createCustomerRoutes } from './customers/routes.ts';
import { createRetention } from './history/retention.ts';
import { createDeadLetterRoutes } from './webhooks/dead-letters.ts';
import { HttpUnavailable } from './ops/errors.ts';
import { foundationMetrics, Metrics } from './ops/metrics.ts';
import { createPermissions, type Permissions, type PermissionMessages, type PermissionNumbers } from './permissions/index.ts';
import { Hub } from './push/hub.ts';
import { createServiceClient } from './service/index.ts';
import type { RateLimiter, RateLimitOptions } from './service/ratelimit.ts';
import type { Calls } from './service/resources/calls.ts';
import type { ContactsResource } from './service/resources/contacts.ts';
import type { Wrapup } from './calls/engine.ts';
import type { Store, StreamEntry } from './store/store.ts';
import { RedisStore } from './store/redis.ts';
import { createWebRoutes, type DemoCaller, type WebAsset } from './web/index.ts';
import { loadPages } from './web/pages.ts';
import { wireMessaging } from './callbacks/wire.ts';
import type { MessagingClient } from './messaging/service.ts';
import { laneGroup, createWorkers, type HandlerRegistry, type Workers, type WorkersOptions } from './webhooks/workers.ts';
import { Monitors } from './monitor/index.ts';
import { wallboardFeature } from './wallboard/index.ts';
import { reportsFeature } from './reports/index.ts';
import { installFeatures } from './features/feature.ts';
import { createAudit, type AuditRow, type AuditService } from './audit/index.ts';
import { createLanguageRoutes, languageStore } from './language/index.ts';
import { RedisHistoryQueue } from './history/queue.ts';
import { MediaAnchor } from './anchor/anchor.ts';
import { CLOSED_GREETING_FILE, CLOSED_GREETING_MS, VOICEMAIL_PROMPT_FILE, VOICEMAIL_PROMPT_MS } from './anchor/sounds.ts';
import { saveVoicemail, VOICEMAIL_SPOOL } from './archive/voicemail.ts';
import { closedCheck } from './hours/index.ts';
import { queueAudioOf } from './config/queueAudio.ts';

/** The Service client parts the calling half uses (tests may hand in their own). */
export interface ServiceParts {
  calls: ServiceCalls;
  /** Media download: with it, recording and transcription events are archived and announced. */
  media?: Pick<Calls, 'downloadMedia'>;
  /** Messages: `POST /api/permissions/request` sends with it; without it that route answers 503. */
  messages?: PermissionMessages;
  /** Phone numbers: `GET /api/numbers`; without it 503. */
  phoneNumbers?: PermissionNumbers;
  /** Messaging and the callback queue; without it their routes answer 503. */
  messaging?: MessagingClient;
  /** Contacts: the customer panel's contact, and wrap-ups as contact notes (CONTACT_NOTES). */
  contacts?: Pick<ContactsResource, 'get' | 'addNote'>;
  /** The client's rate limiter: `/metrics` shows the management quota's use and signalling's reserved share. */
  limiter?: Pick<RateLimiter, 'usage' | 'signallingReserve'>;
}

export interface SwitchboardOptions {
  config: Config;
  store: Store;
  log: Logger;
  /** Default: a Service client built from the config (none without SERVICE_BASE_URL). */
  service?: ServiceParts;
  /** Pages and assets; default: `loadPages()` (the build's, or bundled from web-agent/ at start; an empty map: API only). */
  assets?: Map<string, WebAsset>;
  /** Demo mode: starts a simulated call for the page's button. */
  demo?: DemoCaller;
  /** The app's metrics registry. Default: a new one. */
  metrics?: Metrics;
  /** More `/readyz` checks (e.g. the Service is reachable). */
  readiness?: ReadinessCheck[];
  /** Set once shutdown begins: `/readyz` answers 503. */
  isShuttingDown?: () => boolean;
  /** Pre-built users (tests); default: USERS_FILE, or the demo users in demo mode. */
  users?: Users;
  /** Worker settings beyond the config (tests shorten reads and claims). */
  workers?: Partial<Omit<WorkersOptions, 'store' | 'handlers' | 'log' | 'metrics'>>;
  /** Replace the webhook handlers (tests of the workers and dead letters). */
  handlers?: HandlerRegistry;
  /** Lifecycle timing beyond the config (tests shorten margins). */
  policy?: Partial<Policy>;
  /** Anchor mode: the Ogg Opus file a room plays while its caller waits (hold, a transfer; Janus reads it). Default HOLD_MUSIC_FILE. */
  musicFile?: string;
  heartbeatMs?: number;
  deadAfterMs?: number;
  /** Life of minted TURN credentials, seconds, instead of TURN_TTL_S (tests make it short). */
  iceTtlS?: number;
  /** Per-socket bounds beyond the defaults (tests make them small). */
  socketLimits?: SocketLimits;
  reconnectGraceMs?: number;
  /** Period of the engine's sweep over stored calls (default 2 s). */
  sweepMs?: number;
  /** Login session lifetime (default 12 h; tests shorten it). */
  sessionTtlMs?: number;
  /** Login limits (default `LOGIN_LIMITS`). */
  loginLimits?: Partial<LoginLimits>;
  /**
   * Call history. Default: opened from the config (`DATABASE_URL`, else PGlite under
   * `DATA_DIR`) when there is a Service; `null`: none (tests that do not look at history).
   * One handed in is closed by `close()` too.
   */
  history?: History | null;
  now?: () => number;
  /** Wallboard push period (default 5 s; 0: only on call changes). */
  wallboardMs?: number;
  /** Client-side Service limits for the client built from the config (tests match an emulator's smaller quotas). */
  serviceLimits?: RateLimitOptions;
}

/** The calling half: present when there is a Service. */
export interface Calling {
  auth: Auth;
  engine: CallEngine;
  hub: Hub;
  gateway: Gateway;
  /** Calling permissions (book, routes, reply handler, dial check). */
  permissions: Permissions;
  /** Mount the calling half's routes on an app (done once on `app`; tests list routes with it). */
  mount(app: App | Hono): void;
  /** The system of record (undefined when built without one). */
  history: History | undefined;
  /** The audit trail (its rows are dropped without history). */
  audit: AuditService;
  /** MEDIA_MODE=anchor: the media anchor (Janus rooms); undefined in direct mode. */
  anchor?: MediaAnchor | undefined;
}

export interface Switchboard extends Partial<Calling> {
  app: App;
  metrics: Metrics;
  /** Pass to `serve({ websocket: { server } })` (undefined without a Service). */
  wss: WebSocketServer | undefined;
  workers: Workers;
  /** Start the workers, the push channel, the gateway and the engine. */
  start(): Promise<void>;
  /** Stop everything but the HTTP server (that is the caller's): safe to call twice. */
  close(): Promise<void>;
}

/** The Service's phone id of one business number (E.164), from its phone number list. */
async function phoneIdOf(numbers: PermissionNumbers, phoneNumber: string): Promise<string | undefined> {
  for await (const n of numbers.iterate()) if (n.phoneNumber === phoneNumber && typeof n.id === 'string') return n.id;
  return undefined;
}

export async function createSwitchboard(o: SwitchboardOptions): Promise<Switchboard> {
  const { config, store, log } = o;
  const metrics = o.metrics ?? new Metrics();
  const service: ServiceParts | undefined =
    o.service ??
    (config.serviceBaseUrl
      ? serviceParts(createServiceClient({ baseUrl: config.serviceBaseUrl, apiKey: config.serviceApiKey, logger: log.child({ part: 'service' }), ...(o.serviceLimits ? { limits: o.serviceLimits } : {}) }))
      : undefined);
  if (service?.limiter) quotaMetrics(metrics, service.limiter);
  const history = o.history === null || !service ? undefined : (o.history ?? (await openHistory(config, { log: log.child({ part: 'history' }), metrics, ...(store instanceof RedisStore ? { send: store.redis } : {}) })));
  // Daily: rows past retention and their files together; media lost before download reported.
  const retention = history ? createRetention({ history, archiveDir: config.archiveDir, log: log.child({ part: 'retention' }), metrics }) : undefined;
  // the audit trail, in the history database (rows dropped without one).
  // With Redis its rows go through a stream of their own (`<prefix>audit-history`), as history's facts do: a row survives its node.
  const auditQueue =
    service && history && config.redisUrl
      ? new RedisHistoryQueue<AuditRow>({
          url: config.redisUrl,
          ...(config.redisSentinels ? { sentinels: config.redisSentinels, sentinelName: config.redisSentinelName } : {}),
          prefix: store.prefix,
          name: 'audit-history',
          ...(store instanceof RedisStore ? { send: store.redis } : {}),
          onError: (err) => log.error({ err: { message: err.message } }, 'audit queue error'),
        })
      : undefined;
  const audit = service
    ? createAudit({ db: history?.store.db, retentionDays: config.auditRetentionDays, log: log.child({ part: 'audit' }), metrics, ...(o.now ? { now: o.now } : {}), ...(auditQueue ? { queue: auditQueue } : {}) })
    : undefined;
  const calling = service && audit ? await createCalling(o, service, metrics, history, audit) : undefined;
  if (!calling) log.warn('no Service: webhook intake, health and metrics only');
  // History's health is shown, never failing readiness: its outage delays history, not calls.
  const historyCheck: ReadinessCheck[] = history
    ? [{ name: 'history', informational: true, check: async () => { const h = await history.health(); if (!h.ok) throw new Error(h.reason ?? 'failing'); } }]
    : [];
  // The archive disk: reported (media wait for it), not failing readiness (calls do not need it).
  if (calling?.archive) historyCheck.push({ name: 'archive', informational: true, check: calling.archive.health });
  // Anchor mode: no reachable Janus means no inbound call can be answered.
  const anchorCheck: ReadinessCheck[] = calling?.anchor
    ? [
        { name: 'janus', check: async () => { await calling.anchor!.start(); if (calling.anchor!.reachable().length === 0) throw new Error('no Janus server of JANUS_URLS is reachable'); } },
        // Some Janus down, others up: new calls go to the survivors; readiness names the dead (degraded, not failing).
        { name: 'janus-servers', informational: true, check: async () => { const down = calling.anchor!.unreachable(); if (down.length > 0) throw new Error(`not reachable: ${down.join(', ')}`); } },
      ]
    : [];

  // Webhooks answered 2xx but never processed (the stream unreadable) must take the node out.
  const intakeCheck: ReadinessCheck = {
    name: 'intake',
    check: async () => {
      const p = workers.problem();
      if (p) throw new Error(p);
    },
  };
  const { app } = createAppWithMetrics({
    config,
    store,
    log,
    metrics,
    mount: calling ? [calling.mount] : [],
    readiness: [...(o.readiness ?? []), intakeCheck, ...anchorCheck, ...historyCheck],
    ...(o.isShuttingDown ? { isShuttingDown: o.isShuttingDown } : {}),
  });
  const workers = createWorkers({
    store,
    handlers: o.handlers ?? calling?.handlers ?? {},
    log: log.child({ part: 'workers' }),
    metrics: foundationMetrics(metrics),
    maxAttempts: config.webhookMaxAttempts,
    ...o.workers,
  });
  let closed = false;
  return {
    ...(calling && audit ? { auth: calling.auth, engine: calling.engine, hub: calling.hub, gateway: calling.gateway, permissions: calling.permissions, mount: calling.mount, history, audit, anchor: calling.anchor } : {}),
    app,
    metrics,
    wss: calling?.wss,
    workers,
    async start() {
      await workers.start();
      await calling?.start();
      retention?.start();
      audit?.start();
    },
    async close() {
      if (closed) return;
      closed = true;
      // The workers stop alongside (bounded on their own: `stopTimeoutMs`).
      const stopped = workers.stop().catch((err: unknown) => log.error({ err }, 'workers stop failed'));
      calling?.close();
      await calling?.hub.close();
      await stopped;
      await retention?.stop();
      await calling?.archive?.close(); // what waits for the disk goes to the dead letters
      await audit?.close(); // rows waiting are written (bounded) before the database closes
      // After the workers: what they handed to history is in its queue (durable with Redis).
      await history?.close().catch((err: unknown) => log.error({ err }, 'history close failed'));
    },
  };
}

/** The switchboard with its calling half, or an error saying there is none (no Service). */
export function withCalling(sb: Switchboard): Switchboard & Calling {
  const { auth, engine, hub, gateway, permissions, mount, history, audit, anchor } = sb;
  if (!auth || !engine || !hub || !gateway || !permissions || !mount || !audit) throw new Error('no calling half: the config names no Service (SERVICE_BASE_URL)');
  return { ...sb, auth, engine, hub, gateway, permissions, mount, history, audit, anchor };
}

function serviceParts(client: ReturnType<typeof createServiceClient>): ServiceParts {
  return { calls: client.calls, media: client.calls, messages: client.messages, phoneNumbers: client.phoneNumbers, messaging: client, contacts: client.contacts, limiter: client.transport.limiter };
}

/** The Service's management quota on `/metrics`: its hourly limit, signalling's reserved share, and the use. */
function quotaMetrics(metrics: Metrics, limiter: NonNullable<ServiceParts['limiter']>): void {
  const hour = () => limiter.usage('management');
  metrics.gauge('switchboard_service_quota_hour_limit', 'Management requests per hour the Service allows (shared by call signalling, contact reads and the rest).', () => hour()?.hourLimit ?? 0);
  metrics.gauge('switchboard_service_quota_signalling_reserved_ratio', 'Share of the management quota only call signalling may use.', () => limiter.signallingReserve);
  metrics.gauge('switchboard_service_quota_hour_reserved', 'Management requests per hour reserved for call signalling.', () => (hour() ? hour()!.hourLimit - hour()!.bulkHourLimit : 0));
  metrics.gauge('switchboard_service_quota_hour_used', 'Management requests sent in the last hour (all).', () => hour()?.hourUsed ?? 0);
  metrics.gauge('switchboard_service_quota_hour_used_signalling', 'Call signalling requests sent in the last hour.', () => hour()?.hourUsedSignalling ?? 0);
}

/**
 * A wrap-up: a `disposition` fact for history (queued: never waits), and with
 * CONTACT_NOTES a note on the customer's contact at the Service (phone-number customers only;
 * the contact may not exist: then nothing is written, said in the log).
 */
function onWrapup(w: Wrapup, o: { history: History | undefined; contacts: ServiceParts['contacts']; log: Logger }): void {
  o.history?.enqueue({ type: 'disposition', wacid: w.wacid, disposition: w.disposition, ...(w.notes ? { notes: w.notes } : {}), at: new Date(w.at).toISOString() });
  const customer = w.customer;
  if (!o.contacts || !customer?.startsWith('+')) return;
  const content = `Call ${w.wacid}: ${w.disposition}${w.notes ? `\n${w.notes}` : ''}`.slice(0, 2000);
  o.contacts.addNote(customer, { content, username: w.agent }).catch((err: Error & { code?: unknown; status?: unknown }) => {
    o.log.warn({ wacid: w.wacid, err: err.message, code: err.code, status: err.status }, 'contact note not written');
  });
}

/** Without history its routes say why (503), not "no route". */
function historyOff(auth: Auth): Hono<AuthEnv> {
  const routes = new Hono<AuthEnv>();
  const refuse = () => {
    throw new HttpUnavailable('call history is off on this server (it needs DATABASE_URL or DATA_DIR)');
  };
  for (const path of ['/api/history/calls', '/api/history/calls/*']) routes.get(path, auth.requireUser('agent', 'supervisor', 'ops'), refuse);
  return routes;
}

/** Users, sessions, hub, permissions, engine, gateway, archive, routes, handlers. */
async function createCalling(o: SwitchboardOptions, service: ServiceParts, metrics: Metrics, history: History | undefined, audit: AuditService) {
  const { config, store, log } = o;
  const users = o.users ?? (config.usersFile ? await loadUsersFile(config.usersFile) : config.demo ? await demoUsers() : undefined);
  if (!users) throw new Error('USERS_FILE: is required outside demo mode');
  // ---- administration: users, teams, skills and queues in the history database (server/admin) ----
  // USERS_FILE / QUEUES_FILE (or the users handed in) seed empty tables; from then on the
  // database is the directory, and every node follows its changes within a moment.
  let engineRef: CallEngine | undefined;
  const directory = await openDirectory({ db: history?.store.db, pubsub: store, users, config, log, onLoaded: () => engineRef?.routingChanged() });
  // ---- end administration ----
  // what changed in USERS_FILE since the last start (demo users get new hashes each start: not compared); with the database it is only the seed.
  if (!directory && (o.users || config.usersFile))
    void recordUserChanges({ users, store, audit: audit.record, log: log.child({ part: 'auth' }) }).catch((err: Error) => log.warn({ err: { message: err.message } }, 'users changes not compared with the last start'));
  const now = o.now ?? Date.now;
  const assets =
    o.assets ??
    (await loadPages().catch((err: unknown) => {
      log.error({ err }, 'pages could not be loaded (built or bundled): pages are not served');
      return new Map<string, WebAsset>();
    }));
  const auth = createAuth({
    users,
    sessions: new Sessions(store, config.sessionSecret, o.sessionTtlMs ?? SESSION_TTL_MS, now),
    store,
    origin: { publicUrl: config.publicUrl, bindHost: config.host },
    ...(o.loginLimits ? { loginLimits: o.loginLimits } : {}),
    log: log.child({ part: 'auth' }),
    demo: config.demo,
    // Logged out: not available (a page that has not run its ready-check never rings).
    onLogout: (u) => engine.loggedOut(u),
    audit: audit.record,
    passwordLogin: config.passwordLogin,
    sso: config.sso !== undefined && directory !== undefined,
  });
  // With Redis other nodes may hold some agents' sockets: pushes then also go through pub/sub.
  const hub = new Hub(log.child({ part: 'hub' }), config.redisUrl ? store : undefined);
  // ---- messaging and the callback queue (server/callbacks/wire.ts) -------------
  // Built on history; without it their routes answer 503 naming why. Parts used below:
  // `m16.recordSent` (permissions), `queue.onCommitted` (engine), `m16.handlers`,
  // `m16.routes`, `m16.start()` / `m16.stop()`.
  const queues = directory ? directory.queues : loadQueues(config.queuesFile);
  // an agent sees and uses only the numbers they take calls for (the queues).
  const scope = createNumberScope({ queues, scoped: directory ? () => directory.scoped() : config.queuesFile !== undefined, numbers: service.phoneNumbers, log: log.child({ part: 'scope' }), now });
  const m16 = wireMessaging({ auth, history, client: service.messaging, push: hub, log, config, now, scope });
  const permissions = createPermissions({ store, hub, auth, log: log.child({ part: 'permissions' }), messages: service.messages, phoneNumbers: service.phoneNumbers, now, onSent: m16.recordSent, scope });
  const queue = m16.callbacks(permissions, queues);
  // ---- end messaging and the callback queue ---------------------------------------------------------------------
  const numbers = service.phoneNumbers;
  // ---- supervisor console: monitoring relay ----
  // MEDIA_MODE=anchor holds each inbound caller's leg in a Janus room (server/anchor).
  const anchor =
    config.media.mode === 'anchor'
      ? new MediaAnchor({ urls: config.media.janusUrls, apiSecret: config.media.janusApiSecret, log: log.child({ part: 'anchor' }), holdMusicFile: o.musicFile ?? config.media.holdMusicFile, recordDir: join(config.archiveDir, VOICEMAIL_SPOOL) })
      : undefined;
  const monitors = new Monitors({
    store,
    hub,
    log: log.child({ part: 'monitor' }),
    showListening: config.monitorShowListening,
    now,
    timeline: history ? (t) => history.enqueue({ type: 'timeline', ...t }) : undefined,
    audit: audit.record,
    anchor,
  });
  // Every stored transition is published on the call bus (behind its effects, in commit
  // order); each feature listens on its own, and one that throws costs the others nothing.
  const offerLatency = metrics.histogram('switchboard_offer_latency_seconds', 'Inbound calls: webhook received → first offer pushed to an agent (seconds).');
  const listenerFailures = metrics.counter('switchboard_listener_failures_total', 'Event listeners that threw, by event and listener (the others and the event itself went on).', ['event', 'listener']);
  const callBus = new Bus<CallBusEvents>(log.child({ part: 'events' }), (event, listener) => listenerFailures.inc({ event, listener }));
  // A call carries its business number's phone id (a dialed one: once its connect event came).
  callBus.on('committed', 'number scope', (_before, after) => {
    const number = after.direction === 'USER_INITIATED' ? after.to : after.from;
    if (after.phoneId !== number) scope.learn(number, after.phoneId);
  });
  callBus.on('committed', 'monitors', (before, after) => {
    if (after.state === 'ended' && before?.state !== 'ended') monitors.callEnded(after.wacid).catch((err: Error) => log.warn({ wacid: after.wacid, err: err.message }, 'monitor end failed'));
  });
  // Connected and unanswered business calls count against the permission budget.
  callBus.on('committed', 'permission budget', (before, after) => permissions.onCommitted(before, after));
  if (history) {
    // Every stored transition becomes history facts (queued; the call never waits for them):
    // the facts of one event-loop turn go as one queue entry (one XADD).
    const factsLater: HistoryFact[] = [];
    callBus.on('committed', 'history', (before, after, event, version) => {
      if (factsLater.length === 0) queueMicrotask(() => history.enqueue(...factsLater.splice(0)));
      factsLater.push(...factsOfTransition(before, after, event, now(), { version }));
    });
    // An ended call reaches the call-back queue.
    callBus.on('committed', 'call-back queue', (before, after, _event, version) => queue.onCommitted(before, after, version));
  }
  // ---- end supervisor console ----
  // Anchor mode: voicemail (after VOICEMAIL_AFTER_S unanswered; out of hours always): messages go into the archive like recordings.
  const voicemail: VoicemailSettings | undefined = anchor
    ? {
        afterMs: config.media.voicemailAfterMs,
        maxMs: config.media.voicemailMaxMs,
        promptFile: VOICEMAIL_PROMPT_FILE,
        promptMs: VOICEMAIL_PROMPT_MS,
        closedFile: CLOSED_GREETING_FILE,
        closedMs: CLOSED_GREETING_MS,
        save: async (wacid, ogg) => {
          const out = await saveVoicemail(config.archiveDir, wacid, ogg);
          history?.enqueue(...factsOfMedia(out, now()));
        },
      }
    : undefined;
  const closedAt = closedCheck(config.hours);
  // Queue audio (QUEUE_AUDIO_FILE) needs the anchor: in direct mode the caller's audio ends in a page.
  if (config.queueAudio && !anchor) log.warn('QUEUE_AUDIO_FILE is ignored: queue audio needs MEDIA_MODE=anchor (direct mode cannot play audio to a caller)');
  const engine = new CallEngine({
    waitForStart: true,
    store,
    calls: service.calls,
    hub,
    log: log.child({ part: 'calls' }),
    policy: { acceptWindowMs: config.acceptWindowMs, ringTimeoutMs: config.ringTimeoutMs, agentRecoveryMs: config.media.agentRecoveryMs, ...o.policy },
    wrapUpMs: config.wrapUpMs,
    queues,
    now,
    ...(config.redisUrl ? { shared: store } : {}),
    permissions,
    numberScope: scope,
    // Rarely needed (a dialed call the store could not take): looked up when it is.
    ...(numbers ? { phoneIdOf: (n: string) => phoneIdOf(numbers, n) } : {}),
    ...(o.sweepMs !== undefined ? { sweepMs: o.sweepMs } : {}),
    ...(o.reconnectGraceMs !== undefined ? { reconnectGraceMs: o.reconnectGraceMs } : {}),
    onCommitted: (before, after, event, version) => callBus.emit('committed', before, after, event, version),
    onOffered: (call) => {
      if (call.offeredTo.length === 1) offerLatency.observe(Math.max(0, now() - call.createdAt) / 1000);
    },
    // ---- agent desktop: wrap-up codes, away reasons, where a wrap-up goes ----
    dispositions: config.dispositions,
    awayReasons: config.awayReasons,
    onWrapup: (w) => onWrapup(w, { history, contacts: config.contactNotes ? service.contacts : undefined, log: log.child({ part: 'wrapup' }) }),
    // ---- end agent desktop ----
    ...(anchor ? { anchor } : {}),
    ...(voicemail ? { voicemail } : {}),
    ...(closedAt ? { closedAt } : {}),
    ...(anchor && config.queueAudio ? { queueAudio: (phoneId: string, n: string) => queueAudioOf(config.queueAudio, phoneId, n) } : {}),
  });
  engineRef = engine;
  // The features: each registers its routes, handlers, listeners and start/close steps
  // (server/features/feature.ts). Listed in the order their routes are mounted.
  const features = installFeatures(
    { config, store, log, metrics, now, auth, hub, engine, history, audit, numbers },
    callBus,
    [wallboardFeature({ periodMs: o.wallboardMs }), reportsFeature],
  );
  const gateway = createGateway({
    auth,
    engine,
    hub,
    log: log.child({ part: 'gateway' }),
    now,
    ...(o.heartbeatMs !== undefined ? { heartbeatMs: o.heartbeatMs } : {}),
    ...(o.deadAfterMs !== undefined ? { deadAfterMs: o.deadAfterMs } : {}),
    ...o.socketLimits,
    monitors,
    ice: createIceIssuer(o.iceTtlS !== undefined && config.ice.turnAuth.kind === 'secret' ? { ...config.ice, turnAuth: { ...config.ice.turnAuth, ttlS: o.iceTtlS } } : config.ice),
  });
  const webRoutes = createWebRoutes({ auth, store, ws: gateway.routes, assets, log: log.child({ part: 'web' }), demo: o.demo });
  const wss = createWsServer();
  const archive = service.media
    ? createArchive({
        dir: config.archiveDir,
        calls: service.media,
        log: log.child({ part: 'archive' }), announce: { hub, store },
        ...(history ? { onArchived: (r) => history.enqueue(...factsOfMedia(r, now())) } : {}),
        // a disk that cannot be written makes events wait, not dead letters
        metrics,
        // Recording and transcription events belong to the media lane's consumer group.
        deadLetter: (entry, error) => store.deadLetter(laneGroup('media'), entry, error),
      })
    : undefined;
  const archiveRoutes = createArchiveRoutes({
    auth,
    dir: config.archiveDir,
    audit: audit.record,
    store,
    // An agent plays a voicemail message when its call's business number is theirs (the call-back task's scope).
    ...(history
      ? {
          voicemailFor: async (user: { name: string; roles: readonly string[] }, wacid: string) => {
            const call = await history.store.getCall(wacid);
            return call?.businessNumber !== undefined && (await scope.allows(user, call.businessNumber));
          },
        }
      : {}),
  });
  const historyRoutes = history ? createHistoryRoutes({ auth, history, log: log.child({ part: 'history' }) }) : historyOff(auth);
  // ---- agent desktop: the customer panel ----
  const customerRoutes = createCustomerRoutes({
    auth,
    contacts: service.contacts,
    history: history ? { calls: history.store, messages: new MessagingStore(history.store.db), callbacks: new CallbackStore(history.store.db) } : undefined,
    permissions: permissions.book,
    taskPermission: queue.callbacks?.permissionOf,
    log: log.child({ part: 'customers' }),
    now,
    store,
    scope,
    liveCustomers: async (agent) => {
      const f = engine.board.facts(agent);
      const calls = await Promise.all([f.ringing, f.holding, f.wrapWacid].filter((w): w is string => !!w).map((w) => store.getCall(w)));
      return calls.flatMap((r) => (r ? [String(r.direction === 'USER_INITIATED' ? r.from : r.to)] : []));
    },
  });
  // ---- end agent desktop ----
  const admin = adminRoutes({ db: history?.store.db, directory, auth, users, audit: audit.record, config, log, now }); // /api/admin/*, /auth/sso/*
  const deadLetterRoutes = createDeadLetterRoutes({ auth, store, log: log.child({ part: 'ops' }), secrets: secretsOf(config), metrics, audit: audit.record });
  const onCallEvent = (event: CallSignalEvent, entry: StreamEntry) => engine.handleEvent(event, entry.receivedAt);
  const handlers: HandlerRegistry = {
    'chat.call.connect': onCallEvent,
    'chat.call.terminate': onCallEvent,
    'chat.call.status.updated': onCallEvent,
    // messaging's events; inbound messages go to the permission replies, then to messaging's record.
    ...m16.handlers(permissions.onInboundMessage),
    ...archive?.handlers,
    ...features.handlers,
  };
  return {
    auth,
    engine,
    hub,
    gateway,
    anchor,
    permissions,
    wss,
    handlers,
    archive,
    mount(app: App | Hono) {
      app.route('/', archiveRoutes);
      app.route('/', historyRoutes);
      app.route('/', m16.routes); // /api/messages, /api/templates, /api/callbacks
      app.route('/', customerRoutes);
      app.route('/', deadLetterRoutes);
      for (const r of admin) app.route('/', r);
      app.route('/', audit.routes(auth.requireUser('ops', 'admin'))); // /api/audit, /api/audit.csv
      app.route('/', permissions.routes);
      app.route('/', createLanguageRoutes({ store: languageStore(history?.store.db), guard: auth.requireUser(), now })); // /api/me/language
      for (const r of features.routes) app.route('/', r);
      app.route('/', webRoutes);
    },
    async start() {
      await hub.start();
      await gateway.start();
      await m16.start(); // catalog, opt-outs, reconcile loop
      if (anchor) {
        await anchor.start(); // a Janus that does not answer now is tried again by the next call
        log.info({ janus: config.media.janusUrls, reachable: anchor.reachable() }, 'media anchor mode: inbound callers are held in Janus rooms');
      }
      await engine.start();
      await features.start();
    },
    close() {
      void directory?.close();
      m16.stop();
      engine.close();
      anchor?.close(); // rooms of live calls stay until their calls end (another node) or Janus reclaims
      void features.close();
      permissions.close();
      gateway.close();
      wss.close();
    },
  };
}
