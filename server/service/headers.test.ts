import { describe, expect, it } from 'vitest';
import { parseRateLimitHeaders, parseRetryAfter } from './headers.ts';

const NOW = Date.parse('2026-11-22T03:00:00.000Z');

describe('Retry-After', () => {
  it('delta seconds, integer or decimal, become milliseconds', () => {
    expect(parseRetryAfter('1', NOW)).toBe(1000);
    expect(parseRetryAfter(' 0.25 ', NOW)).toBe(250);
    expect(parseRetryAfter('0', NOW)).toBe(0);
  });
  it('an HTTP date becomes the time until it (never negative)', () => {
    expect(parseRetryAfter('Sun, 22 Nov 2026 03:00:05 GMT', NOW)).toBe(5000);
    expect(parseRetryAfter('Sun, 22 Nov 2026 02:59:00 GMT', NOW)).toBe(0);
  });
  it('garbage and negative numbers are ignored', () => {
    for (const v of ['soon', '-1', '', '1e3', undefined]) expect(parseRetryAfter(v, NOW)).toBeUndefined();
  });
});

describe('RateLimit-* headers are parsed tolerantly', () => {
  it('reads limit, remaining and reset, taking the first list member', () => {
    expect(parseRateLimitHeaders({ 'ratelimit-limit': '200, 200;w=1, 10000;w=3600', 'ratelimit-remaining': '17', 'ratelimit-reset': '1' })).toEqual({
      limit: 200,
      remaining: 17,
      reset: 1,
      policies: [],
    });
  });
  it('policies keep quota and window and ignore unknown or malformed parameters', () => {
    const info = parseRateLimitHeaders({ 'ratelimit-policy': '200;w=1;burst=50;algorithm="gcra";scope=sender;x, junk;w=2, 10000;w=3600;level=account' });
    expect(info.policies).toEqual([
      { quota: 200, windowSeconds: 1, params: { w: '1', burst: '50', algorithm: 'gcra', scope: 'sender' } },
      { quota: 10000, windowSeconds: 3600, params: { w: '3600', level: 'account' } },
    ]);
  });
  it('malformed values yield nothing rather than throwing', () => {
    expect(parseRateLimitHeaders({ 'ratelimit-limit': 'lots', 'ratelimit-remaining': '-3', 'ratelimit-reset': '1.5', 'ratelimit-policy': ';;,' })).toEqual({ policies: [] });
  });
  it('repeated headers (arrays) are joined before parsing', () => {
    expect(parseRateLimitHeaders({ 'ratelimit-remaining': ['0', '5'] }).remaining).toBe(0);
  });
});
