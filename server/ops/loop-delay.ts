/**
 * The event loop's delay (`perf_hooks.monitorEventLoopDelay`): how late a timer due every
 * 10 ms fires, i.e. how long anything waiting for this loop (a webhook, an offer, a page)
 * waited behind synchronous work. One monitor per process, whoever asks.
 *
 *   const d = loopDelay().take();   // { p50, p99, max, count, sum } in seconds since the last take
 */
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

/** Sampling period: Node records the whole interval between two samples, this included. */
const RESOLUTION_MS = 10;

export interface LoopDelay {
  /** Seconds beyond the sampling period: median, 99th percentile, longest. */
  p50: number;
  p99: number;
  max: number;
  /** Samples, and their delays summed (seconds). */
  count: number;
  sum: number;
}

let shared: { h: IntervalHistogram; take(): LoopDelay } | undefined;

export function loopDelay(): { take(): LoopDelay } {
  if (shared) return shared;
  const h = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  h.enable();
  // Microseconds are enough; a negative difference is sampling noise.
  const s = (ns: number) => Math.max(0, Math.round(ns / 1e3 - RESOLUTION_MS * 1000) / 1e6);
  shared = {
    h,
    take() {
      const count = h.count;
      const out = count === 0 ? { p50: 0, p99: 0, max: 0, count: 0, sum: 0 } : { p50: s(h.percentile(50)), p99: s(h.percentile(99)), max: s(h.max), count, sum: Math.round(s(h.mean) * count * 1e6) / 1e6 };
      h.reset();
      return out;
    },
  };
  return shared;
}
