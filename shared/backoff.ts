/**
 * The one backoff policy of the project (every retry loop uses it: the pages' reconnect, the Service client, the webhook workers, history, the archive, the call-back queue): exponential with "full jitter" (a random delay
 * between 0 and an exponentially growing ceiling), so that many clients failing at once
 * (every agent's tab after a server restart, every request paused by the same 429) do not
 * all come back in the same millisecond. Pure: the random source is injected, and
 * `seededRandom` gives a reproducible one for tests.
 *
 * Used by the browser's reconnect (web-agent/src/connection.ts, via the pages) and by the
 * Service client's retry policy (server/service/retry.ts, which adds attempts, time and
 * Retry-After on top).
 */

export { seededRandom } from './random.ts';

export interface Backoff {
  /** Delay in whole ms before retry number `attempt + 1` (0 = the first retry). */
  nextDelay(attempt: number): number;
}

export interface BackoffOptions {
  /** Ceiling of the first delay, ms. */
  baseMs: number;
  /** Largest ceiling, ms. */
  maxMs: number;
  /** Growth of the ceiling per attempt. Default 2. */
  factor?: number;
  /** Smallest delay, ms (e.g. never reconnect in a tight loop). Default 0. */
  minMs?: number;
  /** Uniform source in [0, 1). Default `Math.random`. */
  random?: () => number;
}

/** `max(min, random() * min(maxMs, baseMs * factor^attempt))`, rounded to whole ms. */
export function fullJitter(opts: BackoffOptions): Backoff {
  const factor = opts.factor ?? 2;
  const max = opts.maxMs;
  const min = Math.min(opts.minMs ?? 0, max);
  const random = opts.random ?? Math.random;
  return {
    nextDelay(attempt: number): number {
      const n = Number.isFinite(attempt) ? Math.max(0, Math.floor(attempt)) : 0;
      // Cap the exponent too: factor ** 1000 is Infinity, and Infinity * 0 is NaN.
      const ceiling = Math.min(max, opts.baseMs * factor ** Math.min(n, 30));
      return Math.round(Math.max(min, random() * ceiling));
    },
  };
}

/** A retry loop's delays: `next()` before each retry (the ceiling grows), `reset()` after a success. */
export interface Retrier {
  next(): number;
  reset(): void;
}

/**
 * The policy above as a loop's state, for loops that retry until they succeed (a database
 * to open, a queue to drain, a disk to write): delays between `minMs` and a ceiling that
 * doubles from `baseMs` up to `maxMs`.
 */
export function retrier(opts: BackoffOptions): Retrier {
  const b = fullJitter(opts);
  let attempt = 0;
  return {
    next: () => b.nextDelay(attempt++),
    reset: () => void (attempt = 0),
  };
}
