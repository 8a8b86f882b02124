import { describe, expect, test } from 'vitest';
import { silenceLimit } from './heartbeat.ts';

describe('silenceLimit (dead-socket detection)', () => {
  test('before the server has pinged twice, the page waits the initial limit (35 s)', () => {
    expect(silenceLimit([])).toBe(35_000);
  });
  test('with pings every 5 s, 12.5 s of silence means dead (one lost ping is tolerated)', () => {
    expect(silenceLimit([5000, 5000, 5000])).toBe(12_500);
  });
  test('the longest recent interval counts, so a slow ping does not trip the watchdog', () => {
    expect(silenceLimit([5000, 8000, 5000])).toBe(20_000);
  });
  test('never faster than the minimum, never slower than the maximum', () => {
    expect(silenceLimit([100])).toBe(1000);
    expect(silenceLimit([100_000])).toBe(60_000);
    expect(silenceLimit([200], { minMs: 300 })).toBe(500);
  });
  test('nonsense intervals (0, negative, NaN) are ignored', () => {
    expect(silenceLimit([0, -5, Number.NaN])).toBe(35_000);
    expect(silenceLimit([0, 4000])).toBe(10_000);
  });
});
