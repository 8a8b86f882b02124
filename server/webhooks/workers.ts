/**
 * Webhook workers: read the event stream through a consumer group and hand each event to
 * the handler registered for its type.
 *
 * - at least once: an entry is acked only after its handler resolved; handlers must be
 *   idempotent (the Service repeats events anyway);
 * - a consumer that dies leaves its entries pending; after `claimIdleMs` another consumer
 *   (any node) claims them;
 * - a failing handler is retried with backoff, locally and without holding up the events
 *   behind it; after `maxAttempts` attempts the entry goes to the dead-letter list
 *   (logged, counted, listable with `store.listDeadLetters` and `GET /api/ops/dead-letters`,
 *   put back with `store.replayDeadLetters` / `POST /api/ops/dead-letters/replay`);
 * - an event whose payload does not match its type's schema is dead-lettered at once
 *   (retrying cannot fix it); unknown types and types without a handler are acked and
 *   counted as `ignored`.
 */
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { EventPayloadError, parseEvent, type Envelope } from '../../shared/events.ts';
import { eventTypeLabel, type FoundationMetrics } from '../ops/metrics.ts';
import type { Store, StreamEntry } from '../store/store.ts';

/** The consumer group of the bridge's workers. */
export const WORKER_GROUP = 'workers';

/** A received event: the validated envelope with its payload object beside it. */
export type WebhookEvent = Envelope & Record<string, unknown>;

/** Handles one event type. Throwing means "failed, retry"; it must be safe to run twice. */
export type EventHandler = (event: WebhookEvent, entry: StreamEntry) => Promise<void>;

export type HandlerRegistry = Record<string, EventHandler>;

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
  /** Consumers (independent read loops) in this process: a slow handler holds up only its own. Default 4. */
  concurrency?: number;
  /** Entries read per round trip. Default 16. */
  batchSize?: number;
  /** How long one read waits for new entries. Default 1000 ms (bounds stop latency). */
  blockMs?: number;
  /** Pending entries idle this long belong to a dead or stuck consumer. Default 30000 ms. */
  claimIdleMs?: number;
  /** How often to look for them. Default 5000 ms. */
  claimEveryMs?: number;
  /** First local retry delay; doubles per attempt, capped at `claimIdleMs / 4`. Default 200 ms. */
  retryDelayMs?: number;
}

export interface Workers {
  /** Consumer names of this process. */
  readonly consumers: readonly string[];
  start(): Promise<void>;
  /** Stop reading, finish the events in hand, return. Safe to call twice. */
  stop(): Promise<void>;
  /** Events currently being handled (for shutdown and tests). */
  inFlight(): number;
}

interface Retry {
  entry: StreamEntry;
  attempt: number;
  due: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function createWorkers(opts: WorkersOptions): Workers {
  const group = opts.group ?? WORKER_GROUP;
  const base = opts.name ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const n = Math.max(1, opts.concurrency ?? 4);
  const consumers = Array.from({ length: n }, (_, i) => `${base}-${i}`);
  const batch = opts.batchSize ?? 16;
  const blockMs = opts.blockMs ?? 1000;
  const claimIdleMs = opts.claimIdleMs ?? 30_000;
  const claimEveryMs = opts.claimEveryMs ?? 5_000;
  const retryBase = opts.retryDelayMs ?? 200;
  const { store, log, metrics: m } = opts;

  let running = false;
  let loops: Promise<void>[] = [];
  let inFlight = 0;
  const retries = new Map<string, Retry[]>(consumers.map((c) => [c, []]));
  /**
   * Stream ids this process is handling or will retry. They stay pending in the stream
   * meanwhile, so once idle past `claimIdleMs` (slow handler, retries on a busy machine)
   * the claim would hand them to us a second time: skip them there.
   */
  const held = new Set<string>();
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

  async function handle(consumer: string, entry: StreamEntry, attempt: number): Promise<void> {
    inFlight++;
    held.add(entry.streamId);
    let retrying = false;
    try {
      let event: WebhookEvent;
      let known: boolean;
      try {
        const json = JSON.parse(entry.body) as WebhookEvent;
        const parsed = parseEvent(json);
        known = parsed.known;
        event = json;
        if (parsed.known) event[parsed.payloadName] = parsed.payload;
      } catch (err) {
        const why = err instanceof EventPayloadError ? err.message : `unreadable body: ${(err as Error).message}`;
        await deadLetter(entry, why, attempt);
        return;
      }
      const handler = Object.hasOwn(opts.handlers, entry.type) ? opts.handlers[entry.type] : undefined;
      if (!handler) {
        await store.ack(group, [entry.streamId]);
        markFinished(entry.streamId);
        m.webhookEvents.inc({ type: eventTypeLabel(entry.type), outcome: 'ignored' });
        if (!known) log.info({ eventId: entry.eventId, type: entry.type }, 'unknown webhook event type: stored and ignored');
        return;
      }
      try {
        await handler(event, entry);
      } catch (err) {
        const message = (err as Error)?.message ?? String(err);
        m.webhookEvents.inc({ type: eventTypeLabel(entry.type), outcome: 'failed' });
        if (attempt >= opts.maxAttempts) {
          await deadLetter(entry, message, attempt);
        } else {
          const delay = Math.min(retryBase * 2 ** (attempt - 1), Math.max(retryBase, claimIdleMs / 4));
          log.warn({ err, eventId: entry.eventId, type: entry.type, attempt, retryInMs: delay }, 'webhook handler failed, will retry');
          retries.get(consumer)!.push({ entry, attempt: attempt + 1, due: Date.now() + delay });
          retrying = true;
        }
        return;
      }
      await store.ack(group, [entry.streamId]);
      markFinished(entry.streamId);
      m.webhookEvents.inc({ type: eventTypeLabel(entry.type), outcome: 'processed' });
    } finally {
      inFlight--;
      if (!retrying) held.delete(entry.streamId);
    }
  }

  async function loop(consumer: string, claims: boolean): Promise<void> {
    let nextClaim = claims ? Date.now() : Infinity;
    const mine = retries.get(consumer)!;
    while (running) {
      try {
        const now = Date.now();
        // Retries that are due, oldest first.
        if (mine.length > 0) {
          mine.sort((a, b) => a.due - b.due);
          while (mine.length > 0 && mine[0]!.due <= Date.now() && running) {
            const r = mine.shift()!;
            await handle(consumer, r.entry, r.attempt);
          }
        }
        if (now >= nextClaim) {
          nextClaim = now + claimEveryMs;
          const stale = await store.claimStale(group, consumer, claimIdleMs, batch);
          for (const e of stale) {
            if (held.has(e.streamId) || finished.has(e.streamId)) continue;
            log.warn({ eventId: e.eventId, type: e.type, deliveries: e.deliveries }, 'claimed a stale webhook event from another consumer');
            await handle(consumer, e, e.deliveries);
          }
        }
        if (!running) break;
        let wait = blockMs;
        if (mine.length > 0) wait = Math.min(wait, Math.max(1, Math.min(...mine.map((r) => r.due)) - Date.now()));
        if (claims) wait = Math.min(wait, Math.max(1, nextClaim - Date.now()));
        const entries = await store.readGroup(group, consumer, batch, wait);
        lastStoreError = '';
        // Handled together, not one after another: a slow handler (a Service request, a
        // store round trip) must not hold up the events read with it. Handlers already
        // cope with events of one call arriving together (several consumers read the
        // stream) and out of order (the Service reorders them).
        await Promise.all(entries.map((e) => handle(consumer, e, e.deliveries)));
      } catch (err) {
        if (!running) break;
        storeTrouble(err);
        await sleep(500);
      }
    }
  }

  return {
    consumers,
    async start() {
      if (running) return;
      await store.ensureGroup(group);
      running = true;
      loops = consumers.map((c, i) => loop(c, i === 0));
      log.info({ group, consumers }, 'webhook workers started');
    },
    async stop() {
      if (!running) {
        await Promise.all(loops);
        return;
      }
      running = false;
      await Promise.all(loops);
      log.info({ group }, 'webhook workers stopped');
    },
    inFlight: () => inFlight,
  };
}
