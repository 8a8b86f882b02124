/**
 * One small SQL interface over the two engines history runs on: PostgreSQL through `pg`
 * (`DATABASE_URL`) and embedded PostgreSQL (PGlite, persisted under `DATA_DIR`). Same
 * dialect, same migrations, same queries; only connecting and transactions differ.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
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
  /** Pool size (default 4): the writer, the callback queue and the other reads; searches have their own pool. */
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
  const poolOf = (max: number, statementTimeoutMs: number, name: string) =>
    new pg.Pool({ connectionString: o.url, max, connectionTimeoutMillis: o.connectTimeoutMs ?? 3000, statement_timeout: statementTimeoutMs, idleTimeoutMillis: 30_000, application_name: name });
  const pool = poolOf(o.max ?? 4, o.statementTimeoutMs ?? 15_000, 'switchboard');
  // Searches: a pool of their own (16 slow searches once held the whole pool).
  const searchPool = poolOf(o.searchMax ?? 2, o.searchTimeoutMs ?? 5000, 'switchboard-search');
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

/** What a statement answered from the worker thread (see pglite-worker.mjs). */
type Reply = { id: number; rows?: unknown[]; error?: { message: string; code?: string } & Record<string, unknown> };
/** A request to the worker thread (sent with an `id` its answer carries). */
type Request =
  | { op: 'query'; text: string; params: unknown[] | undefined; tx?: number; begin?: true }
  | { op: 'exec'; text: string; tx?: number; begin?: true }
  | { op: 'end'; tx: number; commit: boolean; begin?: true }
  | { op: 'close' };

/** The embedded database as `openPglite` gives it: a `Db`, and the thread it runs on (tests end it). */
export interface PgliteDb extends Db {
  readonly engine: 'pglite';
  /** The worker thread that owns the database now (undefined while none runs). */
  readonly worker: Worker | undefined;
}

/** How long `close` waits for the database to shut down before it ends the thread. */
const CLOSE_TIMEOUT_MS = 5000;

/**
 * A new directory's initdb, in a thread of its own that ends after it: initdb grows PGlite's
 * WebAssembly heap to some 750 MB and a heap never shrinks, so the thread that then serves
 * the database opens the files instead (about 300 MB; `pglite-worker.test.ts`).
 */
async function initPglite(dir: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const w = new Worker(new URL('./pglite-worker.mjs', import.meta.url), { workerData: { dir, initOnly: true }, execArgv: [] });
    let error: Error | undefined;
    w.on('message', (m: { initialized?: true; fatal?: { message: string } }) => {
      if (m.fatal) error = Object.assign(new Error(m.fatal.message), m.fatal);
    });
    w.on('error', (err) => (error = err));
    w.on('exit', (code) => (code === 0 && !error ? resolve() : reject(error ?? new Error(`embedded history database could not be created (its thread exited with code ${code})`))));
  });
}

/**
 * Embedded PostgreSQL in `dir` (created if absent), on a worker thread of its own
 * (`pglite-worker.mjs`): PGlite's statements run synchronously while they run, and on
 * the main thread every webhook, offer and page would wait behind them. Statements and
 * their answers go as messages; errors come back with their message and SQLSTATE `code`
 * (and PostgreSQL's other fields). One connection, as PGlite is: `tx(fn)` opens a
 * transaction lane in the worker (PGlite's own `transaction`), and statements outside it
 * wait until it ends.
 *
 * If the thread dies (a crash, out of memory), every statement pending fails at once with
 * code `PGLITE_WORKER_EXITED`, and the next statement starts a new thread on the same
 * directory (what was committed is there): the writer retries its batch, history's health
 * reports the failure meanwhile. `close()` closes the database and ends the thread.
 */
export async function openPglite(dir: string): Promise<PgliteDb> {
  mkdirSync(dir, { recursive: true });
  if (!existsSync(join(dir, 'PG_VERSION'))) await initPglite(dir);
  const pending = new Map<number, { resolve: (r: Reply) => void; reject: (err: Error) => void }>();
  let seq = 0;
  let txSeq = 0;
  let worker: Worker | undefined;
  let starting: Promise<Worker> | undefined;
  let closed = false;

  const fail = (e: Reply['error'] & {}): Error => Object.assign(new Error(e.message), e);
  const closedError = () => Object.assign(new Error('embedded history database is closed'), { code: 'PGLITE_CLOSED' });
  const exitedError = (why: string) => Object.assign(new Error(`embedded history database thread exited ${why}`), { code: 'PGLITE_WORKER_EXITED' });
  // Referenced only while a statement waits: an idle database does not keep the process up.
  const settle = (id: number) => {
    const p = pending.get(id);
    pending.delete(id);
    if (pending.size === 0) worker?.unref();
    return p;
  };

  const start = (): Promise<Worker> =>
    new Promise<Worker>((resolve, reject) => {
      const w = new Worker(new URL('./pglite-worker.mjs', import.meta.url), { workerData: { dir }, execArgv: [] });
      let ready = false;
      let lastError: Error | undefined;
      w.on('message', (m: Reply & { ready?: true; fatal?: Reply['error'] }) => {
        if (m.ready) {
          ready = true;
          worker = w;
          if (pending.size === 0) w.unref();
          resolve(w);
        } else if (m.fatal) reject(fail(m.fatal));
        else settle(m.id)?.resolve(m);
      });
      w.on('error', (err) => (lastError = err));
      w.on('exit', (code) => {
        if (!ready) return reject(lastError ?? new Error(`embedded history database could not be opened (worker exited with code ${code})`));
        if (worker === w) worker = undefined;
        // Nothing waits forever: what was sent to the dead thread fails now.
        const err = closed ? closedError() : exitedError(`(code ${code})${lastError ? `: ${lastError.message}` : ''}`);
        for (const [id, p] of pending) {
          pending.delete(id);
          p.reject(err);
        }
      });
    });

  /** The running thread, started again if it died (one start at a time). */
  const running = (): Promise<Worker> => {
    if (closed) return Promise.reject(closedError());
    if (worker) return Promise.resolve(worker);
    return (starting ??= start().finally(() => (starting = undefined)));
  };

  /** Send one request and wait for its answer (rejects with the database's error). */
  const call = async (req: Request, w?: Worker): Promise<unknown[] | undefined> => {
    // A transaction's thread that died since: its lane died with it.
    if (w && w !== worker) throw closed ? closedError() : exitedError('during the transaction');
    const to = w ?? (await running());
    const id = ++seq;
    const reply = await new Promise<Reply>((resolve, reject) => {
      if (pending.size === 0) to.ref();
      pending.set(id, { resolve, reject });
      to.postMessage({ ...req, id });
    });
    if (reply.error) throw fail(reply.error);
    return reply.rows;
  };

  /** A transaction's lane: its first message opens it in the thread (`begin`). */
  interface Lane {
    tx: number;
    w: Worker;
    begun: boolean;
  }
  const on = (lane: Lane | undefined): { tx?: number; begin?: true } => {
    if (!lane) return {};
    if (lane.begun) return { tx: lane.tx };
    lane.begun = true;
    return { tx: lane.tx, begin: true };
  };
  const sqlOn = (lane?: Lane): Sql => ({
    async query<T>(text: string, params?: unknown[]) {
      return (await call({ op: 'query', text, params, ...on(lane) }, lane?.w)) as T[];
    },
    async exec(text: string) {
      await call({ op: 'exec', text, ...on(lane) }, lane?.w);
    },
  });

  await running();
  return {
    engine: 'pglite',
    get worker() {
      return worker;
    },
    ...sqlOn(),
    async tx<T>(fn: (sql: Sql) => Promise<T>): Promise<T> {
      // The lane is bound to this thread: if it dies, the transaction's statements fail
      // (they are not sent to the next one outside any transaction).
      const lane: Lane = { tx: ++txSeq, w: await running(), begun: false };
      let out: T;
      try {
        out = await fn(sqlOn(lane));
      } catch (err) {
        await call({ op: 'end', commit: false, ...on(lane), tx: lane.tx }, lane.w).catch(() => undefined);
        throw err;
      }
      await call({ op: 'end', commit: true, ...on(lane), tx: lane.tx }, lane.w);
      return out;
    },
    async close() {
      if (closed) return;
      const w = worker ?? (await starting?.catch(() => undefined));
      closed = true;
      if (!w) return;
      const timer = setTimeout(() => void w.terminate(), CLOSE_TIMEOUT_MS);
      try {
        await call({ op: 'close' }, w).catch(() => undefined);
      } finally {
        clearTimeout(timer);
        await w.terminate();
      }
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
