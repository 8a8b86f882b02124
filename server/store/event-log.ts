/**
 * The event log: webhook events accepted once (deduplicated), read by consumer groups, and
 * the dead letters of those no handler could process. Implemented by `redis-event-log.ts`
 * + `redis-dead-letters.ts` and `memory-event-log.ts`; contract: `event-log.contract.test.ts`.
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

export type AcceptResult = 'accepted' | 'duplicate';

/** An event as the receiver hands it over. */
export interface IncomingEvent {
  eventId: string;
  type: string;
  body: string;
  receivedAt: number;
}

export interface EventLog {
  /**
   * Deduplicate by `eventId` and append to the event stream in ONE atomic step.
   * Resolves `'duplicate'` (and appends nothing) if the id was accepted within
   * `dedupeTtlMs`. Rejects if the store cannot take the event (the receiver answers 503).
   */
  acceptEvent(e: IncomingEvent, dedupeTtlMs: number): Promise<AcceptResult>;

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
}

export interface DeadLetters {
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
}
