import { describe, expect, it } from 'vitest';
import { fullJitterBackoff, noRetry } from './retry.ts';

describe('full-jitter backoff policy', () => {
  it('delay is random * min(cap, base * 2^(attempt-1))', () => {
    const p = fullJitterBackoff({ baseMs: 100, capMs: 1000, maxAttempts: 10, random: () => 0.5 });
    expect([1, 2, 3, 4, 5, 6].map((a) => p.nextDelay(a, { elapsedMs: 0 }))).toEqual([50, 100, 200, 400, 500, 500]);
  });
  it('a Retry-After is a floor: jitter is added on top of it', () => {
    const p = fullJitterBackoff({ baseMs: 100, random: () => 0.5 });
    expect(p.nextDelay(1, { retryAfterMs: 1000, elapsedMs: 0 })).toBe(1050);
    expect(fullJitterBackoff({ random: () => 0 }).nextDelay(1, { retryAfterMs: 1000, elapsedMs: 0 })).toBe(1000);
  });
  it('stops after maxAttempts', () => {
    const p = fullJitterBackoff({ maxAttempts: 3 });
    expect(p.nextDelay(2, { elapsedMs: 0 })).not.toBeNull();
    expect(p.nextDelay(3, { elapsedMs: 0 })).toBeNull();
  });
  it('stops when the next attempt would start past maxElapsedMs', () => {
    const p = fullJitterBackoff({ maxElapsedMs: 5000, random: () => 0 });
    expect(p.nextDelay(1, { retryAfterMs: 4000, elapsedMs: 500 })).toBe(4000);
    expect(p.nextDelay(1, { retryAfterMs: 4000, elapsedMs: 1500 })).toBeNull();
  });
  it('noRetry never retries', () => {
    expect(noRetry.nextDelay(1, { elapsedMs: 0 })).toBeNull();
  });
});
