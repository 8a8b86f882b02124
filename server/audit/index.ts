/**
 * The audit trail: who logged in (or failed to, with the name tried),
 * logged out, ended sessions, monitored which call of which agent, played or downloaded
 * which recording or transcript, exported which report, replayed which dead letters, and
 * what changed among the users. Append-only rows in the history database (`audit_log`,
 * migration 5), deleted only by retention (`AUDIT_RETENTION_DAYS`).
 *
 *   const audit = createAudit({ db, retentionDays, log, metrics });
 *   audit.record({ action: 'logout', actor: 'alice', address });   // never waits
 *   app.route('/', audit.routes(auth.requireUser('ops', 'admin')));
 *
 * Features import this folder; it imports none of them (the route guard is handed in).
 */
import type { Hono, MiddlewareHandler } from 'hono';
import type { Logger } from '../log/logger.ts';
import type { Metrics } from '../ops/metrics.ts';
import { createAuditRoutes, type AuditEnv } from './routes.ts';
import { AuditStore, type AuditDb } from './store.ts';
import { AuditTrail, type Audit, type AuditQueue } from './trail.ts';

export * from './schema.ts';
export { AuditStore, type AuditRow, type AuditDb } from './store.ts';
export { AuditTrail, LocalAuditQueue, type Audit, type AuditQueue } from './trail.ts';
export { auditCsv, createAuditRoutes, type AuditEnv } from './routes.ts';

export const AUDIT_RETENTION_EVERY_MS = 24 * 3600 * 1000;

export interface AuditOptions {
  /** The history database (migrated); undefined: rows are dropped and the routes answer 503. */
  db: AuditDb | undefined;
  retentionDays: number;
  log: Logger;
  metrics?: Metrics;
  now?: () => number;
  /** The durable queue rows go through (default: one in this process). */
  queue?: AuditQueue;
}

export interface AuditService {
  record: Audit;
  store: AuditStore | undefined;
  trail: AuditTrail;
  routes<E extends AuditEnv>(guard: MiddlewareHandler<E>): Hono<E>;
  /** Delete rows past retention (daily once started). */
  purge(): Promise<number>;
  start(): void;
  close(): Promise<void>;
}

export function createAudit(o: AuditOptions): AuditService {
  const store = o.db ? new AuditStore(o.db) : undefined;
  const now = o.now ?? Date.now;
  const trail = new AuditTrail({ store, log: o.log, ...(o.metrics ? { metrics: o.metrics } : {}), now, ...(o.queue ? { queue: o.queue } : {}) });
  let timer: NodeJS.Timeout | undefined;
  const purge = async () => (store ? store.purge(o.retentionDays, new Date(now())) : 0);
  return {
    record: trail.record,
    store,
    trail,
    routes: (guard) => createAuditRoutes({ store, guard }),
    purge,
    start() {
      if (!store || timer) return;
      timer = setInterval(() => {
        purge().then(
          (n) => n > 0 && o.log.info({ rows: n }, 'audit retention done'),
          (err: unknown) => o.log.error({ err: { message: (err as Error).message } }, 'audit retention failed; tried again next period'),
        );
      }, AUDIT_RETENTION_EVERY_MS);
      timer.unref();
    },
    async close() {
      clearInterval(timer);
      await trail.close();
    },
  };
}
