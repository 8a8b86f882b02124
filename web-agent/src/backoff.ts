/**
 * The page's reconnect policy: the shared full-jitter backoff (shared/backoff.ts) with the
 * browser's numbers. An agent should be back within seconds (10 s at most), and a tab never
 * reconnects in a tight loop (100 ms at least).
 */
import { fullJitter, type Backoff } from '../../shared/backoff.ts';

export type BackoffPolicy = Backoff;

export function reconnectBackoff(random?: () => number): Backoff {
  return fullJitter({ baseMs: 500, maxMs: 10_000, minMs: 100, ...(random ? { random } : {}) });
}
