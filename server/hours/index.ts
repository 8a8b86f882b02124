/**
 * Business hours: whether a business number is open at an instant (`isOpen`, pure), from the
 * schedules of `HOURS_FILE` (parsed once by the config, `server/config/hours.ts`).
 *
 * The instant is turned into the number's local date, weekday and wall-clock minute with
 * `Intl` (the time zone database of Node), so daylight-saving changes need nothing special:
 * in the spring-forward gap no instant has a local time of 02:xx, and in the fall-back
 * overlap both instants with a local 01:xx are judged by 01:xx.
 */
import { WEEKDAYS, type HoursSchedule, type HoursTable, type OpenRange, type Weekday } from '../config/hours.ts';

export type { HoursSchedule, HoursTable } from '../config/hours.ts';

/** One formatter per time zone (building one costs far more than using it). */
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', weekday: 'short', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' });
    formatters.set(timeZone, f);
  }
  return f;
}

/** The local date (`YYYY-MM-DD`), weekday and minute of the day of `instant` in `timeZone`. */
export function localTime(timeZone: string, instant: number): { date: string; weekday: Weekday; minute: number } {
  const parts: Record<string, string> = {};
  for (const p of formatter(timeZone).formatToParts(new Date(instant))) parts[p.type] = p.value;
  const weekday = parts.weekday!.toLowerCase().slice(0, 3) as Weekday;
  if (!WEEKDAYS.includes(weekday)) throw new Error(`unexpected weekday ${parts.weekday}`);
  return { date: `${parts.year}-${parts.month}-${parts.day}`, weekday, minute: Number(parts.hour) * 60 + Number(parts.minute) };
}

const within = (ranges: readonly OpenRange[], minute: number) => ranges.some((r) => r.start <= minute && minute < r.end);

/** Whether the schedule is open at `instant` (epoch ms): a holiday's hours that day, else the weekday's. */
export function isOpen(schedule: HoursSchedule, instant: number): boolean {
  const t = localTime(schedule.timeZone, instant);
  const holiday = schedule.holidays.find((h) => h.date === t.date);
  return within(holiday ? holiday.hours : schedule.weekly[t.weekday], t.minute);
}

/** The schedule of a number: by its phone id, then its E.164 number, then `*`; undefined: always open. */
export function scheduleOf(table: HoursTable, phoneId: string, businessNumber: string): HoursSchedule | undefined {
  return table.get(phoneId) ?? table.get(businessNumber) ?? table.get('*');
}

/** What the call engine asks at an inbound connect: is this number closed at `at`? */
export type ClosedCheck = (phoneId: string, businessNumber: string, at: number) => boolean;

/** The engine's check over a table (none: never closed). */
export function closedCheck(table: HoursTable | undefined): ClosedCheck | undefined {
  if (!table) return undefined;
  return (phoneId, businessNumber, at) => {
    const s = scheduleOf(table, phoneId, businessNumber);
    return s !== undefined && !isOpen(s, at);
  };
}
