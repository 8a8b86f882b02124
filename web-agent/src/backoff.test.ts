import { describe, expect, test } from 'vitest';
import { exponentialBackoff } from './backoff.ts';

describe('exponentialBackoff', () => {
  test('the upper bound doubles per attempt from the base and stops at the max', () => {
    const top = exponentialBackoff({ baseMs: 500, maxMs: 10_000, random: () => 0.999999 });
    expect([0, 1, 2, 3, 4, 5, 6].map((a) => top.nextDelay(a))).toEqual([500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
  });
  test('full jitter: a delay is random below the bound, never under the minimum', () => {
    const mid = exponentialBackoff({ baseMs: 500, random: () => 0.5 });
    expect(mid.nextDelay(2)).toBe(1000);
    const low = exponentialBackoff({ baseMs: 500, minMs: 100, random: () => 0 });
    expect(low.nextDelay(0)).toBe(100);
    expect(low.nextDelay(10)).toBe(100);
  });
  test('huge attempt numbers stay finite (no Infinity or NaN delay)', () => {
    const p = exponentialBackoff({ random: () => 0.999999 });
    expect(p.nextDelay(10_000)).toBe(10_000);
    expect(p.nextDelay(Number.MAX_SAFE_INTEGER)).toBe(10_000);
  });
  test('a negative or fractional attempt counts as the nearest valid one', () => {
    const p = exponentialBackoff({ baseMs: 500, random: () => 0.999999 });
    expect(p.nextDelay(-3)).toBe(500);
    expect(p.nextDelay(1.7)).toBe(1000);
  });
  test('different tabs spread out: delays vary with the random source', () => {
    let i = 0;
    const seq = [0.1, 0.9];
    const p = exponentialBackoff({ baseMs: 1000, random: () => seq[i++ % 2]! });
    expect(p.nextDelay(3)).not.toBe(p.nextDelay(3));
  });
});
