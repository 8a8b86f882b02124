/**
 * The audit trail's writer: `record(input)` never waits and never throws — the action it
 * records (a login, a download, a monitor start on the call path) goes on at once. The row
 * goes to a durable queue, as history's facts do (with Redis: a stream of its own,
 * `<prefix>audit-history`, read through a consumer group, so a row survives its node: any
 * node writes it, one a dead node held is claimed by another after a minute; without Redis
 * a queue in the process). A loop reads batches and writes each in one INSERT, then acks. A
 * failed write is logged (once per change of error) and counted
 * (`switchboard_audit_write_failures_total`), and the batch is tried again with backoff.
 * Rows carry their id from the start, so a batch written twice (a commit whose answer was
 * lost, a claim) is still one row each.
 *
 * Without a database (history off) rows are counted as dropped and logged at debug level.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../log/logger.ts';
import type { Metrics } from '../ops/metrics.ts';
import { retrier } from '../../shared/backoff.ts';
import { AUDIT_ACTIONS } from '../../shared/audit.ts';
import { FORBIDDEN_DETAIL, type AuditInput } from './schema.ts';
import type { AuditRow, AuditStore } from './store.ts';

/** What features are handed: record one row. */
export type Audit = (input: AuditInput) => void;

/**
 * A durable queue of rows. History's queue classes fit (`RedisHistoryQueue<AuditRow>` with
 * REDIS_URL, `MemoryHistoryQueue<AuditRow>` otherwise); `LocalAuditQueue` is the default.
 */
export interface AuditQueue {
  /** Never waits, never throws. */
  enqueue(...rows: AuditRow[]): void;
  read(count: number, blockMs: number): Promise<Array<{ id: string; body: string }>>;
  ack(ids: readonly string[]): Promise<void>;
  lag(): Promise<{ pending: number }>;
  close(): Promise<void>;
}

/** The queue of one process (rows wait in memory). */
export class LocalAuditQueue implements AuditQueue {
  private seq = 0;
  private readonly rows = new Map<string, { body: string; taken: boolean }>();
  private wake: (() => void) | undefined;
  private closed = false;

  enqueue(...rows: AuditRow[]): void {
    if (this.closed) return;
    for (const r of rows) this.rows.set(String(++this.seq), { body: JSON.stringify(r), taken: false });
    this.wake?.();
  }

  async read(count: number, blockMs: number): Promise<Array<{ id: string; body: string }>> {
    const take = () => {
      const out: Array<{ id: string; body: string }> = [];
      for (const [id, r] of this.rows) {
        if (out.length >= count) break;
        if (r.taken) continue;
        r.taken = true;
        out.push({ id, body: r.body });
      }
      return out;
    };
    const got = take();
    if (got.length > 0 || blockMs <= 0 || this.closed) return got;
    await new Promise<void>((resolve) => {
      const t = setTimeout(done, blockMs);
      const self = this;
      function done() {
        clearTimeout(t);
        self.wake = undefined;
        resolve();
      }
      this.wake = done;
    });
    return take();
  }

  async ack(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.rows.delete(id);
  }

  async lag(): Promise<{ pending: number }> {
    return { pending: this.rows.size };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
  }
}

export interface AuditTrailOptions {
  store: Pick<AuditStore, 'insert'> | undefined;
  log: Pick<Logger, 'warn' | 'error' | 'info' | 'debug'>;
  metrics?: Metrics;
  now?: () => number;
  /** Default: a `LocalAuditQueue`. Closed by `close()`. */
  queue?: AuditQueue;
  /** Rows per INSERT (default 500). */
  batchSize?: number;
  /** How long one read waits for rows (default 1000 ms). */
  blockMs?: number;
}

const MAX_TEXT = 500;
const clip = (s: string | undefined) => (s === undefined ? undefined : s.length > MAX_TEXT ? `${s.slice(0, MAX_TEXT)}…` : s);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A queued row read back (a body that is not a row is dropped: it can never be written). */
function rowOf(body: string): AuditRow | undefined {
  try {
    const r = JSON.parse(body) as Partial<AuditRow>;
    if (typeof r.id === 'string' && typeof r.at === 'string' && typeof r.actor === 'string' && (AUDIT_ACTIONS as readonly string[]).includes(String(r.action))) return r as AuditRow;
  } catch {
    // not JSON
  }
  return undefined;
}

export class AuditTrail {
  private readonly queue: AuditQueue;
  private running = false;
  private loop: Promise<void> | undefined;
  private held: { ids: string[]; rows: AuditRow[] } | undefined;
  private lastError: string | undefined;
  private wakeSleep: (() => void) | undefined;
  private readonly backoff = retrier({ baseMs: 500, maxMs: 30_000, minMs: 250 });
  private readonly now: () => number;
  private readonly counters;
  /** Rows written by this process (tests wait on it). */
  written = 0;
  /** Failed writes in this process. */
  failures = 0;

  constructor(private readonly o: AuditTrailOptions) {
    this.now = o.now ?? Date.now;
    this.queue = o.queue ?? new LocalAuditQueue();
    const m = o.metrics;
    this.counters = m && {
      written: m.counter('switchboard_audit_rows_written_total', 'Audit rows written to the database.'),
      failures: m.counter('switchboard_audit_write_failures_total', 'Failed audit writes (the rows wait and are tried again).'),
      dropped: m.counter('switchboard_audit_dropped_total', 'Audit rows dropped: no database, or not recordable.'),
    };
    m?.gauge('switchboard_audit_pending', 'Audit rows waiting to be written.', async () => (await this.queue.lag()).pending);
    if (o.store) this.start();
  }

  /** Record one row (never waits, never throws). */
  readonly record: Audit = (input) => {
    try {
      if (!this.o.store) {
        this.counters?.dropped.inc();
        this.o.log.debug({ action: input.action }, 'audit row not kept: no history database');
        return;
      }
      const detail = input.detail ? Object.fromEntries(Object.entries(input.detail).filter(([k]) => !FORBIDDEN_DETAIL.test(k))) : undefined;
      this.queue.enqueue({
        id: randomUUID(),
        at: new Date(this.now()).toISOString(),
        actor: clip(input.actor) ?? 'system',
        action: input.action,
        subject: clip(input.subject),
        target: clip(input.target),
        address: clip(input.address),
        detail: detail && Object.keys(detail).length > 0 ? detail : undefined,
      });
    } catch (err) {
      this.counters?.dropped.inc();
      this.o.log.error({ err: { message: (err as Error).message } }, 'audit row not recorded');
    }
  };

  private start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    const store = this.o.store!;
    while (this.running) {
      try {
        if (!this.held) {
          const entries = await this.queue.read(this.o.batchSize ?? 500, this.o.blockMs ?? 1000);
          if (entries.length === 0) continue;
          const rows = entries.flatMap((e) => rowOf(e.body) ?? []);
          if (rows.length < entries.length) {
            this.counters?.dropped.inc({}, entries.length - rows.length);
            this.o.log.warn({ dropped: entries.length - rows.length }, 'audit queue held entries that are not rows: dropped');
          }
          this.held = { ids: [...new Set(entries.map((e) => e.id))], rows };
        }
        await store.insert(this.held.rows);
        this.written += this.held.rows.length;
        this.counters?.written.inc({}, this.held.rows.length);
        const ids = this.held.ids;
        this.held = undefined;
        if (this.lastError) this.o.log.info({}, 'audit writes resumed');
        this.lastError = undefined;
        this.backoff.reset();
        await this.queue.ack(ids);
      } catch (err) {
        if (!this.running) break;
        const message = (err as Error).message ?? String(err);
        this.failures++;
        this.counters?.failures.inc();
        if (message !== this.lastError) this.o.log.error({ err: { message, code: (err as { code?: unknown }).code } }, 'audit write failed; the rows wait and are tried again');
        this.lastError = message;
        await new Promise<void>((resolve) => {
          const t = setTimeout(done, this.backoff.next());
          const self = this;
          function done() {
            clearTimeout(t);
            self.wakeSleep = undefined;
            resolve();
          }
          this.wakeSleep = done;
        });
      }
    }
  }

  /**
   * Wait until every row recorded so far is written (tests, shutdown); false when that did
   * not happen within `timeoutMs` (the database refusing meanwhile).
   */
  async flush(timeoutMs = 5000): Promise<boolean> {
    if (!this.o.store) return true;
    const end = Date.now() + timeoutMs;
    for (;;) {
      if (!this.held && (await this.queue.lag()).pending === 0) return true;
      if (Date.now() > end) return false;
      this.wakeSleep?.();
      await sleep(20);
    }
  }

  /** Write what waits (bounded), then stop. Safe to call twice. */
  async close(): Promise<void> {
    if (!this.running && !this.loop) return this.queue.close();
    await this.flush(2000);
    this.running = false;
    this.wakeSleep?.();
    await this.queue.close();
    await this.loop;
    this.loop = undefined;
  }
}
