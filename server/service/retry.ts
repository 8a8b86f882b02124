/**
 * Retry as a policy object: the transport decides *whether* a failure may be retried
 * (never a POST whose outcome is unknown: the Service may have acted on it); the policy
 * decides *when*, and when to stop (bounded by attempts and by time).
 */
import { fullJitter } from '../../shared/backoff.ts';

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
 * Full-jitter exponential backoff (`random * min(cap, base * 2^(attempt-1))`, the shared
 * policy of shared/backoff.ts) bounded by attempts and time. When the Service named a
 * delay, wait at least that long and add the jitter on top, so clients paused by the same
 * 429 do not all come back in the same millisecond.
 */
export function fullJitterBackoff(o: BackoffOptions = {}): RetryPolicy {
  const maxAttempts = o.maxAttempts ?? 4;
  const maxElapsedMs = o.maxElapsedMs ?? 60_000;
  const jitter = fullJitter({ baseMs: o.baseMs ?? 200, maxMs: o.capMs ?? 8_000, ...(o.random ? { random: o.random } : {}) });
  return {
    nextDelay(attempt, ctx) {
      if (attempt >= maxAttempts) return null;
      // `attempt` is 1-based here (the attempt that failed); the shared policy counts retries from 0.
      const delay = Math.max(0, ctx.retryAfterMs ?? 0) + jitter.nextDelay(attempt - 1);
      if (ctx.elapsedMs + delay > maxElapsedMs) return null;
      return Math.round(delay);
    },
  };
}

/** Never retry (e.g. for the CLI's `--no-retry`, or tests of a single attempt). */
export const noRetry: RetryPolicy = { nextDelay: () => null };
