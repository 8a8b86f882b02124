/**
 * The event log and its dead letters in memory (one process, not durable). Same contract
 * as Redis's (`event-log.contract.test.ts`).
 */
import type { AcceptResult, DeadLetter, DeadLetters, EventLog, IncomingEvent, ReplayResult, StreamEntry } from './event-log.ts';
import type { MemoryLife } from './memory-life.ts';

interface Pending {
  consumer: string;
  deliveredAt: number;
  deliveries: number;
}

interface Group {
  /** Index in `stream` of the next never-delivered entry. */
  next: number;
  pending: Map<string, Pending>;
}

type Raw = Omit<StreamEntry, 'deliveries'>;

export interface MemoryEventLogOptions {
  /** Stream entries kept (oldest dropped first), like Redis `XADD MAXLEN`. Default 100000. */
  streamMaxLen?: number;
  /** Dead letters kept, newest first. Default 10000. */
  deadLetterMax?: number;
}

export class MemoryEventLog implements EventLog, DeadLetters {
  private readonly maxLen: number;
  private readonly deadMax: number;
  private readonly dedupe = new Map<string, number>();
  private stream: Raw[] = [];
  /** Entries dropped from the head of `stream` (indexes in groups are absolute). */
  private dropped = 0;
  private seq = 0;
  private lastMs = 0;
  private readonly groups = new Map<string, Group>();
  private readonly byId = new Map<string, Raw>();
  private dead: DeadLetter[] = [];
  private waiters = new Set<() => void>();

  constructor(
    private readonly life: MemoryLife,
    opts: MemoryEventLogOptions = {},
  ) {
    this.maxLen = opts.streamMaxLen ?? 100_000;
    this.deadMax = opts.deadLetterMax ?? 10_000;
    life.whenClosed(() => this.wakeReaders());
  }

  /** Dedupe keys held in memory, expired ones not yet swept included (tests). */
  get dedupeKeys(): number {
    return this.dedupe.size;
  }

  private wakeReaders(): void {
    const w = this.waiters;
    this.waiters = new Set();
    for (const wake of w) wake();
  }

  async acceptEvent(e: IncomingEvent, dedupeTtlMs: number): Promise<AcceptResult> {
    this.life.check();
    const now = this.life.now();
    const until = this.dedupe.get(e.eventId);
    if (until !== undefined && until > now) return 'duplicate';
    // Delete first so the map stays in insertion order, which is expiry order for one TTL.
    this.dedupe.delete(e.eventId);
    this.dedupe.set(e.eventId, now + dedupeTtlMs);
    this.sweepDedupe(now);
    this.append(e);
    return 'accepted';
  }

  /** Append to the stream (no dedupe) and wake blocked readers; returns the new stream id. */
  private append(e: IncomingEvent & { replayOf?: string }): string {
    const ms = Math.max(this.life.now(), this.lastMs);
    this.seq = ms === this.lastMs ? this.seq + 1 : 0;
    this.lastMs = ms;
    const raw: Raw = { streamId: `${ms}-${this.seq}`, eventId: e.eventId, type: e.type, body: e.body, receivedAt: e.receivedAt };
    if (e.replayOf !== undefined) raw.replayOf = e.replayOf;
    this.stream.push(raw);
    this.byId.set(raw.streamId, raw);
    if (this.stream.length > this.maxLen) {
      const gone = this.stream.shift()!;
      this.byId.delete(gone.streamId);
      this.dropped++;
    }
    this.wakeReaders();
    return raw.streamId;
  }

  /**
   * Drop expired dedupe keys from the oldest end, stopping at the first live one: O(1)
   * per accept on average (a full scan here made every accept O(n) under load). With
   * mixed TTLs a long-lived key can hold back shorter ones behind it; they are still
   * treated as expired by `acceptEvent`, only their memory is kept a little longer.
   */
  private sweepDedupe(now: number): void {
    for (const [k, until] of this.dedupe) {
      if (until > now) return;
      this.dedupe.delete(k);
    }
  }

  async ensureGroup(group: string, _o?: { from?: string }): Promise<void> {
    // In memory no group outlives the process: a new one has no older one to take over from.
    this.life.check();
    if (!this.groups.has(group)) this.groups.set(group, { next: this.dropped, pending: new Map() });
  }

  private group(name: string): Group {
    const g = this.groups.get(name);
    if (!g) throw new Error(`consumer group ${name} does not exist (call ensureGroup first)`);
    return g;
  }

  async readGroup(group: string, consumer: string, count: number, blockMs: number): Promise<StreamEntry[]> {
    this.life.check();
    const g = this.group(group);
    const take = (): StreamEntry[] => {
      const out: StreamEntry[] = [];
      g.next = Math.max(g.next, this.dropped);
      while (out.length < count && g.next - this.dropped < this.stream.length) {
        const raw = this.stream[g.next - this.dropped]!;
        g.next++;
        g.pending.set(raw.streamId, { consumer, deliveredAt: this.life.now(), deliveries: 1 });
        out.push({ ...raw, deliveries: 1 });
      }
      return out;
    };
    const first = take();
    if (first.length > 0 || blockMs <= 0) return first;
    await new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve();
      };
      const timer = setTimeout(wake, blockMs);
      this.waiters.add(wake);
    });
    if (this.life.closed) return [];
    return take();
  }

  async ack(group: string, streamIds: string[]): Promise<void> {
    this.life.check();
    const g = this.group(group);
    for (const id of streamIds) g.pending.delete(id);
  }

  async claimStale(group: string, consumer: string, minIdleMs: number, count: number): Promise<StreamEntry[]> {
    this.life.check();
    const g = this.group(group);
    const now = this.life.now();
    const out: StreamEntry[] = [];
    for (const [id, p] of g.pending) {
      if (out.length >= count) break;
      if (now - p.deliveredAt < minIdleMs) continue;
      const raw = this.byId.get(id);
      if (!raw) {
        // Trimmed from the stream: nothing left to process (Redis XAUTOCLAIM drops these too).
        g.pending.delete(id);
        continue;
      }
      p.consumer = consumer;
      p.deliveredAt = now;
      p.deliveries++;
      out.push({ ...raw, deliveries: p.deliveries });
    }
    return out;
  }

  async touchPending(group: string, consumer: string, streamIds: readonly string[]): Promise<string[]> {
    this.life.check();
    const g = this.group(group);
    const now = this.life.now();
    const out: string[] = [];
    for (const id of streamIds) {
      const p = g.pending.get(id);
      if (p?.consumer !== consumer) continue;
      p.deliveredAt = now;
      out.push(id);
    }
    return out;
  }

  async deadLetter(group: string, entry: StreamEntry, error: string, attempts?: number): Promise<void> {
    this.life.check();
    this.group(group).pending.delete(entry.streamId);
    this.dead.unshift({ entry: { ...entry }, error, at: this.life.now(), ...(attempts !== undefined ? { attempts } : {}) });
    if (this.dead.length > this.deadMax) this.dead.length = this.deadMax;
  }

  async replayDeadLetters(streamIds: readonly string[] | 'all'): Promise<ReplayResult> {
    this.life.check();
    const wanted = streamIds === 'all' ? undefined : new Set(streamIds);
    const out: ReplayResult = { replayed: [], notFound: [] };
    const done = new Set<string>();
    // Oldest first, so replayed events keep their order in the stream.
    for (let i = this.dead.length - 1; i >= 0; i--) {
      const { entry } = this.dead[i]!;
      if (wanted && !wanted.has(entry.streamId)) continue;
      this.dead.splice(i, 1);
      if (done.has(entry.streamId)) continue; // another copy of one already replayed
      done.add(entry.streamId);
      const newStreamId = this.append({ eventId: entry.eventId, type: entry.type, body: entry.body, receivedAt: entry.receivedAt, replayOf: entry.streamId });
      out.replayed.push({ streamId: entry.streamId, newStreamId, eventId: entry.eventId, type: entry.type });
    }
    if (wanted) for (const id of wanted) if (!done.has(id)) out.notFound.push(id);
    return out;
  }

  async listDeadLetters(limit: number): Promise<DeadLetter[]> {
    this.life.check();
    return this.dead.slice(0, Math.max(0, limit)).map((d) => ({ ...d, entry: { ...d.entry } }));
  }

  async streamLag(group: string): Promise<number> {
    this.life.check();
    const g = this.groups.get(group);
    if (!g) return this.stream.length;
    const undelivered = this.dropped + this.stream.length - Math.max(g.next, this.dropped);
    return undelivered + g.pending.size;
  }

  async trimProcessed(groups: readonly string[], before = Infinity): Promise<number> {
    this.life.check();
    const gs = groups.map((n) => this.groups.get(n));
    if (gs.length === 0 || gs.some((g) => !g)) return 0;
    let n = 0;
    while (this.stream.length > 0) {
      const head = this.stream[0]!;
      if (Number(head.streamId.split('-')[0]) >= before || gs.some((g) => this.dropped >= g!.next || g!.pending.has(head.streamId))) break;
      this.stream.shift();
      this.byId.delete(head.streamId);
      this.dropped++;
      n++;
    }
    return n;
  }
}
