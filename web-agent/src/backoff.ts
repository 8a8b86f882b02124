/**
 * Reconnect policy for the page's WebSocket: exponential backoff with "full jitter"
 * (a random delay between 0 and the exponential cap), so that a server restart is not
 * hit by every agent's tab in the same millisecond.
 */
export interface BackoffPolicy {
  /** Delay in ms before reconnect attempt number `attempt` (0 = first retry). */
  nextDelay(attempt: number): number;
}

export interface ExponentialBackoffOptions {
  /** Upper bound of the first delay, ms. Default 500. */
  baseMs?: number;
  /** Largest delay, ms. Default 10 000: an agent should be back within seconds. */
  maxMs?: number;
  /** Growth per attempt. Default 2. */
  factor?: number;
  /** Smallest delay, ms: never hammer the server in a tight loop. Default 100. */
  minMs?: number;
  /** Random source in [0, 1); injected by tests. */
  random?: () => number;
}

export function exponentialBackoff(opts: ExponentialBackoffOptions = {}): BackoffPolicy {
  const base = opts.baseMs ?? 500;
  const max = opts.maxMs ?? 10_000;
  const factor = opts.factor ?? 2;
  const min = Math.min(opts.minMs ?? 100, max);
  const random = opts.random ?? Math.random;
  return {
    nextDelay(attempt: number): number {
      const n = Math.max(0, Math.floor(attempt));
      // Cap the exponent too: factor ** 1000 is Infinity, and Infinity * 0 is NaN.
      const cap = Math.min(max, base * factor ** Math.min(n, 30));
      return Math.round(Math.max(min, random() * cap));
    },
  };
}
