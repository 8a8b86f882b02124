/**
 * The one wiring function: `createSwitchboard(options)` builds the Service client (from the
 * config unless one is given), history and the audit trail, the calling half's shared parts
 * (server/calling.ts), then lists the features (`featuresOf`: each registers its routes,
 * webhook handlers, call bus listeners, readiness checks and start/close steps), and builds
 * the HTTP app and the webhook workers from what they registered — all statically imported.
 * `main.ts` serves what it returns (`app.fetch`, `wss`) and adds only the demo emulator (the
 * one lazy import) and signal handling; end-to-end tests call it with their own users,
 * timings and parts.
 *
 * Without a Service (demo mode when the emulator cannot be loaded) only the foundation is
 * built: webhook intake, health and metrics.
 */
import type { Env, Hono } from 'hono';
import type { WebSocketServer } from 'ws';
import { createAppWithMetrics, type App, type ReadinessCheck } from './app.ts';
import { adminFeature } from './admin/wire.ts';
import { archiveFeature } from './archive/feature.ts';
import { createAudit, type AuditRow, type AuditService } from './audit/index.ts';
import { auditFeature } from './audit/feature.ts';
import type { Auth } from './auth/index.ts';
import { createCallingCore, type CallingCore } from './calling.ts';
import { messagingFeature } from './callbacks/wire.ts';
import type { CallEngine } from './calls/engine.ts';
import { customersFeature } from './customers/feature.ts';
import { installFeatures, type Feature } from './features/feature.ts';
import type { Gateway } from './gateway/index.ts';
import { historyFeature } from './history/feature.ts';
import { openHistory, type History } from './history/index.ts';
import { RedisHistoryQueue } from './history/queue.ts';
import { languageFeature } from './language/index.ts';
import type { MediaAnchor } from './anchor/anchor.ts';
import { monitorFeature } from './monitor/feature.ts';
import { foundationMetrics, Metrics } from './ops/metrics.ts';
import type { ServiceParts, SwitchboardOptions } from './options.ts';
import type { Permissions } from './permissions/index.ts';
import { permissionsFeature } from './permissions/feature.ts';
import type { Hub } from './push/hub.ts';
import { reportsFeature } from './reports/index.ts';
import { createServiceClient } from './service/index.ts';
import { RedisStore } from './store/redis.ts';
import { wallboardFeature } from './wallboard/index.ts';
import { webFeature } from './web/index.ts';
import { deadLettersFeature } from './webhooks/dead-letters.ts';
import { createWorkers, type Workers } from './webhooks/workers.ts';

export type { ServiceParts, SwitchboardOptions } from './options.ts';

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
  const features = core ? installFeatures(core.parts, core.bus, featuresOf(core, o)) : undefined;
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

/**
 * The features, in the order their routes are mounted (the pages last: they answer what no
 * other route did), their start steps run and their listeners hear a transition.
 */
function featuresOf(core: CallingCore, o: SwitchboardOptions): ReadonlyArray<Feature<CallingCore['parts']>> {
  return [
    archiveFeature,
    historyFeature,
    messagingFeature(core.messaging, core.callbackQueue),
    customersFeature(core.callbackQueue.callbacks),
    deadLettersFeature,
    adminFeature,
    auditFeature(core.parts.auth.requireUser('ops', 'admin')),
    permissionsFeature,
    languageFeature,
    monitorFeature,
    wallboardFeature({ periodMs: o.wallboardMs }),
    reportsFeature,
    webFeature({ ws: core.gateway.routes, assets: core.assets, demo: o.demo }),
  ];
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
