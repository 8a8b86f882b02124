import { describe, expect, it } from 'vitest';
import { HoursFileError, parseHoursFile } from '../config/hours.ts';
import { closedCheck, isOpen, localTime, scheduleOf } from './index.ts';

const table = parseHoursFile(
  JSON.stringify({
    '+15550100001': {
      timeZone: 'America/New_York',
      weekly: { mon: ['09:00-17:00'], tue: ['09:00-17:00'], wed: ['09:00-17:00'], thu: ['09:00-17:00'], fri: ['09:00-17:00'], sun: ['01:30-02:30', '03:00-04:00'], sat: ['20:00-24:00'] },
      holidays: ['2026-12-25', { date: '2026-12-24', name: 'Christmas Eve', hours: ['09:00-12:00'] }],
    },
    '100000000000009': {
      timeZone: 'Europe/Berlin',
      weekly: { mon: ['08:00-18:00'], tue: ['08:00-18:00'], wed: ['08:00-18:00'], thu: ['08:00-18:00'], fri: ['08:00-18:00'], sun: ['02:00-03:00'] },
    },
    '*': {
      timeZone: 'Asia/Tokyo',
      weekly: Object.fromEntries(['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'].map((d) => [d, ['00:00-24:00']])),
      holidays: ['2026-01-01'],
    },
  }),
);
const ny = table.get('+15550100001')!;
const berlin = table.get('100000000000009')!;
const tokyo = table.get('*')!;
const at = (iso: string) => Date.parse(iso);

describe('isOpen', () => {
  it.each([
    // New York, ordinary weekdays: boundaries (start open, end closed).
    ['NY Friday 08:59 EST', ny, '2026-03-06T13:59:00Z', false],
    ['NY Friday 09:00 EST', ny, '2026-03-06T14:00:00Z', true],
    ['NY Friday 16:59 EST', ny, '2026-03-06T21:59:00Z', true],
    ['NY Friday 17:00 EST', ny, '2026-03-06T22:00:00Z', false],
    // Spring forward (Sunday 8 March 2026, 02:00 EST → 03:00 EDT at 07:00 UTC).
    ['NY Friday before spring forward 13:30 UTC = 08:30 EST', ny, '2026-03-06T13:30:00Z', false],
    ['NY Monday after spring forward 13:30 UTC = 09:30 EDT', ny, '2026-03-09T13:30:00Z', true],
    ['NY spring-forward Sunday 01:45 EST', ny, '2026-03-08T06:45:00Z', true],
    ['NY spring-forward Sunday 06:59 UTC = 01:59 EST (last minute before the gap)', ny, '2026-03-08T06:59:00Z', true],
    ['NY spring-forward Sunday 07:00 UTC = 03:00 EDT (02:xx never happens)', ny, '2026-03-08T07:00:00Z', true],
    ['NY spring-forward Sunday 08:00 UTC = 04:00 EDT', ny, '2026-03-08T08:00:00Z', false],
    // Fall back (Sunday 1 November 2026, 02:00 EDT → 01:00 EST at 06:00 UTC): 01:xx twice.
    ['NY Friday before fall back 13:30 UTC = 09:30 EDT', ny, '2026-10-30T13:30:00Z', true],
    ['NY Monday after fall back 13:30 UTC = 08:30 EST', ny, '2026-11-02T13:30:00Z', false],
    ['NY fall-back Sunday 01:20 EDT (before the range)', ny, '2026-11-01T05:20:00Z', false],
    ['NY fall-back Sunday 01:30 EDT (first time)', ny, '2026-11-01T05:30:00Z', true],
    ['NY fall-back Sunday 01:30 EST (second time)', ny, '2026-11-01T06:30:00Z', true],
    ['NY fall-back Sunday 02:15 EST', ny, '2026-11-01T07:15:00Z', true],
    ['NY fall-back Sunday 02:45 EST', ny, '2026-11-01T07:45:00Z', false],
    // 24:00 ends a range at midnight.
    ['NY Saturday 23:59', ny, '2026-03-08T04:59:00Z', true],
    ['NY Sunday 00:00 (Saturday over)', ny, '2026-03-08T05:00:00Z', false],
    // Holidays: closed all day, or only their hours; the weekday's hours do not apply.
    ['NY Christmas Day (a Friday) 10:00', ny, '2026-12-25T15:00:00Z', false],
    ['NY Christmas Eve 11:59', ny, '2026-12-24T16:59:00Z', true],
    ['NY Christmas Eve 12:00', ny, '2026-12-24T17:00:00Z', false],
    ['NY the day after Christmas Eve and Day: an ordinary Monday', ny, '2026-12-28T15:00:00Z', true],
    // Berlin: spring forward Sunday 29 March 2026 at 01:00 UTC (02:00 CET → 03:00 CEST).
    ['Berlin Friday 06:30 UTC = 07:30 CET', berlin, '2026-03-27T06:30:00Z', false],
    ['Berlin Monday 06:30 UTC = 08:30 CEST', berlin, '2026-03-30T06:30:00Z', true],
    ['Berlin spring-forward Sunday 00:59 UTC = 01:59 CET', berlin, '2026-03-29T00:59:00Z', false],
    ['Berlin spring-forward Sunday 01:00 UTC = 03:00 CEST (the 02:00-03:00 opening never happens)', berlin, '2026-03-29T01:00:00Z', false],
    // Berlin fall back Sunday 25 October 2026 at 01:00 UTC (03:00 CEST → 02:00 CET): 02:xx twice.
    ['Berlin fall-back Sunday 00:30 UTC = 02:30 CEST', berlin, '2026-10-25T00:30:00Z', true],
    ['Berlin fall-back Sunday 01:30 UTC = 02:30 CET', berlin, '2026-10-25T01:30:00Z', true],
    ['Berlin fall-back Sunday 02:00 UTC = 03:00 CET', berlin, '2026-10-25T02:00:00Z', false],
    // A holiday is a date of the number's zone, not of UTC.
    ['Tokyo 31 December 23:30 JST', tokyo, '2025-12-31T14:30:00Z', true],
    ['Tokyo 1 January 00:30 JST (still 31 December in UTC)', tokyo, '2025-12-31T15:30:00Z', false],
    ['Tokyo 2 January 00:00 JST', tokyo, '2026-01-01T15:00:00Z', true],
  ] as const)('%s → %s', (_name, schedule, iso, open) => {
    expect(isOpen(schedule, at(iso))).toBe(open);
  });

  it('localTime gives the wall clock of the zone', () => {
    expect(localTime('America/New_York', at('2026-11-01T06:30:00Z'))).toEqual({ date: '2026-11-01', weekday: 'sun', minute: 90 });
    expect(localTime('Asia/Tokyo', at('2025-12-31T15:30:00Z'))).toEqual({ date: '2026-01-01', weekday: 'thu', minute: 30 });
  });

  it('a number is found by its phone id, then its E.164 number, then *; closedCheck asks isOpen', () => {
    expect(scheduleOf(table, '100000000000009', '+15550100009')).toBe(berlin);
    expect(scheduleOf(table, '100000000000001', '+15550100001')).toBe(ny);
    expect(scheduleOf(table, '1', '+15550100077')).toBe(tokyo);
    const closed = closedCheck(table)!;
    expect(closed('1', '+15550100001', at('2026-12-25T15:00:00Z'))).toBe(true);
    expect(closed('1', '+15550100001', at('2026-12-28T15:00:00Z'))).toBe(false);
    const noStar = closedCheck(parseHoursFile('{"+15550100001": {"timeZone": "UTC", "weekly": {}}}'))!;
    expect(noStar('1', '+15550100001', 0)).toBe(true); // no day listed: always closed
    expect(noStar('2', '+15550100002', 0)).toBe(false); // not listed: always open
    expect(closedCheck(undefined)).toBeUndefined();
  });
});

describe('HOURS_FILE grammar', () => {
  const bad = (json: unknown) => {
    try {
      parseHoursFile(typeof json === 'string' ? json : JSON.stringify(json));
    } catch (e) {
      expect(e).toBeInstanceOf(HoursFileError);
      return (e as Error).message;
    }
    throw new Error('accepted');
  };
  const ok = { timeZone: 'UTC', weekly: { mon: ['09:00-17:00'] } };

  it.each([
    ['not JSON', '{', /not valid JSON/],
    ['not an object', '[]', /the file: must be a JSON object/],
    ['a bad key', { 'sales line': ok }, /each key must be a business number/],
    ['a missing time zone', { '+15550100001': { weekly: {} } }, /\["\+15550100001"\]\.timeZone: must be an IANA time zone/],
    ['an unknown time zone', { '+15550100001': { ...ok, timeZone: 'Mars/Olympus' } }, /\.timeZone: must be an IANA time zone/],
    ['an unknown day', { '+15550100001': { ...ok, weekly: { monday: [] } } }, /\.weekly: must be an object of days|monday/],
    ['a range without a dash', { '+15550100001': { ...ok, weekly: { mon: ['0900 1700'] } } }, /\.weekly\.mon\[0\]: must be "HH:MM-HH:MM"/],
    ['a range ending before it starts', { '+15550100001': { ...ok, weekly: { tue: ['22:00-06:00'] } } }, /\.weekly\.tue\[0\]: must be "HH:MM-HH:MM".*split a night/],
    ['25:00', { '+15550100001': { ...ok, weekly: { mon: ['09:00-25:00'] } } }, /\.weekly\.mon\[0\]/],
    ['overlapping ranges', { '+15550100001': { ...ok, weekly: { mon: ['09:00-12:00', '11:00-13:00'] } } }, /\.weekly\.mon: ranges must not overlap/],
    ['a holiday that is no date', { '+15550100001': { ...ok, holidays: ['2026-02-30'] } }, /\.holidays\[0\]: must be a date/],
    ['a holiday listed twice', { '+15550100001': { ...ok, holidays: ['2026-12-25', { date: '2026-12-25' }] } }, /\.holidays: must not list a date twice/],
    ['an unknown field', { '+15550100001': { ...ok, open: true } }, /\["\+15550100001"\]/],
  ])('%s is refused naming the field', (_name, json, rule) => {
    expect(bad(json)).toMatch(rule);
  });
});
