/**
 * Calling permission, the pure part: what is stored per (business number, user), how a
 * request and a reply change it, what a reader is shown (`expired` is computed on read),
 * how long the record lives, the request ration's windows, and the reading of a reply event.
 * No I/O, no clock: every function takes `now`.
 */
import type { EventOf } from '../../shared/events.ts';
import type { Permission } from '../../shared/protocol.ts';

const DAY = 24 * 3600 * 1000;

/** A temporary grant without an `expiration_timestamp` lasts this long: 7 days, the provider's default. */
export const DEFAULT_GRANT_MS = 7 * DAY;
/** A rejection is respected this long before the user may be asked again (a request then answers 409). */
export const REASK_AFTER_REJECT_MS = DAY;
/** Requested / rejected records (and grants after their expiry) are kept this long. */
export const KEEP_MS = 30 * DAY;
/** A permanent grant is kept this long after the reply (the user may still revoke it at the Service). */
export const PERMANENT_KEEP_MS = 365 * DAY;

/**
 * Request ration per business number + user (the provider's limit; the emulator enforces the
 * same): at most 1 request in 24 hours and 2 in 7 days. Kept by the store's `reserveSlot`
 * (one atomic check-and-take across nodes; `PermissionBook.reserveRequest`).
 */
export const RATION = [
  { windowMs: DAY, max: 1, rule: '1 per 24 hours' },
  { windowMs: 7 * DAY, max: 2, rule: '2 per 7 days' },
] as const;

/** What the store keeps: the public fields plus what ordering and the ration need. */
export interface StoredPermission extends Omit<Permission, 'state'> {
  /** Never `unknown` or `expired`: those are what a reader is shown. */
  state: 'requested' | 'granted' | 'rejected';
  /** Epoch ms of the requests we sent in the last 7 days (history; the ration itself is the store's slot key). */
  requests?: number[];
  /** Epoch ms of the latest reply applied (the Service's time of the inbound message). */
  replyAt?: number;
  /** Inbound message id of the latest reply applied. */
  replyId?: string;
}

/** One call-permission reply, as read from an inbound message event. */
export interface Reply {
  /** The business number (the message's `to`). */
  from: string;
  /** Every identifier of the user the event names: number and BSUIDs, deduplicated. */
  users: string[];
  response: 'accept' | 'reject';
  permanent: boolean;
  /** Epoch ms when a temporary grant ends (from `expiration_timestamp`, or the default lifetime). */
  expiresAt?: number;
  /** Epoch ms of the reply (inbound `createTime`, else the envelope's, else receipt). */
  at: number;
  /** The inbound message id (duplicates of one reply carry the same). */
  id: string;
}

/** The public view: `unknown` without a record, `expired` for a grant past `expiresAt`. */
export function toView(rec: StoredPermission | undefined | null, from: string, user: string, now: number): Permission {
  if (!rec) return { from, user, state: 'unknown', updatedAt: now };
  const expired = rec.state === 'granted' && !rec.permanent && rec.expiresAt !== undefined && rec.expiresAt <= now;
  const p: Permission = { from, user, state: expired ? 'expired' : rec.state, updatedAt: rec.updatedAt };
  if (rec.permanent !== undefined) p.permanent = rec.permanent;
  if (rec.expiresAt !== undefined) p.expiresAt = rec.expiresAt;
  if (rec.requestedBy !== undefined) p.requestedBy = rec.requestedBy;
  return p;
}

const recent = (times: number[] | undefined, now: number) => (times ?? []).filter((t) => t > now - 7 * DAY && t <= now + DAY);

/** Why a request must not be sent now because of the user's recent rejection, or undefined. */
export function rejectionHold(rec: StoredPermission | undefined | null, now: number): { until: number } | undefined {
  if (rec?.state !== 'rejected') return undefined;
  const until = rec.updatedAt + REASK_AFTER_REJECT_MS;
  return now < until ? { until } : undefined;
}

/** A request was sent: state `requested`, whatever came before (a new answer is awaited). */
export function applyRequest(cur: StoredPermission | undefined | null, req: { from: string; user: string; by: string; at: number }): StoredPermission {
  const next: StoredPermission = {
    from: req.from,
    user: req.user,
    state: 'requested',
    updatedAt: req.at,
    requestedBy: req.by,
    requests: [...recent(cur?.requests, req.at), req.at],
  };
  if (cur?.replyAt !== undefined) next.replyAt = cur.replyAt;
  if (cur?.replyId !== undefined) next.replyId = cur.replyId;
  return next;
}

/**
 * A reply arrived for one of the user's identifiers. Returns the record to store, or
 * undefined when it changes nothing: the same reply again (same message id), or a reply
 * older than (or as old as) the latest one applied — events repeat and arrive out of order.
 * A reply newer than the last one wins even over a later pending request: it is the user's
 * latest answer, and the Service holds it.
 */
export function applyReply(cur: StoredPermission | undefined | null, user: string, reply: Reply, now: number): StoredPermission | undefined {
  if (cur?.replyId === reply.id) return undefined;
  if (cur?.replyAt !== undefined && reply.at <= cur.replyAt) return undefined;
  const next: StoredPermission = {
    from: reply.from,
    user,
    state: reply.response === 'accept' ? 'granted' : 'rejected',
    updatedAt: now,
    replyAt: reply.at,
    replyId: reply.id,
  };
  if (reply.response === 'accept') {
    next.permanent = reply.permanent;
    if (!reply.permanent && reply.expiresAt !== undefined) next.expiresAt = reply.expiresAt;
  }
  if (cur?.requestedBy !== undefined) next.requestedBy = cur.requestedBy;
  if (cur?.requests?.length) next.requests = recent(cur.requests, now);
  return next;
}

/** How long the store keeps a record (ms from now; at least a minute). */
export function ttlFor(rec: StoredPermission, now: number): number {
  let until: number;
  if (rec.state === 'granted' && rec.permanent) until = rec.updatedAt + PERMANENT_KEEP_MS;
  // A grant is kept past its expiry so readers (and the dial check) see `expired`, not `unknown`.
  else if (rec.state === 'granted' && rec.expiresAt !== undefined) until = Math.max(rec.expiresAt, now) + KEEP_MS;
  else until = rec.updatedAt + KEEP_MS;
  return Math.max(60_000, until - now);
}

/**
 * `expiration_timestamp` to epoch ms. The interface does not show its unit; the emulator
 * (and the provider behind the Service) send epoch seconds. A number below 10^11 is read
 * as seconds, a larger one as milliseconds; a numeric string likewise; any other string as
 * an ISO date. Undefined when absent or unreadable.
 */
export function expirationMs(v: unknown): number | undefined {
  if (typeof v === 'string') {
    if (/^\d+(\.\d+)?$/.test(v.trim())) return expirationMs(Number(v));
    const t = Date.parse(v);
    return Number.isFinite(t) ? t : undefined;
  }
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) return undefined;
  return Math.round(v < 1e11 ? v * 1000 : v);
}

const timeOf = (v: unknown): number | undefined => {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v !== 'string') return undefined;
  const t = Date.parse(v);
  return Number.isFinite(t) ? t : undefined;
};

/**
 * The call-permission reply carried by a `chat.inbound_message.received` event (as the
 * workers validated it), or undefined when the message is something else or cannot be keyed
 * (no business number, no user identifier). Throws nothing.
 */
export function replyOf(event: EventOf<'chat.inbound_message.received'>, receivedAt: number): Reply | undefined {
  const m = event.payload;
  const r = m.interactive?.call_permission_reply;
  if (!r || (r.response !== 'accept' && r.response !== 'reject')) return undefined;
  if (!m.to) return undefined;
  const users = [...new Set([m.from, m.fromUserId, m.userId].filter((u): u is string => typeof u === 'string' && u.length > 0))];
  if (users.length === 0) return undefined;
  const at = timeOf(m.createTime) ?? timeOf(event.envelope.createTime) ?? receivedAt;
  const permanent = r.is_permanent === true;
  const reply: Reply = { from: m.to, users, response: r.response, permanent, at, id: m.id };
  if (r.response === 'accept' && !permanent) reply.expiresAt = expirationMs(r.expiration_timestamp) ?? at + DEFAULT_GRANT_MS;
  return reply;
}

/** The `NO_PERMISSION` message for a dial, or undefined when the dial may go to the Service. */
export function dialRefusal(p: Permission): string | undefined {
  if (p.state === 'rejected') {
    return `${p.user} rejected the call permission request from ${p.from} at ${new Date(p.updatedAt).toISOString()}; no call is placed after a rejection (a new request may be sent ${REASK_AFTER_REJECT_MS / 3600_000} h after it)`;
  }
  if (p.state === 'expired') {
    return `the call permission of ${p.user} for ${p.from} expired at ${new Date(p.expiresAt ?? p.updatedAt).toISOString()}; ask again before calling`;
  }
  return undefined;
}

/** What the permission budget needs of a call record (server/calls/lifecycle.ts `Call`). */
export interface CallOutcomeView {
  wacid: string;
  direction: 'USER_INITIATED' | 'BUSINESS_INITIATED';
  state: string;
  from: string;
  to: string;
  startedAt?: number | undefined;
  endedAt?: number | undefined;
  remoteStatus?: string | undefined;
}

/**
 * What one committed transition tells the budget of a business-initiated call (calling-facts:
 * connected calls per day, unanswered calls in a row), or undefined:
 * - `connected`: the user answered (the call reached `active`);
 * - `unanswered`: the call ended from `connected` (the user's phone rang) never answered and
 *   not rejected by the user — it rang out. A call we hung up first passes through `ending`,
 *   one the user declined says REJECTED: neither is "unanswered" (the Service counts neither).
 */
export function callOutcomeOf(before: CallOutcomeView | null, after: CallOutcomeView | null): { outcome: 'connected' | 'unanswered'; at: number } | undefined {
  if (!after || after.direction !== 'BUSINESS_INITIATED') return undefined;
  if (after.state === 'active' && before?.state !== 'active' && after.startedAt !== undefined) return { outcome: 'connected', at: after.startedAt };
  if (after.state === 'ended' && before?.state === 'connected' && after.startedAt === undefined && after.remoteStatus !== 'REJECTED') {
    return { outcome: 'unanswered', at: after.endedAt ?? Date.now() };
  }
  return undefined;
}
