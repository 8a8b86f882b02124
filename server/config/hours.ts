/**
 * `HOURS_FILE`'s grammar: business hours per business number, read and validated once at
 * start by the config (`loadConfig`); `server/hours/` decides from it whether a number is
 * open at an instant.
 *
 * ```json
 * {
 *   "+15550100001": {
 *     "timeZone": "Europe/Berlin",
 *     "weekly": { "mon": ["09:00-17:00"], "tue": ["09:00-12:00", "13:00-17:00"], "sat": [] },
 *     "holidays": ["2026-12-25", { "date": "2026-12-24", "hours": ["09:00-12:00"], "name": "Christmas Eve" }]
 *   },
 *   "*": { "timeZone": "UTC", "weekly": { "mon": ["00:00-24:00"] } }
 * }
 * ```
 * A key is a business number (E.164, as the Service shows it) or the Service's phone id;
 * `*` is every number not listed. A number without an entry (and no `*`) is always open. A
 * day missing from `weekly`, or listed with no ranges, is closed. Times are the number's
 * local wall-clock times in its IANA time zone; `24:00` ends a range at midnight. A holiday
 * is a date of that time zone: closed all day, or open only for its `hours`.
 */
import { z } from 'zod';

export const WEEKDAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/** One opening, in minutes after local midnight: `start` ≤ t < `end`. */
export interface OpenRange {
  readonly start: number;
  readonly end: number;
}

export interface Holiday {
  /** `YYYY-MM-DD` in the number's time zone. */
  readonly date: string;
  readonly name?: string;
  /** Open only in these ranges that day; empty: closed all day. */
  readonly hours: readonly OpenRange[];
}

/** The business hours of one number. */
export interface HoursSchedule {
  /** IANA time zone, e.g. `America/New_York`. */
  readonly timeZone: string;
  readonly weekly: Readonly<Record<Weekday, readonly OpenRange[]>>;
  readonly holidays: readonly Holiday[];
}

/** `HOURS_FILE` parsed: schedules by business number or phone id (`*`: every other number). */
export type HoursTable = ReadonlyMap<string, HoursSchedule>;

/** Thrown for a file that breaks the grammar; the message names the field and the rule. */
export class HoursFileError extends Error {
  override readonly name = 'HoursFileError';
}

const hhmm = (s: string): number => Number(s.slice(0, 2)) * 60 + Number(s.slice(3, 5));

const RANGE_RULE = 'must be "HH:MM-HH:MM" (24-hour local time, start before end, end at most 24:00; split a night over two days), e.g. "09:00-17:30"';

const range = z.string(RANGE_RULE).transform((s, ctx): OpenRange => {
  const m = /^([01]\d|2[0-3]):([0-5]\d)-(([01]\d|2[0-3]):([0-5]\d)|24:00)$/.exec(s);
  const start = m ? hhmm(s.slice(0, 5)) : NaN;
  const end = m ? hhmm(s.slice(6, 11)) : NaN;
  if (!m || !(start < end)) {
    ctx.addIssue({ code: 'custom', message: RANGE_RULE });
    return z.NEVER;
  }
  return { start, end };
});

/** Ranges of one day, sorted; overlapping ones are a mistake worth naming. */
const ranges = z
  .array(range, 'must be a list of "HH:MM-HH:MM" ranges (empty: closed)')
  .max(24, 'must list at most 24 ranges')
  .transform((rs, ctx) => {
    const sorted = [...rs].sort((a, b) => a.start - b.start);
    for (let i = 1; i < sorted.length; i++) {
      if (sorted[i]!.start < sorted[i - 1]!.end) ctx.addIssue({ code: 'custom', message: 'ranges must not overlap' });
    }
    return sorted;
  });

function realDate(s: string): boolean {
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
}

const date = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be a date YYYY-MM-DD').refine(realDate, 'must be a real calendar date');

const holiday = z.union(
  [
    date.transform((d): Holiday => ({ date: d, hours: [] })),
    z
      .strictObject({ date, name: z.string().max(100, 'must be at most 100 characters').optional(), hours: ranges.optional() })
      .transform((h): Holiday => ({ date: h.date, ...(h.name !== undefined ? { name: h.name } : {}), hours: h.hours ?? [] })),
  ],
  { error: 'must be a date "YYYY-MM-DD" or {"date", "name"?, "hours"?}' },
);

function validZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

const schedule = z
  .strictObject(
    {
      timeZone: z.string('must be an IANA time zone, e.g. Europe/Berlin').refine(validZone, 'must be an IANA time zone, e.g. Europe/Berlin'),
      weekly: z.strictObject(Object.fromEntries(WEEKDAYS.map((d) => [d, ranges.optional()])) as Record<Weekday, z.ZodOptional<typeof ranges>>, 'must be an object of days sun … sat, each a list of ranges'),
      holidays: z.array(holiday, 'must be a list of holidays').max(1000, 'must list at most 1000 holidays').optional(),
    },
    'must be {"timeZone", "weekly", "holidays"?}',
  )
  .transform((s, ctx): HoursSchedule => {
    const dates = (s.holidays ?? []).map((h) => h.date);
    if (new Set(dates).size !== dates.length) ctx.addIssue({ code: 'custom', path: ['holidays'], message: 'must not list a date twice' });
    const weekly = Object.fromEntries(WEEKDAYS.map((d) => [d, Object.freeze(s.weekly[d] ?? [])])) as Record<Weekday, readonly OpenRange[]>;
    return Object.freeze({ timeZone: s.timeZone, weekly: Object.freeze(weekly), holidays: Object.freeze(s.holidays ?? []) });
  });

/** A key of a per-number file: a business number (E.164), a phone id, or `*`. */
export const KEY = /^(\*|\+[1-9]\d{6,14}|[0-9]{1,40})$/;

const file = z.record(z.string(), schedule, 'must be a JSON object of business numbers');

/** `$["+1555…"].weekly.mon[0]`: the field of the file a rule broke. */
export function fieldOf(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : /^[A-Za-z_]\w*$/.test(String(p)) && out !== '' ? `.${String(p)}` : `[${JSON.stringify(String(p))}]`;
  return out === '' ? 'the file' : out;
}

/**
 * A per-number JSON file's text (`HOURS_FILE`, `QUEUE_AUDIO_FILE`) checked against `schema`:
 * throws `fail(message)` naming the first broken field (or key) and its rule.
 */
export function parseNumberFile<T>(text: string, schema: z.ZodType<Record<string, T>>, fail: (message: string) => Error): Record<string, T> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw fail(`is not valid JSON (${(err as Error).message})`);
  }
  if (json !== null && typeof json === 'object' && !Array.isArray(json)) {
    const key = Object.keys(json).find((k) => !KEY.test(k));
    if (key !== undefined) throw fail(`${fieldOf([key])}: each key must be a business number (+E.164), a phone id (digits) or *`);
  }
  const r = schema.safeParse(json);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw fail(`${fieldOf(issue.path)}: ${issue.message}`);
  }
  return r.data;
}

/** Parse the file's text; throws `HoursFileError` naming the first broken field and its rule. */
export function parseHoursFile(text: string): HoursTable {
  return new Map(Object.entries(parseNumberFile(text, file, (m) => new HoursFileError(m))));
}
