/**
 * Permission budget, the pure part: given what is known of one (business number, user)
 * pair — the permission, the requests sent, the connected business-initiated calls and the
 * run of unanswered ones — what may be done now (ask for permission, call) and, when not,
 * why and from when. The page turns `nextAt` into local time ("You can ask again at …").
 *
 * Rules (calling-facts.md):
 * - permission requests: 1 per 24 h and 2 per 7 days per business number and user — the
 *   windows are `RATION` of `server/permissions/model.ts`, the same the store's atomic
 *   `reserveSlot` enforces, and `windowCheck` below is that method's rule, so the budget
 *   never says "allowed" where the store refuses;
 * - a rejection is respected for `REASK_AFTER_REJECT_MS` before asking again;
 * - at most `CONNECTED_CALLS.max` connected business-initiated calls per 24 h to one user;
 * - unanswered business calls in a row: `UNANSWERED_WARN_AT` prompt the user to review the
 *   permission (a warning here), `UNANSWERED_REVOKE_AT` revoke it (treated as revoked: no
 *   call until the user allows again); an answered call resets the run.
 * Not modelled: the provider also resets the request counter after a connected call; the
 * store's ration does not, so neither does the budget (it may say "wait" where the Service
 * would already take a request — never the reverse).
 * No I/O, no clock: `now` is a fact like the others.
 */
import type { Permission } from '../../shared/protocol.ts';
import { dialRefusal, RATION, REASK_AFTER_REJECT_MS } from './model.ts';

const DAY = 24 * 3600 * 1000;

/** Connected business-initiated calls to one user (the published figure has varied; 5 now). */
export const CONNECTED_CALLS = { windowMs: DAY, max: 5, rule: '5 connected calls per 24 hours' } as const;
/** Unanswered business calls in a row after which the user is asked to review the permission. */
export const UNANSWERED_WARN_AT = 2;
/** Unanswered business calls in a row that revoke the permission. */
export const UNANSWERED_REVOKE_AT = 4;

export interface Window {
  windowMs: number;
  max: number;
}

/**
 * The sliding-window rule of `Store.reserveSlot` (memory and Redis alike), without taking:
 * times at or before `now - longest window` are forgotten; a window is full when it holds
 * `max` times in `(now - windowMs, now + longest]`; it frees when its `max`-th most recent
 * time leaves it. The first full window answers.
 */
export function windowCheck(times: readonly number[], now: number, windows: readonly Window[]): { ok: true } | { ok: false; window: number; retryAt: number } {
  const longest = Math.max(1, ...windows.map((w) => w.windowMs));
  const kept = times.filter((t) => t > now - longest).sort((a, b) => a - b);
  for (let i = 0; i < windows.length; i++) {
    const w = windows[i]!;
    const inWindow = kept.filter((t) => t > now - w.windowMs && t <= now + longest);
    if (inWindow.length >= w.max) return { ok: false, window: i, retryAt: inWindow[inWindow.length - w.max]! + w.windowMs };
  }
  return { ok: true };
}

/** The earliest time at or after `from` when every window takes one more (nothing else being taken meanwhile). */
export function nextAllowed(times: readonly number[], from: number, windows: readonly Window[]): number {
  let t = from;
  // Each step moves past at least one counted time, so this ends within times.length + 1 steps.
  for (let i = 0; i <= times.length + 1; i++) {
    const c = windowCheck(times, t, windows);
    if (c.ok) return t;
    t = Math.max(t + 1, c.retryAt);
  }
  return t;
}

export interface BudgetFacts {
  /** Epoch ms. */
  now: number;
  /** The permission as readers see it (`toView`: `expired` already computed). */
  permission: Permission;
  /** Epoch ms of the permission requests sent to this user from this number (the ration's slots). */
  requests: readonly number[];
  /** Epoch ms of business-initiated calls to this user that connected (the user answered). */
  connectedCalls: readonly number[];
  /** Business-initiated calls in a row the user did not answer (reset by an answered one). */
  unansweredInARow: number;
}

export interface Allowance {
  allowed: boolean;
  /** Machine-readable reason (stable; the page may pick its own words by it). */
  code: 'OK' | 'ALREADY_GRANTED' | 'REJECTED_RECENTLY' | 'RATION' | 'REVOKED_UNANSWERED' | 'REJECTED' | 'EXPIRED' | 'DAILY_CALL_LIMIT' | 'SERVICE_DECIDES';
  /** One sentence for the UI, without the time (the page adds `nextText` + its local time of `nextAt`). */
  text: string;
  /** Epoch ms from when it becomes allowed, when that is known. */
  nextAt?: number;
  /** Words that go before the time of `nextAt`, e.g. "You can ask again at". */
  nextText?: string;
}

export interface Budget {
  request: Allowance;
  call: Allowance;
  /** The unanswered run has reached the review prompt (and not yet revocation). */
  warning?: { code: 'UNANSWERED_CALLS'; text: string };
  /** The permission counts as revoked (4 unanswered in a row), whatever the last reply said. */
  revoked: boolean;
  /** Connected calls still possible in the current 24 hours. */
  callsLeft: number;
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** What may be done now for one (business number, user) pair, and from when the rest. */
export function permissionBudget(f: BudgetFacts): Budget {
  const { now, permission: p } = f;
  const revoked = f.unansweredInARow >= UNANSWERED_REVOKE_AT;
  const granted = p.state === 'granted' && !revoked;
  const callsInDay = f.connectedCalls.filter((t) => t > now - CONNECTED_CALLS.windowMs && t <= now).length;
  const budget: Budget = { request: requestAllowance(f, granted, revoked), call: callAllowance(f, revoked), revoked, callsLeft: Math.max(0, CONNECTED_CALLS.max - callsInDay) };
  if (!revoked && f.unansweredInARow >= UNANSWERED_WARN_AT) {
    const left = UNANSWERED_REVOKE_AT - f.unansweredInARow;
    budget.warning = {
      code: 'UNANSWERED_CALLS',
      text: `${f.unansweredInARow} calls in a row went unanswered: the user is asked to review the permission; ${plural(left, 'more unanswered call revokes', 'more unanswered calls revoke')} it.`,
    };
  }
  return budget;
}

function requestAllowance(f: BudgetFacts, granted: boolean, revoked: boolean): Allowance {
  const { now, permission: p } = f;
  if (granted) {
    const a: Allowance = {
      allowed: false,
      code: 'ALREADY_GRANTED',
      text: p.permanent ? 'The user allows calls from this number permanently; there is nothing to ask.' : 'The user allows calls from this number; there is nothing to ask until the permission ends.',
    };
    if (!p.permanent && p.expiresAt !== undefined) Object.assign(a, { nextAt: p.expiresAt, nextText: 'You can ask again at' });
    return a;
  }
  const holdUntil = p.state === 'rejected' && !revoked ? p.updatedAt + REASK_AFTER_REJECT_MS : undefined;
  const rationAt = nextAllowed(f.requests, Math.max(now, holdUntil ?? now), RATION);
  if (holdUntil !== undefined && now < holdUntil) {
    return { allowed: false, code: 'REJECTED_RECENTLY', text: `The user said no to calls from this number; they are not asked again within ${REASK_AFTER_REJECT_MS / 3600_000} hours.`, nextAt: rationAt, nextText: 'You can ask again at' };
  }
  const check = windowCheck(f.requests, now, RATION);
  if (!check.ok) {
    const rule = RATION[check.window]!.rule;
    const text = check.window === 0 ? `A permission request was already sent in the last 24 hours (limit: ${rule}).` : `Two permission requests were already sent in the last 7 days (limit: ${rule}).`;
    return { allowed: false, code: 'RATION', text, nextAt: rationAt, nextText: 'You can ask again at' };
  }
  const text = revoked ? 'Calls went unanswered too often and the permission was revoked: you can ask the user to allow calls again.' : 'You can ask the user to allow calls from this number.';
  return { allowed: true, code: 'OK', text };
}

function callAllowance(f: BudgetFacts, revoked: boolean): Allowance {
  const { now, permission: p } = f;
  if (revoked) {
    return { allowed: false, code: 'REVOKED_UNANSWERED', text: `${f.unansweredInARow} calls in a row went unanswered, so the user's permission is revoked; ask again before calling.` };
  }
  if (p.state === 'rejected' || p.state === 'expired') {
    return { allowed: false, code: p.state === 'rejected' ? 'REJECTED' : 'EXPIRED', text: dialRefusal(p)! };
  }
  const day = windowCheck(f.connectedCalls, now, [CONNECTED_CALLS]);
  if (!day.ok) {
    return { allowed: false, code: 'DAILY_CALL_LIMIT', text: `This user was already called ${CONNECTED_CALLS.max} times in the last 24 hours (limit: ${CONNECTED_CALLS.rule}).`, nextAt: day.retryAt, nextText: 'You can call again at' };
  }
  if (p.state === 'granted') return { allowed: true, code: 'OK', text: 'The user allows calls from this number.' };
  return {
    allowed: true,
    code: 'SERVICE_DECIDES',
    text: p.state === 'requested' ? 'The user has not answered the permission request yet; the Service refuses the call unless they allow it.' : 'No permission is known here; the Service refuses the call unless the user has allowed it.',
  };
}
