/**
 * Webhook workers: read the event stream through a consumer group and hand each event to
 * the handler registered for its type.
 *
 * Lanes (why: a slow handler must never hold up a call). Every event type belongs to one
 * lane — `calls` (`chat.call.*` signaling), `media` (recording / transcription downloads),
 * `other` (messages, permission replies, anything else) — and each lane has its own limit
 * of handlers in flight and its own handler deadline. The reader reads on as soon as it has
 * handed a batch to the lanes (it never waits for handlers), so a `chat.call.connect` read
 * behind 50 hung downloads starts at once in the calls lane while they wait in theirs.
 * Entries waiting for a lane slot are held in memory (pending in the stream meanwhile); the
 * reader pauses only when `maxQueued` of them wait, which bounds memory.
 *
 * - at least once: an entry is acked only after its handler resolved; handlers must be
 *   idempotent (the Service repeats events anyway);
 * - every handler has a deadline (per lane): past it, its `signal` is aborted, the attempt
 *   counts as failed (retry, then dead letter) and its lane slot is freed at once;
 * - entries this process holds (queued, in hand, waiting to retry) are kept fresh in the
 *   stream (`store.touchPending`), so only a dead consumer's entries go idle: after
 *   `claimIdleMs` (default 5 s) another consumer (any node) claims them, a batch at a time,
 *   and they are handled concurrently in their lanes like new ones;
 * - a failing handler is retried with backoff, locally and without holding up the events
 *   behind it; after `maxAttempts` attempts the entry goes to the dead-letter list
 *   (logged, counted, listable with `store.listDeadLetters` and `GET /api/ops/dead-letters`,
 *   put back with `store.replayDeadLetters` / `POST /api/ops/dead-letters/replay`);
 * - each entry's body is parsed once, here (`parseEvent`), into a typed event that the
 *   handler of its type gets; an event whose payload does not match its type's schema is
 *   dead-lettered at once (retrying cannot fix it); unknown types and types without a
 *   handler are acked and counted as `ignored`;
 * - `stop()` is bounded (`stopTimeoutMs`): it stops reading, drops what waits (still
 *   pending: claimed later), lets handlers in hand finish until the limit, then aborts the
 *   rest and leaves them pending for another consumer.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { EventPayloadError, parseEvent, type EventOf, type KnownEvent, type KnownEventType, type ParsedEvent } from '../../shared/events.ts';
import { eventTypeLabel, type FoundationMetrics } from '../ops/metrics.ts';
import type { Store, StreamEntry } from '../store/store.ts';

/** The consumer group of the bridge's workers. */
export const WORKER_GROUP = 'workers';

/** A received event of a known type, validated and typed (`shared/events.ts`). */
export type WebhookEvent = KnownEvent;

/** What a handler gets beside the event: `signal` aborts at its deadline or at a bounded stop. */
export interface HandlerContext {
  signal: AbortSignal;
}

/**
 * Handles one event type, getting that type's event (typed payload). Throwing means
 * "failed, retry"; it must be safe to run twice. It should pass `ctx.signal` to anything
 * slow (Service requests, downloads): past the lane's deadline the attempt counts as
 * failed whether or not the handler has returned.
 */
export type EventHandler<T extends KnownEventType> = (event: EventOf<T>, entry: StreamEntry, ctx: HandlerContext) => Promise<void>;

/** Handlers by event type, each typed for its own type's event. */
export type HandlerRegistry = { [T in KnownEventType]?: EventHandler<T> };

/** The handler registered for `type`, bound to its event (undefined when none is). */
function handlerFor<T extends KnownEventType>(handlers: HandlerRegistry, type: T, event: EventOf<T>, entry: StreamEntry): ((ctx: HandlerContext) => Promise<void>) | undefined {
  const h = Object.hasOwn(handlers, type) ? handlers[type] : undefined;
  return h ? (ctx) => h(event, entry, ctx) : undefined;
}

/** The lanes: each has its own limit of handlers in flight and its own deadline. */
export type Lane = 'calls' | 'media' | 'other';
export const LANES: readonly Lane[] = ['calls', 'media', 'other'];

const MEDIA_TYPES = new Set(['chat.call.recording.updated', 'chat.call.transcription.updated']);

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
}

/** Calls are many and quick; media downloads are few and slow (a long recording). */
export const LANE_DEFAULTS: Readonly<Record<Lane, Required<LaneOptions>>> = {
  calls: { limit: 64, deadlineMs: 15_000 },
  media: { limit: 8, deadlineMs: 60_000 },
  other: { limit: 16, deadlineMs: 30_000 },
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
  /** Entries read but waiting for a lane slot before reading pauses (bounds memory). Default 1000. */
  maxQueued?: number;
  /** Entries read (or claimed) per round trip. Default 16 (claims: 4 × that). */
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
interface Job {
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
class StoppingError extends Error {
  constructor() {
    super('workers stopping: event left pending for another consumer');
    this.name = 'StoppingError';
  }
}

export function createWorkers(opts: WorkersOptions): Workers {
  const group = opts.group ?? WORKER_GROUP;
  const base = opts.name ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const n = Math.max(1, opts.concurrency ?? 1);
  const consumers = Array.from({ length: n }, (_, i) => `${base}-${i}`);
  const batch = opts.batchSize ?? 16;
  const claimBatch = batch * 4;
  const blockMs = opts.blockMs ?? 1000;
  const claimIdleMs = opts.claimIdleMs ?? 5_000;
  const claimEveryMs = opts.claimEveryMs ?? 1_000;
  const touchEveryMs = Math.max(10, Math.floor(claimIdleMs / 3));
  const retryBase = opts.retryDelayMs ?? 200;
  const maxQueued = opts.maxQueued ?? 1000;
  const stopTimeoutMs = opts.stopTimeoutMs ?? 5_000;
  const { store, log, metrics: m } = opts;

  const lanes = Object.fromEntries(
    LANES.map((l) => [
      l,
      {
        limit: Math.max(1, opts.lanes?.[l]?.limit ?? LANE_DEFAULTS[l].limit),
        deadlineMs: opts.lanes?.[l]?.deadlineMs ?? LANE_DEFAULTS[l].deadlineMs,
        active: 0,
        queue: [] as Job[],
      },
    ]),
  ) as Record<Lane, { limit: number; deadlineMs: number; active: number; queue: Job[] }>;
  const queued = () => lanes.calls.queue.length + lanes.media.queue.length + lanes.other.queue.length;

  let running = false;
  let loops: Promise<void>[] = [];
  /** Handlers in hand: their abort controllers (aborted at a stop past its limit). */
  const inHand = new Map<Promise<void>, AbortController>();
  const retryTimers = new Set<NodeJS.Timeout>();
  /** Wakes loops that sleep (reader waiting for room, claim and touch pauses) at stop. */
  const sleepers = new Set<() => void>();
  /** Of those, the readers waiting for room: woken as each handler finishes. */
  const waitingForRoom = new Set<() => void>();
  const nap = (ms: number, forRoom = false) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(t);
        sleepers.delete(done);
        waitingForRoom.delete(done);
        resolve();
      };
      const t = setTimeout(done, ms);
      sleepers.add(done);
      if (forRoom) waitingForRoom.add(done);
    });
  const wakeAll = () => {
    for (const w of [...sleepers]) w();
  };
  /**
   * Stream ids this process is handling, has queued or will retry, with the consumer they
   * are pending for. They are touched so they never look idle, and a claim that still
   * returns one (a touch came late) must not hand it to us a second time: skip it there.
   */
  const held = new Map<string, string>();
  /**
   * Stream ids this process finished (the ack or dead letter went through), with when: a
   * claim sent before that ack can still answer with them. Kept for `claimIdleMs`, oldest
   * first. An entry whose ack failed is not in it: it stays pending and the claim must
   * hand it back.
   */
  const finished = new Map<string, number>();
  function markFinished(streamId: string): void {
    const now = Date.now();
    finished.set(streamId, now);
    for (const [id, at] of finished) {
      if (now - at < claimIdleMs) break;
      finished.delete(id);
    }
  }
  let lastStoreError = '';
  /** The last read's failure (cleared by a read that works): intake is not being processed. */
  let readFailure: string | undefined;

  function storeTrouble(err: unknown): void {
    const msg = (err as Error)?.message ?? String(err);
    if (msg !== lastStoreError) log.error({ err }, 'workers: store error, retrying');
    lastStoreError = msg;
  }

  async function deadLetter(entry: StreamEntry, error: string, attempts: number): Promise<void> {
    await store.deadLetter(group, entry, error, attempts);
    markFinished(entry.streamId);
    m.deadLettered.inc({ type: eventTypeLabel(entry.type) });
    m.webhookEvents.inc({ type: eventTypeLabel(entry.type), outcome: 'dead_lettered' });
    const replayOf = entry.replayOf !== undefined ? { replayOf: entry.replayOf } : {};
    log.error({ eventId: entry.eventId, type: entry.type, streamId: entry.streamId, attempts, error, ...replayOf }, 'webhook event dead-lettered');
  }

  /** Put a job in its lane and start what the lane has room for. */
  function dispatch(job: Job): void {
    held.set(job.entry.streamId, job.consumer);
    const lane = laneOf(job.entry.type);
    lanes[lane].queue.push(job);
    pump(lane);
  }

  function pump(name: Lane): void {
    const lane = lanes[name];
    while (running && lane.active < lane.limit && lane.queue.length > 0) {
      const job = lane.queue.shift()!;
      lane.active++;
      const ctl = new AbortController();
      const p: Promise<void> = handle(job, name, lane.deadlineMs, ctl)
        .catch((err: unknown) => {
          // The ack or dead letter did not go through: the entry stays pending, and once
          // it is no longer held the claim hands it back.
          held.delete(job.entry.streamId);
          storeTrouble(err);
        })
        .finally(() => {
          inHand.delete(p);
          lane.active--;
          pump(name);
          // A reader may wait for room (only it: the claim and touch loops keep their pace).
          for (const w of [...waitingForRoom]) w();
        });
      inHand.set(p, ctl);
    }
  }

  /** Run the handler against the lane's deadline (and the stop signal). */
  async function runHandler(run0: (ctx: HandlerContext) => Promise<void>, name: Lane, deadlineMs: number, ctl: AbortController): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<never>((_, reject) => {
      timer = setTimeout(() => ctl.abort(new HandlerDeadlineError(name, deadlineMs)), deadlineMs);
      ctl.signal.addEventListener('abort', () => reject(ctl.signal.reason), { once: true });
    });
    const run = Promise.resolve().then(() => run0({ signal: ctl.signal }));
    // A handler abandoned at its deadline may still settle later: nobody listens then.
    run.catch(() => undefined);
    limit.catch(() => undefined);
    try {
      await Promise.race([run, limit]);
    } finally {
      clearTimeout(timer);
    }
  }

  async function handle(job: Job, name: Lane, deadlineMs: number, ctl: AbortController): Promise<void> {
    const { entry, attempt } = job;
    let retrying = false;
    try {
      // The one place a stream entry's body is parsed and validated.
      let event: ParsedEvent;
      try {
        event = parseEvent(JSON.parse(entry.body));
      } catch (err) {
        const why = err instanceof EventPayloadError ? err.message : `unreadable body: ${(err as Error).message}`;
        await deadLetter(entry, why, attempt);
        return;
      }
      const handler = event.known ? handlerFor(opts.handlers, event.type, event, entry) : undefined;
      if (!handler) {
        await store.ack(group, [entry.streamId]);
        markFinished(entry.streamId);
        m.webhookEvents.inc({ type: eventTypeLabel(entry.type), outcome: 'ignored' });
        if (!event.known) log.info({ eventId: entry.eventId, type: entry.type }, 'unknown webhook event type: stored and ignored');
        return;
      }
      try {
        await runHandler(handler, name, deadlineMs, ctl);
      } catch (err) {
        if (err instanceof StoppingError) {
          // Not a failure of the event: it stays pending and another consumer claims it.
          log.warn({ eventId: entry.eventId, type: entry.type }, err.message);
          return;
        }
        const message = (err as Error)?.message ?? String(err);
        m.webhookEvents.inc({ type: eventTypeLabel(entry.type), outcome: 'failed' });
        if (attempt >= opts.maxAttempts) {
          await deadLetter(entry, message, attempt);
        } else {
          const delay = Math.min(retryBase * 2 ** (attempt - 1), Math.max(retryBase, claimIdleMs / 4));
          log.warn({ err, eventId: entry.eventId, type: entry.type, attempt, retryInMs: delay }, 'webhook handler failed, will retry');
          retrying = true;
          const t = setTimeout(() => {
            retryTimers.delete(t);
            if (running) dispatch({ ...job, attempt: attempt + 1 });
          }, delay);
          retryTimers.add(t);
        }
        return;
      }
      await store.ack(group, [entry.streamId]);
      markFinished(entry.streamId);
      m.webhookEvents.inc({ type: eventTypeLabel(entry.type), outcome: 'processed' });
    } finally {
      if (!retrying) held.delete(entry.streamId);
    }
  }

  /** Read new entries and hand them to the lanes; never waits for handlers, only for room. */
  async function readLoop(consumer: string): Promise<void> {
    while (running) {
      try {
        if (queued() >= maxQueued) {
          await nap(blockMs, true);
          continue;
        }
        const entries = await store.readGroup(group, consumer, batch, blockMs);
        lastStoreError = '';
        readFailure = undefined;
        // Handlers cope with events of one call arriving together and out of order (the
        // Service reorders them), so handing them out side by side is safe.
        for (const e of entries) dispatch({ consumer, entry: e, attempt: e.deliveries });
      } catch (err) {
        if (!running) break;
        storeTrouble(err);
        readFailure = (err as Error)?.message ?? String(err);
        await nap(500);
      }
    }
  }

  /** Claim a dead consumer's entries, a batch at a time, straight into the lanes. */
  async function claimLoop(consumer: string): Promise<void> {
    while (running) {
      let full = false;
      try {
        if (queued() < maxQueued) {
          const stale = await store.claimStale(group, consumer, claimIdleMs, claimBatch);
          full = stale.length >= claimBatch;
          for (const e of stale) {
            if (!running) break;
            if (held.has(e.streamId)) {
              held.set(e.streamId, consumer); // ours already; pending for `consumer` now
              continue;
            }
            if (finished.has(e.streamId)) continue;
            log.warn({ eventId: e.eventId, type: e.type, deliveries: e.deliveries }, 'claimed a stale webhook event from another consumer');
            dispatch({ consumer, entry: e, attempt: e.deliveries });
          }
        }
      } catch (err) {
        if (!running) break;
        storeTrouble(err);
      }
      if (running && !full) await nap(claimEveryMs);
    }
  }

  /** Keep what this process holds fresh in the stream, so no live entry looks abandoned. */
  async function touchLoop(): Promise<void> {
    while (running) {
      await nap(touchEveryMs);
      if (!running || held.size === 0) continue;
      const by = new Map<string, string[]>();
      for (const [id, c] of held) (by.get(c) ?? by.set(c, []).get(c)!).push(id);
      for (const [c, ids] of by) await store.touchPending(group, c, ids).catch(storeTrouble);
    }
  }

  return {
    consumers,
    async start() {
      if (running) return;
      await store.ensureGroup(group);
      running = true;
      loops = [...consumers.map((c) => readLoop(c)), claimLoop(consumers[0]!), touchLoop()];
      log.info({ group, consumers, lanes: Object.fromEntries(LANES.map((l) => [l, { limit: lanes[l].limit, deadlineMs: lanes[l].deadlineMs }])) }, 'webhook workers started');
    },
    async stop() {
      if (!running) {
        await Promise.all(loops);
        return;
      }
      running = false;
      const until = Date.now() + stopTimeoutMs;
      wakeAll();
      for (const t of retryTimers) clearTimeout(t);
      retryTimers.clear();
      // What waits for a slot or a retry stays pending in the stream: claimed later.
      for (const l of LANES) for (const j of lanes[l].queue.splice(0)) held.delete(j.entry.streamId);
      const settled = (ps: Promise<unknown>[]) =>
        Promise.race([Promise.all(ps).then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), Math.max(0, until - Date.now())).unref())]);
      if (!(await settled([...inHand.keys()]))) {
        log.warn({ inFlight: inHand.size, stopTimeoutMs }, 'workers: stop limit reached, aborting the handlers in hand (their events stay pending)');
        for (const ctl of inHand.values()) ctl.abort(new StoppingError());
        await settled([...inHand.keys()]);
      }
      // A read blocked in the store returns within `blockMs`.
      await settled(loops);
      log.info({ group }, 'webhook workers stopped');
    },
    inFlight: () => inHand.size,
    problem: () => (readFailure !== undefined ? `reading the event stream fails: ${readFailure}` : undefined),
  };
}
