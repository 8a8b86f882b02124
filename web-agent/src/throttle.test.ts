import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { leadingThrottle } from './throttle.ts';

describe('leadingThrottle (the wrap-up draft)', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('runs the first call of a burst at once, then at most once per interval, folding the calls in between', () => {
    const runs: number[] = [];
    const t = leadingThrottle(() => runs.push(Date.now()), 600);
    const t0 = Date.now();
    t.call(); // the first keystroke: at once (a trailing-only throttle sent it 600 ms late)
    expect(runs).toEqual([t0]);
    vi.advanceTimersByTime(50);
    t.call();
    vi.advanceTimersByTime(50);
    t.call();
    expect(runs).toHaveLength(1);
    vi.advanceTimersByTime(500); // 600 ms after the first run: the folded calls run once
    expect(runs).toEqual([t0, t0 + 600]);
    vi.advanceTimersByTime(2_000);
    expect(runs).toHaveLength(2);
    t.call(); // after a pause: at once again
    expect(runs).toEqual([t0, t0 + 600, t0 + 2_600]);
  });

  it('cancel drops the waiting run', () => {
    let n = 0;
    const t = leadingThrottle(() => n++, 600);
    t.call();
    t.call();
    t.cancel();
    vi.advanceTimersByTime(1_000);
    expect(n).toBe(1);
  });
});
