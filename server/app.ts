/**
 * `createApp(deps)`: the HTTP application, built from its dependencies, no I/O at import.
 *
 * What every route gets from here:
 * - a request id (`X-Request-ID`, taken from the request when well-formed, else new) on
 *   every response and in `c.get('log')`, a child logger whose every line carries it;
 * - one error mapping (`app.onError`): `HttpError`s (server/ops/errors.ts, the one family routes throw) become the
 *   Service's error shape `{ error: { status, code, message, requestId } }`, anything
 *   else is logged and becomes a 500 without internals;
 * - request counting for `/metrics` (bounded labels: known methods, matched route patterns);
 * - a body limit of `API_BODY_LIMIT` (64 KiB), counted while reading: 413 before any
 *   route reads more (the webhook route has its own, larger one);
 * - `X-Content-Type-Options: nosniff` on every answer (JSON, downloads, errors).
 *
 * Routes of the foundation: `POST /webhooks/service`, `GET /healthz`, `GET /readyz`,
 * `GET /metrics`. Other parts add theirs through `deps.mount` (see `AppPart`).
 */
import { timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Hono, type ErrorHandler } from 'hono';
import type { Logger } from 'pino';
import type { Config } from './config/config.ts';
import { HttpError, HttpNotFound, HttpUnauthorized, HttpUnavailable, renderError } from './ops/errors.ts';
import { loopDelay } from './ops/loop-delay.ts';
import { Metrics, foundationMetrics, type FoundationMetrics } from './ops/metrics.ts';
import { isStoreDown, type Store } from './store/store.ts';
import { requestIdOf } from './ops/request.ts';
import { refuseUnstorable } from './ops/storable.ts';
import type { ReadinessCheck } from './ops/readiness.ts';
import { WEBHOOK_PATH, readBodyLimited, readIncomingLimited, webhookHandler, type BodyBudget } from './webhooks/receiver.ts';
import { workersLag } from './webhooks/workers.ts';

export * from './ops/errors.ts';

/** Hono environment of every route: `c.get('requestId')`, `c.get('log')`. */
export type AppEnv = { Variables: { requestId: string; log: Logger } };
export type App = Hono<AppEnv>;

/** Largest request body any route but the webhook receiver reads (login, API writes). */
export const API_BODY_LIMIT = 64 * 1024;

/** Method label values: anything else is counted as `OTHER` (labels stay bounded). */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

export type { ReadinessCheck };

export interface AppDeps {
  config: Config;
  store: Store;
  log: Logger;
  /** Shared registry; others add their metrics to it. Default: a new one. */
  metrics?: Metrics;
  /** Epoch ms. Default `Date.now`. */
  now?: () => number;
  /** Unauthenticated webhook bodies at once (default `WEBHOOK_BODY_BUDGET`; tests make it small). */
  webhookBudget?: BodyBudget;
  /** More routes: each function gets the app after the foundation's middleware. */
  mount?: Array<(app: App) => void>;
  /** More `/readyz` checks (e.g. the Service is reachable); the store is always checked. */
  readiness?: ReadinessCheck[];
  /** Set once shutdown begins: `/readyz` answers 503 so load balancers drain this node. */
  isShuttingDown?: () => boolean;
}

function timeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(t)),
    new Promise<T>((_, reject) => {
      t = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
    }),
  ]);
}

/** The app and the foundation's metrics (tests read counters). */
/**
 * The one mapping of errors to answers (`app.onError`): `HttpError`s as they are, a store
 * outage as 503, Hono's own HTTP exceptions by status, anything else 500. Exported so that
 * tests mounting routes on a bare Hono answer exactly as the app does.
 */
export function errorHandler(log: Logger): ErrorHandler {
  return (err, c) => {
    if (err instanceof HttpError) {
      if (err.status >= 500) c.get('log')?.error({ err, cause: err.cause }, err.message);
      return renderError(c, err);
    }
    // The store is down (e.g. a login cannot keep its session): the client may retry.
    if (isStoreDown(err)) {
      (c.get('log') ?? log).warn({ err: err.message, path: c.req.path }, 'store unavailable');
      return renderError(c, new HttpUnavailable('the server cannot reach its store; try again shortly'));
    }
    // Hono's own HTTP exceptions (e.g. from middleware of other parts).
    const status = (err as { status?: number }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      return renderError(c, new HttpError(status, status === 401 ? 'UNAUTHORIZED' : status === 403 ? 'FORBIDDEN' : 'BAD_REQUEST', err.message || 'request refused'));
    }
    (c.get('log') ?? log).error({ err }, 'unhandled error');
    return renderError(c, new HttpError(500, 'INTERNAL', 'internal error'));
  };
}

export function createApp(deps: AppDeps): App {
  return createAppWithMetrics(deps).app;
}

export function createAppWithMetrics(deps: AppDeps): { app: App; metrics: Metrics; m: FoundationMetrics } {
  const metrics = deps.metrics ?? new Metrics();
  const m = foundationMetrics(metrics);
  const now = deps.now ?? Date.now;
  const app = new Hono<AppEnv>();

  metrics.gauge('switchboard_webhook_stream_lag', 'Webhook events accepted but not yet processed (pending + never delivered), in the lane furthest behind.', () =>
    workersLag(deps.store),
  );
  metrics.gauge('switchboard_up', 'Always 1 while the process serves.', () => 1);
  const loop = loopDelay();
  metrics.summary('switchboard_event_loop_delay_seconds', 'Event-loop delay since the previous scrape (quantile 1: the longest), seconds.', () => {
    const d = loop.take();
    return { quantiles: [['0.5', d.p50], ['0.99', d.p99], ['1', d.max]], count: d.count, sum: d.sum };
  });

  // The webhook route comes first and answers without calling next(), so the middleware
  // below does not run for it: it does the same (request id, metrics, log) inline, only
  // as much as each answer needs. It is the hot path (bench/ingest.ts). With WEBHOOK_PORT
  // it is not here at all: the intake thread takes it on its own port (webhooks/intake.ts).
  if (deps.config.webhookPort === undefined) {
    app.post(
      WEBHOOK_PATH,
      webhookHandler({
        store: deps.store,
        secrets: deps.config.webhookSecrets,
        dedupeTtlMs: deps.config.webhookDedupeTtlMs,
        metrics: m,
        log: deps.log,
        now,
        ...(deps.webhookBudget ? { budget: deps.webhookBudget } : {}),
      }),
    );
  }

  app.use('*', async (c, next) => {
    const requestId = requestIdOf(c);
    c.set('requestId', requestId);
    c.set('log', deps.log.child({ requestId }));
    const t0 = performance.now();
    await next();
    c.res.headers.set('X-Request-ID', requestId);
    c.res.headers.set('X-Content-Type-Options', 'nosniff');
    const status = c.res.status;
    m.httpRequests.inc({ method: METHODS.has(c.req.method) ? c.req.method : 'OTHER', route: c.req.routePath || 'unmatched', status: String(status) });
    const log = c.get('log');
    if (log.isLevelEnabled('debug') || (status >= 500 && log.isLevelEnabled('warn'))) {
      // Path only: query strings are never logged.
      log[status >= 500 ? 'warn' : 'debug']({ method: c.req.method, path: c.req.path, status, ms: Math.round(performance.now() - t0) }, 'request');
    }
  });

  // Every body is read here first, counted while it arrives (a missing or false
  // Content-Length changes nothing), so no route can be made to buffer more than the limit.
  // Routes then read the buffered copy.
  app.use('*', async (c, next) => {
    const raw = c.req.raw;
    if (raw.body === null) {
      // GET and HEAD: the adapter hands no body on, but one may still be sent; hold it to
      // the same limit (and drop it) so no route answers differently.
      const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
      if (incoming && (incoming.headers['transfer-encoding'] !== undefined || Number(incoming.headers['content-length'] ?? 0) > 0) && !incoming.readableEnded) {
        await readIncomingLimited(incoming, API_BODY_LIMIT);
      }
      return next();
    }
    const body = await readBodyLimited(raw, API_BODY_LIMIT);
    c.req.raw = new Request(raw.url, { method: raw.method, headers: raw.headers, body: body as Uint8Array<ArrayBuffer>, signal: raw.signal });
    return next();
  });

  // No text PostgreSQL cannot store gets past the edge (a NUL once stopped all history):
  // path, query and JSON body are checked once here, 400 naming the field.
  app.use('*', refuseUnstorable);

  // The one place errors become answers: routes and middleware throw `HttpError`s.
  app.onError(errorHandler(deps.log));

  app.notFound((c) => renderError(c, new HttpNotFound(`no route for ${c.req.method} ${c.req.path}`)));

  app.get('/healthz', (c) => c.json({ status: 'ok' }));

  app.get('/readyz', async (c) => {
    const checks: Record<string, string> = {};
    let ready = true;
    if (deps.isShuttingDown?.()) {
      ready = false;
      checks.process = 'shutting down';
    }
    const all: ReadinessCheck[] = [{ name: 'store', check: () => deps.store.ping() }, ...(deps.readiness ?? [])];
    await Promise.all(
      all.map(async ({ name, check, informational }) => {
        try {
          await timeout(check(), 2000, name);
          checks[name] = 'ok';
        } catch (err) {
          if (!informational) ready = false;
          checks[name] = `${informational ? 'degraded: ' : ''}${(err as Error)?.message ?? 'failed'}`;
        }
      }),
    );
    const reason = Object.entries(checks)
      .filter(([, v]) => v !== 'ok')
      .map(([k, v]) => `${k}: ${v}`)
      .join('; ');
    return c.json(ready ? { status: 'ready', checks } : { status: 'not ready', reason, checks }, ready ? 200 : 503);
  });

  // Counts only (no names, numbers or secrets); with METRICS_TOKEN set, only for its bearer.
  const metricsToken = deps.config.metricsToken ? Buffer.from(`Bearer ${deps.config.metricsToken}`) : undefined;
  app.get('/metrics', async (c) => {
    if (metricsToken) {
      const given = Buffer.from(c.req.header('authorization') ?? '');
      if (given.length !== metricsToken.length || !timingSafeEqual(given, metricsToken)) {
        throw new HttpUnauthorized('GET /metrics needs Authorization: Bearer <METRICS_TOKEN>');
      }
    }
    return c.body(await metrics.render(), 200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
  });

  for (const mount of deps.mount ?? []) mount(app);

  return { app, metrics, m };
}
