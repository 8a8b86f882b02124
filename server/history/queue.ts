/**
 * The durable queue between the call path and the history database.
 *
 * `enqueue(...facts)` never waits and never throws: call handling hands facts over and
 * moves on. The writer (`writer.ts`) reads batches, writes them in one transaction and acks
 * after the commit, so a fact leaves the queue only once it is in the database.
 *
 * - `RedisQueue` (server/store/redis-queue.ts) (with `REDIS_URL`): a Redis stream of its own (`<prefix>history`)
 *   read through a consumer group, so any node's writer may write any node's facts, and
 *   the facts of one `enqueue` (a transition's) share one entry (a field `f` each), and
 *   the facts of a writer that died are claimed by another after `claimIdleMs`. Acked
 *   entries are deleted, so the stream's length is the backlog. While Redis itself is
 *   unreachable, facts wait in a bounded in-process outbox and go out on reconnect.
 * - `MemoryQueue` (memory store / demo, one process, not durable across restarts,
 *   like the memory store itself).
 */
import { MemoryQueue } from '../store/memory-queue.ts';
import type { DurableQueue, QueueDeadLetter } from '../store/queue.ts';
import { RedisQueue, type RedisQueueOptions } from '../store/redis-queue.ts';
import type { HistoryFact } from './schema.ts';

export type { QueueLag, QueuedFact } from '../store/queue.ts';
export { DEAD_LETTERS_MAX } from '../store/queue.ts';

/** `F`: what is queued (history's facts; the audit trail queues its rows the same way). */
export type HistoryQueue<F = HistoryFact> = DurableQueue<F>;
/** A fact the database refused to store (a data error, not an outage): kept for ops, never retried. */
export type HistoryDeadLetter = QueueDeadLetter;
export type RedisHistoryQueueOptions = RedisQueueOptions;

export class MemoryHistoryQueue<F = HistoryFact> extends MemoryQueue<F> {}
export class RedisHistoryQueue<F = HistoryFact> extends RedisQueue<F> {}
