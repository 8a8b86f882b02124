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

/**
 * One panel read's timer: the read's own retry (after a 503 or no answer) and any later
 * read the panel asks for share it, so there is never more than one read waiting.
 */
export interface ReadTimer {
  /** Forget the read waiting, if any (a new read starts, or the panel goes). */
  cancel(): void;
  /** The read was answered: the next failure is tried again within a second. */
  succeeded(): void;
  /** The read failed with `status` (undefined: not an HTTP failure): `again` later if the server could not answer yet. */
  failed(status: number | undefined, again: () => void): void;
  /** Read again in `ms`, replacing any read waiting. */
  after(ms: number, again: () => void): void;
}

export function readTimer(random?: () => number): ReadTimer {
  const retry = readRetry(random);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const after = (ms: number, again: () => void) => {
    clearTimeout(timer);
    timer = setTimeout(again, ms);
  };
  return {
    cancel: () => clearTimeout(timer),
    succeeded: () => retry.reset(),
    failed(status, again) {
      clearTimeout(timer);
      if (status !== undefined && transientStatus(status)) after(retry.next(), again);
    },
    after,
  };
}
