/**
 * The agent desk around a call, as one pure reducer: the customer panel (loaded
 * on ring, kept during the call), the after-call work form (disposition required, notes
 * optional), the agent's call log from history, and the lists the server configures
 * (`DISPOSITIONS`, `AWAY_REASONS`). The page (pages/agent/desk.ts) runs the effects.
 */
import type { AgentStateMsg } from '../../../shared/protocol.ts';
import type { CallRecord } from '../../../shared/records.ts';
import type { Customer } from './customer.ts';
import { t, type MessageKey } from '../i18n/index.ts';
import { outcomeWords } from '../format.ts';

/** The design's defaults, used until the server names its own lists. */
export const DEFAULT_DISPOSITIONS = ['Resolved', 'Follow-up needed', 'Wrong number', 'Escalated', 'Other'];
export const DEFAULT_AWAY_REASONS = ['Break', 'Lunch', 'Training', 'Meeting'];

export type CustomerPanel = (
  | { id: string; status: 'loading' }
  | { id: string; status: 'ready'; data: Customer }
  | { id: string; status: 'failed'; error: string }
) & {
  /** The call it was opened for (ring, call, its wrap-up): it goes when that call and its wrap-up are over. */
  forCall?: string | undefined;
};

export interface WrapUp {
  wacid: string;
  caller: string;
  disposition: string;
  notes: string;
  /** editing → saving → saved; `not-set`: the countdown ended first (the server recorded "Not set"). */
  status: 'editing' | 'saving' | 'saved' | 'failed' | 'not-set';
  error?: string;
  /** "More time" is allowed once per wrap-up. */
  extended: boolean;
}

export interface DeskState {
  dispositions: string[];
  awayReasons: string[];
  awayReason: string;
  customer?: CustomerPanel;
  wrap?: WrapUp;
  log: { status: 'idle' | 'loading' | 'ready' | 'failed'; items: CallRecord[]; error?: string };
}

export type DeskEvent =
  | { type: 'lists'; dispositions?: readonly string[]; awayReasons?: readonly string[] }
  | { type: 'awayReason'; reason: string }
  | { type: 'customer.load'; id: string; forCall?: string | undefined }
  /** The call the panel was opened for is over (and its wrap-up): nothing of it stays on screen. */
  | { type: 'customer.close' }
  | { type: 'customer.loaded'; data: Customer }
  | { type: 'customer.failed'; id: string; error: string }
  | { type: 'wrap.start'; wacid: string; caller: string }
  /** `welcome.wrapDraft`: after a reload the server gives back what was typed (and whom the call was with). */
  | { type: 'wrap.restore'; wacid: string; caller?: string | undefined; disposition?: string | undefined; notes?: string | undefined }
  /** A new call rings or is held here: nothing of a finished call stays on screen but wrap-up still being saved. */
  | { type: 'call.started'; wacid: string }
  | { type: 'wrap.edit'; disposition?: string; notes?: string }
  | { type: 'wrap.saving' }
  | { type: 'wrap.saved' }
  | { type: 'wrap.failed'; error: string }
  | { type: 'wrap.extended' }
  | { type: 'wrap.close' }
  | { type: 'agent.state'; status: AgentStateMsg['status']; wacid?: string | undefined; extended?: boolean | undefined; caller?: string | undefined }
  | { type: 'log.loading' }
  | { type: 'log.loaded'; items: CallRecord[] }
  | { type: 'log.failed'; error: string };

export const initialDesk: DeskState = {
  dispositions: DEFAULT_DISPOSITIONS,
  awayReasons: DEFAULT_AWAY_REASONS,
  awayReason: DEFAULT_AWAY_REASONS[0]!,
  log: { status: 'idle', items: [] },
};

const clean = (xs: readonly string[] | undefined) => (xs ?? []).map((x) => x.trim()).filter((x) => x !== '');

export function reduceDesk(s: DeskState, ev: DeskEvent): DeskState {
  switch (ev.type) {
    case 'lists': {
      const dispositions = clean(ev.dispositions);
      const awayReasons = clean(ev.awayReasons);
      const next = { ...s, ...(dispositions.length ? { dispositions } : {}), ...(awayReasons.length ? { awayReasons } : {}) };
      return next.awayReasons.includes(next.awayReason) ? next : { ...next, awayReason: next.awayReasons[0]! };
    }
    case 'awayReason':
      return s.awayReasons.includes(ev.reason) ? { ...s, awayReason: ev.reason } : s;
    case 'customer.load': {
      const forCall = ev.forCall !== undefined ? { forCall: ev.forCall } : {};
      // The same customer already shown (ring → call): keep what is there, no flicker.
      if (s.customer?.id === ev.id && s.customer.status !== 'failed') return s.customer.forCall === ev.forCall ? s : { ...s, customer: { ...omitFor(s.customer), ...forCall } };
      return { ...s, customer: { id: ev.id, status: 'loading', ...forCall } };
    }
    case 'customer.loaded':
      // A late answer for a customer no longer shown is dropped.
      return s.customer?.id === ev.data.id ? { ...s, customer: { id: ev.data.id, status: 'ready', data: ev.data, ...(s.customer.forCall ? { forCall: s.customer.forCall } : {}) } } : s;
    case 'customer.failed':
      return s.customer?.id === ev.id ? { ...s, customer: { id: ev.id, status: 'failed', error: ev.error, ...(s.customer.forCall ? { forCall: s.customer.forCall } : {}) } } : s;
    case 'customer.close': {
      if (!s.customer) return s;
      const { customer: _c, ...rest } = s;
      return rest;
    }
    case 'wrap.start':
      if (s.wrap?.wacid === ev.wacid) return s.wrap.caller || !ev.caller ? s : { ...s, wrap: { ...s.wrap, caller: ev.caller } };
      return { ...s, wrap: { wacid: ev.wacid, caller: ev.caller, disposition: '', notes: '', status: 'editing', extended: false } };
    case 'wrap.restore': {
      const cur = s.wrap?.wacid === ev.wacid ? s.wrap : undefined;
      // What this tab has typed since is newer than the server's draft.
      const notes = cur && cur.notes !== '' ? cur.notes : (ev.notes ?? '');
      const disposition = cur && cur.disposition !== '' ? cur.disposition : ev.disposition && s.dispositions.includes(ev.disposition) ? ev.disposition : '';
      const caller = cur?.caller || ev.caller || '';
      return { ...s, wrap: { wacid: ev.wacid, caller, disposition, notes, status: cur?.status ?? 'editing', extended: cur?.extended ?? false } };
    }
    case 'call.started':
      if (!s.wrap || s.wrap.wacid === ev.wacid || s.wrap.status === 'saving') return s;
      return omitWrap(s);
    case 'wrap.edit':
      if (!s.wrap || s.wrap.status === 'saving' || s.wrap.status === 'saved') return s;
      return { ...s, wrap: { ...s.wrap, ...(ev.disposition !== undefined ? { disposition: ev.disposition } : {}), ...(ev.notes !== undefined ? { notes: ev.notes } : {}) } };
    case 'wrap.saving':
      return s.wrap && canSaveWrap(s.wrap) ? { ...s, wrap: { ...omitError(s.wrap), status: 'saving' } } : s;
    case 'wrap.saved':
    case 'wrap.close': {
      // One button ends the wrap-up: saved, it leaves the screen (the call log shows it), and
      // so does the customer panel opened for that call.
      if (!s.wrap) return s;
      const next = omitWrap(s);
      if (next.customer?.forCall !== s.wrap.wacid) return next;
      const { customer: _c, ...rest } = next;
      return rest;
    }
    case 'wrap.failed':
      return s.wrap ? { ...s, wrap: { ...s.wrap, status: 'failed', error: ev.error } } : s;
    case 'wrap.extended':
      return s.wrap ? { ...s, wrap: { ...s.wrap, extended: true } } : s;
    case 'agent.state':
      // After-call work for a call this tab has no form for (a reload, another tab): open one.
      if (ev.status === 'after-call-work' && ev.wacid && s.wrap?.wacid !== ev.wacid) {
        return { ...s, wrap: { wacid: ev.wacid, caller: ev.caller ?? '', disposition: '', notes: '', status: 'editing', extended: ev.extended === true } };
      }
      if (ev.status === 'after-call-work' && ev.extended && s.wrap && !s.wrap.extended) return { ...s, wrap: { ...s.wrap, extended: true } };
      // After-call work is over without a saved form: the server recorded "Not set".
      if (s.wrap && (s.wrap.status === 'editing' || s.wrap.status === 'failed') && (ev.status === 'available' || ev.status === 'ringing' || ev.status === 'away' || ev.status === 'offline')) {
        return { ...s, wrap: { ...s.wrap, status: 'not-set' } };
      }
      return s;
    case 'log.loading':
      return { ...s, log: { ...s.log, status: 'loading' } };
    case 'log.loaded':
      return { ...s, log: { status: 'ready', items: ev.items } };
    case 'log.failed':
      return { ...s, log: { ...s.log, status: 'failed', error: ev.error } };
  }
}

function omitError(w: WrapUp): WrapUp {
  const { error: _e, ...rest } = w;
  return rest;
}
function omitFor(c: CustomerPanel): CustomerPanel {
  const { forCall: _f, ...rest } = c;
  return rest as CustomerPanel;
}
function omitWrap(s: DeskState): DeskState {
  const { wrap: _w, ...rest } = s;
  return rest;
}

/** The wrap-up's heading: whom the call was with, when the page knows it (never a dangling "·"). */
export function wrapTitle(w: Pick<WrapUp, 'caller'>, format: (party: string) => string): string {
  return w.caller ? t('wrap.titleWith', { caller: format(w.caller) }) : t('wrap.title');
}

/** A disposition from the list is required; notes are optional. */
export function canSaveWrap(w: WrapUp): boolean {
  return w.disposition !== '' && (w.status === 'editing' || w.status === 'failed' || w.status === 'not-set');
}

/** The keys of the agent's states (the server's `agent.state`). */
const STATUS_KEYS: Record<AgentStateMsg['status'], MessageKey> = {
  available: 'status.available',
  ringing: 'status.ringing',
  'on-call': 'status.onCall',
  'after-call-work': 'status.afterCallWork',
  away: 'status.away',
  offline: 'status.offline',
};

/** Words for the agent's state (an unknown one as the server named it). */
export function statusWords(status: string): string {
  const key = (STATUS_KEYS as Record<string, MessageKey | undefined>)[status];
  return key ? t(key) : status;
}

/** How a call of the log ended, in words (history outcome, with the agent's own declines and ring-outs, told apart by the end's reason code). */
export function logOutcome(r: CallRecord): string {
  if (r.direction === 'outbound') return t('outcome.callBack', { outcome: outcomeWords(r.outcome) });
  const reason = (r.endReason ?? '').toLowerCase();
  if (r.outcome === 'missed' && /declin/.test(reason)) return outcomeWords('declined');
  if (r.outcome === 'missed') return outcomeWords(/ring|not answered|timeout/.test(reason) ? 'rung-out' : 'missed');
  return outcomeWords(r.outcome);
}

export function customerOf(r: CallRecord): string {
  return r.customer.phoneNumber ?? r.customer.userId ?? '';
}

/** The keyboard shortcuts (Alt + a letter, so typing notes never triggers one). */
export const SHORTCUTS = { answer: 'A', decline: 'D', mute: 'M', hold: 'H', hangup: 'X' } as const;
export type ShortcutAction = keyof typeof SHORTCUTS;

export function shortcutFor(e: { altKey: boolean; ctrlKey: boolean; metaKey: boolean; code: string }): ShortcutAction | undefined {
  if (!e.altKey || e.ctrlKey || e.metaKey) return undefined;
  for (const [action, letter] of Object.entries(SHORTCUTS)) if (e.code === `Key${letter}`) return action as ShortcutAction;
  return undefined;
}

/** "Alt+A" for the button's label and `aria-keyshortcuts`. */
export const shortcutLabel = (a: ShortcutAction) => `Alt+${SHORTCUTS[a]}`;

/** One row of the agent's one call list: a call from history, or one of this session's not yet there. */
export interface CallRow {
  wacid: string;
  customer: string;
  /** Local ms. */
  at: number;
  /** History's outcome (`answered`, `missed`, ...), or this session's result in lower case (`declined`, `completed`). */
  outcome: string;
  /** This session's result (`DECLINED`, `MISSED`, `COMPLETED`...) for a row history has not written yet. */
  result?: string;
  /** "Answered · Resolved · 1:05", or "Declined · just now". */
  text: string;
  /** Notes of the wrap-up, from history. */
  notes?: string;
  /** Why a call of this session ended as it did (the Service's 138xxx code in words), when it says more than the result. */
  reason?: string;
}

/** An ordinary hang-up by either side: the list says nothing more about the end. */
const PLAIN_END = /^(USER|BUSINESS)_HANGUP$/;

/** Session results as the call list words them (history's `logOutcome` words for the same calls). */
const SESSION_WORDS: Record<string, MessageKey> = { COMPLETED: 'outcome.answered', DECLINED: 'outcome.declined', MISSED: 'outcome.missed', FAILED: 'outcome.failed', REJECTED: 'outcome.notTaken', ENDED: 'result.ended' };

/**
 * The one call list: the call log from history, newest first, with this session's
 * calls (missed and declined included) that history does not list yet on top, so a call is
 * in the list the moment it is over and never twice.
 */
export function callList(
  log: readonly CallRecord[],
  session: readonly SessionCall[],
  describe: (result: string) => string,
  formatDuration: (s: number) => string,
  describeReason?: (reason: string | undefined, errorCode?: number) => string,
): CallRow[] {
  const known = new Set(log.map((r) => r.wacid));
  const fromSession: CallRow[] = session
    .filter((e) => !known.has(e.wacid))
    .map((e) => ({
      wacid: e.wacid,
      customer: e.direction === 'BUSINESS_INITIATED' ? e.to : e.from,
      at: e.endedAt,
      outcome: e.result === 'COMPLETED' ? 'answered' : e.result.toLowerCase(),
      result: e.result,
      text: `${SESSION_WORDS[e.result] ? t(SESSION_WORDS[e.result]!) : describe(e.result)}${e.duration !== undefined && e.result === 'COMPLETED' ? ` · ${formatDuration(e.duration)}` : ''}`,
      // A call that failed says why (a refused accept, a media timeout); a plain hang-up needs no words.
      ...(describeReason && e.result !== 'COMPLETED' && (e.reason || e.errorCode !== undefined) ? { reason: describeReason(e.reason, e.errorCode) } : {}),
    }));
  const fromLog: CallRow[] = log.map((r) => ({
    wacid: r.wacid,
    customer: customerOf(r),
    at: Date.parse(r.receivedAt),
    outcome: r.outcome,
    text: `${logOutcome(r)}${r.disposition ? ` · ${r.disposition}` : ''}${r.talkMs !== undefined ? ` · ${formatDuration(Math.floor(r.talkMs / 1000))}` : ''}${r.endReason && !PLAIN_END.test(r.endReason) ? ` · ${describeReason ? describeReason(r.endReason) : r.endReason}` : ''}`,

    ...(r.notes ? { notes: r.notes } : {}),
  }));
  return [...fromSession, ...fromLog];
}

/** What `callList` needs of this session's calls (reducer.ts `EndedCall`). */
export interface SessionCall {
  wacid: string;
  from: string;
  to: string;
  direction: string;
  result: string;
  duration?: number;
  endedAt: number;
  reason?: string;
  errorCode?: number;
}
