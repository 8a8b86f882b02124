/**
 * The foundation under the features: the Service client (from the config unless one is
 * given), history and the audit trail, the calling half's shared parts (server/calling.ts),
 * then — around the features the wiring function lists (server/switchboard.ts) — the HTTP app
 * and the webhook workers built from what they registered, and the order of start and close.
 *
 * Without a Service (demo mode when the emulator cannot be loaded) only the foundation is
 * built: webhook intake, health and metrics.
 */
import type { Env, Hono } from 'hono';
import type { WebSocketServer } from 'ws';
import type { MediaAnchor } from './anchor/anchor.ts';
import { createAppWithMetrics, type App, type ReadinessCheck } from './app.ts';
import { createAudit, type AuditRow, type AuditService } from './audit/index.ts';
import type { Auth } from './auth/index.ts';
import { createCallingCore, type CallingCore } from './calling.ts';
import type { CallEngine } from './calls/engine.ts';
import { installFeatures, type Feature } from './features/feature.ts';
import type { Gateway } from './gateway/index.ts';
import { openHistory, type History } from './history/index.ts';
import { RedisHistoryQueue } from './history/queue.ts';
import { foundationMetrics, Metrics } from './ops/metrics.ts';
import type { ServiceParts, SwitchboardOptions } from './options.ts';
import type { Permissions } from './permissions/index.ts';
import type { Hub } from './push/hub.ts';
import { createServiceClient } from './service/index.ts';
import { RedisStore } from './store/redis.ts';
import { createWorkers, type Workers } from './webhooks/workers.ts';

/** The calling half: present when there is a Service. */
export interface Calling {
  auth: Auth;
  engine: CallEngine;
  hub: Hub;
  gateway: Gateway;
  /** Calling permissions (book, routes, reply handler, dial check). */
  permissions: Permissions;
  /** Mount the calling half's routes on an app (done once on `app`; tests list routes with it). */
  mount<A extends Env>(app: Hono<A>): void;
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

/** The features of a switchboard, given its shared parts: what the wiring function lists. */
export type FeatureList = (core: CallingCore) => ReadonlyArray<Feature<CallingCore['parts']>>;

/** The foundation built, the features listed by `featuresOf` installed on it, and the app and workers from what they registered. */
export async function buildSwitchboard(o: SwitchboardOptions, featuresOf: FeatureList): Promise<Switchboard> {
  const { config, store, log } = o;
  const metrics = o.metrics ?? new Metrics();
  const service: ServiceParts | undefined =
    o.service ??
    (config.serviceBaseUrl
      ? serviceParts(createServiceClient({ baseUrl: config.serviceBaseUrl, apiKey: config.serviceApiKey, logger: log.child({ part: 'service' }), ...(o.serviceLimits ? { limits: o.serviceLimits } : {}) }))
      : undefined);
  if (service?.limiter) quotaMetrics(metrics, service.limiter);
  const history = o.history === null || !service ? undefined : (o.history ?? (await openHistory(config, { log: log.child({ part: 'history' }), metrics, ...(store instanceof RedisStore ? { send: store.redis } : {}) })));
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
  const core = service && audit ? await createCallingCore(o, service, metrics, history, audit) : undefined;
  if (!core) log.warn('no Service: webhook intake, health and metrics only');
  const features = core ? installFeatures(core.parts, core.bus, featuresOf(core)) : undefined;
  // Webhooks answered 2xx but never processed (the stream unreadable) must take the node out.
  const intakeCheck: ReadinessCheck = {
    name: 'intake',
    check: async () => {
      const p = workers.problem();
      if (p) throw new Error(p);
    },
  };
  const mount = features?.mount;
  const { app } = createAppWithMetrics({
    config,
    store,
    log,
    metrics,
    mount: mount ? [mount] : [],
    readiness: [...(o.readiness ?? []), intakeCheck, ...(core?.readiness ?? []), ...(features?.readiness ?? [])],
    ...(o.isShuttingDown ? { isShuttingDown: o.isShuttingDown } : {}),
  });
  const workers = createWorkers({
    store,
    handlers: o.handlers ?? (core && features ? { ...core.handlers, ...features.handlers } : {}),
    log: log.child({ part: 'workers' }),
    metrics: foundationMetrics(metrics),
    maxAttempts: config.webhookMaxAttempts,
    ...o.workers,
  });
  let closed = false;
  return {
    ...(core && mount && audit ? { auth: core.parts.auth, engine: core.parts.engine, hub: core.parts.hub, gateway: core.gateway, permissions: core.parts.permissions, mount, history, audit, anchor: core.anchor } : {}),
    app,
    metrics,
    wss: core?.wss,
    workers,
    async start() {
      await workers.start();
      await core?.start();
      await features?.start();
      audit?.start();
    },
    async close() {
      if (closed) return;
      closed = true;
      // The workers stop alongside (bounded on their own: `stopTimeoutMs`).
      const stopped = workers.stop().catch((err: unknown) => log.error({ err }, 'workers stop failed'));
      core?.close();
      await core?.parts.hub.close();
      await stopped;
      // After the workers: no handler runs any more (the archive's waiting media go to the dead letters).
      await features?.close();
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
