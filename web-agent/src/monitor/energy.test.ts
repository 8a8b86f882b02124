import { describe, expect, test } from 'vitest';
import { rmsOf, toneLevel } from './energy.ts';

const RATE = 48_000;
function tones(n: number, parts: Array<[hz: number, amplitude: number]>): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) for (const [hz, a] of parts) out[i]! += a * Math.sin((2 * Math.PI * hz * i) / RATE + hz);
  return out;
}

describe('energy', () => {
  test('toneLevel gives the amplitude of each tone in a mix and ~0 for a frequency not in it', () => {
    const s = tones(4096, [[440, 0.3], [730, 0.1]]);
    expect(toneLevel(s, RATE, 440)).toBeCloseTo(0.3, 2);
    expect(toneLevel(s, RATE, 730)).toBeCloseTo(0.1, 2);
    expect(toneLevel(s, RATE, 1230)).toBeLessThan(0.002);
  });
  test('rms of a sine is its amplitude / √2; of silence 0', () => {
    expect(rmsOf(tones(48_000, [[1000, 0.3]]))).toBeCloseTo(0.3 / Math.SQRT2, 3);
    expect(rmsOf(new Float32Array(128))).toBe(0);
    expect(rmsOf([])).toBe(0);
  });
});
