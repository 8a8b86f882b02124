/**
 * Webhook workers: read the event stream and hand each event to the handler registered for
 * its type.
 *
 * Lanes (why: a slow handler must never hold up a call). Every event type belongs to one
 * lane — `calls` (`chat.call.*` signaling), `media` (recording / transcription downloads),
 * `other` (messages, permission replies, anything else) — and each lane has its own
 * consumer group on the one stream (`workers:calls`, `workers:media`, `workers:other`), its
 * own readers, its own limit of handlers in flight and its own handler deadline. A lane's
 * reader reads every entry and acks the other lanes' at once in its group (they are theirs
 * to handle), keeps its own, and reads on as soon as it has handed them out (it never waits
 * for handlers). Entries waiting for a slot are held in memory (pending in the stream
 * meanwhile); a lane's reader pauses only when `maxQueued` of ITS entries wait, which
 * bounds memory per lane. So a `chat.call.connect` behind 50 hung downloads or thousands of
 * message updates waiting for the database is read and started at once: no lane's backlog
 * stops another lane's reading.
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
import { EventPayloadError, parseEvent, type ParsedEvent } from '../../shared/events.ts';
import { eventTypeLabel } from '../ops/metrics.ts';
import type { StreamEntry } from '../store/store.ts';
import { fullJitter } from '../../shared/backoff.ts';
import { WORKER_GROUP, handlerFor, LANES, laneOf, LANE_DEFAULTS, HandlerDeadlineError, StoppingError, laneGroup, type HandlerContext, type Lane, type WorkersOptions, type Workers, type Job } from './lanes.ts';
export { workersLag, WORKER_GROUP, LANES, laneOf, LANE_DEFAULTS, HandlerDeadlineError, laneGroup, type WebhookEvent, type HandlerContext, type EventHandler, type HandlerRegistry, type Lane, type LaneOptions, type WorkersOptions, type Workers } from './lanes.ts';

/** One lane: its group on the stream, its readers, its slots, what it holds. */
interface LaneState {
  name: Lane;
  group: string;
  limit: number;
  deadlineMs: number;
  readGapMs: number;
  active: number;
  queue: Job[];
  /**
   * Stream ids this lane is handling, has queued or will retry, with the consumer they are
   * pending for. They are touched so they never look idle, and a claim that still returns
   * one (a touch came late) must not hand it to us a second time: skip it there.
   */
  held: Map<string, string>;
  /**
   * Stream ids this lane finished (the ack or dead letter went through), with when: a claim
   * sent before that ack can still answer with them. Kept for `claimIdleMs`, oldest first.
   * An entry whose ack failed is not in it: it stays pending and the claim must hand it back.
   */
  finished: Map<string, number>;
  /** The last read's failure (cleared by a read that works). */
  readFailure: string | undefined;
}

export function createWorkers(opts: WorkersOptions): Workers {
  const group = opts.group ?? WORKER_GROUP;
  const base = opts.name ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const n = Math.max(1, opts.concurrency ?? 1);
  const consumers = Array.from({ length: n }, (_, i) => `${base}-${i}`);
  const batch = opts.batchSize ?? 16;
  const claimBatch = batch * 4;
  const readBatch = batch * 8;
  const blockMs = opts.blockMs ?? 1000;
  const claimIdleMs = opts.claimIdleMs ?? 5_000;
  const claimEveryMs = opts.claimEveryMs ?? 1_000;
  const touchEveryMs = Math.max(10, Math.floor(claimIdleMs / 3));
  const retryBase = opts.retryDelayMs ?? 200;
  const maxQueued = opts.maxQueued ?? 1000;
  const stopTimeoutMs = opts.stopTimeoutMs ?? 5_000;
  const trimEveryMs = opts.trimEveryMs ?? 5_000;
  const keepProcessedMs = opts.keepProcessedMs ?? 120_000;
  const { store, log, metrics: m } = opts;

  const lanes = Object.fromEntries(
    LANES.map((l): [Lane, LaneState] => [
      l,
      {
        name: l,
        group: laneGroup(l, group),
        limit: Math.max(1, opts.lanes?.[l]?.limit ?? LANE_DEFAULTS[l].limit),
        deadlineMs: opts.lanes?.[l]?.deadlineMs ?? LANE_DEFAULTS[l].deadlineMs,
        readGapMs: opts.lanes?.[l]?.readGapMs ?? LANE_DEFAULTS[l].readGapMs,
        active: 0,
        queue: [],
        held: new Map(),
        finished: new Map(),
        readFailure: undefined,
      },
    ]),
  ) as Record<Lane, LaneState>;

  let running = false;
  let loops: Promise<void>[] = [];
  /** Handlers in hand: their abort controllers (aborted at a stop past its limit). */
  const inHand = new Map<Promise<void>, AbortController>();
  const retryTimers = new Set<NodeJS.Timeout>();
  /** Wakes loops that sleep (reader waiting for room, claim and touch pauses) at stop. */
  const sleepers = new Set<() => void>();
  /** Of those, the readers waiting for room in their lane: woken as its handlers finish. */
  const waitingForRoom = new Map<Lane, Set<() => void>>(LANES.map((l) => [l, new Set()]));
  const nap = (ms: number, forRoom?: Lane) =>
    new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(t);
        sleepers.delete(done);
        if (forRoom) waitingForRoom.get(forRoom)!.delete(done);
        resolve();
      };
      const t = setTimeout(done, ms);
      sleepers.add(done);
      if (forRoom) waitingForRoom.get(forRoom)!.add(done);
    });
  const wakeAll = () => {
    for (const w of [...sleepers]) w();
  };
  function markFinished(lane: LaneState, streamId: string): void {
    const now = Date.now();
    lane.finished.set(streamId, now);
    for (const [id, at] of lane.finished) {
      if (now - at < claimIdleMs) break;
      lane.finished.delete(id);
    }
  }
  let lastStoreError = '';

  function storeTrouble(err: unknown): void {
    const msg = (err as Error)?.message ?? String(err);
    if (msg !== lastStoreError) log.error({ err }, 'workers: store error, retrying');
    lastStoreError = msg;
  }

  async function deadLetter(lane: LaneState, entry: StreamEntry, error: string, attempts: number): Promise<void> {
    await store.deadLetter(lane.group, entry, error, attempts);
    markFinished(lane, entry.streamId);
    m.deadLettered.inc({ type: eventTypeLabel(entry.type) });
    m.webhookEvents.inc({ type: eventTypeLabel(entry.type), outcome: 'dead_lettered' });
    const replayOf = entry.replayOf !== undefined ? { replayOf: entry.replayOf } : {};
    log.error({ eventId: entry.eventId, type: entry.type, streamId: entry.streamId, attempts, error, ...replayOf }, 'webhook event dead-lettered');
  }

  /** Put a job in its lane and start what the lane has room for. */
  function dispatch(lane: LaneState, job: Job): void {
    lane.held.set(job.entry.streamId, job.consumer);
    lane.queue.push(job);
    pump(lane);
  }

  function pump(lane: LaneState): void {
    while (running && lane.active < lane.limit && lane.queue.length > 0) {
      const job = lane.queue.shift()!;
      lane.active++;
      const ctl = new AbortController();
      const p: Promise<void> = handle(lane, job, ctl)
        .catch((err: unknown) => {
          // The ack or dead letter did not go through: the entry stays pending, and once
          // it is no longer held the claim hands it back.
          lane.held.delete(job.entry.streamId);
          storeTrouble(err);
        })
        .finally(() => {
          inHand.delete(p);
          lane.active--;
          pump(lane);
          // This lane's reader may wait for room (only it: the claim and touch loops keep their pace).
          for (const w of [...waitingForRoom.get(lane.name)!]) w();
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
    const t0 = performance.now();
    try {
      await Promise.race([run, limit]);
    } finally {
      clearTimeout(timer);
      m.handlerSeconds.observe((performance.now() - t0) / 1000, { lane: name });
    }
  }

  async function handle(lane: LaneState, job: Job, ctl: AbortController): Promise<void> {
    const { entry, attempt } = job;
    let retrying = false;
    try {
      // The one place a stream entry's body is parsed and validated.
      let event: ParsedEvent;
      try {
        event = parseEvent(JSON.parse(entry.body));
      } catch (err) {
        const why = err instanceof EventPayloadError ? err.message : `unreadable body: ${(err as Error).message}`;
        await deadLetter(lane, entry, why, attempt);
        return;
      }
      const handler = event.known ? handlerFor(opts.handlers, event.type, event, entry) : undefined;
      if (!handler) {
        await store.ack(lane.group, [entry.streamId]);
        markFinished(lane, entry.streamId);
        m.webhookEvents.inc({ type: eventTypeLabel(entry.type), outcome: 'ignored' });
        if (!event.known) log.info({ eventId: entry.eventId, type: entry.type }, 'unknown webhook event type: stored and ignored');
        return;
      }
      try {
        await runHandler(handler, lane.name, lane.deadlineMs, ctl);
      } catch (err) {
        if (err instanceof StoppingError) {
          // Not a failure of the event: it stays pending and another consumer claims it.
          log.warn({ eventId: entry.eventId, type: entry.type }, err.message);
          return;
        }
        const message = (err as Error)?.message ?? String(err);
        m.webhookEvents.inc({ type: eventTypeLabel(entry.type), outcome: 'failed' });
        if (attempt >= opts.maxAttempts) {
          await deadLetter(lane, entry, message, attempt);
        } else {
          const delay = fullJitter({ baseMs: retryBase * 2, maxMs: Math.max(retryBase, claimIdleMs / 4), minMs: retryBase }).nextDelay(attempt - 1);
          log.warn({ err, eventId: entry.eventId, type: entry.type, attempt, retryInMs: delay }, 'webhook handler failed, will retry');
          retrying = true;
          const t = setTimeout(() => {
            retryTimers.delete(t);
            if (running) dispatch(lane, { ...job, attempt: attempt + 1 });
          }, delay);
          retryTimers.add(t);
        }
        return;
      }
      await store.ack(lane.group, [entry.streamId]);
      markFinished(lane, entry.streamId);
      m.webhookEvents.inc({ type: eventTypeLabel(entry.type), outcome: 'processed' });
    } finally {
      if (!retrying) lane.held.delete(entry.streamId);
    }
  }

  /**
   * Take what a read or claim of this lane's group returned: its own entries into the lane,
   * the other lanes' entries acked at once in this group (they are theirs to handle).
   */
  function sort(lane: LaneState, consumer: string, entries: StreamEntry[], claimed: boolean): void {
    const foreign: string[] = [];
    for (const e of entries) {
      if (laneOf(e.type) !== lane.name) {
        foreign.push(e.streamId);
        continue;
      }
      if (claimed) {
        if (!running) break;
        if (lane.held.has(e.streamId)) {
          lane.held.set(e.streamId, consumer); // ours already; pending for `consumer` now
          continue;
        }
        if (lane.finished.has(e.streamId)) continue;
        log.warn({ eventId: e.eventId, type: e.type, deliveries: e.deliveries }, 'claimed a stale webhook event from another consumer');
      }
      dispatch(lane, { consumer, entry: e, attempt: e.deliveries });
    }
    // Not awaited (the next read goes at once) and not held: an ack that fails leaves them
    // pending, and the claim hands them back to be acked again.
    if (foreign.length > 0) store.ack(lane.group, foreign).catch(storeTrouble);
  }

  /**
   * Read new entries of this lane's group and hand its own to the lane; never waits for
   * handlers, only for room in this lane. Every lane reads the whole stream through its own
   * group, so a backlog of one kind of event (thousands of message updates waiting for the
   * database) never stops the reading of another (a call's connect).
   */
  async function readLoop(lane: LaneState, consumer: string): Promise<void> {
    while (running) {
      try {
        if (lane.queue.length >= maxQueued) {
          await nap(blockMs, lane.name);
          continue;
        }
        const entries = await store.readGroup(lane.group, consumer, readBatch, blockMs);
        lastStoreError = '';
        lane.readFailure = undefined;
        // Handlers cope with events of one call arriving together and out of order (the
        // Service reorders them), so handing them out side by side is safe.
        sort(lane, consumer, entries, false);
        // Caught up: let a trickle gather into one read (LANE_DEFAULTS.readGapMs).
        if (lane.readGapMs > 0 && entries.length > 0 && entries.length < readBatch && running) await nap(lane.readGapMs);
      } catch (err) {
        if (!running) break;
        storeTrouble(err);
        lane.readFailure = (err as Error)?.message ?? String(err);
        await nap(500);
      }
    }
  }

  /** Claim a dead consumer's entries of this lane's group, a batch at a time, straight into the lane. */
  async function claimLoop(lane: LaneState, consumer: string): Promise<void> {
    while (running) {
      let full = false;
      try {
        if (lane.queue.length < maxQueued) {
          const stale = await store.claimStale(lane.group, consumer, claimIdleMs, claimBatch);
          full = stale.length >= claimBatch;
          sort(lane, consumer, stale, true);
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
      if (!running) continue;
      for (const lane of LANES.map((l) => lanes[l])) {
        if (lane.held.size === 0) continue;
        const by = new Map<string, string[]>();
        for (const [id, c] of lane.held) (by.get(c) ?? by.set(c, []).get(c)!).push(id);
        for (const [c, ids] of by) await store.touchPending(lane.group, c, ids).catch(storeTrouble);
      }
    }
  }

  /**
   * Drop what every lane has processed (older than `keepProcessedMs`) from the stream: raw
   * events carry message text, and the stream's MAXLEN (1,000,000) alone kept a million of
   * them. Dedupe keys and dead letters live outside the stream; what a lane still holds or
   * has not read stays. Every node does it; it is idempotent.
   */
  async function trimLoop(): Promise<void> {
    const groups = LANES.map((l) => lanes[l].group);
    while (running) {
      await nap(trimEveryMs);
      if (!running) break;
      await store.trimProcessed(groups, Date.now() - keepProcessedMs).catch(storeTrouble);
    }
  }

  return {
    consumers,
    async start() {
      if (running) return;
      // A store that a version before lanes worked on: each lane's group starts where the one
      // group all lanes shared stands (nothing it finished is handled again, nothing pending is skipped).
      for (const l of LANES) await store.ensureGroup(lanes[l].group, { from: group });
      running = true;
      loops = [...LANES.flatMap((l) => [...consumers.map((c) => readLoop(lanes[l], c)), claimLoop(lanes[l], consumers[0]!)]), touchLoop(), ...(trimEveryMs > 0 ? [trimLoop()] : [])];
      log.info({ consumers, lanes: Object.fromEntries(LANES.map((l) => [l, { group: lanes[l].group, limit: lanes[l].limit, deadlineMs: lanes[l].deadlineMs }])) }, 'webhook workers started');
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
      for (const l of LANES) for (const j of lanes[l].queue.splice(0)) lanes[l].held.delete(j.entry.streamId);
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
    problem: () => {
      const failing = LANES.filter((l) => lanes[l].readFailure !== undefined);
      return failing.length > 0 ? `reading the event stream fails (${failing.join(', ')}): ${lanes[failing[0]!].readFailure}` : undefined;
    },
  };
}
