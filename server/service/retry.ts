/**
 * Retry as a policy object: the transport decides *whether* a failure may be retried
 * (never a POST whose outcome is unknown: the Service may have acted on it); the policy
 * decides *when*, and when to stop (bounded by attempts and by time).
 */

export interface RetryContext {
  /** Delay the Service asked for (Retry-After / RateLimit-Reset), if any. */
  retryAfterMs?: number | undefined;
  /** Time since the first attempt started. */
  elapsedMs: number;
}

export interface RetryPolicy {
  /**
   * Delay before attempt `attempt + 1`, given that attempt `attempt` (1-based) failed in a
   * retryable way; `null` = give up.
   */
  nextDelay(attempt: number, ctx: RetryContext): number | null;
}

export interface BackoffOptions {
  /** Total attempts including the first. Default 4. */
  maxAttempts?: number;
  /** First backoff ceiling. Default 200 ms. */
  baseMs?: number;
  /** Largest backoff ceiling. Default 8 s. */
  capMs?: number;
  /** Give up when the next attempt would start later than this after the first. Default 60 s. */
  maxElapsedMs?: number;
  /** Uniform [0,1) source; injected for tests. */
  random?: () => number;
}

/**
 * Full-jitter exponential backoff (`random * min(cap, base * 2^(attempt-1))`). When the
 * Service named a delay, wait at least that long and add the jitter on top, so clients
 * paused by the same 429 do not all come back in the same millisecond.
 */
export function fullJitterBackoff(o: BackoffOptions = {}): RetryPolicy {
  const maxAttempts = o.maxAttempts ?? 4;
  const baseMs = o.baseMs ?? 200;
  const capMs = o.capMs ?? 8_000;
  const maxElapsedMs = o.maxElapsedMs ?? 60_000;
  const random = o.random ?? Math.random;
  return {
    nextDelay(attempt, ctx) {
      if (attempt >= maxAttempts) return null;
      const ceiling = Math.min(capMs, baseMs * 2 ** (attempt - 1));
      const delay = Math.max(0, ctx.retryAfterMs ?? 0) + random() * ceiling;
      if (ctx.elapsedMs + delay > maxElapsedMs) return null;
      return Math.round(delay);
    },
  };
}

/** Never retry (e.g. for the CLI's `--no-retry`, or tests of a single attempt). */
export const noRetry: RetryPolicy = { nextDelay: () => null };
