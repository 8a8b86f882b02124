/**
 * Dead-socket detection for the page's WebSocket. A half-open ("zombie") socket after a
 * network change raises no event at all: the only sign is that the server's pings stop.
 * The watchdog learns the server's ping interval from the pings themselves, so the page
 * needs no configuration and a server that never pings is not mistaken for a dead one.
 */
export interface WatchdogOptions {
  /** Silence allowed before the first interval is known, ms. Default 35 000. */
  initialMs?: number;
  /** Silence allowed = factor × the longest recent ping interval. Default 2.5 (one lost ping is fine). */
  factor?: number;
  /** Never declare death faster than this, ms. Default 1 000. */
  minMs?: number;
  /** Never wait longer than this, ms. Default 60 000. */
  maxMs?: number;
}

/** Silence (ms since the last frame) after which the socket is considered dead. */
export function silenceLimit(recentPingIntervals: readonly number[], opts: WatchdogOptions = {}): number {
  const min = opts.minMs ?? 1_000;
  const max = opts.maxMs ?? 60_000;
  const valid = recentPingIntervals.filter((i) => Number.isFinite(i) && i > 0);
  if (valid.length === 0) return Math.min(max, Math.max(min, opts.initialMs ?? 35_000));
  return Math.min(max, Math.max(min, Math.round((opts.factor ?? 2.5) * Math.max(...valid))));
}
