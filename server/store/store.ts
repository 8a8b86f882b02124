/**
 * The store: everything Switchboard keeps between requests and between nodes, as five
 * small interfaces, each in its own file with its Redis and memory implementation and its
 * own contract suite:
 *
 * | part | interface | Redis | memory |
 * |-|-|-|-|
 * | event log + dead letters | `event-log.ts` | `redis-event-log.ts`, `redis-dead-letters.ts` | `memory-event-log.ts` |
 * | calls with compare-and-set | `calls.ts` | `redis-calls.ts` | `memory-calls.ts` |
 * | key-value (locks included) and small indexes | `kv.ts` | `redis-kv.ts` | `memory-kv.ts` |
 * | rate windows (rations, counters, call outcomes) | `rations.ts` | `redis-rations.ts` | `memory-rations.ts` |
 * | pub/sub | `pubsub.ts` | `redis-pubsub.ts` | `memory-pubsub.ts` |
 *
 * `Store` is all of them together (`RedisStore`, `MemoryStore`); code that needs one part
 * takes that part's interface. Code outside `server/store/` never builds a Redis key: every
 * key an implementation writes starts with the store's `prefix` (default `sb:`), so tests
 * can run against a shared Redis without touching other data. Key names are documented in
 * `server/store/README.md`.
 */
import type { CallStore } from './calls.ts';
import type { DeadLetters, EventLog } from './event-log.ts';
import type { KeyValue } from './kv.ts';
import type { PubSub } from './pubsub.ts';
import type { Rations } from './rations.ts';

export type { AcceptResult, DeadLetter, DeadLetters, EventLog, IncomingEvent, ReplayResult, StreamEntry } from './event-log.ts';
export type { CallRecord, CallStore } from './calls.ts';
export type { KeyValue } from './kv.ts';
export type { CallOutcome, RationWindow, Rations, SlotResult } from './rations.ts';
export type { PubSub } from './pubsub.ts';

/** The store cannot take the request right now (Redis down or reconnecting). */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
}

/**
 * The store could not take a command: refused before it was sent (`StoreUnavailableError`),
 * or lost with the connection. A command sent while ioredis was between attempts to
 * reconnect (status `connecting`: it passes the fail-fast check) fails with ioredis's own
 * error when the attempt fails ("Reached the max retries per request limit", "Connection is
 * closed.") or with the command timeout: an outage too, not an internal error.
 */
export function isStoreDown(err: unknown): boolean {
  if (err instanceof StoreUnavailableError) return true;
  if (!(err instanceof Error)) return false;
  return err.name === 'MaxRetriesPerRequestError' || err.message === 'Connection is closed.' || err.message === 'Command timed out';
}

export interface StoreLifecycle {
  /** Key prefix of this store instance (e.g. `sb:`). */
  readonly prefix: string;
  /** Resolves when the store answers; rejects with a reason otherwise (for /readyz). */
  ping(): Promise<void>;
  /** Close connections. Safe to call twice. */
  close(): Promise<void>;
}

/** The parts one store is made of. */
export interface StoreParts {
  events: EventLog;
  dead: DeadLetters;
  calls: CallStore;
  kv: KeyValue;
  rations: Rations;
  pubsub: PubSub;
}

export type Store = EventLog & DeadLetters & CallStore & KeyValue & Rations & PubSub & StoreLifecycle;
