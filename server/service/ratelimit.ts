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
 * | `management`              | everything else                  | 200 rps AND 10,000/hour, one shared quota |
 *
 * Per-second rules are paced (evenly spaced sends), and every rule keeps a log of its last
 * `limit` sends keyed by when each was answered (see `Bucket`): the server can never count
 * more than `limit` in any window, however the network bunches our requests.
 *
 * A 429 or a `Retry-After` pauses the whole scope: every request sharing the quota waits.
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
}

interface Waiter {
  notAfter: number | undefined;
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
  private readonly queue: Waiter[] = [];
  private pumping = false;
  private wake: (() => void) | undefined;
  pausedUntil = 0;

  constructor(
    readonly rules: readonly Rule[],
    private readonly clock: LimiterClock,
    private readonly safety: number,
    private readonly inflightGraceMs: number,
  ) {
    this.tat = rules.map(() => 0);
    this.logs = rules.map(() => []);
  }

  /** Earliest time the next send may start. */
  earliest(now: number): number {
    let t = Math.max(now, this.pausedUntil);
    this.rules.forEach((r, i) => {
      // GCRA with a small burst tolerance: a timer that fires late is caught up instead of
      // the lateness adding to every interval (which would pace well below the limit).
      if (r.windowMs <= PACED_MAX_WINDOW_MS) t = Math.max(t, this.tat[i]! - r.windowMs * PACING_TOLERANCE);
      const log = this.logs[i]!;
      if (log.length >= r.limit) {
        const e = log[log.length - r.limit]!;
        t = Math.max(t, (e.done ?? e.sent + this.inflightGraceMs) + r.windowMs);
      }
    });
    return t;
  }

  private reserve(at: number): Release {
    const entry: Entry = { sent: at, done: undefined };
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

  acquire(notAfter: number | undefined, signal: AbortSignal | undefined): Promise<Release | null> {
    if (this.rules.length === 0 && this.pausedUntil <= this.clock.now()) return Promise.resolve(() => undefined);
    return new Promise<Release | null>((resolve, reject) => {
      const onAbort = () => {
        const i = this.queue.indexOf(w);
        if (i >= 0) this.queue.splice(i, 1);
        reject(signal!.reason);
      };
      const w: Waiter = { notAfter, resolve, reject, cleanup: () => signal?.removeEventListener('abort', onAbort) };
      if (signal?.aborted) return reject(signal.reason);
      signal?.addEventListener('abort', onAbort, { once: true });
      // Earliest deadline first, then arrival order: a call's accept (deadline: the accept
      // window) is not stuck behind a bulk listing that shares the management quota.
      const key = notAfter ?? Infinity;
      const at = this.queue.findIndex((q) => (q.notAfter ?? Infinity) > key);
      if (at < 0) this.queue.push(w);
      else this.queue.splice(at, 0, w);
      void this.pump();
    });
  }

  /** Serves waiters in queue order, one slot at a time (no thundering herd of timers). */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.queue.length > 0) {
        const now = this.clock.now();
        const at = this.earliest(now);
        // Anyone whose deadline comes before the head's slot cannot be served in time.
        for (const w of [...this.queue]) {
          if (w.notAfter !== undefined && at > w.notAfter) {
            this.queue.splice(this.queue.indexOf(w), 1);
            w.cleanup();
            w.resolve(null);
          }
        }
        if (this.queue.length === 0) break;
        if (at <= now) {
          const w = this.queue.shift()!;
          w.cleanup();
          w.resolve(this.reserve(now));
          continue;
        }
        // Sleep until the slot, or until an answer frees one earlier; cancel the loser so
        // no stray timer keeps the process alive.
        const timer = new AbortController();
        await Promise.race([this.clock.sleep(at - now, timer.signal).catch(() => undefined), new Promise<void>((r) => (this.wake = r))]);
        timer.abort();
        this.wake = undefined;
      }
    } finally {
      this.pumping = false;
    }
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
      disabled: options.disabled ?? false,
    };
    for (const [k, v] of Object.entries(this.o)) {
      if (typeof v === 'number' && !(v >= 0 && Number.isFinite(v))) throw new RangeError(`limits.${k}: must be a finite number >= 0`);
    }
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
      b = new Bucket(this.rulesFor(scope), this.clock, this.o.safety, this.o.inflightGraceMs);
      this.buckets.set(scope, b);
    }
    return b;
  }

  /**
   * Wait for a send slot in `scope`: earliest deadline first, then arrival order. Resolves a `Release` to call when the
   * answer (or a failure) came back; `null` (nothing reserved) when the slot would come
   * after `notAfter`, so a caller with a deadline fails at once instead of waiting in vain.
   */
  acquire(scope: string, opts: { notAfter?: number | undefined; signal?: AbortSignal | undefined } = {}): Promise<Release | null> {
    return this.bucket(scope).acquire(opts.notAfter, opts.signal);
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
