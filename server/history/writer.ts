/**
 * The history writer: queue → database, off the call path.
 *
 * Reads a batch, writes it in ONE transaction, acks after the commit. While the database
 * is down the batch stays in hand (and in the queue, unacked) and is retried with backoff
 * (100 ms doubling to 5 s); nothing is skipped, and since every fact is idempotent a fact
 * written twice (ack lost, or claimed by a second node) changes nothing. A fact that is
 * not valid JSON or not a valid fact can never be written: it is logged, counted and
 * acked so it does not hold up the rest.
 *
 * A valid fact the database refuses to store (a data error, SQLSTATE class 22 and the like:
 * a NUL in a text, a lone surrogate in JSON) would fail its batch for ever. When a batch
 * fails with a data error, the batch is halved until the refused facts stand alone (the
 * others written, in order); each is set aside as a history dead letter (`queue.setAside`:
 * kept in Redis or memory, counted, listed at `GET /api/ops/history-dead-letters`) and its
 * entry acked. Connection errors are never data errors: that batch waits and is retried.
 */
import type { Logger } from '../log/logger.ts';
import type { Metrics } from '../ops/metrics.ts';
import { safeError } from './db.ts';
import { isDataError } from './errors.ts';
import type { HistoryDeadLetter, HistoryQueue, QueueLag, QueuedFact } from './queue.ts';
import { HistoryFact, type ParsedFact } from './schema.ts';
import type { HistoryStore } from './store.ts';
import { retrier } from '../../shared/backoff.ts';

/** Facts validated per event-loop turn (few: an offer arriving meanwhile waits behind little). */
const PARSE_SLICE = 10;

export interface HistoryWriterOptions {
  queue: HistoryQueue;
  store: Pick<HistoryStore, 'apply'>;
  log?: Pick<Logger, 'info' | 'warn' | 'error'>;
  metrics?: Metrics;
  /** Queue entries per transaction (default 200; on Redis an entry is a transition's facts, ~2). */
  batchSize?: number;
  /** How long one read waits for facts (default 1000 ms). */
  blockMs?: number;
  /**
   * Least time from one batch to the next while batches are not full (default 250 ms): at
   * 100 calls a second the facts of ~25 calls share one transaction, instead of each call
   * paying for its own (BEGIN, statements, COMMIT: round trips the node spends CPU on).
   */
  intervalMs?: number;
  backoffMinMs?: number;
  backoffMaxMs?: number;
}

export interface WriterStatus {
  /** False from a failed write until the next successful one. */
  healthy: boolean;
  /** Message of the last failure (no connection details). */
  lastError?: string;
  /** Epoch ms of the last successful write. */
  lastWriteAt?: number;
  written: number;
  invalid: number;
  /** Facts the database refused to store, set aside (this process). */
  deadLettered: number;
}

export class HistoryWriter {
  private running = false;
  private loop: Promise<void> | undefined;
  private wakeSleep: (() => void) | undefined;
  private readonly st: WriterStatus = { healthy: true, written: 0, invalid: 0, deadLettered: 0 };
  private readonly batchSize: number;
  private readonly blockMs: number;
  private readonly intervalMs: number;
  private readonly min: number;
  private readonly max: number;
  private readonly counters;

  constructor(private readonly o: HistoryWriterOptions) {
    this.batchSize = o.batchSize ?? 200;
    this.blockMs = o.blockMs ?? 1000;
    this.intervalMs = o.intervalMs ?? 250;
    this.min = o.backoffMinMs ?? 100;
    this.max = o.backoffMaxMs ?? 5000;
    const m = o.metrics;
    this.counters = m && {
      written: m.counter('switchboard_history_facts_written_total', 'History facts written to the database.'),
      invalid: m.counter('switchboard_history_facts_invalid_total', 'History facts dropped because they were not valid.'),
      failures: m.counter('switchboard_history_write_failures_total', 'Failed history write attempts (retried).'),
      deadLettered: m.counter('switchboard_history_facts_dead_lettered_total', 'History facts the database refused to store (data errors), set aside as dead letters.'),
      lag: m.histogram('switchboard_history_lag_seconds', 'A history fact enqueued → written to the database (seconds), one observation per queue entry.', { buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300] }),
    };
    if (m) {
      m.gauge('switchboard_history_queue_pending', 'History facts not yet written to the database (on Redis: stream entries, one per transition, plus any outbox).', async () => (await o.queue.lag()).pending);
      m.gauge('switchboard_history_queue_oldest_age_seconds', 'Age of the oldest history fact not yet written.', async () => (await o.queue.lag()).oldestAgeMs / 1000);
      m.gauge('switchboard_history_dead_letters', 'History facts set aside because the database refused them (GET /api/ops/history-dead-letters).', async () => (await o.queue.deadLetters(0)).total);
      m.gauge('switchboard_history_writer_healthy', '1 while history writes succeed, 0 after a failed write until the next success.', () => (this.st.healthy ? 1 : 0));
    }
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Stop after the current step (a batch in hand stays unacked in the queue for the next start or another node). */
  async stop(): Promise<void> {
    this.running = false;
    this.wakeSleep?.();
    await this.loop;
  }

  status(): WriterStatus {
    return { ...this.st };
  }

  lag(): Promise<QueueLag> {
    return this.o.queue.lag();
  }

  /** The facts set aside (newest first) and their number. */
  deadLetters(limit: number): Promise<{ items: HistoryDeadLetter[]; total: number }> {
    return this.o.queue.deadLetters(limit);
  }

  /**
   * For `/readyz` and ops. A history outage must not take the node out of service (calls do
   * not depend on it): report it, do not fail readiness on it.
   */
  async health(): Promise<{ ok: boolean; reason?: string; lag?: QueueLag }> {
    const lag = await this.o.queue.lag().catch(() => undefined);
    const base = lag ? { lag } : {};
    return this.st.healthy ? { ok: true, ...base } : { ok: false, reason: `history writes failing: ${this.st.lastError ?? 'unknown error'}`, ...base };
  }

  private async pause(ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const t = setTimeout(done, ms);
      function done() {
        clearTimeout(t);
        resolve();
      }
      this.wakeSleep = done;
    });
    this.wakeSleep = undefined;
  }

  private async run(): Promise<void> {
    let held: { entries: QueuedFact[]; facts: ParsedFact[] } | undefined;
    const backoff = retrier({ baseMs: this.min * 2, maxMs: this.max, minMs: this.min });
    // When the last batch was read, and whether it was full (then the next one is not held back).
    let lastRead = 0;
    let full = false;
    while (this.running) {
      try {
        if (!held) {
          const wait = full ? 0 : lastRead + this.intervalMs - Date.now();
          if (wait > 0) {
            await this.pause(wait);
            if (!this.running) break;
          }
          const entries = await this.o.queue.read(this.batchSize, this.blockMs);
          if (entries.length === 0) continue;
          lastRead = Date.now();
          full = new Set(entries.map((e) => e.id)).size >= this.batchSize; // the facts of one entry share its id
          held = { entries, facts: await this.parse(entries) };
        }
        await this.write(held);
        this.recovered(held.facts.length);
        this.observeLag(held.entries);
        const ids = held.entries.map((e) => e.id);
        held = undefined;
        backoff.reset();
        await this.o.queue.ack(ids);
      } catch (err) {
        this.failed(err);
        await this.pause(backoff.next());
      }
    }
  }

  /**
   * Apply the batch; on a data error, halve it until each refused fact stands alone and set
   * it aside (removed from `held`, so a retry after an outage meanwhile neither writes nor
   * sets it aside again). Other errors are thrown: the caller retries what is held.
   */
  private async write(held: { facts: ParsedFact[] }, facts = held.facts): Promise<void> {
    try {
      await this.o.store.apply(facts);
    } catch (err) {
      if (!isDataError(err)) throw err;
      this.counters?.failures.inc();
      if (facts.length === 1) return this.setAside(held, facts[0]!, err);
      const mid = Math.ceil(facts.length / 2);
      await this.write(held, facts.slice(0, mid));
      await this.write(held, facts.slice(mid));
    }
  }

  private async setAside(held: { facts: ParsedFact[] }, fact: ParsedFact, err: unknown): Promise<void> {
    const e = safeError(err);
    const error = e.code ? `${e.message} (${e.code})` : e.message;
    await this.o.queue.setAside({ body: JSON.stringify(fact), error, at: Date.now() });
    held.facts = held.facts.filter((f) => f !== fact);
    this.st.deadLettered++;
    this.counters?.deadLettered.inc();
    const f = fact as { type?: string; wacid?: string };
    this.o.log?.error({ type: f.type, wacid: f.wacid, err: { message: e.message, code: e.code } }, 'history fact refused by the database: set aside (GET /api/ops/history-dead-letters)');
  }

  /** Parsed a slice at a time, the event loop turning between slices (offers wait behind none of it). */
  private async parse(entries: QueuedFact[]): Promise<ParsedFact[]> {
    const out: ParsedFact[] = [];
    for (const [i, e] of entries.entries()) {
      if (i > 0 && i % PARSE_SLICE === 0) await new Promise((r) => setImmediate(r));
      let r: ReturnType<typeof HistoryFact.safeParse>;
      try {
        r = HistoryFact.safeParse(JSON.parse(e.body));
      } catch {
        r = { success: false } as ReturnType<typeof HistoryFact.safeParse>;
      }
      if (r.success) out.push(r.data);
      else {
        this.st.invalid++;
        this.counters?.invalid.inc();
        const issue = r.error?.issues[0];
        this.o.log?.warn({ entryId: e.id, field: issue?.path.join('.'), rule: issue?.message ?? 'not JSON' }, 'history fact dropped: invalid');
      }
    }
    return out;
  }

  /** Each queue entry's time from enqueue to written (its facts share it: observed once). */
  private observeLag(entries: readonly QueuedFact[]): void {
    if (!this.counters) return;
    const now = Date.now();
    let last: string | undefined;
    for (const e of entries) {
      if (e.id === last || e.at === undefined) continue;
      last = e.id;
      this.counters.lag.observe(Math.max(0, now - e.at) / 1000);
    }
  }

  private recovered(n: number): void {
    this.st.written += n;
    this.st.lastWriteAt = Date.now();
    this.counters?.written.inc({}, n);
    if (!this.st.healthy) {
      this.st.healthy = true;
      delete this.st.lastError;
      this.o.log?.info({}, 'history writes resumed');
    }
  }

  private failed(err: unknown): void {
    const e = safeError(err);
    this.counters?.failures.inc();
    const message = e.code ? `${e.message} (${e.code})` : e.message;
    // One log line per change of failure, not one per retry.
    if (this.st.healthy || this.st.lastError !== message) this.o.log?.error({ err: { message: e.message, code: e.code } }, 'history write failed; retrying');
    this.st.healthy = false;
    this.st.lastError = message;
  }
}
