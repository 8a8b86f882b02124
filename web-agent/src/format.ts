/**
 * Display formatting shared by the pages, in the user's language (i18n/): durations,
 * countdowns, callers, results, reasons, moments, and the server's refusals by their code
 * and parameters. Pure apart from the current language: no DOM, no clock.
 */
import { locale, t, type MessageKey, type Params } from './i18n/index.ts';

/** Whole seconds as `m:ss` (or `h:mm:ss` from one hour). Negative and NaN show as `0:00`. */
export function formatDuration(seconds: number): string {
  const s = Number.isFinite(seconds) && seconds > 0 ? Math.floor(seconds) : 0;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${ss}` : `${m}:${ss}`;
}

/** A duration for the ear (screen readers, live regions): "1 minute 5 seconds" in the language. */
export function spokenDuration(seconds: number): string {
  const s = Number.isFinite(seconds) && seconds > 0 ? Math.floor(seconds) : 0;
  const m = Math.floor(s / 60);
  return m > 0 ? t('duration.minutesSeconds', { minutes: m, seconds: s % 60 }) : t('duration.seconds', { seconds: s });
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
 * Pages put it in a `<bdi dir="ltr">` (`Phone` in ui/parts.tsx) so it reads left to right in Arabic.
 */
export function formatCaller(from: string): string {
  const t = from.trim();
  if (/^\+?\d{6,15}$/.test(t)) return t.startsWith('+') ? t : `+${t}`;
  return t;
}

const RESULTS: Record<string, MessageKey> = {
  COMPLETED: 'result.completed',
  FAILED: 'result.failed',
  REJECTED: 'result.rejected',
  MISSED: 'result.missed',
  DECLINED: 'result.declined',
  CANCELED: 'result.canceled',
  CANCELLED: 'result.canceled',
};

/** Plain words for a call's final result (Service and engine result codes). */
export function describeResult(result: string | undefined): string {
  if (!result) return t('result.ended');
  const key = RESULTS[result.toUpperCase()];
  return key ? t(key) : t('result.other', { code: result });
}

/**
 * Reasons the server and the Service send as fixed codes (terminate reasons, revoke reasons
 * of shared/protocol.ts, the engine's own endings), each with its words by key. Matched
 * exactly; anything else is the Service's own text and shown as it came.
 */
const REASONS: Record<string, MessageKey> = {
  USER_HANGUP: 'reason.userHangup',
  BUSINESS_HANGUP: 'reason.businessHangup',
  USER_CANCELLED: 'reason.userCancelled',
  BUSINESS_CANCELLED: 'reason.businessCancelled',
  REJECTED: 'reason.rejected',
  USER_REJECTED: 'reason.userRejected',
  NOT_ANSWERED: 'reason.notAnswered',
  MEDIA_TIMEOUT: 'reason.mediaTimeout',
  SETUP_FAILED: 'reason.setupFailed',
  declined: 'reason.declined',
  'not answered': 'reason.notAnswered',
  'taken by another agent': 'reason.takenByAnother',
  'answered on another tab': 'reason.otherTab',
  'caller hung up': 'reason.userHangup',
  'caller hung up before an agent answered': 'reason.userCancelled',
  'window closing': 'reason.windowClosing',
  'agent unreachable': 'reason.agentUnreachable',
  'media unavailable': 'reason.mediaUnavailable',
  'the user declined the call': 'reason.userRejected',
  'agent hung up': 'reason.agentHangup',
  'no agent answered in time': 'reason.noAgent',
  'accept did not complete': 'reason.acceptIncomplete',
  'no terminate event from the Service': 'reason.noTerminate',
  hangup: 'reason.userHangup',
  'Agent page lost: the agent’s page was reloaded, closed or crashed during the call, and its audio with it': 'reason.pageLost',
  AGENT_PAGE_LOST: 'reason.pageLost',
  // The page's own (reducer.ts): a call the server's welcome no longer lists.
  'The server no longer lists this call.': 'dial.notListed',
};

/** The Service's call error codes (138xxx, shared/callErrors.ts) the pages have words for. */
const CALL_ERRORS: Record<number, MessageKey> = {
  138002: 'callError.138002',
  138006: 'callError.138006',
  138007: 'callError.138007',
  138019: 'callError.138019',
  138020: 'callError.138020',
  138021: 'callError.138021',
  138022: 'callError.138022',
  138023: 'callError.138023',
};

/** The words for a Service call error code, with the code kept. */
export function describeCallError(code: number): string {
  const key = CALL_ERRORS[code];
  return key ? t('callError.known', { words: t(key), code: String(code) }) : t('callError.other', { code: String(code) });
}

/**
 * A reason as the server gave it: a failed call's Service code (`errorCode`) in words; a
 * known reason code in words; anything else (the Service's own text) as it came.
 */
export function describeReason(reason: string | undefined, errorCode?: number): string {
  if (errorCode !== undefined) return describeCallError(errorCode);
  if (!reason) return '';
  const key = REASONS[reason];
  if (key) return t(key);
  if (/^138\d{3}$/.test(reason)) return describeCallError(Number(reason));
  return reason;
}

/** Two instants on the same calendar day of `timeZone`? */
function sameDay(a: number, b: number, timeZone: string | undefined): boolean {
  const day = (x: number) => new Intl.DateTimeFormat('en-CA', { year: 'numeric', month: '2-digit', day: '2-digit', ...(timeZone ? { timeZone } : {}) }).format(x);
  return day(a) === day(b);
}

/** A clock time in the user's locale (and time zone; `timeZone` is for tests). */
export function formatTime(at: number, timeZone?: string): string {
  return new Intl.DateTimeFormat(locale(), { hour: '2-digit', minute: '2-digit', ...(timeZone ? { timeZone } : {}) }).format(at);
}

/** A date and time in the user's locale and time zone. */
export function formatDateTime(at: number, timeZone?: string): string {
  return new Intl.DateTimeFormat(locale(), { dateStyle: 'medium', timeStyle: 'short', ...(timeZone ? { timeZone } : {}) }).format(at);
}

/** A number in the user's locale. */
export function formatNumber(n: number, options?: Intl.NumberFormatOptions): string {
  return new Intl.NumberFormat(locale(), options).format(n);
}

/** The browser's time zone, as the wallboard and reports name it. */
export function timeZoneName(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/**
 * A moment as a person reads it, in their language and time zone: "today at 14:05",
 * "tomorrow at 09:30", "on 29 Nov at 14:05". `timeZone` is for tests (default: the browser's).
 */
export function describeMoment(at: number, now: number, timeZone?: string): string {
  const time = formatTime(at, timeZone);
  if (sameDay(at, now, timeZone)) return t('moment.today', { time });
  if (sameDay(at, now + 86_400_000, timeZone)) return t('moment.tomorrow', { time });
  if (sameDay(at, now - 86_400_000, timeZone)) return t('moment.yesterday', { time });
  const date = new Intl.DateTimeFormat(locale(), { day: 'numeric', month: 'short', ...(timeZone ? { timeZone } : {}) }).format(at);
  return t('moment.date', { date, time });
}

/** How long ago (or how far ahead), with `Intl.RelativeTimeFormat`: "5 minutes ago", "in 2 hours". */
export function relativeTime(at: number, now: number): string {
  const s = Math.round((at - now) / 1000);
  const rtf = new Intl.RelativeTimeFormat(locale(), { numeric: 'auto' });
  const a = Math.abs(s);
  if (a < 60) return rtf.format(s, 'second');
  if (a < 3600) return rtf.format(Math.round(s / 60), 'minute');
  if (a < 86_400) return rtf.format(Math.round(s / 3600), 'hour');
  return rtf.format(Math.round(s / 86_400), 'day');
}

/** Server error codes (HTTP `error.code`, WebSocket `error.code`) the pages have words for. */
const ERRORS: Record<string, MessageKey> = {
  BAD_REQUEST: 'error.BAD_REQUEST',
  TOO_LARGE: 'error.TOO_LARGE',
  FORBIDDEN: 'error.FORBIDDEN',
  NOT_FOUND: 'error.NOT_FOUND',
  CONFLICT: 'error.CONFLICT',
  SERVICE_ERROR: 'error.SERVICE_ERROR',
  OUTCOME_UNKNOWN: 'error.OUTCOME_UNKNOWN',
  NO_PERMISSION: 'error.NO_PERMISSION',
  CALL_LIMIT: 'error.CALL_LIMIT',
  UNAVAILABLE: 'error.UNAVAILABLE',
  BUSY: 'error.BUSY',
  INTERNAL: 'error.INTERNAL',
  UNAUTHORIZED: 'error.UNAUTHORIZED',
  ACCOUNT_DISABLED: 'error.ACCOUNT_DISABLED',
  PASSWORD_LOGIN_OFF: 'error.PASSWORD_LOGIN_OFF',
  TOO_MANY_REQUESTS: 'error.TOO_MANY_REQUESTS',
  PAYLOAD_TOO_LARGE: 'error.TOO_LARGE',
  TIMEOUT: 'error.TIMEOUT',
  DISCONNECTED: 'error.DISCONNECTED',
  NETWORK: 'error.NETWORK',
  HTTP: 'error.HTTP',
  BAD_RESPONSE: 'error.BAD_RESPONSE',
};

/** Why a dial, a permission request or a monitor mode was refused (`params.reason`: the permission budget's code, or monitoring's). */
const REFUSALS: Record<string, MessageKey> = {
  REJECTED: 'refusal.REJECTED',
  EXPIRED: 'refusal.EXPIRED',
  REVOKED_UNANSWERED: 'refusal.REVOKED_UNANSWERED',
  DAILY_CALL_LIMIT: 'refusal.DAILY_CALL_LIMIT',
  ALREADY_GRANTED: 'refusal.ALREADY_GRANTED',
  REJECTED_RECENTLY: 'refusal.REJECTED_RECENTLY',
  RATION: 'refusal.RATION',
};

export interface ServerRefusal {
  code: string;
  message: string;
  params?: Readonly<Record<string, string | number>> | undefined;
}

/**
 * A server's refusal in the user's language, from its code and parameters (never from its
 * English `message`, which is for programs): the refusal's reason in words, the moment it
 * lifts (`params.nextAt`, epoch ms) in local time; a Service error keeps the Service's own
 * reason (`params.serviceReason`) after ours. An unknown code is named with its code.
 */
export function describeRefusal(e: ServerRefusal, now: number, timeZone?: string): string {
  const p = e.params ?? {};
  const filled: Params = {
    ...p,
    ...(typeof p.nextAt === 'number' ? { when: describeMoment(p.nextAt, now, timeZone) } : {}),
    ...(typeof p.at === 'number' ? { when: describeMoment(p.at, now, timeZone) } : {}),
  };
  const reasonKey = typeof p.reason === 'string' ? REFUSALS[p.reason] : undefined;
  const main = reasonKey ? t(reasonKey, filled) : ERRORS[e.code] ? t(ERRORS[e.code]!, filled) : t('error.other', { code: e.code });
  const next = typeof p.nextAt === 'number' ? ` ${t(p.reason === 'DAILY_CALL_LIMIT' ? 'refusal.callAgainAt' : 'refusal.askAgainAt', filled)}` : '';
  // A Service refusal's message is the Service's own reason (shared/protocol.ts), kept after our words.
  const serviceReason = typeof p.serviceReason === 'string' ? p.serviceReason : e.code === 'SERVICE_ERROR' ? e.message : '';
  const service = serviceReason ? ` (${serviceReason})` : '';
  return `${main}${next}${service}`;
}

const TASK_REASONS: Record<string, MessageKey> = {
  missed: 'task.missed',
  abandoned: 'task.abandoned',
  rejected: 'task.rejected',
  'cut-off': 'task.cutOff',
  requested: 'task.requested',
};

/** Why a call-back task exists (shared/records.ts CALLBACK_REASONS), in words. */
export function taskReasonWords(reason: string): string {
  const key = TASK_REASONS[reason];
  return key ? t(key) : reason;
}

/** History's outcomes (shared/records.ts CALL_OUTCOMES) in words. */
const OUTCOME_KEYS: Record<string, MessageKey> = {
  answered: 'outcome.answered',
  missed: 'outcome.missed',
  abandoned: 'outcome.abandoned',
  'no-answer': 'outcome.noAnswer',
  failed: 'outcome.failed',
  rejected: 'outcome.rejected',
  'no-audio': 'outcome.noAudio',
  'in-progress': 'outcome.inProgress',
  declined: 'outcome.declined',
  'rung-out': 'outcome.rungOut',
};

/** One outcome in words (an unknown one as history named it). */
export function outcomeWords(outcome: string): string {
  const key = OUTCOME_KEYS[outcome];
  return key ? t(key) : outcome;
}

const MESSAGE_STATUS: Record<string, MessageKey> = { accepted: 'send.accepted', sent: 'send.sent', delivered: 'send.delivered', read: 'send.read', failed: 'send.failed' };

/** A sent message's status in words. */
export function messageStatusWords(m: { status: string }): string {
  const key = MESSAGE_STATUS[m.status];
  return key ? t(key) : m.status;
}
