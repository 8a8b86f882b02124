/**
 * The page's reconnect policy: the shared full-jitter backoff (shared/backoff.ts) with the
 * browser's numbers. An agent should be back within seconds (10 s at most), and a tab never
 * reconnects in a tight loop (100 ms at least).
 */
import { fullJitter, retrier, type Backoff, type Retrier } from '../../shared/backoff.ts';

export type BackoffPolicy = Backoff;

export function reconnectBackoff(random?: () => number): Backoff {
  return fullJitter({ baseMs: 500, maxMs: 10_000, minMs: 100, ...(random ? { random } : {}) });
}

/**
 * A page's read the server could not answer for now (503: the history still opening or not
 * answering, 0: the network), tried again by itself: within a second at first, then at most
 * every 15 s, so a panel opened while its node restarts fills in without a reload.
 */
export function readRetry(random?: () => number): Retrier {
  return retrier({ baseMs: 1_000, maxMs: 15_000, minMs: 500, ...(random ? { random } : {}) });
}

/** Whether a failed read is worth trying again by itself (503 or no answer), not a refusal. */
export const transientStatus = (status: number): boolean => status === 503 || status === 0;
