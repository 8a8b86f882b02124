/**
 * In-memory `Store`: demo mode and single-process tests. Not durable, not shared between
 * processes; otherwise it keeps the same contract as `RedisStore` (one contract suite runs
 * against both). Values are copied in and out as JSON, so callers never share objects
 * with the store.
 */
import type { AcceptResult, CallRecord, DeadLetter, RationWindow, ReplayResult, SlotResult, Store, StreamEntry } from './store.ts';

export class StoreClosedError extends Error {
  override readonly name = 'StoreClosedError';
  constructor() {
    super('store is closed');
  }
}

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

export interface MemoryStoreOptions {
  prefix?: string;
  /** Clock (epoch ms) for TTLs and idle times. */
  now?: () => number;
  /** Stream entries kept (oldest dropped first), like Redis `XADD MAXLEN`. Default 100000. */
  streamMaxLen?: number;
  /** Dead letters kept, newest first. Default 10000. */
  deadLetterMax?: number;
}

export class MemoryStore implements Store {
  readonly prefix: string;
  private readonly now: () => number;
  private readonly maxLen: number;
  private readonly deadMax: number;
  private closed = false;

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

  private readonly calls = new Map<string, { json: string; expiresAt: number }>();
  private readonly kv = new Map<string, { value: string; expiresAt: number }>();
  /** Ration slots per key: slot id → epoch ms. */
  private readonly slots = new Map<string, Map<string, number>>();
  private readonly counters = new Map<string, { count: number; expiresAt: number }>();
  /** Small indexes: member → epoch ms it stays until. */
  private readonly indexes = new Map<string, Map<string, number>>();
  /** Business-initiated call outcomes per pair: call id → epoch ms, for each list. */
  private readonly outcomes = new Map<string, { connected: Map<string, number>; unanswered: Map<string, number>; expiresAt: number }>();
  private counterOps = 0;
  private readonly subs = new Map<string, Set<(m: string) => void>>();

  constructor(opts: MemoryStoreOptions = {}) {
    this.prefix = opts.prefix ?? 'sb:';
    this.now = opts.now ?? Date.now;
    this.maxLen = opts.streamMaxLen ?? 100_000;
    this.deadMax = opts.deadLetterMax ?? 10_000;
  }

  /** Dedupe keys held in memory, expired ones not yet swept included (tests). */
  get dedupeKeys(): number {
    return this.dedupe.size;
  }

  private check(): void {
    if (this.closed) throw new StoreClosedError();
  }

  // ---- webhook intake ---------------------------------------------------------------

  async acceptEvent(
    e: { eventId: string; type: string; body: string; receivedAt: number },
    dedupeTtlMs: number,
  ): Promise<AcceptResult> {
    this.check();
    const now = this.now();
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
  private append(e: { eventId: string; type: string; body: string; receivedAt: number; replayOf?: string }): string {
    const ms = Math.max(this.now(), this.lastMs);
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
    const w = this.waiters;
    this.waiters = new Set();
    for (const wake of w) wake();
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
    this.check();
    if (!this.groups.has(group)) this.groups.set(group, { next: this.dropped, pending: new Map() });
  }

  private group(name: string): Group {
    const g = this.groups.get(name);
    if (!g) throw new Error(`consumer group ${name} does not exist (call ensureGroup first)`);
    return g;
  }

  async readGroup(group: string, consumer: string, count: number, blockMs: number): Promise<StreamEntry[]> {
    this.check();
    const g = this.group(group);
    const take = (): StreamEntry[] => {
      const out: StreamEntry[] = [];
      g.next = Math.max(g.next, this.dropped);
      while (out.length < count && g.next - this.dropped < this.stream.length) {
        const raw = this.stream[g.next - this.dropped]!;
        g.next++;
        g.pending.set(raw.streamId, { consumer, deliveredAt: this.now(), deliveries: 1 });
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
    if (this.closed) return [];
    return take();
  }

  async ack(group: string, streamIds: string[]): Promise<void> {
    this.check();
    const g = this.group(group);
    for (const id of streamIds) g.pending.delete(id);
  }

  async claimStale(group: string, consumer: string, minIdleMs: number, count: number): Promise<StreamEntry[]> {
    this.check();
    const g = this.group(group);
    const now = this.now();
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
    this.check();
    const g = this.group(group);
    const now = this.now();
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
    this.check();
    this.group(group).pending.delete(entry.streamId);
    this.dead.unshift({ entry: { ...entry }, error, at: this.now(), ...(attempts !== undefined ? { attempts } : {}) });
    if (this.dead.length > this.deadMax) this.dead.length = this.deadMax;
  }

  async replayDeadLetters(streamIds: readonly string[] | 'all'): Promise<ReplayResult> {
    this.check();
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
    this.check();
    return this.dead.slice(0, Math.max(0, limit)).map((d) => ({ ...d, entry: { ...d.entry } }));
  }

  async streamLag(group: string): Promise<number> {
    this.check();
    const g = this.groups.get(group);
    if (!g) return this.stream.length;
    const undelivered = this.dropped + this.stream.length - Math.max(g.next, this.dropped);
    return undelivered + g.pending.size;
  }

  async trimProcessed(groups: readonly string[], before = Infinity): Promise<number> {
    this.check();
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

  // ---- calls ------------------------------------------------------------------------

  private liveCall(wacid: string): CallRecord | null {
    const c = this.calls.get(wacid);
    if (!c) return null;
    if (c.expiresAt <= this.now()) {
      this.calls.delete(wacid);
      return null;
    }
    return JSON.parse(c.json) as CallRecord;
  }

  private putCall(record: CallRecord, ttlMs: number): void {
    this.calls.set(record.wacid, { json: JSON.stringify(record), expiresAt: this.now() + ttlMs });
  }

  async createCall(record: CallRecord, ttlMs: number): Promise<boolean> {
    this.check();
    if (this.liveCall(record.wacid)) return false;
    this.putCall({ ...record, version: 0 }, ttlMs);
    return true;
  }

  async getCall(wacid: string): Promise<CallRecord | null> {
    this.check();
    return this.liveCall(wacid);
  }

  async casCall(wacid: string, expectedVersion: number, next: CallRecord, ttlMs: number): Promise<CallRecord | null> {
    this.check();
    const cur = this.liveCall(wacid);
    if (!cur || cur.version !== expectedVersion) return null;
    const stored: CallRecord = { ...next, wacid, version: expectedVersion + 1 };
    this.putCall(stored, ttlMs);
    return JSON.parse(JSON.stringify(stored)) as CallRecord;
  }

  async listCalls(): Promise<CallRecord[]> {
    this.check();
    const out: CallRecord[] = [];
    for (const wacid of [...this.calls.keys()]) {
      const c = this.liveCall(wacid);
      if (c) out.push(c);
    }
    return out;
  }

  async listLiveCalls(): Promise<CallRecord[]> {
    return (await this.listCalls()).filter((c) => c.state !== 'ended');
  }

  // ---- small values with TTL ----------------------------------------------------------

  private live(key: string): string | null {
    const v = this.kv.get(key);
    if (!v) return null;
    if (v.expiresAt <= this.now()) {
      this.kv.delete(key);
      return null;
    }
    return v.value;
  }

  async setNX(key: string, value: string, ttlMs: number): Promise<boolean> {
    this.check();
    if (this.live(key) !== null) return false;
    this.kv.set(key, { value, expiresAt: this.now() + ttlMs });
    return true;
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    this.check();
    this.kv.set(key, { value, expiresAt: ttlMs === undefined ? Infinity : this.now() + ttlMs });
  }

  async get(key: string): Promise<string | null> {
    this.check();
    return this.live(key);
  }

  async del(key: string): Promise<void> {
    this.check();
    this.kv.delete(key);
  }

  // ---- small indexes ---------------------------------------------------------------------

  async indexAdd(key: string, member: string, until: number): Promise<void> {
    this.check();
    const m = this.indexes.get(key) ?? new Map<string, number>();
    for (const [x, t] of m) if (t <= this.now()) m.delete(x);
    m.set(member, until);
    this.indexes.set(key, m);
  }

  async indexRemove(key: string, ...members: string[]): Promise<void> {
    this.check();
    const m = this.indexes.get(key);
    for (const x of members) m?.delete(x);
    if (m?.size === 0) this.indexes.delete(key);
  }

  async indexMembers(key: string, now: number): Promise<string[]> {
    this.check();
    const m = this.indexes.get(key);
    if (!m) return [];
    // The key's own life (its latest member's time, as Redis expires it) counts too.
    const t = Math.max(now, this.now());
    for (const [x, until] of m) if (until <= t) m.delete(x);
    if (m.size === 0) this.indexes.delete(key);
    return [...m.entries()].sort((a, b) => a[1] - b[1]).map(([x]) => x);
  }

  // ---- rations -------------------------------------------------------------------------

  async reserveSlot(key: string, slotId: string, now: number, windows: readonly RationWindow[]): Promise<SlotResult> {
    this.check();
    const longest = Math.max(1, ...windows.map((w) => w.windowMs));
    // The same rule as the Redis script: forget slots at or before now - longest window.
    const slots = (this.slots.get(key) ?? new Map<string, number>()).entries();
    const kept = new Map([...slots].filter(([, at]) => at > now - longest));
    const times = [...kept.values()].sort((a, b) => a - b);
    for (let i = 0; i < windows.length; i++) {
      const w = windows[i]!;
      const inWindow = times.filter((t) => t > now - w.windowMs && t <= now + longest);
      if (inWindow.length >= w.max) {
        this.slots.set(key, kept);
        return { ok: false, window: i, retryAt: inWindow[inWindow.length - w.max]! + w.windowMs };
      }
    }
    kept.set(slotId, now);
    this.slots.set(key, kept);
    return { ok: true };
  }

  async releaseSlot(key: string, slotId: string): Promise<void> {
    this.check();
    this.slots.get(key)?.delete(slotId);
  }

  // ---- business-initiated call outcomes ----------------------------------------------

  async recordCallOutcome(key: string, callId: string, outcome: 'connected' | 'unanswered', at: number, ttlMs: number): Promise<void> {
    this.check();
    const o = this.liveOutcomes(key) ?? { connected: new Map<string, number>(), unanswered: new Map<string, number>(), expiresAt: 0 };
    if (outcome === 'connected') {
      o.connected.set(callId, at);
      for (const [id, t] of o.connected) if (t <= at - ttlMs) o.connected.delete(id);
      o.unanswered.clear();
    } else o.unanswered.set(callId, at);
    o.expiresAt = this.now() + ttlMs;
    this.outcomes.set(key, o);
  }

  async callOutcomes(key: string): Promise<{ connected: number[]; unanswered: number[] }> {
    this.check();
    const o = this.liveOutcomes(key);
    const sorted = (m: Map<string, number> | undefined) => [...(m?.values() ?? [])].sort((a, b) => a - b);
    return { connected: sorted(o?.connected), unanswered: sorted(o?.unanswered) };
  }

  private liveOutcomes(key: string) {
    const o = this.outcomes.get(key);
    if (o && o.expiresAt <= this.now()) {
      this.outcomes.delete(key);
      return undefined;
    }
    return o;
  }

  async countInWindow(key: string, delta: number, windowMs: number): Promise<{ count: number; resetInMs: number }> {
    this.check();
    const t = this.now();
    // Counters are keyed by what callers send (e.g. a login name): sweep expired ones now
    // and then so that the map stays bounded by the live windows.
    if (++this.counterOps % 1024 === 0) for (const [k, c] of this.counters) if (c.expiresAt <= t) this.counters.delete(k);
    let c = this.counters.get(key);
    if (c && c.expiresAt <= t) {
      this.counters.delete(key);
      c = undefined;
    }
    if (!c) {
      if (delta <= 0) return { count: 0, resetInMs: 0 };
      c = { count: 0, expiresAt: t + windowMs };
      this.counters.set(key, c);
    }
    c.count += delta;
    if (c.count <= 0) {
      this.counters.delete(key);
      return { count: 0, resetInMs: 0 };
    }
    return { count: c.count, resetInMs: c.expiresAt - t };
  }

  /** Window counters held, expired ones not yet swept included (tests). */
  get counterKeys(): number {
    return this.counters.size;
  }

  // ---- between nodes (one node here) --------------------------------------------------

  async publish(channel: string, message: string): Promise<void> {
    this.check();
    const set = this.subs.get(channel);
    if (!set) return;
    // Asynchronous like Redis: a subscriber never runs inside the publisher's call stack.
    for (const fn of [...set]) queueMicrotask(() => fn(message));
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<() => Promise<void>> {
    this.check();
    let set = this.subs.get(channel);
    if (!set) this.subs.set(channel, (set = new Set()));
    const fn = (m: string) => onMessage(m);
    set.add(fn);
    return async () => {
      set.delete(fn);
    };
  }

  // ---- lifecycle ------------------------------------------------------------------------

  async ping(): Promise<void> {
    this.check();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const w = this.waiters;
    this.waiters = new Set();
    for (const wake of w) wake();
    this.subs.clear();
  }
}
