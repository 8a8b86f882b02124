import { describe, expect, it, test } from 'vitest';
import { fullJitter, seededRandom, retrier } from './backoff.ts';

describe('fullJitter', () => {
  test('the ceiling grows by the factor per attempt from the base and stops at the max', () => {
    const top = fullJitter({ baseMs: 500, maxMs: 10_000, random: () => 0.999999 });
    expect([0, 1, 2, 3, 4, 5, 6].map((a) => top.nextDelay(a))).toEqual([500, 1000, 2000, 4000, 8000, 10_000, 10_000]);
    const triple = fullJitter({ baseMs: 100, maxMs: 1e6, factor: 3, random: () => 0.999999 });
    expect([0, 1, 2].map((a) => triple.nextDelay(a))).toEqual([100, 300, 900]);
  });
  test('full jitter: a delay is random below the ceiling, never under the minimum', () => {
    expect(fullJitter({ baseMs: 500, maxMs: 10_000, random: () => 0.5 }).nextDelay(2)).toBe(1000);
    const low = fullJitter({ baseMs: 500, maxMs: 10_000, minMs: 100, random: () => 0 });
    expect(low.nextDelay(0)).toBe(100);
    expect(low.nextDelay(10)).toBe(100);
    expect(fullJitter({ baseMs: 500, maxMs: 10_000, random: () => 0 }).nextDelay(3)).toBe(0);
  });
  test('a minimum above the max is the max', () => {
    expect(fullJitter({ baseMs: 50, maxMs: 200, minMs: 1000, random: () => 0 }).nextDelay(0)).toBe(200);
  });
  test('huge, infinite or NaN attempt numbers stay finite (no Infinity or NaN delay)', () => {
    const p = fullJitter({ baseMs: 500, maxMs: 10_000, random: () => 0.999999 });
    expect(p.nextDelay(10_000)).toBe(10_000);
    expect(p.nextDelay(Number.MAX_SAFE_INTEGER)).toBe(10_000);
    expect(Number.isFinite(p.nextDelay(Number.NaN))).toBe(true);
    expect(Number.isFinite(p.nextDelay(Number.POSITIVE_INFINITY))).toBe(true);
  });
  test('a negative or fractional attempt counts as the nearest valid one', () => {
    const p = fullJitter({ baseMs: 500, maxMs: 10_000, random: () => 0.999999 });
    expect(p.nextDelay(-3)).toBe(500);
    expect(p.nextDelay(1.7)).toBe(1000);
  });
  test('different clients spread out: delays vary with the random source', () => {
    let i = 0;
    const seq = [0.1, 0.9];
    const p = fullJitter({ baseMs: 1000, maxMs: 10_000, random: () => seq[i++ % 2]! });
    expect(p.nextDelay(3)).not.toBe(p.nextDelay(3));
  });
  test('seeded: the same seed gives the same delays, another seed others, all within the ceiling', () => {
    const run = (seed: number) => {
      const p = fullJitter({ baseMs: 100, maxMs: 5000, random: seededRandom(seed) });
      return Array.from({ length: 12 }, (_, a) => p.nextDelay(a));
    };
    expect(run(42)).toEqual(run(42));
    expect(run(42)).not.toEqual(run(43));
    run(7).forEach((d, a) => {
      expect(d).toBeGreaterThanOrEqual(0);
      expect(d).toBeLessThanOrEqual(Math.min(5000, 100 * 2 ** a));
      expect(Number.isInteger(d)).toBe(true);
    });
  });
  test('seededRandom is uniform enough in [0, 1)', () => {
    const r = seededRandom(1);
    const xs = Array.from({ length: 10_000 }, () => r());
    expect(Math.min(...xs)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...xs)).toBeLessThan(1);
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(mean).toBeGreaterThan(0.45);
    expect(mean).toBeLessThan(0.55);
  });
});

describe('retrier', () => {
  it('grows the ceiling per retry from baseMs, never below minMs nor above maxMs, and starts over after reset', () => {
    const r = retrier({ baseMs: 100, maxMs: 1000, minMs: 50, random: () => 0.999999 });
    expect([r.next(), r.next(), r.next(), r.next(), r.next()]).toEqual([100, 200, 400, 800, 1000]);
    r.reset();
    expect(r.next()).toBe(100);
    const low = retrier({ baseMs: 100, maxMs: 1000, minMs: 50, random: () => 0 });
    expect([low.next(), low.next()]).toEqual([50, 50]);
  });
});
