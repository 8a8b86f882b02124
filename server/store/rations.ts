/**
 * Rate windows across nodes: sliding-window rations, fixed-window counters and the
 * outcomes of business-initiated calls (the permission budget). Implemented by
 * `redis-rations.ts` and `memory-rations.ts`; contract: `rations.contract.test.ts`.
 */

/** One window of a sliding-window ration: at most `max` slots within any `windowMs`. */
export interface RationWindow {
  windowMs: number;
  max: number;
}

/**
 * Outcome of `reserveSlot`: reserved, or refused because window `window` (its index in the
 * list) is full until `retryAt` (epoch ms: when its oldest counted slot leaves it).
 */
export type SlotResult = { ok: true } | { ok: false; window: number; retryAt: number };

export type CallOutcome = 'connected' | 'unanswered';

export interface Rations {
  /**
   * Check a ration and take a slot of it in ONE atomic step: iff, for every window, fewer
   * than `max` slots of `key` fall within `(now - windowMs, now]`, record slot `slotId` at
   * `now` and answer `{ok: true}`; otherwise record nothing and answer the first full
   * window and when it frees up. Of concurrent calls that would overfill a window, only as
   * many as fit succeed (also from different nodes). Slots older than the longest window
   * are forgotten.
   */
  reserveSlot(key: string, slotId: string, now: number, windows: readonly RationWindow[]): Promise<SlotResult>;

  /** Give a slot back: the action it was taken for surely did not happen. */
  releaseSlot(key: string, slotId: string): Promise<void>;

  /**
   * A fixed-window counter (rate limits): add `delta` to the counter `key` in ONE atomic
   * step and answer its new value and the ms until the window ends. The window starts at
   * the first increment and lasts `windowMs`; then the counter is gone (bounded memory).
   * A negative `delta` (giving back a reservation) never creates a counter, and a counter
   * that falls to 0 is removed. Of N concurrent increments each sees a different value.
   */
  countInWindow(key: string, delta: number, windowMs: number): Promise<{ count: number; resetInMs: number }>;

  /**
   * Record the outcome of business-initiated call `callId` to one (business number, user)
   * pair `key` in ONE atomic step. `connected`: the call is added to the pair's connected
   * calls at `at` (those at or before `at - ttlMs` are forgotten) and the unanswered run is
   * cleared; `unanswered`: the call joins the run. Recording one call twice changes nothing
   * (keyed by `callId`). Both lists expire `ttlMs` after the last record (bounded memory).
   */
  recordCallOutcome(key: string, callId: string, outcome: CallOutcome, at: number, ttlMs: number): Promise<void>;

  /** A pair's connected calls (epoch ms, ascending) and its unanswered run (epoch ms of each, ascending). */
  callOutcomes(key: string): Promise<{ connected: number[]; unanswered: number[] }>;
}
