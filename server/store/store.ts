/**
 * The store: everything Switchboard keeps between requests and between nodes.
 *
 * Two implementations share this interface and one contract test suite
 * (`store.contract.test.ts`): `MemoryStore` (demo mode, one process, not durable) and
 * `RedisStore` (ioredis). Code outside `server/store/` depends on this interface only.
 *
 * Every key an implementation writes starts with the store's `prefix` (default
 * `sb:`), so tests can run against a shared Redis without touching other data.
 * Key names are documented in `server/store/README.md`.
 */

/** One webhook event as durably accepted by the receiver. */
export interface StreamEntry {
  /** Stream entry id (Redis `XADD` id, or a monotonic id in memory). */
  streamId: string;
  /** The event envelope's `id` (the deduplication key). */
  eventId: string;
  /** The event envelope's `type`. */
  type: string;
  /** The raw JSON body exactly as received. */
  body: string;
  /** Epoch ms when the receiver accepted it. */
  receivedAt: number;
  /** How many times this entry has been handed to a consumer, this time included. */
  deliveries: number;
  /** Set on an entry put back by `replayDeadLetters`: the stream id of the dead-lettered entry. */
  replayOf?: string;
}

export interface DeadLetter {
  entry: StreamEntry;
  /** Last error message of the handler (never contains secrets). */
  error: string;
  /** Epoch ms when it was dead-lettered. */
  at: number;
  /** Handler attempts before it was dead-lettered, when the caller said (absent in older entries). */
  attempts?: number;
}

/** Outcome of `replayDeadLetters`. */
export interface ReplayResult {
  /** Dead letters appended back to the event stream (and removed from the dead list). */
  replayed: Array<{ streamId: string; newStreamId: string; eventId: string; type: string }>;
  /** Stream ids asked for that are not (or no longer) in the dead list. */
  notFound: string[];
}

/**
 * A call as the bridge keeps it. `state` and the lifecycle fields are owned by the pure
 * transition function in `server/calls/`; the store only guarantees atomic
 * compare-and-set on `version`.
 */
export interface CallRecord {
  wacid: string;
  phoneId: string;
  /** Incremented by every successful `casCall`; 0 for a freshly created record. */
  version: number;
  /** The lifecycle state and everything else the engine keeps, as plain JSON. */
  [field: string]: unknown;
}

export type AcceptResult = 'accepted' | 'duplicate';

/** One window of a sliding-window ration: at most `max` slots within any `windowMs`. */
export interface RationWindow {
  windowMs: number;
  max: number;
}

/**
 * Outcome of `reserveSlot`: reserved, or refused because window `window` (its index in the
 * list) is full until `retryAt` (epoch ms: when its oldest counted slot leaves it).
 */
export type SlotResult = { ok: true } | { ok: false; window: number; retryAt: number };

/** The store cannot take the request right now (Redis down or reconnecting). */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
}

export interface Store {
  /** Key prefix of this store instance (e.g. `sb:`). */
  readonly prefix: string;

  // ---- webhook intake ---------------------------------------------------------------

  /**
   * Deduplicate by `eventId` and append to the event stream in ONE atomic step.
   * Resolves `'duplicate'` (and appends nothing) if the id was accepted within
   * `dedupeTtlMs`. Rejects if the store cannot take the event (the receiver answers 503).
   */
  acceptEvent(
    e: { eventId: string; type: string; body: string; receivedAt: number },
    dedupeTtlMs: number,
  ): Promise<AcceptResult>;

  /**
   * Create the consumer group if it does not exist (idempotent). A new group reads from the
   * start of the stream, or, with `from`, where that (older) group stands: from its oldest
   * entry still pending, else after its last delivered one — so a group that takes over an
   * older one's work (an upgrade) neither skips nor repeats what that one finished.
   */
  ensureGroup(group: string, o?: { from?: string }): Promise<void>;

  /**
   * Read up to `count` new entries for `consumer` in `group`, waiting up to `blockMs`
   * when none are ready. Entries stay pending until `ack`.
   */
  readGroup(group: string, consumer: string, count: number, blockMs: number): Promise<StreamEntry[]>;

  /** Acknowledge processed entries (removes them from the pending list). */
  ack(group: string, streamIds: string[]): Promise<void>;

  /**
   * Claim entries pending for longer than `minIdleMs` (their consumer died or is stuck)
   * for `consumer`; their `deliveries` count goes up by one.
   */
  claimStale(group: string, consumer: string, minIdleMs: number, count: number): Promise<StreamEntry[]>;

  /**
   * Keep entries that `consumer` still holds fresh (their idle time back to 0, deliveries
   * unchanged), so `claimStale` hands over only a dead consumer's entries, however long a
   * live one works on them. An entry now pending for another consumer (or acked) is left
   * alone. Resolves the ids that were refreshed.
   */
  touchPending(group: string, consumer: string, streamIds: readonly string[]): Promise<string[]>;

  /**
   * Move an entry to the dead-letter list and ack it in `group`, atomically. `attempts`
   * (handler attempts made) is kept with it when given.
   */
  deadLetter(group: string, entry: StreamEntry, error: string, attempts?: number): Promise<void>;

  /** Dead letters, newest first. */
  listDeadLetters(limit: number): Promise<DeadLetter[]>;

  /**
   * Put dead letters back on the event stream for the consumer groups, by the stream id
   * of the dead-lettered entry (`'all'`: every dead letter, oldest first). Each one is
   * appended as a new entry (same event id, type, body and received-at; `replayOf` = the
   * old stream id) and removed from the dead list in ONE atomic step, so a crash neither
   * loses nor doubles it. The dedupe key is not consulted (it still holds the event id).
   * Of concurrent replays of the same id exactly one reports it replayed; the others
   * report it not found. Several copies of one stream id in the list replay once.
   */
  replayDeadLetters(streamIds: readonly string[] | 'all'): Promise<ReplayResult>;

  /** Entries in the stream not yet acknowledged by `group` (pending + never delivered). */
  streamLag(group: string): Promise<number>;

  /**
   * Drop from the head of the stream the entries every one of `groups` has read and
   * acknowledged (dead-lettered entries are acked: their copy lives in the dead list),
   * up to the first entry one of them still holds (pending) or has not read. Nothing is
   * dropped while any of `groups` does not exist yet (it will read from the start). Dedupe
   * keys live outside the stream, so a trimmed event is still a duplicate. With `before`
   * (epoch ms) only entries appended before then go (processed ones are kept that long).
   * Resolves how many entries went.
   */
  trimProcessed(groups: readonly string[], before?: number): Promise<number>;

  // ---- calls ------------------------------------------------------------------------

  /** Create a call record (version 0) unless one exists for `wacid`. True if created. */
  createCall(record: CallRecord, ttlMs: number): Promise<boolean>;

  getCall(wacid: string): Promise<CallRecord | null>;

  /**
   * Replace the record iff its stored `version` equals `expectedVersion`; the stored
   * record gets `version = expectedVersion + 1`. Returns the stored record, or null when
   * another writer won (the caller re-reads and re-applies its transition).
   * Of two concurrent calls with the same `expectedVersion`, exactly one succeeds.
   */
  casCall(wacid: string, expectedVersion: number, next: CallRecord, ttlMs: number): Promise<CallRecord | null>;


  /** Every call record still in the store (live and recently ended, until their TTL). */
  listCalls(): Promise<CallRecord[]>;

  /**
   * The calls not ended, without reading the ended ones (an hour of them at 100 calls/s is
   * 360,000 records: sweeps and boards read only these).
   */
  listLiveCalls(): Promise<CallRecord[]>;

  // ---- small values with TTL (sessions, locks, permission records) ------------------

  /** Set iff absent. True if set. */
  setNX(key: string, value: string, ttlMs: number): Promise<boolean>;
  set(key: string, value: string, ttlMs?: number): Promise<void>;
  get(key: string): Promise<string | null>;
  del(key: string): Promise<void>;

  // ---- small indexes (a user's login sessions) ----------------------------------------

  /** Add `member` to the index `key` until epoch ms `until` (again: its time is replaced). The index lives as long as its latest member. */
  indexAdd(key: string, member: string, until: number): Promise<void>;
  /** Remove members from an index. */
  indexRemove(key: string, ...members: string[]): Promise<void>;
  /** The members of an index whose time is after `now` (those past it are dropped). */
  indexMembers(key: string, now: number): Promise<string[]>;

  // ---- rations (sliding windows, across nodes) ----------------------------------------

  /**
   * Check a ration and take a slot of it in ONE atomic step: iff, for every window, fewer
   * than `max` slots of `key` fall within `(now - windowMs, now]`, record slot `slotId` at
   * `now` and answer `{ok: true}`; otherwise record nothing and answer the first full
   * window and when it frees up. Of concurrent calls that would overfill a window, only as
   * many as fit succeed (also from different nodes). Slots older than the longest window
   * are forgotten.
   */
  reserveSlot(key: string, slotId: string, now: number, windows: readonly RationWindow[]): Promise<SlotResult>;

  /** Give a slot back: the action it was taken for surely did not happen. */
  releaseSlot(key: string, slotId: string): Promise<void>;

  /**
   * A fixed-window counter (rate limits): add `delta` to the counter `key` in ONE atomic
   * step and answer its new value and the ms until the window ends. The window starts at
   * the first increment and lasts `windowMs`; then the counter is gone (bounded memory).
   * A negative `delta` (giving back a reservation) never creates a counter, and a counter
   * that falls to 0 is removed. Of N concurrent increments each sees a different value.
   */
  countInWindow(key: string, delta: number, windowMs: number): Promise<{ count: number; resetInMs: number }>;

  // ---- business-initiated call outcomes (the permission budget, across nodes) ----------

  /**
   * Record the outcome of business-initiated call `callId` to one (business number, user)
   * pair `key` in ONE atomic step. `connected`: the call is added to the pair's connected
   * calls at `at` (those at or before `at - ttlMs` are forgotten) and the unanswered run is
   * cleared; `unanswered`: the call joins the run. Recording one call twice changes nothing
   * (keyed by `callId`). Both lists expire `ttlMs` after the last record (bounded memory).
   */
  recordCallOutcome(key: string, callId: string, outcome: 'connected' | 'unanswered', at: number, ttlMs: number): Promise<void>;

  /** A pair's connected calls (epoch ms, ascending) and its unanswered run (epoch ms of each, ascending). */
  callOutcomes(key: string): Promise<{ connected: number[]; unanswered: number[] }>;

  // ---- between nodes ------------------------------------------------------------------

  /** Publish to every subscriber of `channel`, on every node. */
  publish(channel: string, message: string): Promise<void>;
  /** Subscribe; returns an unsubscribe function. */
  subscribe(channel: string, onMessage: (message: string) => void): Promise<() => Promise<void>>;

  // ---- lifecycle ------------------------------------------------------------------------

  /** Resolves when the store answers; rejects with a reason otherwise (for /readyz). */
  ping(): Promise<void>;
  /** Close connections. Safe to call twice. */
  close(): Promise<void>;
}
