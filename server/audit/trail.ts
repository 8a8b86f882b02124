/**
 * The audit trail's writer: `record(input)` never waits and never throws — the action it
 * records (a login, a download, a monitor start on the call path) goes on at once. Rows
 * wait in this process and are written in batches, one INSERT each, every `flushMs`; a
 * failed write is logged (once per change of error) and counted
 * (`switchboard_audit_write_failures_total`), and the batch is tried again with backoff.
 * Rows carry their id from the start, so a batch written twice (a commit whose answer was
 * lost) is still one row each. At most `maxPending` rows wait (a long database outage):
 * beyond, the oldest are dropped and counted (`switchboard_audit_dropped_total`).
 *
 * Without a database (history off) rows are counted as dropped and logged at debug level.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../log/logger.ts';
import type { Metrics } from '../ops/metrics.ts';
import { retrier } from '../../shared/backoff.ts';
import { FORBIDDEN_DETAIL, type AuditInput } from './schema.ts';
import type { AuditRow, AuditStore } from './store.ts';

/** What features are handed: record one row. */
export type Audit = (input: AuditInput) => void;

export interface AuditTrailOptions {
  store: Pick<AuditStore, 'insert'> | undefined;
  log: Pick<Logger, 'warn' | 'error' | 'info' | 'debug'>;
  metrics?: Metrics;
  now?: () => number;
  /** Least time between two writes (default 200 ms). */
  flushMs?: number;
  maxPending?: number;
  batchSize?: number;
}

const MAX_TEXT = 500;
const clip = (s: string | undefined) => (s === undefined ? undefined : s.length > MAX_TEXT ? `${s.slice(0, MAX_TEXT)}…` : s);

export class AuditTrail {
  private pending: AuditRow[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> | undefined;
  private closed = false;
  private lastError: string | undefined;
  private readonly backoff = retrier({ baseMs: 500, maxMs: 30_000, minMs: 250 });
  private readonly now: () => number;
  private readonly counters;
  /** Rows written by this process (tests wait on it). */
  written = 0;

  constructor(private readonly o: AuditTrailOptions) {
    this.now = o.now ?? Date.now;
    const m = o.metrics;
    this.counters = m && {
      written: m.counter('switchboard_audit_rows_written_total', 'Audit rows written to the database.'),
      failures: m.counter('switchboard_audit_write_failures_total', 'Failed audit writes (the rows wait and are tried again).'),
      dropped: m.counter('switchboard_audit_dropped_total', 'Audit rows dropped: no database, or too many waiting through an outage.'),
    };
    m?.gauge('switchboard_audit_pending', 'Audit rows waiting to be written.', () => this.pending.length);
  }

  /** Record one row (never waits, never throws). */
  readonly record: Audit = (input) => {
    try {
      if (this.closed) return;
      if (!this.o.store) {
        this.counters?.dropped.inc();
        this.o.log.debug({ action: input.action }, 'audit row not kept: no history database');
        return;
      }
      const detail = input.detail ? Object.fromEntries(Object.entries(input.detail).filter(([k]) => !FORBIDDEN_DETAIL.test(k))) : undefined;
      this.pending.push({
        id: randomUUID(),
        at: new Date(this.now()).toISOString(),
        actor: clip(input.actor) ?? 'system',
        action: input.action,
        subject: clip(input.subject),
        target: clip(input.target),
        address: clip(input.address),
        detail: detail && Object.keys(detail).length > 0 ? detail : undefined,
      });
      const max = this.o.maxPending ?? 100_000;
      if (this.pending.length > max) {
        const n = this.pending.length - max;
        this.pending.splice(0, n);
        this.counters?.dropped.inc({}, n);
        this.o.log.error({ dropped: n }, 'audit rows dropped: too many waiting for the database');
      }
      this.schedule(this.o.flushMs ?? 200);
    } catch (err) {
      this.o.log.error({ err: { message: (err as Error).message } }, 'audit row not recorded');
    }
  };

  private schedule(ms: number): void {
    if (this.timer || this.writing || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.writing = this.write().finally(() => {
        this.writing = undefined;
        if (this.pending.length > 0) this.schedule(this.lastError ? this.backoff.next() : (this.o.flushMs ?? 200));
      });
    }, ms);
    this.timer.unref();
  }

  private async write(): Promise<void> {
    const store = this.o.store;
    if (!store) return;
    const batch = this.pending.slice(0, this.o.batchSize ?? 500);
    if (batch.length === 0) return;
    try {
      await store.insert(batch);
      this.pending.splice(0, batch.length);
      this.written += batch.length;
      this.counters?.written.inc({}, batch.length);
      if (this.lastError) this.o.log.info({}, 'audit writes resumed');
      this.lastError = undefined;
      this.backoff.reset();
    } catch (err) {
      const message = (err as Error).message ?? String(err);
      this.counters?.failures.inc();
      if (message !== this.lastError) this.o.log.error({ err: { message, code: (err as { code?: unknown }).code } }, 'audit write failed; the rows wait and are tried again');
      this.lastError = message;
    }
  }

  /** Write what waits now (tests, shutdown). Resolves when the queue is empty or a write failed. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.writing;
    while (this.pending.length > 0) {
      const before = this.pending.length;
      this.writing = this.write();
      await this.writing;
      this.writing = undefined;
      if (this.pending.length >= before) break;
    }
  }

  /** Flush (bounded) and stop taking rows. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    await Promise.race([this.flush(), new Promise((r) => setTimeout(r, 2000).unref())]);
    this.closed = true;
    clearTimeout(this.timer);
  }
}
