/**
 * A durable queue between a fast path and a slower writer (history's facts, the audit
 * trail's rows): `enqueue` never waits and never throws; the writer reads batches and acks
 * them once written. Implemented by `redis-queue.ts` (a stream of its own per queue, read
 * through a consumer group, with an outbox while Redis is away) and `memory-queue.ts`.
 */

export interface QueuedFact {
  /** Queue entry id (ack with it; the facts of one entry share it). */
  id: string;
  /** The fact as enqueued: JSON text (validated by the writer). */
  body: string;
  /** Epoch ms it was enqueued (the history lag metric); absent on entries of older versions. */
  at?: number;
}

export interface QueueLag {
  /** Facts not yet written: queue entries (on Redis an entry holds one `enqueue` call's facts), read or not, plus any outbox. */
  pending: number;
  /** Age of the oldest of them in ms (0 when none). */
  oldestAgeMs: number;
}

/** A fact the database refused to store (a data error, not an outage): kept for ops, never retried. */
export interface QueueDeadLetter {
  /** The fact as JSON. */
  body: string;
  /** The database's refusal (message and SQLSTATE; no connection details). */
  error: string;
  /** Epoch ms it was set aside. */
  at: number;
}

/** Most dead letters kept (the oldest go first). */
export const DEAD_LETTERS_MAX = 10_000;

/** `F`: what is queued (history's facts, the audit trail's rows). */
export interface DurableQueue<F> {
  /** Append facts (a transition's: one entry on Redis). Never waits, never throws. */
  enqueue(...facts: F[]): void;
  /** The facts of up to `count` entries (memory: a fact each), waiting up to `blockMs` when there are none. */
  read(count: number, blockMs: number): Promise<QueuedFact[]>;
  /** The facts are in the database: remove them from the queue. */
  ack(ids: readonly string[]): Promise<void>;
  lag(): Promise<QueueLag>;
  /** Resolves once every fact enqueued so far is in the queue proper (not only in an outbox). */
  flush(): Promise<void>;
  /** Keep a fact the database cannot store (before its entry is acked). */
  setAside(d: QueueDeadLetter): Promise<void>;
  /** The facts set aside, newest first, and how many there are. */
  deadLetters(limit: number): Promise<{ items: QueueDeadLetter[]; total: number }>;
  close(): Promise<void>;
}
