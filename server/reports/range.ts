/**
 * A report's date range: whole days in the server's time zone (process
 * TZ, as the wallboard's "today"). `from` and `to` are calendar dates, both included (what
 * a person picks: "1 to 24 November"); the history read is the half-open instant range
 * [midnight of `from`, midnight after `to`), so a day across a DST change is still one day.
 * Default: today for both; one date alone: that day.
 */
import { z } from 'zod';

/** At most this many days in one report (a quarter). */
export const MAX_RANGE_DAYS = 92;

const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;

export interface ReportRange {
  /** The dates as given (or today): YYYY-MM-DD. */
  from: string;
  to: string;
  /** The instants read from history: [fromAt, toAt). */
  fromAt: string;
  toAt: string;
  days: number;
}

/** Thrown for bad input; the message names the field and the rule. */
export class ReportQueryError extends Error {}

const Query = z.object({ from: z.string().optional(), to: z.string().optional() });

/** The YYYY-MM-DD of `t` in the server's time zone. */
export function localDate(t: number): string {
  const d = new Date(t);
  return `${String(d.getFullYear()).padStart(4, '0')}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
}

/** Midnight starting `date` (YYYY-MM-DD) in the server's time zone, or undefined for no such date. */
function midnight(date: string, plusDays = 0): number | undefined {
  if (!DATE_RE.test(date)) return undefined;
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const t = new Date(0);
  t.setFullYear(y, m - 1, d + plusDays); // not the constructor: it reads years 0 to 99 as 1900s
  t.setHours(0, 0, 0, 0);
  // 2026-02-30 rolls over to March: not a date.
  if (plusDays === 0 && localDate(t.getTime()) !== date) return undefined;
  return t.getTime();
}

export function reportRange(query: unknown, now: number): ReportRange {
  const q = Query.parse(query);
  // Each date as given is checked under its own name.
  if (q.from !== undefined && midnight(q.from) === undefined) throw new ReportQueryError('from: must be a calendar date as YYYY-MM-DD');
  if (q.to !== undefined && midnight(q.to) === undefined) throw new ReportQueryError('to: must be a calendar date as YYYY-MM-DD');
  // One date alone is that day; neither is today.
  const from = q.from ?? q.to ?? localDate(now);
  const to = q.to ?? from;
  if (to < from) throw new ReportQueryError('to: must be the same day as from or later');
  const start = midnight(from)!;
  const end = midnight(to, 1)!;
  // Calendar days: a DST day is 23 or 25 hours, so rounding the hours gives the days.
  const days = Math.round((end - start) / 86_400_000);
  if (days > MAX_RANGE_DAYS) throw new ReportQueryError(`to: the range must be at most ${MAX_RANGE_DAYS} days (from ${from} to ${to} is ${days})`);
  return { from, to, fromAt: new Date(start).toISOString(), toAt: new Date(end).toISOString(), days };
}
