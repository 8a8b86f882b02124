/**
 * Client-side rate limiting by the scopes of part 8, so a burst is shaped before it leaves
 * the process instead of being answered with 429:
 *
 * | scope key                 | requests                         | default rules            |
 * |---------------------------|----------------------------------|--------------------------|
 * | `account:/emails`         | POST /emails                     | 200 rps                  |
 * | `account:/sms`            | POST /sms                        | 200 rps                  |
 * | `account:/voices`         | POST /voices                     | 200 rps                  |
 * | `queued:<from>`           | POST /chat/messages              | 200 rps per sender       |
 * | `direct:<from>`           | POST /chat/messages/sendDirectly | 80 rps per sender (1,000 after the upgrade: `directSendRps`) |
 * | `management`              | everything else                  | 200 rps AND 10,000/hour, one shared quota (20 % reserved for call signalling) |
 *
 * Per-second rules are paced (evenly spaced sends), and every rule keeps a log of its last
 * `limit` sends keyed by when each was answered (see `Bucket`): the server can never count
 * more than `limit` in any window, however the network bunches our requests.
 *
 * A 429 or a `Retry-After` pauses the whole scope: every request sharing the quota waits.
 *
 * Call signalling (`isSignalling`: connect, preAccept, accept, reject, terminate) shares the
 * management quota with everything else (contact reads, phone number lists, message
 * lookups), so a flood of those could leave a call unanswerable for up to an hour.
 * A share of it is reserved: other requests may use at most `1 - signallingReserve` of each
 * management rule (default 20 % reserved: 8,000 of the 10,000 per hour, 160 of the 200 per
 * second), and signalling is served first. So signalling always finds at least the reserved
 * share free, however the rest of the process uses the quota.
 */

export interface Rule {
  limit: number;
  windowMs: number;
}

export interface RateLimitOptions {
  /** POST /chat/messages/sendDirectly per sender; 80 by default, 1000 after the upgrade. */
  directSendRps?: number;
  /** POST /chat/messages per sender. Default 200. */
  queuedSendRps?: number;
  /** POST /emails, /sms, /voices (each its own account quota). Default 200. */
  accountRps?: number;
  /** Management quota. Default 200 rps and 10,000 per hour. */
  managementRps?: number;
  managementPerHour?: number;
  /** Fraction to pace below per-second limits. Default 0 (the answer-based log already keeps us strictly under). */
  safety?: number;
  /** An unanswered send is assumed to have reached the server within this. Default 2 s. */
  inflightGraceMs?: number;
  /** Share of the management quota only call signalling may use. Default 0.2. */
  signallingReserve?: number;
  /** Turn client-side shaping off (429 handling still pauses scopes). */
  disabled?: boolean;
}

export interface LimiterClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Releases a slot: call when the response (or a failure) came back. */
export type Release = () => void;

const PACED_MAX_WINDOW_MS = 1000;
/** Burst tolerance of pacing, as a fraction of the window (50 ms per second). */
const PACING_TOLERANCE = 0.05;

interface Entry {
  sent: number;
  /** When the answer came back; until then the request may still be in transit. */
  done: number | undefined;
  signalling: boolean;
}

interface Waiter {
  notAfter: number | undefined;
  signalling: boolean;
  resolve(r: Release | null): void;
  reject(e: unknown): void;
  cleanup(): void;
}

/**
 * One quota. Two mechanisms per rule:
 * - pacing (per-second rules): sends evenly spaced at `limit` per window (GCRA, 50 ms of
 *   burst tolerance), so a burst leaves smoothly rather than in one lump;
 * - a log of the last `limit` sends: send number n+limit waits until send n has been
 *   *answered* and a full window has passed since. A server can only have counted send n
 *   before its answer, so it never sees more than `limit` in any window, whatever the
 *   network jitter or our clock alignment. A send still unanswered counts as arriving at
 *   most `inflightGraceMs` after it left, so one hung request cannot stall the scope.
 */
class Bucket {
  private readonly tat: number[];
  private readonly logs: Entry[][];
  /** Per rule: how many of the last window's sends other requests may have made (the rest is signalling's). */
  private readonly bulkLimits: number[];
  /** Waiters by class, each in deadline order (earliest first, no deadline last), then arrival order. */
  private readonly signalQueue: Waiter[] = [];
  private readonly bulkQueue: Waiter[] = [];
  private pumping = false;
  private wake: (() => void) | undefined;
  pausedUntil = 0;

  constructor(
    readonly rules: readonly Rule[],
    private readonly clock: LimiterClock,
    private readonly safety: number,
    private readonly inflightGraceMs: number,
    reserve: number,
  ) {
    this.tat = rules.map(() => 0);
    this.logs = rules.map(() => []);
    this.bulkLimits = rules.map((r) => Math.max(1, Math.floor(r.limit * (1 - reserve))));
  }

  /** Earliest time the next send of this class may start. */
  earliest(now: number, signalling: boolean): number {
    let t = Math.max(now, this.pausedUntil);
    this.rules.forEach((r, i) => {
      // GCRA with a small burst tolerance: a timer that fires late is caught up instead of
      // the lateness adding to every interval (which would pace well below the limit).
      if (r.windowMs <= PACED_MAX_WINDOW_MS) t = Math.max(t, this.tat[i]! - r.windowMs * PACING_TOLERANCE);
      const log = this.logs[i]!;
      const limit = signalling ? r.limit : this.bulkLimits[i]!;
      if (log.length >= limit) {
        const e = log[log.length - limit]!;
        t = Math.max(t, (e.done ?? e.sent + this.inflightGraceMs) + r.windowMs);
      }
    });
    return t;
  }

  private reserve(at: number, signalling: boolean): Release {
    const entry: Entry = { sent: at, done: undefined, signalling };
    this.rules.forEach((r, i) => {
      if (r.windowMs <= PACED_MAX_WINDOW_MS) {
        const interval = (r.windowMs * (1 + this.safety)) / r.limit;
        this.tat[i] = Math.max(this.tat[i]!, at) + interval;
      }
      const log = this.logs[i]!;
      log.push(entry);
      if (log.length > r.limit) log.shift();
    });
    return () => {
      if (entry.done !== undefined) return;
      entry.done = this.clock.now();
      // An earlier answer can make the next slot earlier: let the pump look again.
      this.wake?.();
    };
  }

  /** Sends counted in the longest rule's window now (all, and signalling's). */
  usage(now: number): { limit: number; bulkLimit: number; used: number; usedSignalling: number } | undefined {
    if (this.rules.length === 0) return undefined;
    let i = 0;
    this.rules.forEach((r, j) => (r.windowMs > this.rules[i]!.windowMs ? (i = j) : undefined));
    const r = this.rules[i]!;
    let used = 0;
    let usedSignalling = 0;
    for (const e of this.logs[i]!) {
      if ((e.done ?? e.sent) + r.windowMs <= now) continue;
      used++;
      if (e.signalling) usedSignalling++;
    }
    return { limit: r.limit, bulkLimit: this.bulkLimits[i]!, used, usedSignalling };
  }

  acquire(notAfter: number | undefined, signal: AbortSignal | undefined, signalling: boolean): Promise<Release | null> {
    if (this.rules.length === 0 && this.pausedUntil <= this.clock.now()) return Promise.resolve(() => undefined);
    const queue = signalling ? this.signalQueue : this.bulkQueue;
    return new Promise<Release | null>((resolve, reject) => {
      const onAbort = () => {
        const i = queue.indexOf(w);
        if (i >= 0) queue.splice(i, 1);
        reject(signal!.reason);
      };
      const w: Waiter = { notAfter, signalling, resolve, reject, cleanup: () => signal?.removeEventListener('abort', onAbort) };
      if (signal?.aborted) return reject(signal.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      // Earliest deadline first, then arrival order: a call's accept (deadline: the accept
      // window) is not stuck behind a bulk listing that shares the management quota.
      const key = notAfter ?? Infinity;
      if (key === Infinity) queue.push(w);
      else {
        const at = queue.findIndex((q) => (q.notAfter ?? Infinity) > key);
        if (at < 0) queue.push(w);
        else queue.splice(at, 0, w);
      }
      void this.pump();
    });
  }

  /** Waiters whose deadline comes before their class's next slot cannot be served in time: refused (null). */
  private dropLate(queue: Waiter[], at: number): void {
    while (queue.length > 0 && queue[0]!.notAfter !== undefined && at > queue[0]!.notAfter) {
      const w = queue.shift()!;
      w.cleanup();
      w.resolve(null);
    }
  }

  /** Serves waiters, signalling first, one slot at a time (no thundering herd of timers). */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.signalQueue.length > 0 || this.bulkQueue.length > 0) {
        const now = this.clock.now();
        const atSignal = this.earliest(now, true);
        const atBulk = this.earliest(now, false);
        this.dropLate(this.signalQueue, atSignal);
        this.dropLate(this.bulkQueue, atBulk);
        if (this.signalQueue.length > 0 && atSignal <= now) {
          const w = this.signalQueue.shift()!;
          w.cleanup();
          w.resolve(this.reserve(now, true));
          continue;
        }
        if (this.bulkQueue.length > 0 && atBulk <= now) {
          const w = this.bulkQueue.shift()!;
          w.cleanup();
          w.resolve(this.reserve(now, false));
          continue;
        }
        if (this.signalQueue.length === 0 && this.bulkQueue.length === 0) break;
        const at = Math.min(this.signalQueue.length > 0 ? atSignal : Infinity, this.bulkQueue.length > 0 ? atBulk : Infinity);
        // Sleep until the slot, or until an answer (or a new signalling waiter) frees one
        // earlier; cancel the loser so no stray timer keeps the process alive.
        const timer = new AbortController();
        await Promise.race([this.clock.sleep(at - now, timer.signal).catch(() => undefined), new Promise<void>((r) => (this.wake = r))]);
        timer.abort();
        this.wake = undefined;
      }
    } finally {
      this.pumping = false;
    }
  }

  /** A new waiter may be served before the slot the pump sleeps for (signalling behind a long bulk wait). */
  nudge(): void {
    this.wake?.();
  }
}

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly o: Required<RateLimitOptions>;

  constructor(private readonly clock: LimiterClock, options: RateLimitOptions = {}) {
    this.o = {
      directSendRps: options.directSendRps ?? 80,
      queuedSendRps: options.queuedSendRps ?? 200,
      accountRps: options.accountRps ?? 200,
      managementRps: options.managementRps ?? 200,
      managementPerHour: options.managementPerHour ?? 10_000,
      safety: options.safety ?? 0,
      inflightGraceMs: options.inflightGraceMs ?? 2000,
      signallingReserve: options.signallingReserve ?? 0.2,
      disabled: options.disabled ?? false,
    };
    for (const [k, v] of Object.entries(this.o)) {
      if (typeof v === 'number' && !(v >= 0 && Number.isFinite(v))) throw new RangeError(`limits.${k}: must be a finite number >= 0`);
    }
    if (this.o.signallingReserve >= 1) throw new RangeError('limits.signallingReserve: must be below 1 (a share of the management quota)');
  }

  /** The part 8 rules of a scope key. */
  rulesFor(scope: string): Rule[] {
    if (this.o.disabled) return [];
    if (scope.startsWith('direct:')) return [{ limit: this.o.directSendRps, windowMs: 1000 }];
    if (scope.startsWith('queued:')) return [{ limit: this.o.queuedSendRps, windowMs: 1000 }];
    if (scope.startsWith('account:')) return [{ limit: this.o.accountRps, windowMs: 1000 }];
    return [
      { limit: this.o.managementRps, windowMs: 1000 },
      { limit: this.o.managementPerHour, windowMs: 3_600_000 },
    ];
  }

  private bucket(scope: string): Bucket {
    let b = this.buckets.get(scope);
    if (!b) {
      b = new Bucket(this.rulesFor(scope), this.clock, this.o.safety, this.o.inflightGraceMs, scope === 'management' ? this.o.signallingReserve : 0);
      this.buckets.set(scope, b);
    }
    return b;
  }

  /**
   * Wait for a send slot in `scope`: earliest deadline first, then arrival order. Resolves a `Release` to call when the
   * answer (or a failure) came back; `null` (nothing reserved) when the slot would come
   * after `notAfter`, so a caller with a deadline fails at once instead of waiting in vain.
   */
  acquire(scope: string, opts: { notAfter?: number | undefined; signal?: AbortSignal | undefined; signalling?: boolean | undefined } = {}): Promise<Release | null> {
    const b = this.bucket(scope);
    const p = b.acquire(opts.notAfter, opts.signal, opts.signalling === true);
    if (opts.signalling) b.nudge();
    return p;
  }

  /**
   * The longest window's use of `scope` now (the management hour): its limit, what other
   * requests may use of it (the rest is reserved for call signalling), and what was sent.
   */
  usage(scope: string): { hourLimit: number; bulkHourLimit: number; hourUsed: number; hourUsedSignalling: number } | undefined {
    const u = this.buckets.get(scope)?.usage(this.clock.now()) ?? (this.rulesFor(scope).length > 0 ? this.bucket(scope).usage(this.clock.now()) : undefined);
    return u && { hourLimit: u.limit, bulkHourLimit: u.bulkLimit, hourUsed: u.used, hourUsedSignalling: u.usedSignalling };
  }

  /** The share of the management quota reserved for call signalling. */
  get signallingReserve(): number {
    return this.o.signallingReserve;
  }

  /** Pause every request of `scope` for at least `ms` (429, Retry-After, RateLimit-Remaining 0). */
  pause(scope: string, ms: number): void {
    if (!(ms > 0)) return;
    const b = this.bucket(scope);
    b.pausedUntil = Math.max(b.pausedUntil, this.clock.now() + ms);
  }

  /** Epoch ms until which `scope` is paused (0 when not). */
  pausedUntil(scope: string): number {
    return this.buckets.get(scope)?.pausedUntil ?? 0;
  }
}

/** Call signalling: what answers, places and ends calls (served first, with a reserved share of the management quota). */
const SIGNALLING = new Set(['/chat/calls/connect', '/chat/calls/preAccept', '/chat/calls/accept', '/chat/calls/reject', '/chat/calls/terminate']);
export function isSignalling(method: string, path: string): boolean {
  return method === 'POST' && SIGNALLING.has(path.split('?')[0]!);
}

/** Which quota of part 8 a request counts against. `from` is the sender for chat sends. */
export function scopeOf(method: string, path: string, body: unknown): string {
  const p = path.split('?')[0]!;
  if (method === 'POST') {
    if (p === '/emails' || p === '/sms' || p === '/voices') return `account:${p}`;
    const from = typeof body === 'object' && body !== null && typeof (body as { from?: unknown }).from === 'string' ? (body as { from: string }).from : '?';
    if (p === '/chat/messages') return `queued:${from}`;
    if (p === '/chat/messages/sendDirectly') return `direct:${from}`;
  }
  return 'management';
}
