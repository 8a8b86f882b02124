import { describe, expect, test } from 'vitest';
import { readRetry, reconnectBackoff, transientStatus } from './backoff.ts';

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
