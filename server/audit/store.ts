/**
 * The audit table's statements (table `audit_log`, migration 5 in server/history): insert
 * (idempotent by id: a batch written twice after a lost commit adds nothing), keyset search
 * newest first, and retention — the only DELETE, and the table's trigger refuses any
 * other change (UPDATE, TRUNCATE, DELETE of a row younger than a day).
 */

/**
 * The statements the audit table needs, as the history database (server/history/db.ts
 * `Db`) offers them; named here so that this folder imports nothing above it (history
 * imports features; features import audit).
 */
export interface AuditDb {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
  /** A statement that may be slow (a search), on its own pool when there is one. */
  search?<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
}
import { encodeCursor, type AuditAction, type AuditEntry, type AuditQuery } from './schema.ts';

/** A row as it is written (`at` ISO). */
export interface AuditRow {
  id: string;
  at: string;
  actor: string;
  action: AuditAction;
  subject?: string | undefined;
  target?: string | undefined;
  address?: string | undefined;
  detail?: Record<string, unknown> | undefined;
}

type DbRow = { id: string; at: Date | string; actor: string; action: string; subject: string | null; target: string | null; address: string | null; detail: Record<string, unknown> | null };

function entryOf(r: DbRow): AuditEntry {
  return {
    id: r.id,
    at: new Date(r.at).toISOString(),
    actor: r.actor,
    action: r.action as AuditAction,
    ...(r.subject !== null ? { subject: r.subject } : {}),
    ...(r.target !== null ? { target: r.target } : {}),
    ...(r.address !== null ? { address: r.address } : {}),
    ...(r.detail !== null ? { detail: r.detail } : {}),
  };
}

export class AuditStore {
  constructor(readonly db: AuditDb) {}

  /** Write rows in one statement; a row whose id is there already is skipped. */
  async insert(rows: readonly AuditRow[]): Promise<void> {
    if (rows.length === 0) return;
    const params: unknown[] = [];
    const values = rows.map((r) => {
      const n = params.length;
      params.push(r.id, r.at, r.actor, r.action, r.subject ?? null, r.target ?? null, r.address ?? null, r.detail ? JSON.stringify(r.detail) : null);
      return `($${n + 1}, $${n + 2}, $${n + 3}, $${n + 4}, $${n + 5}, $${n + 6}, $${n + 7}, $${n + 8}::jsonb)`;
    });
    await this.db.query(`INSERT INTO audit_log (id, at, actor, action, subject, target, address, detail) VALUES ${values.join(', ')} ON CONFLICT (id) DO NOTHING`, params);
  }

  /** One page, newest first; `cursor` when there may be more. */
  async search(q: AuditQuery): Promise<{ items: AuditEntry[]; cursor?: string }> {
    const where: string[] = [];
    const params: unknown[] = [];
    const p = (v: unknown) => `$${params.push(v)}`;
    if (q.user !== undefined) {
      const u = p(q.user);
      where.push(`(actor = ${u} OR subject = ${u})`);
    }
    if (q.action !== undefined) where.push(`action = ${p(q.action)}`);
    if (q.from !== undefined) where.push(`at >= ${p(q.from)}::timestamptz`);
    if (q.to !== undefined) where.push(`at < ${p(q.to)}::timestamptz`);
    if (q.cursor) where.push(`(at, id) < (${p(q.cursor.at)}::timestamptz, ${p(q.cursor.id)})`);
    const sql = `SELECT id, at, actor, action, subject, target, address, detail FROM audit_log ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY at DESC, id DESC LIMIT ${p(q.limit + 1)}`;
    const rows = this.db.search ? await this.db.search<DbRow>(sql, params) : await this.db.query<DbRow>(sql, params);
    const items = rows.slice(0, q.limit).map(entryOf);
    const last = items[items.length - 1];
    return rows.length > q.limit && last ? { items, cursor: encodeCursor(last) } : { items };
  }

  /** Retention: rows older than `days` go; answers how many. */
  async purge(days: number, now: Date = new Date()): Promise<number> {
    const before = new Date(now.getTime() - days * 86_400_000).toISOString();
    const rows = await this.db.query<{ n: number }>('WITH gone AS (DELETE FROM audit_log WHERE at < $1::timestamptz RETURNING 1) SELECT count(*)::int AS n FROM gone', [before]);
    return rows[0]?.n ?? 0;
  }
}
