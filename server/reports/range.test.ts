/** The report range and figures with a fixed clock and known rows (pure; the HTTP side: routes.test.ts). */
import { describe, expect, it } from 'vitest';
import { computeFigures } from '../wallboard/compute.ts';
import { MAX_RANGE_DAYS, ReportQueryError, localDate, reportRange } from './range.ts';
import { AGENT_COLUMNS, numberColumns, toCsv } from './index.ts';

const NOW = new Date(2026, 10, 24, 15, 30, 0).getTime(); // 24 Nov 2026, 15:30 server time
const iso = (y: number, m: number, d: number) => new Date(y, m - 1, d).toISOString();

describe('reportRange', () => {
  it('default: today, midnight to midnight in the server time zone', () => {
    expect(reportRange({}, NOW)).toEqual({ from: '2026-11-24', to: '2026-11-24', fromAt: iso(2026, 11, 24), toAt: iso(2026, 11, 25), days: 1 });
  });

  it('both dates are included; one date alone is that day', () => {
    expect(reportRange({ from: '2026-11-01', to: '2026-11-24' }, NOW)).toMatchObject({ fromAt: iso(2026, 11, 1), toAt: iso(2026, 11, 25), days: 24 });
    expect(reportRange({ from: '2026-02-28' }, NOW)).toMatchObject({ from: '2026-02-28', to: '2026-02-28', toAt: iso(2026, 3, 1), days: 1 });
    expect(reportRange({ to: '2026-12-31' }, NOW)).toMatchObject({ from: '2026-12-31', toAt: iso(2027, 1, 1) });
  });

  it(`at most ${MAX_RANGE_DAYS} days`, () => {
    expect(reportRange({ from: '2026-01-01', to: '2026-04-02' }, NOW).days).toBe(92);
    expect(() => reportRange({ from: '2026-01-01', to: '2026-04-03' }, NOW)).toThrow('to: the range must be at most 92 days (from 2026-01-01 to 2026-04-03 is 93)');
    expect(() => reportRange({ from: '0001-01-01', to: '9999-12-31' }, NOW)).toThrow(/^to: the range must be at most 92 days/);
  });

  it.each([
    [{ from: 'yesterday' }, 'from: must be a calendar date as YYYY-MM-DD'],
    [{ from: '2026-02-30' }, 'from: must be a calendar date as YYYY-MM-DD'],
    [{ from: '2026-11-01T00:00:00Z' }, 'from: must be a calendar date as YYYY-MM-DD'],
    [{ from: '2026-11-01', to: '2026-13-01' }, 'to: must be a calendar date as YYYY-MM-DD'],
    [{ from: '2026-11-02', to: '2026-11-01' }, 'to: must be the same day as from or later'],
  ])('%o → %s', (q, message) => {
    expect(() => reportRange(q, NOW)).toThrow(new ReportQueryError(message));
  });

  it('a day across a DST change is one day of 23 hours (Europe/Berlin, 29 Mar 2026)', () => {
    const before = process.env.TZ;
    process.env.TZ = 'Europe/Berlin';
    try {
      const r = reportRange({ from: '2026-03-29' }, NOW);
      expect(r).toMatchObject({ fromAt: '2026-03-28T23:00:00.000Z', toAt: '2026-03-29T22:00:00.000Z', days: 1 });
      expect(reportRange({ from: '2026-03-01', to: '2026-05-31' }, NOW).days).toBe(92);
      expect(localDate(Date.parse('2026-03-29T22:30:00Z'))).toBe('2026-03-30');
    } finally {
      if (before === undefined) delete process.env.TZ;
      else process.env.TZ = before;
    }
  });
});

describe('computeFigures over a range (the wallboard definitions)', () => {
  const A = '+15550001000';
  const B = '+15550002000';
  const rows = [
    { businessNumber: A, direction: 'inbound' as const, outcome: 'answered', agent: 'ann', waitMs: 5_000, talkMs: 60_000, holdMs: 10_000, answeredAt: 'x', endedAt: 'x' },
    { businessNumber: A, direction: 'inbound' as const, outcome: 'answered', agent: 'bob', waitMs: 30_000, talkMs: 120_000, answeredAt: 'x', endedAt: 'x' },
    { businessNumber: A, direction: 'inbound' as const, outcome: 'abandoned', waitMs: 12_000 },
    { businessNumber: B, direction: 'inbound' as const, outcome: 'missed', agent: 'ann' },
    { businessNumber: B, direction: 'outbound' as const, outcome: 'answered', agent: 'ann', talkMs: 40_000, answeredAt: 'x', endedAt: 'x' },
    { businessNumber: B, direction: 'inbound' as const, outcome: 'in-progress', agent: 'bob', waitMs: 1_000, answeredAt: 'x' },
  ];

  it('per number and per agent', () => {
    const f = computeFigures(rows, 20);
    expect(f.numbers).toEqual([
      { businessNumber: A, offered: 3, answered: 2, abandoned: 1, missed: 0, serviceLevel: 1 / 3, asaMs: 17_500, ahtMs: 95_000, transfers: 0 },
      { businessNumber: B, offered: 2, answered: 1, abandoned: 0, missed: 1, serviceLevel: 0.5, asaMs: 1_000, ahtMs: 0, transfers: 0 },
    ]);
    expect(f.agents).toEqual([
      // ann: one inbound (70 s with hold), one outbound (40 s); the missed call is not handled.
      { name: 'ann', callsHandled: 2, inbound: 1, outbound: 1, talkMs: 100_000, holdMs: 10_000, ahtMs: 55_000, transfers: 0 },
      // bob: one ended (120 s), one still talking (not in AHT).
      { name: 'bob', callsHandled: 2, inbound: 2, outbound: 0, talkMs: 120_000, holdMs: 0, ahtMs: 120_000, transfers: 0 },
    ]);
  });

  it('CSV: a header, one row each, CRLF, quoted fields where needed', () => {
    const f = computeFigures(rows, 20);
    // the table's headings and units (percent, seconds), not raw field names and fractions.
    expect(toCsv(numberColumns(20), f.numbers)).toBe(
      'Business number,Offered,Answered,Abandoned,Missed,Service level (20 s) %,Avg. answer (s),Avg. handle (s),Transfers\r\n' + `${A},3,2,1,0,33.3,17.5,95,0\r\n` + `${B},2,1,0,1,50,1,0,0\r\n`,
    );
    expect(toCsv(AGENT_COLUMNS, [{ ...f.agents[0]!, name: 'Ann "A", desk 2' }])).toBe('Agent,Calls handled,Inbound,Outbound,Talk time (s),Hold time (s),Avg. handle (s),Transfers\r\n"Ann ""A"", desk 2",2,1,1,100,10,55,0\r\n');
  });
});
