/**
 * History: the system of record of what happened. Two stores, two jobs: Redis holds the
 * live state (short-lived, compare-and-set), this holds what happened (kept, searched).
 *
 *   const history = await openHistory(config, { log, metrics });
 *   history.enqueue({ type: 'call', ...fact });    // anywhere on the call path: never waits
 *   await history.store.searchCalls(query);        // routes
 *   history.health();                              // /readyz (report, do not fail on it)
 *   await history.close();                         // on shutdown
 *
 * More in server/history/README.md.
 */
import { join } from 'node:path';
import type { Config } from '../config/config.ts';
import type { Logger } from '../log/logger.ts';
import type { Metrics } from '../ops/metrics.ts';
import { openPglite, openPostgres, safeError, type Db } from './db.ts';
import { migrate } from './migrations.ts';
import { MemoryHistoryQueue, RedisHistoryQueue, type HistoryQueue, type RedisHistoryQueueOptions } from './queue.ts';
import type { HistoryFact } from './schema.ts';
import { HistoryStore, type RetentionResult } from './store.ts';
import { HistoryWriter } from './writer.ts';
import { retrier } from '../../shared/backoff.ts';

export * from './schema.ts';
export { HistoryStore, HistoryQueryError, type RetentionResult } from './store.ts';
export { HistoryWriter, type WriterStatus } from './writer.ts';
export { MemoryHistoryQueue, RedisHistoryQueue, type HistoryQueue, type QueueLag } from './queue.ts';
export { migrate, MIGRATIONS } from './migrations.ts';
export { openPglite, openPostgres, type Db } from './db.ts';

type HistoryConfig = Pick<Config, 'databaseUrl' | 'dataDir' | 'redisUrl' | 'historyRetentionDays' | 'archiveRetentionDays'> &
  Partial<Pick<Config, 'redisSentinels' | 'redisSentinelName'>>;

/** The database the configuration asks for, migrated. */
export async function openHistoryDb(config: Pick<Config, 'databaseUrl' | 'dataDir'>, log?: Pick<Logger, 'error'>): Promise<Db> {
  const db = config.databaseUrl
    ? openPostgres({ url: config.databaseUrl, onError: (err) => log?.error({ err: { message: err.message, code: (err as { code?: string }).code } }, 'history database connection error') })
    : await openPglite(join(config.dataDir, 'history'));
  try {
    await migrate(db);
  } catch (err) {
    await db.close().catch(() => undefined);
    // Message and code only: a pg error may carry connection details.
    throw safeError(err);
  }
  return db;
}

/**
 * A `Db` that opens in the background: the first attempt is awaited, and when it fails
 * (the database is down at start) attempts go on every `retryMs` (doubling to 30 s) while
 * every statement fails with "not open yet". The writer then keeps its batch and the facts
 * stay queued, the routes answer 503, and calls never wait for any of it.
 */
export async function openingDb(
  engine: Db['engine'],
  open: () => Promise<Db>,
  o: { log?: Pick<Logger, 'error' | 'info'>; retryMs?: number } = {},
): Promise<Db & { readonly open: boolean }> {
  let db: Db | undefined;
  let lastError = 'not tried';
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let attempt: Promise<void> | undefined;
  const base = o.retryMs ?? 1000;
  const delays = retrier({ baseMs: base, maxMs: 30_000, minMs: base / 2 });
  let delay = base;
  const tryOpen = (): Promise<void> =>
    (attempt = open().then(
      async (opened) => {
        if (closed) return opened.close();
        db = opened;
      },
      (err: unknown) => {
        lastError = safeError(err).message;
      },
    ));
  const retry = () => {
    timer = setTimeout(() => {
      void tryOpen().then(() => {
        if (db) o.log?.info('history database open: queued facts are being written');
        else if (!closed) {
          delay = delays.next();
          retry();
        }
      });
    }, delay);
    timer.unref();
  };
  await tryOpen();
  if (!db) {
    o.log?.error({ err: { message: lastError } }, 'history database cannot be opened; calls go on, facts stay queued, retrying in the background');
    retry();
  }
  const ready = (): Db => {
    if (db) return db;
    throw Object.assign(new Error(`history database not open yet: ${lastError}`), { code: 'HISTORY_NOT_OPEN' });
  };
  return {
    engine,
    get open() {
      return db !== undefined;
    },
    query: async (text, params) => ready().query(text, params),
    search: async (text, params) => {
      const d = ready();
      return d.search ? d.search(text, params) : d.query(text, params);
    },
    exec: async (text) => ready().exec(text),
    tx: async (fn) => ready().tx(fn),
    async close() {
      closed = true;
      clearTimeout(timer);
      await attempt;
      await db?.close();
      db = undefined;
    },
  };
}

export interface History {
  store: HistoryStore;
  queue: HistoryQueue;
  writer: HistoryWriter;
  /** Hand facts to the durable queue (one entry: give a transition's facts together). Never waits, never throws. */
  enqueue(...facts: HistoryFact[]): void;
  health(): ReturnType<HistoryWriter['health']>;
  /** Retention with the configured days: rows go, and the returned files are the archive's to delete. */
  purge(now?: Date): Promise<RetentionResult>;
  /** Stop the writer, flush the queue's outbox, close connections. */
  close(): Promise<void>;
}

export interface OpenHistoryOptions {
  log?: Logger;
  metrics?: Metrics;
  /** Redis key prefix of the queue's stream (the store's, default `sb:`). */
  prefix?: string;
  /** Give a queue (tests); default: Redis when `REDIS_URL` is set, memory otherwise. */
  queue?: HistoryQueue;
  /** First wait before opening the database again when it could not be opened (default 1 s). */
  retryMs?: number;
  /** The store's Redis connection: facts go out with the call's own commands (`RedisHistoryQueueOptions.send`). */
  send?: RedisHistoryQueueOptions['send'];
}

/** Open the database (migrated), the queue and the writer, and start writing. */
export async function openHistory(config: HistoryConfig, o: OpenHistoryOptions = {}): Promise<History> {
  const db = await openingDb(config.databaseUrl ? 'postgres' : 'pglite', () => openHistoryDb(config, o.log), {
    ...(o.log ? { log: o.log } : {}),
    ...(o.retryMs !== undefined ? { retryMs: o.retryMs } : {}),
  });
  const store = new HistoryStore(db);
  const queue =
    o.queue ??
    (config.redisUrl
      ? new RedisHistoryQueue({
          url: config.redisUrl,
          // Sentinel mode as the store's: the URL's host is not a server then.
          ...(config.redisSentinels ? { sentinels: config.redisSentinels, sentinelName: config.redisSentinelName ?? 'mymaster' } : {}),
          ...(o.prefix ? { prefix: o.prefix } : {}),
          ...(o.send ? { send: o.send } : {}),
          onError: (err) => o.log?.error({ err: { message: err.message } }, 'history queue error') })
      : new MemoryHistoryQueue());
  const writer = new HistoryWriter({ queue, store, ...(o.log ? { log: o.log } : {}), ...(o.metrics ? { metrics: o.metrics } : {}) });
  writer.start();
  return {
    store,
    queue,
    writer,
    enqueue: (...facts) => queue.enqueue(...facts),
    // Not open yet: nothing is written, even while the queue is empty.
    health: async () => (db.open ? writer.health() : { ok: false, reason: 'history database not open yet (retrying)', lag: await queue.lag().catch(() => undefined) }),
    purge: (now) => store.purge({ ...(now ? { now } : {}), historyDays: config.historyRetentionDays, archiveDays: config.archiveRetentionDays }),
    async close() {
      await writer.stop();
      await queue.close();
      await store.close();
    },
  };
}
