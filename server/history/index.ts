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
import { MemoryHistoryQueue, RedisHistoryQueue, type HistoryQueue } from './queue.ts';
import type { HistoryFact } from './schema.ts';
import { HistoryStore, type RetentionResult } from './store.ts';
import { HistoryWriter } from './writer.ts';

export * from './schema.ts';
export { HistoryStore, HistoryQueryError, type RetentionResult } from './store.ts';
export { HistoryWriter, type WriterStatus } from './writer.ts';
export { MemoryHistoryQueue, RedisHistoryQueue, type HistoryQueue, type QueueLag } from './queue.ts';
export { migrate, MIGRATIONS } from './migrations.ts';
export { openPglite, openPostgres, type Db } from './db.ts';

type HistoryConfig = Pick<Config, 'databaseUrl' | 'dataDir' | 'redisUrl' | 'historyRetentionDays' | 'archiveRetentionDays'>;

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

export interface History {
  store: HistoryStore;
  queue: HistoryQueue;
  writer: HistoryWriter;
  /** Hand a fact to the durable queue. Never waits, never throws. */
  enqueue(fact: HistoryFact): void;
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
}

/** Open the database (migrated), the queue and the writer, and start writing. */
export async function openHistory(config: HistoryConfig, o: OpenHistoryOptions = {}): Promise<History> {
  const db = await openHistoryDb(config, o.log);
  const store = new HistoryStore(db);
  const queue =
    o.queue ??
    (config.redisUrl
      ? new RedisHistoryQueue({ url: config.redisUrl, ...(o.prefix ? { prefix: o.prefix } : {}), onError: (err) => o.log?.error({ err: { message: err.message } }, 'history queue error') })
      : new MemoryHistoryQueue());
  const writer = new HistoryWriter({ queue, store, ...(o.log ? { log: o.log } : {}), ...(o.metrics ? { metrics: o.metrics } : {}) });
  writer.start();
  return {
    store,
    queue,
    writer,
    enqueue: (fact) => queue.enqueue(fact),
    health: () => writer.health(),
    purge: (now) => store.purge({ ...(now ? { now } : {}), historyDays: config.historyRetentionDays, archiveDays: config.archiveRetentionDays }),
    async close() {
      await writer.stop();
      await queue.close();
      await store.close();
    },
  };
}
