import { afterEach, describe, expect, test, vi } from 'vitest';
import { readRetry, readTimer, reconnectBackoff, transientStatus } from './backoff.ts';

describe('reconnectBackoff (the page numbers of shared/backoff.ts)', () => {
  test('the upper bound doubles per attempt from 500 ms and stops at 10 s', () => {
    const top = reconnectBackoff(() => 0.999999);
    expect([0, 1, 2, 3, 4, 5, 6].map((a) => top.nextDelay(a))).toEqual([500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
  });
  test('full jitter below the bound, never under 100 ms (no tight reconnect loop)', () => {
    expect(reconnectBackoff(() => 0.5).nextDelay(2)).toBe(1000);
    const low = reconnectBackoff(() => 0);
    expect(low.nextDelay(0)).toBe(100);
    expect(low.nextDelay(10)).toBe(100);
  });
});

describe('readRetry (a panel read the server could not answer yet)', () => {
  test('within a second at first, the bound doubling to 15 s, never under 500 ms; reset starts again', () => {
    const top = readRetry(() => 0.999999);
    expect([1, 2, 3, 4, 5, 6].map(() => top.next())).toEqual([1000, 2000, 4000, 8000, 15_000, 15_000]);
    top.reset();
    expect(top.next()).toBe(1000);
    expect(readRetry(() => 0).next()).toBe(500);
  });
  test('503 and no answer are tried again; refusals are not', () => {
    expect([503, 0, 400, 403, 404, 413, 429, 500].filter(transientStatus)).toEqual([503, 0]);
  });
});

describe('readTimer (one panel read waiting at most)', () => {
  afterEach(() => vi.useRealTimers());
  test('a 503 or no answer is read again after the retry delay; a refusal or a non-HTTP failure is not', () => {
    vi.useFakeTimers();
    const reads = readTimer(() => 0.999999);
    const again = vi.fn();
    reads.failed(503, again);
    vi.advanceTimersByTime(999);
    expect(again).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(again).toHaveBeenCalledTimes(1);
    reads.failed(0, again); // the bound doubled: 2 s
    vi.advanceTimersByTime(1_999);
    expect(again).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(1);
    expect(again).toHaveBeenCalledTimes(2);
    for (const status of [400, 403, 404, 429, 500, undefined]) reads.failed(status, again);
    vi.advanceTimersByTime(60_000);
    expect(again).toHaveBeenCalledTimes(2);
  });
  test('a success starts the delays again; cancel and a later read replace the one waiting', () => {
    vi.useFakeTimers();
    const reads = readTimer(() => 0.999999);
    const again = vi.fn();
    const later = vi.fn();
    reads.failed(503, again);
    reads.failed(503, again); // the first is replaced, not added to
    vi.advanceTimersByTime(2_000);
    expect(again).toHaveBeenCalledTimes(1);
    reads.succeeded();
    reads.failed(503, again);
    reads.after(5_000, later); // replaces the retry waiting
    vi.advanceTimersByTime(4_999);
    expect(again).toHaveBeenCalledTimes(1);
    expect(later).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(later).toHaveBeenCalledTimes(1);
    reads.failed(503, again);
    reads.cancel();
    vi.advanceTimersByTime(60_000);
    expect(again).toHaveBeenCalledTimes(1);
  });
});
