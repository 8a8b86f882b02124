/**
 * The supervisor's "Call back" panel as pure logic: validate who to call, put a calling
 * permission into plain words, and a reducer for the panel (numbers, the pair's permission,
 * the ask, and one business-initiated call from preparing the offer to its end).
 * No DOM, no clock: `now` comes in with the events, so every rule here has a unit test.
 */
import { callSeconds, type CallView, type Permission } from '../../shared/protocol.ts';
import type { BusinessNumber } from './api.ts';
import { describeReason, describeResult, formatDuration } from './format.ts';
import { t as tr } from './i18n/index.ts';
import { isOver } from './reducer.ts';
import { describePermission, newerPermission, type PermissionTone, type PermissionWords } from './permission-words.ts';

export { ago, describePermission, formatWhen, newerPermission, type PermissionTone, type PermissionWords } from './permission-words.ts';

// ---- who to call -------------------------------------------------------------------------

/** The user to call: a phone number (sent as `to`) or a business-scoped user id (`recipient`). */
export type Callee = { kind: 'to'; value: string } | { kind: 'recipient'; value: string };

const E164 = /^\+[1-9]\d{6,14}$/;
/** BSUID: two-letter uppercase country code, a period, up to 128 alphanumerics (a parent BSUID has `.ENT.`). */
const BSUID = /^[A-Z]{2}\.(?:ENT\.)?[A-Za-z0-9]{1,128}$/;

/**
 * Read what the supervisor typed. Phone numbers may be typed with spaces, dashes, dots or
 * brackets (they are dropped); they must start with `+` and the country code. A BSUID is
 * kept exactly as typed (trimmed): it is an id, not a number.
 */
export function parseCallee(input: string): { ok: true; callee: Callee } | { ok: false; message: string } {
  const t = input.trim();
  if (t === '') return { ok: false, message: tr('callee.empty') };
  if (/^[A-Za-z]{2}\./.test(t)) {
    if (BSUID.test(t)) return { ok: true, callee: { kind: 'recipient', value: t } };
    return { ok: false, message: tr('callee.badUserId') };
  }
  const digits = t.replace(/[\s\-().]/g, '');
  if (/^00\d/.test(digits)) return { ok: false, message: tr('callee.doubleZero', { number: `+${digits.slice(2)}` }) };
  if (/^\d+$/.test(digits)) return { ok: false, message: tr('callee.noPlus') };
  if (!/^\+\d+$/.test(digits)) return { ok: false, message: tr('callee.digitsOnly') };
  if (digits.startsWith('+0')) return { ok: false, message: tr('callee.zeroCountry') };
  if (!E164.test(digits)) {
    const n = digits.length - 1;
    return { ok: false, message: n < 7 ? tr('callee.tooShort', { n }) : tr('callee.tooLong', { n }) };
  }
  return { ok: true, callee: { kind: 'to', value: digits } };
}

export const pairKey = (from: string, user: string) => `${from}|${user}`;

// ---- the panel's state -------------------------------------------------------------------

/**
 * One callback's life in this tab:
 * - preparing: microphone and offer (ICE gathering) being made; nothing sent yet
 * - dialing: `call.dial` sent, no ack yet
 * - ringing: acked (we have the wacid); the user's phone rings (engine: dialing/connected)
 * - active: the user answered
 * - ending: this tab sent `call.hangup`; waiting for the end
 * - ended: over (see `ended`)
 * - failed: never got going (refused, gathering failed...): see `error`
 */
export type CallPhase = 'preparing' | 'dialing' | 'ringing' | 'active' | 'ending' | 'ended' | 'failed';

export interface PanelError {
  code: string;
  message: string;
}

export interface CallbackCall {
  phase: CallPhase;
  from: string;
  callee: Callee;
  wacid?: string;
  /** Hang up pressed before the ack: hang up as soon as the wacid is known. */
  cancelRequested?: boolean;
  /** Local ms the call became active (the timer). */
  activeAt?: number;
  /** Engine state name last seen. */
  serverState?: string;
  muted: boolean;
  ended?: { result: string; duration?: number; reason?: string };
}

export interface CallbackState {
  numbers: { status: 'loading' | 'ready' | 'error'; list: BusinessNumber[]; error?: string };
  from: string;
  input: string;
  /** The input was left (blur) or an action was tried: show its problem. */
  touched: boolean;
  /** Known permissions by pair (fetched or pushed). */
  permissions: Record<string, Permission>;
  /** Pair whose GET is in flight, and a failed GET's message. */
  permissionLoading?: string;
  permissionError?: { key: string; message: string };
  asking: boolean;
  askNote?: string;
  call?: CallbackCall;
  error?: PanelError;
  me?: string;
}

export const initialCallback: CallbackState = {
  numbers: { status: 'loading', list: [] },
  from: '',
  input: '',
  touched: false,
  permissions: {},
  asking: false,
};

export type CallbackEvent =
  | { type: 'numbers'; list: BusinessNumber[] }
  | { type: 'numbersFailed'; message: string }
  | { type: 'selectFrom'; from: string }
  | { type: 'input'; text: string }
  | { type: 'touch' }
  | { type: 'permissionLoading'; key: string }
  | { type: 'permission'; permission: Permission }
  | { type: 'permissionFailed'; key: string; message: string }
  | { type: 'askStarted' }
  | { type: 'askDone'; permission: Permission }
  | { type: 'askFailed'; code: string; message: string }
  | { type: 'dialStarted'; from: string; callee: Callee }
  | { type: 'dialSent' }
  | { type: 'dialAcked'; wacid: string }
  | { type: 'dialFailed'; code: string; message: string }
  | { type: 'callState'; view: CallView; now: number }
  | { type: 'welcome'; wacids: string[]; now: number }
  | { type: 'muted'; muted: boolean }
  | { type: 'hangup' }
  | { type: 'mediaFailed'; code: string; message: string }
  /** A microphone or speaker change that did not work: said, the call (if any) goes on. */
  | { type: 'deviceFailed'; code: string; message: string }
  | { type: 'dismissError' };

/** Phases in which a callback is under way (Call disabled, Hang up shown). */
export const inProgress = (call: CallbackCall | undefined): boolean => !!call && call.phase !== 'ended' && call.phase !== 'failed';

export function reduceCallback(s: CallbackState, ev: CallbackEvent): CallbackState {
  switch (ev.type) {
    case 'numbers': {
      const keep = ev.list.some((n) => n.phoneNumber === s.from) ? s.from : (ev.list[0]?.phoneNumber ?? '');
      return { ...s, numbers: { status: 'ready', list: ev.list }, from: keep };
    }
    case 'numbersFailed':
      return { ...s, numbers: { status: 'error', list: s.numbers.list, error: ev.message } };
    case 'selectFrom':
      return drop({ ...s, from: ev.from }, 'askNote');
    case 'input':
      return drop({ ...s, input: ev.text }, 'askNote');
    case 'touch':
      return s.touched ? s : { ...s, touched: true };
    case 'permissionLoading':
      return drop({ ...s, permissionLoading: ev.key }, 'permissionError');
    case 'permission': {
      const key = pairKey(ev.permission.from, ev.permission.user);
      const next = { ...s, permissions: { ...s.permissions, [key]: newerPermission(s.permissions[key], ev.permission) } };
      // "Request sent" is old news once the reply is in.
      const replied = next.permissions[key]!.state !== 'requested' && currentKey(s) === key ? drop(next, 'askNote') : next;
      const done = s.permissionLoading === key ? drop(replied, 'permissionLoading') : replied;
      return s.permissionError?.key === key ? drop(done, 'permissionError') : done;
    }
    case 'permissionFailed':
      return { ...drop(s, 'permissionLoading'), permissionError: { key: ev.key, message: ev.message } };
    case 'askStarted':
      return drop(drop({ ...s, asking: true, touched: true }, 'askNote'), 'error');
    case 'askDone': {
      const key = pairKey(ev.permission.from, ev.permission.user);
      return {
        ...s,
        asking: false,
        askNote: tr('dial.askSent'),
        permissions: { ...s.permissions, [key]: newerPermission(s.permissions[key], ev.permission) },
      };
    }
    case 'askFailed':
      return { ...s, asking: false, error: { code: ev.code, message: tr('dial.askFailed', { why: ev.message }) } };
    case 'dialStarted':
      if (inProgress(s.call)) return s;
      return drop({ ...s, touched: true, call: { phase: 'preparing', from: ev.from, callee: ev.callee, muted: false } }, 'error');
    case 'dialSent':
      return s.call?.phase === 'preparing' ? withCall(s, { phase: 'dialing' }) : s;
    case 'dialAcked':
      if (!s.call || (s.call.phase !== 'dialing' && s.call.phase !== 'preparing')) return s;
      return withCall(s, { phase: s.call.cancelRequested ? 'ending' : 'ringing', wacid: ev.wacid });
    case 'dialFailed': {
      if (!s.call || s.call.wacid !== undefined) return s;
      return { ...withCall(s, { phase: 'failed' }), error: { code: ev.code, message: dialRefusal(ev.code, ev.message) } };
    }
    case 'mediaFailed':
      if (!s.call) return { ...s, error: { code: ev.code, message: ev.message } };
      return {
        ...(s.call.wacid === undefined ? withCall(s, { phase: 'failed' }) : s),
        error: { code: ev.code, message: ev.message },
      };
    case 'deviceFailed':
      return { ...s, error: { code: ev.code, message: ev.message } };
    case 'callState': {
      const c = s.call;
      if (!c || c.wacid !== ev.view.wacid) return s;
      const v = ev.view;
      if (isOver(v)) {
        if (c.phase === 'ended') return s;
        const duration =
          v.duration ??
          (v.startedAt !== undefined && v.endedAt !== undefined
            ? callSeconds(v, v.endedAt)
            : c.activeAt !== undefined
              ? Math.max(0, Math.round((ev.now - c.activeAt) / 1000))
              : undefined);
        const result = v.result ?? (c.activeAt !== undefined ? 'COMPLETED' : 'ENDED');
        return withCall(s, {
          phase: 'ended',
          serverState: v.state,
          ended: { result, ...(duration !== undefined ? { duration } : {}), ...(v.reason ? { reason: v.reason } : {}) },
        });
      }
      const active = v.state === 'active' || v.startedAt !== undefined;
      const phase: CallPhase = c.phase === 'ending' ? 'ending' : active ? 'active' : 'ringing';
      return withCall(s, {
        phase,
        serverState: v.state,
        ...(active && c.activeAt === undefined ? { activeAt: ev.now } : {}),
      });
    }
    case 'welcome': {
      // After a reconnect the server lists every live call of this user: ours missing = over.
      const c = s.call;
      if (!c?.wacid || !inProgress(c) || ev.wacids.includes(c.wacid)) return s;
      return reduceCallback(s, { type: 'callState', view: endedHere(c, c.wacid, tr('dial.notListed')), now: ev.now });
    }
    case 'muted':
      return s.call ? withCall(s, { muted: ev.muted }) : s;
    case 'hangup': {
      const c = s.call;
      if (!c || !inProgress(c)) return s;
      if (c.wacid === undefined) {
        // Preparing: nothing was sent, it simply stops. Dialing: hang up once the ack names the call.
        return c.phase === 'preparing'
          ? withCall(s, { phase: 'ended', ended: { result: 'NOT_PLACED', reason: tr('dial.cancelledBefore') } })
          : withCall(s, { cancelRequested: true });
      }
      return withCall(s, { phase: 'ending' });
    }
    case 'dismissError':
      return drop(s, 'error');
  }
}

/** Our call as ended by this tab, when no frame from the server said so; `reason` says why. */
export function endedHere(c: CallbackCall, wacid: string, reason: string): CallView {
  return { wacid, phoneId: '', from: c.from, to: c.callee.value, direction: 'BUSINESS_INITIATED', state: 'ended', reason };
}

/** The pair on screen, when the user typed is valid. */
function currentKey(s: CallbackState): string | undefined {
  const p = parseCallee(s.input);
  return p.ok && s.from ? pairKey(s.from, p.callee.value) : undefined;
}

function withCall(s: CallbackState, patch: Partial<CallbackCall>): CallbackState {
  return s.call ? { ...s, call: { ...s.call, ...patch } } : s;
}

function drop<T extends object, K extends keyof T>(obj: T, key: K): T {
  if (!(key in obj)) return obj;
  const copy = { ...obj };
  delete copy[key];
  return copy;
}

/** A refused dial in the supervisor's words, the server's own reason kept. */
export function dialRefusal(code: string, message: string): string {
  switch (code) {
    case 'NO_PERMISSION':
    case 'CALL_LIMIT':
      return tr('dial.notCalled', { why: message });
    case 'SERVICE_ERROR':
      return tr('dial.serviceRefused', { why: message });
    case 'OUTCOME_UNKNOWN':
    case 'TIMEOUT':
      return tr('dial.unconfirmed');
    case 'DISCONNECTED':
      return tr('dial.linkLost');
    case 'FORBIDDEN':
      return tr('dial.forbidden', { why: message });
    default:
      return tr('dial.failed', { why: message });
  }
}

// ---- what the panel shows ----------------------------------------------------------------

export interface PanelView {
  callee?: Callee;
  /** The input's problem, once it should be shown. */
  inputError?: string;
  /** The pair the permission is about, when both sides are known. */
  key?: string;
  permission: PermissionWords | { text: string; tone: PermissionTone; state: 'none'; blocksCall: false; blockReason?: string };
  canAsk: boolean;
  canCall: boolean;
  /** Why Call is disabled (shown next to it), when it is. */
  callBlockedReason?: string;
}

/** Everything the DOM needs, derived. `online`: the page's WebSocket is up. */
export function panelView(s: CallbackState, online: boolean, now: number, timeZone?: string): PanelView {
  const parsed = parseCallee(s.input);
  const callee = parsed.ok ? parsed.callee : undefined;
  // While typing, a short start ("+1555") is not wrong yet: it is flagged once the field is left.
  const inputError = !parsed.ok && (s.touched || (s.input.trim() !== '' && !looksUnfinished(s.input))) ? parsed.message : undefined;
  const key = callee && s.from ? pairKey(s.from, callee.value) : undefined;
  const known = key ? s.permissions[key] : undefined;
  const permission: PanelView['permission'] = !key
    ? { text: tr('dial.choosePair'), tone: 'neutral', state: 'none', blocksCall: false }
    : s.permissionError?.key === key && !known
      ? { text: tr('dial.permissionFailed', { why: s.permissionError.message }), tone: 'neutral', state: 'none', blocksCall: false }
      : describePermission(known, now, timeZone);
  const busy = inProgress(s.call);
  const callBlockedReason = busy
    ? tr('dial.inProgress')
    : !online
      ? tr('setup.hintOffline')
      : !s.from
        ? tr('dial.chooseFrom')
        : !callee
          ? tr('dial.typeCallee')
          : permission.blocksCall
            ? permission.blockReason
            : undefined;
  return {
    ...(callee ? { callee } : {}),
    ...(inputError ? { inputError } : {}),
    ...(key ? { key } : {}),
    permission,
    // A live grant needs no new request (and each one spends the user's ration).
    canAsk: !!callee && !!s.from && !s.asking && permission.state !== 'granted',
    canCall: callBlockedReason === undefined,
    ...(callBlockedReason ? { callBlockedReason } : {}),
  };
}

function looksUnfinished(input: string): boolean {
  const d = input.trim().replace(/[\s\-().]/g, '');
  return /^\+?\d{0,6}$/.test(d) || /^[A-Za-z]{0,2}\.?$/.test(d);
}

/** The call's status line and whether a timer runs. */
export function callStatus(c: CallbackCall, now: number): { state: CallPhase; text: string; timer?: string } {
  switch (c.phase) {
    case 'preparing':
      return { state: 'preparing', text: tr('dial.preparing') };
    case 'dialing':
      return { state: 'dialing', text: c.cancelRequested ? tr('dial.cancelling') : tr('dial.placing') };
    case 'ringing':
      return { state: 'ringing', text: tr('dial.ringing') };
    case 'active':
      return { state: 'active', text: c.muted ? tr('dial.inCallMuted') : tr('dial.inCall'), timer: formatDuration(c.activeAt !== undefined ? (now - c.activeAt) / 1000 : 0) };
    case 'ending':
      return { state: 'ending', text: tr('call.hangingUp') };
    case 'failed':
      return { state: 'failed', text: tr('dial.notPlaced') };
    case 'ended': {
      const e = c.ended!;
      return {
        state: 'ended',
        text: tr('dial.ended', { result: e.result === 'NOT_PLACED' ? tr('dial.notPlaced') : describeResult(e.result), details: `${e.duration !== undefined ? ` · ${formatDuration(e.duration)}` : ''}${e.reason ? ` · ${describeReason(e.reason)}` : ''}` }),
      };
    }
  }
}
