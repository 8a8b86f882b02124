/** Display formatting shared by the pages. Pure: no DOM, no clock. */
import { callErrorReason } from '../../shared/callErrors.ts';

/** Whole seconds as `m:ss` (or `h:mm:ss` from one hour). Negative and NaN show as `0:00`. */
export function formatDuration(seconds: number): string {
  const s = Number.isFinite(seconds) && seconds > 0 ? Math.floor(seconds) : 0;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

export interface Countdown {
  /** `m:ss` left, rounded UP so the display reads 0:00 only once time is really out. */
  text: string;
  /** Whole seconds left (rounded up), never negative. */
  seconds: number;
  /** Fraction of the ring window left, 0..1 (for the progress bar). */
  fraction: number;
  /** Less than 10 s left: the page colours the countdown. */
  urgent: boolean;
  expired: boolean;
}

/**
 * Time left until `deadline` (epoch ms). `offeredAt` is when the ring started, for the
 * progress bar; without it the fraction is relative to 30 s (the usual accept window).
 */
export function countdown(deadline: number, now: number, offeredAt?: number): Countdown {
  const leftMs = Math.max(0, deadline - now);
  const seconds = Math.ceil(leftMs / 1000);
  const span = offeredAt !== undefined && deadline > offeredAt ? deadline - offeredAt : 30_000;
  return {
    text: formatDuration(seconds),
    seconds,
    fraction: Math.min(1, leftMs / span),
    urgent: leftMs < 10_000,
    expired: leftMs <= 0,
  };
}

/**
 * The caller as a person would read it: an E.164 number gets its `+`; anything else (a
 * business-scoped user id, BSUID) is shown as given, since it is not a phone number.
 */
export function formatCaller(from: string): string {
  const t = from.trim();
  if (/^\+?\d{6,15}$/.test(t)) return t.startsWith('+') ? t : `+${t}`;
  return t;
}

/** Plain words for a call's final result (Service and engine result codes). */
export function describeResult(result: string | undefined): string {
  switch ((result ?? '').toUpperCase()) {
    case 'COMPLETED': return 'Completed';
    case 'FAILED': return 'Failed';
    case 'REJECTED': return 'Rejected';
    case 'MISSED': return 'Missed';
    case 'DECLINED': return 'Declined';
    case 'CANCELED':
    case 'CANCELLED': return 'Caller hung up';
    case '': return 'Ended';
    default: return result!.charAt(0).toUpperCase() + result!.slice(1).toLowerCase().replace(/_/g, ' ');
  }
}

/** Terminate reasons the Service sends as codes, in the words an agent would use. */
const REASONS: Record<string, string> = {
  USER_HANGUP: 'The caller hung up.',
  BUSINESS_HANGUP: 'Hung up on our side.',
  USER_CANCELLED: 'The caller hung up before the call was answered.',
  BUSINESS_CANCELLED: 'Cancelled on our side before it was answered.',
  REJECTED: 'The call was rejected.',
  USER_REJECTED: 'The customer declined the call.',
  NOT_ANSWERED: 'Nobody answered in time.',
  MEDIA_TIMEOUT: 'No audio got through, so the call was dropped.',
  SETUP_FAILED: 'The call could not be set up.',
};

/**
 * A reason as the server gave it, made readable: known Service codes get words, other
 * UPPER_SNAKE codes are spelled out; sentences (already words) are kept as they are.
 */
export function describeReason(reason: string | undefined, errorCode?: number): string {
  // A failed call's Service code (CallView.errorCode): the server already put the words
  // (shared/callErrors.ts) and the Service's message in `reason`; without one, the code's words.
  if (errorCode !== undefined) return reason || callErrorReason(errorCode, undefined) || `The Service ended the call with error ${errorCode}.`;
  if (!reason) return '';
  const known = REASONS[reason];
  if (known) return known;
  // A bare Service code in a reason from elsewhere (history's endReason): its words, code kept.
  const code = /^\D*(138\d{3})\D*$/.exec(reason)?.[1];
  if (code) return callErrorReason(code, undefined) ?? `The Service ended the call with error ${code}.`;
  if (/^[A-Z0-9_]+$/.test(reason)) {
    const words = reason.toLowerCase().replace(/_/g, ' ');
    return `${words.charAt(0).toUpperCase()}${words.slice(1)}.`;
  }
  return reason;
}

/**
 * A moment as a person reads it, in their time zone: "today at 14:05", "tomorrow at
 * 09:30", "on 29 Nov at 14:05". `timeZone` is for tests (default: the browser's).
 */
export function describeMoment(at: number, now: number, timeZone?: string): string {
  const tz = timeZone ? { timeZone } : {};
  const day = (t: number) => new Intl.DateTimeFormat('en-CA', { year: 'numeric', month: '2-digit', day: '2-digit', ...tz }).format(t);
  const time = new Intl.DateTimeFormat('en-GB', { hour: '2-digit', minute: '2-digit', hour12: false, ...tz }).format(at);
  if (day(at) === day(now)) return `today at ${time}`;
  if (day(at) === day(now + 86_400_000)) return `tomorrow at ${time}`;
  const date = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', ...tz }).format(at);
  return `on ${date} at ${time}`;
}

const ISO_MOMENT = /\b\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:\d\d)\b/g;

/**
 * A server's refusal made readable: every ISO-8601 timestamp in it becomes local time in
 * words, and the request ration's "the next one may be sent at" reads "you can ask again".
 */
export function humanizeRefusal(message: string, now: number, timeZone?: string): string {
  return message
    .replace(ISO_MOMENT, (iso) => {
      const t = Date.parse(iso);
      return Number.isFinite(t) ? describeMoment(t, now, timeZone) : iso;
    })
    .replace(/; the next one may be sent at (today|tomorrow|on)/, '. You can ask again $1')
    .replace(/; the user is not asked again before (today|tomorrow|on)/, '. The user may be asked again after $1');
}
