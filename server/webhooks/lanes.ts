/**
 * What the webhook workers run (server/webhooks/workers.ts): handlers by event type, each
 * typed for its own event, and the lanes events are read in — each lane its own consumer
 * group, its own limit of handlers in flight and its own deadline.
 */
import type { Logger } from 'pino';
import type { EventOf, KnownEvent, KnownEventType } from '../../shared/events.ts';
import type { FoundationMetrics } from '../ops/metrics.ts';
import type { Store, StreamEntry } from '../store/store.ts';

/** The consumer group of the bridge's workers. */
export const WORKER_GROUP = 'workers';

/** A received event of a known type, validated and typed (`shared/events.ts`). */
export type WebhookEvent = KnownEvent;

export type { HandlerContext, EventHandler, HandlerRegistry } from '../events/handlers.ts';
import type { HandlerContext, HandlerRegistry } from '../events/handlers.ts';

/** The handler registered for `type`, bound to its event (undefined when none is). */
export function handlerFor<T extends KnownEventType>(handlers: HandlerRegistry, type: T, event: EventOf<T>, entry: StreamEntry): ((ctx: HandlerContext) => Promise<void>) | undefined {
  const h = Object.hasOwn(handlers, type) ? handlers[type] : undefined;
  return h ? (ctx) => h(event, entry, ctx) : undefined;
}

/** The lanes: each has its own limit of handlers in flight and its own deadline. */
export type Lane = 'calls' | 'media' | 'other';
export const LANES: readonly Lane[] = ['calls', 'media', 'other'];

export const MEDIA_TYPES = new Set(['chat.call.recording.updated', 'chat.call.transcription.updated']);

/** The lane of an event type: media downloads, other `chat.call.*` (signaling), the rest. */
export function laneOf(type: string): Lane {
  if (MEDIA_TYPES.has(type)) return 'media';
  if (type.startsWith('chat.call.')) return 'calls';
  return 'other';
}

export interface LaneOptions {
  /** Handlers of this lane in flight at once in this process. */
  limit?: number;
  /** An attempt running longer than this has failed (its signal is aborted, its slot freed). */
  deadlineMs?: number;
  /**
   * After a read that caught up (fewer entries than a full read), wait this long before the
   * next one, so a steady trickle is read in batches rather than one round trip (and one ack
   * of the other lanes' entries) per event. 0 for calls: an offer never waits for it. For
   * the others it adds at most this much to an event's wait and takes a flood of 1,000
   * message events/s from ~2,000 reads and acks a second per lane to ~50
   * (`webhooks/workers.test.ts`).
   */
  readGapMs?: number;
}

/**
 * Calls are many and quick; media downloads are few and slow (a long recording). The other
 * lane's 64: its message observations share a database transaction (`messaging/group-commit.ts`),
 * so the handlers in flight are a batch's ceiling; with 16, a flood of 1,000 message events
 * a second was ~125 transactions a second of ~8 observations each.
 */
export const LANE_DEFAULTS: Readonly<Record<Lane, Required<LaneOptions>>> = {
  calls: { limit: 64, deadlineMs: 15_000, readGapMs: 0 },
  media: { limit: 8, deadlineMs: 60_000, readGapMs: 20 },
  other: { limit: 64, deadlineMs: 30_000, readGapMs: 20 },
};

export interface WorkersOptions {
  store: Store;
  handlers: HandlerRegistry;
  log: Logger;
  metrics: FoundationMetrics;
  /** Attempts before dead-lettering (WEBHOOK_MAX_ATTEMPTS). */
  maxAttempts: number;
  group?: string;
  /** Consumer name prefix; default `<hostname>-<pid>-<random>`. */
  name?: string;
  /** Read loops (consumers) in this process; they share the lanes. Default 1. */
  concurrency?: number;
  /** Per-lane limits and deadlines (defaults: `LANE_DEFAULTS`). */
  lanes?: Partial<Record<Lane, LaneOptions>>;
  /** A lane's entries read but waiting for a slot before that lane's reading pauses (bounds memory). Default 1000. */
  maxQueued?: number;
  /**
   * Entries claimed per round trip: 4 × this (default 16). A lane reads 8 × this per round
   * trip: it reads the other lanes' entries too (and acks them), so a backlog of theirs
   * must be passed quickly.
   */
  batchSize?: number;
  /** How long one read waits for new entries. Default 1000 ms. */
  blockMs?: number;
  /**
   * Pending entries idle this long belong to a dead consumer (a live one keeps its own
   * fresh every `claimIdleMs / 3`). Default 5000 ms.
   */
  claimIdleMs?: number;
  /** How often to look for them. Default 1000 ms. */
  claimEveryMs?: number;
  /** First local retry delay; doubles per attempt, capped at `claimIdleMs / 4`. Default 200 ms. */
  retryDelayMs?: number;
  /**
   * How often entries every lane has processed are trimmed from the stream
   * (`store.trimProcessed`). Default 5000 ms; 0: never (the stream's MAXLEN alone bounds it).
   */
  trimEveryMs?: number;
  /** Processed entries are kept this long after they were appended (for a look at what came in). Default 120000 ms. */
  keepProcessedMs?: number;
  /** `stop()` waits this long for handlers in hand, then aborts them (left pending). Default 5000 ms. */
  stopTimeoutMs?: number;
}

export interface Workers {
  /** Consumer names of this process. */
  readonly consumers: readonly string[];
  start(): Promise<void>;
  /**
   * Stop reading, let the handlers in hand finish for up to `stopTimeoutMs`, abort the rest
   * (they stay pending and are claimed by another consumer), return. Safe to call twice.
   */
  stop(): Promise<void>;
  /** Events currently being handled (for shutdown and tests). */
  inFlight(): number;
  /**
   * Why intake cannot be processed now (`/readyz`): the last read of the stream failed and
   * none succeeded since. Undefined while reads work.
   */
  problem(): string | undefined;
}

/** One delivery of one entry to this process. */
export interface Job {
  consumer: string;
  entry: StreamEntry;
  attempt: number;
}

/** The attempt ran past its lane's deadline. */
export class HandlerDeadlineError extends Error {
  constructor(lane: Lane, ms: number) {
    super(`handler deadline exceeded (${lane} lane, ${ms} ms)`);
    this.name = 'HandlerDeadlineError';
  }
}

/** The workers stopped before the attempt finished: it stays pending for another consumer. */
export class StoppingError extends Error {
  constructor() {
    super('workers stopping: event left pending for another consumer');
    this.name = 'StoppingError';
  }
}

/** The consumer group of one lane (`workers:calls`, `workers:media`, `workers:other`). */
export function laneGroup(lane: Lane, group: string = WORKER_GROUP): string {
  return `${group}:${lane}`;
}

/**
 * Events accepted and not yet processed by the workers: the most any lane's group has
 * left (its pending entries plus what it has not read yet). For `/metrics` and tests.
 */
export async function workersLag(store: Pick<Store, 'streamLag'>, group: string = WORKER_GROUP): Promise<number> {
  const lags = await Promise.all(LANES.map((l) => store.streamLag(laneGroup(l, group))));
  return Math.max(...lags);
}
