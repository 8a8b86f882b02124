/**
 * The audit trail over HTTP (roles `ops` and `admin`; the guard is handed in, so this
 * folder imports no feature):
 * - `GET /api/audit?user&action&from&to&limit&cursor` → `{items: AuditEntry[], cursor?}`,
 *   newest first; `user` matches who acted or whose thing it was; `from` inclusive, `to`
 *   exclusive (ISO); `limit` 1–500 (default 50);
 * - `GET /api/audit.csv?user&action&from&to&limit` → the same rows as a CSV download
 *   (`limit` up to 10000, default 10000).
 * A broken rule answers 400 naming the field; without a database 503 saying why.
 */
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { HttpBadRequest, HttpUnavailable } from '../ops/errors.ts';
import { fieldColumns, toCsv } from '../ops/csv.ts';
import { auditQuery, type AuditEntry, type AuditQuery } from './schema.ts';
import { parseQuery } from '../ops/validate.ts';
import type { AuditStore } from './store.ts';

/** The app's environment as these routes read it (the guard sets `user`). */
export type AuditEnv = { Variables: { user: { name: string }; requestId?: string } };

export const CSV_MAX = 10_000;
const CSV_COLUMNS = fieldColumns<AuditCsvRow>(['at', 'actor', 'action', 'subject', 'target', 'address', 'detail']);
type AuditCsvRow = Omit<AuditEntry, 'detail'> & { detail: string | undefined };

/** Audit rows as the CSV download (and `switchboard audit --csv`) give them: the detail as JSON text. */
export function auditCsv(items: readonly AuditEntry[]): string {
  return toCsv(CSV_COLUMNS, items.map((e) => ({ ...e, detail: e.detail ? JSON.stringify(e.detail) : undefined })));
}

export function createAuditRoutes<E extends AuditEnv>(o: { store: Pick<AuditStore, 'search'> | undefined; guard: MiddlewareHandler<E> }): Hono<E> {
  const app = new Hono<E>();

  const query = (c: Context, maxLimit?: number): AuditQuery => parseQuery(c, auditQuery(maxLimit));
  const store = () => {
    if (!o.store) throw new HttpUnavailable('the audit trail needs the history database, and this server has none');
    return o.store;
  };

  app.get('/api/audit', o.guard, async (c) => {
    const q = query(c);
    const s = store();
    c.header('Cache-Control', 'private, no-store');
    return c.json(await s.search(q));
  });

  app.get('/api/audit.csv', o.guard, async (c) => {
    const q = query(c, CSV_MAX);
    if (q.cursor) throw new HttpBadRequest('cursor: the CSV export has no pages; narrow it with from and to');
    if (!c.req.query('limit')) q.limit = CSV_MAX;
    const { items } = await store().search(q);
    const day = new Date().toISOString().slice(0, 10);
    return c.body(auditCsv(items), 200, {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="switchboard-audit-${day}.csv"`,
      'cache-control': 'private, no-store',
    });
  });

  return app;
}
