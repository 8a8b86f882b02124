/**
 * One small SQL interface over the two engines history runs on: PostgreSQL through `pg`
 * (`DATABASE_URL`) and embedded PostgreSQL (PGlite, persisted under `DATA_DIR`). Same
 * dialect, same migrations, same queries; only connecting and transactions differ.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';

export interface Sql {
  /**
   * One statement with `$n` parameters. `prepared`: PostgreSQL keeps it parsed and planned
   * per connection (the write statements run on every call; searches are planned for their
   * values each time).
   */
  query<T = Record<string, unknown>>(text: string, params?: unknown[], o?: { prepared?: boolean }): Promise<T[]>;
  /** Several statements, no parameters (migrations). */
  exec(text: string): Promise<void>;
}

export interface Db extends Sql {
  readonly engine: 'postgres' | 'pglite';
  /**
   * A statement that may be slow (a search someone typed): on PostgreSQL its own small pool
   * with a statement timeout, so searches never hold a connection the writer and the
   * callback queue need. Absent: `query`.
   */
  search?: Sql['query'];
  /** `fn` runs in one transaction on one connection: COMMIT when it resolves, ROLLBACK when it throws. */
  tx<T>(fn: (sql: Sql) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface PostgresOptions {
  url: string;
  /** Pool size (default 4: the writer uses one, searches the rest). */
  max?: number;
  /** Connect timeout (default 3000 ms), so an outage fails fast instead of hanging the writer. */
  connectTimeoutMs?: number;
  /** Per-statement timeout (default 15000 ms). */
  statementTimeoutMs?: number;
  /** Connections of the search pool (default 2), beside `max`. */
  searchMax?: number;
  /** Statement timeout of searches (default 5000 ms): PostgreSQL cancels them (SQLSTATE 57014). */
  searchTimeoutMs?: number;
  /** Pool errors of idle connections (the server is restarted, say). Never contain the URL. */
  onError?: (err: Error) => void;
}

// int8 (counts, bytes) as numbers: every value history keeps fits in 2^53.
pg.types.setTypeParser(20, (v) => Number(v));

/** Most statement texts one pool prepares; beyond, statements run unnamed (parsed each time). */
const PREPARED_MAX = 500;

/**
 * Statements marked `prepared` are prepared once per connection (named) instead of parsed
 * and planned on every call: the callback queue's missed-call statement, once per missed
 * call, cost PostgreSQL about twice the CPU unnamed (bench/fleet.ts, history on). A name
 * stands for one text (`sb_<n>`, one table per pool). With PgBouncer in transaction mode,
 * named statements need its `max_prepared_statements` (1.21+).
 *
 * A prepared statement whose tables changed shape under it (a newer node migrated: "cached
 * plan must not change result type") gets a new name, so every connection prepares it
 * again; the failed statement is run again under it when it was not in a transaction (in
 * one, the transaction has failed: its caller retries, as the writer does).
 */
class Prepared {
  private readonly names = new Map<string, string>();
  private seq = 0;

  nameOf(text: string): string | undefined {
    let name = this.names.get(text);
    if (name === undefined && this.names.size < PREPARED_MAX) this.names.set(text, (name = `sb_${++this.seq}`));
    return name;
  }

  renew(text: string): void {
    if (this.names.has(text)) this.names.set(text, `sb_${++this.seq}`);
  }
}

/** For `query`: a statement run on every call (or every batch), kept prepared. */
export const PREPARED = { prepared: true } as const;

/** PostgreSQL's refusal to run a prepared statement whose result shape changed (SQLSTATE 0A000). */
const stalePlan = (err: unknown) => (err as { code?: unknown }).code === '0A000' && /cached plan must not change result type/.test(String((err as Error).message));

export function openPostgres(o: PostgresOptions): Db {
  const pool = new pg.Pool({
    connectionString: o.url,
    max: o.max ?? 4,
    connectionTimeoutMillis: o.connectTimeoutMs ?? 3000,
    statement_timeout: o.statementTimeoutMs ?? 15_000,
    idleTimeoutMillis: 30_000,
    application_name: 'switchboard',
  });
  // Searches: a pool of their own (issue 35 item 11: 16 slow searches held the whole pool).
  const searchPool = new pg.Pool({
    connectionString: o.url,
    max: o.searchMax ?? 2,
    connectionTimeoutMillis: o.connectTimeoutMs ?? 3000,
    statement_timeout: o.searchTimeoutMs ?? 5000,
    idleTimeoutMillis: 30_000,
    application_name: 'switchboard-search',
  });
  // An idle client's error (server restarted) must not crash the process; the next query reconnects.
  pool.on('error', (err) => o.onError?.(safeError(err)));
  searchPool.on('error', (err) => o.onError?.(safeError(err)));
  const prepared = new Prepared();
  const wrap = (q: { query: pg.Pool['query'] }, inTx: boolean): Sql => ({
    async query<T>(text: string, params?: unknown[], o?: { prepared?: boolean }) {
      const name = params && o?.prepared ? prepared.nameOf(text) : undefined;
      if (name === undefined) return (await q.query(text, params as unknown[])).rows as T[];
      try {
        return (await q.query({ name, text, values: params })).rows as T[];
      } catch (err) {
        if (!stalePlan(err)) throw err;
        prepared.renew(text);
        if (inTx) throw err;
        return (await q.query({ name: prepared.nameOf(text)!, text, values: params })).rows as T[];
      }
    },
    async exec(text: string) {
      await q.query(text);
    },
  });
  const base = wrap(pool, false);
  const search = wrap(searchPool, false);
  return {
    engine: 'postgres',
    ...base,
    search: search.query,
    async tx<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      let broken: unknown;
      // A checked-out client has no error listener of the pool's: a connection cut between
      // two statements would otherwise be an uncaught 'error' event (the process exits).
      const onError = (err: Error) => (broken = err);
      client.on('error', onError);
      try {
        await client.query('BEGIN');
        const out = await fn(wrap(client, true));
        await client.query('COMMIT');
        return out;
      } catch (err) {
        await client.query('ROLLBACK').catch((e: unknown) => (broken = e));
        throw err;
      } finally {
        // A connection that failed is dropped, not handed to the next caller.
        client.off('error', onError);
        client.release(broken instanceof Error ? broken : undefined);
      }
    },
    async close() {
      await Promise.all([pool.end(), searchPool.end()]);
    },
  };
}

/** Embedded PostgreSQL in `dir` (created if absent). Loaded lazily: it is large. */
export async function openPglite(dir: string): Promise<Db> {
  mkdirSync(dir, { recursive: true });
  const { PGlite } = await import('@electric-sql/pglite');
  const db = await PGlite.create(join(dir));
  const wrap = (q: { query: (typeof db)['query']; exec: (typeof db)['exec'] }): Sql => ({
    async query<T>(text: string, params?: unknown[]) {
      return (await q.query<T>(text, params)).rows;
    },
    async exec(text: string) {
      await q.exec(text);
    },
  });
  return {
    engine: 'pglite',
    ...wrap(db),
    tx: (fn) => db.transaction((t) => fn(wrap(t))),
    async close() {
      if (!db.closed) await db.close();
    },
  };
}

/** An error safe to log: message and code only (pg errors may carry connection details). */
export function safeError(err: unknown): Error & { code?: string } {
  const e = err as { message?: unknown; code?: unknown };
  const out = new Error(String(e?.message ?? err)) as Error & { code?: string };
  if (typeof e?.code === 'string') out.code = e.code;
  return out;
}
