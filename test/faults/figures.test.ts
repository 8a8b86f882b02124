/** The figure lines every bench prints and the off-goal judgement of `npm run bench`'s table. */
import { describe, expect, it } from 'vitest';
import { parseFigures } from '../../bench/figures.ts';

describe('bench figures', () => {
  it('reads figure lines among other output and judges each against its goal', () => {
    const out = [
      'some progress line',
      'figure fleet | offer latency p99 | 175.8 ms | goal <= 20',
      'figure fleet | calls lost | 0 calls | goal <= 0',
      'figure ingest | ingest / bare handler | 0.63 ratio | goal >= 0.6',
      'figure fleet | CPU per call (all nodes) | 11.1 ms | goal -',
      'figure fleet | offer latency p50 | NaN ms | goal <= 3',
    ].join('\n');
    expect(parseFigures(out).map((f) => [f.bench, f.name, f.value, f.ok])).toEqual([
      ['fleet', 'offer latency p99', 175.8, false],
      ['fleet', 'calls lost', 0, true],
      ['ingest', 'ingest / bare handler', 0.63, true],
      ['fleet', 'CPU per call (all nodes)', 11.1, undefined],
      ['fleet', 'offer latency p50', NaN, false], // no measurement is never on goal
    ]);
  });
});
