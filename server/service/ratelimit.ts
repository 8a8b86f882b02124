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
 * Per-second rules are paced (evenly spaced sends, GCRA) rather than windowed: a server that
 * counts over a sliding second sees at most `limit` even when our sends and its clock are
 * not aligned. `safety` (default 5 %) slows pacing a little below the limit because network
 * jitter can bunch requests at the server. Long windows (the hourly quota) use a sliding
 * log, which never lets more than `limit` through in any window.
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
  /** Fraction to stay under per-second limits, absorbing network jitter. Default 0.05. */
  safety?: number;
  /** Turn client-side shaping off (429 handling still pauses scopes). */
  disabled?: boolean;
}

export interface LimiterClock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

const PACED_MAX_WINDOW_MS = 1000;

class Bucket {
  /** GCRA: theoretical time of the next paced send, per paced rule. */
  private readonly tat: number[];
  /** Sliding logs (reserved send times, ascending) per windowed rule. */
  private readonly logs: number[][];
  pausedUntil = 0;

  constructor(readonly rules: readonly Rule[], private readonly safety: number) {
    this.tat = rules.map(() => 0);
    this.logs = rules.map(() => []);
  }

  /** Earliest time a send may start, given now. */
  earliest(now: number): number {
    let t = Math.max(now, this.pausedUntil);
    this.rules.forEach((r, i) => {
      if (r.windowMs <= PACED_MAX_WINDOW_MS) {
        t = Math.max(t, this.tat[i]!);
      } else {
        const log = this.logs[i]!;
        while (log.length > 0 && log[0]! <= now - r.windowMs) log.shift();
        if (log.length >= r.limit) t = Math.max(t, log[log.length - r.limit]! + r.windowMs);
      }
    });
    return t;
  }

  reserve(at: number): void {
    this.rules.forEach((r, i) => {
      if (r.windowMs <= PACED_MAX_WINDOW_MS) {
        const interval = (r.windowMs * (1 + this.safety)) / r.limit;
        this.tat[i] = Math.max(this.tat[i]!, at) + interval;
      } else {
        this.logs[i]!.push(at);
      }
    });
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
      safety: options.safety ?? 0.05,
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
      b = new Bucket(this.rulesFor(scope), this.o.safety);
      this.buckets.set(scope, b);
    }
    return b;
  }

  /**
   * Wait for a send slot in `scope`. Resolves `true` when the caller may send now; `false`
   * (nothing reserved) when the slot would come after `notAfter`, so a caller with a
   * deadline fails at once instead of waiting in vain.
   */
  async acquire(scope: string, opts: { notAfter?: number | undefined; signal?: AbortSignal | undefined } = {}): Promise<boolean> {
    const b = this.bucket(scope);
    for (;;) {
      const now = this.clock.now();
      const at = b.earliest(now);
      if (opts.notAfter !== undefined && at > opts.notAfter) return false;
      if (at > b.pausedUntil || at === now) {
        // Not blocked by a pause: reserve the slot now so concurrent callers queue behind it.
        b.reserve(at);
        if (at > now) await this.clock.sleep(at - now, opts.signal);
        // A 429 may have paused the scope while we slept: then queue again.
        if (b.pausedUntil > this.clock.now()) continue;
        return true;
      }
      await this.clock.sleep(at - now, opts.signal);
    }
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
