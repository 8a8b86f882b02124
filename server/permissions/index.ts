/**
 * Calling permission for business-initiated calls ("callbacks"), one part:
 *
 * - `book.ts` keeps a user's permission per (business number, user) in the store;
 * - `model.ts` is the pure logic (states, request / reply merge, expiry on read, ration);
 * - `routes.ts` is the HTTP side (`POST /api/permissions/request`, `GET /api/permissions`,
 *   `GET /api/numbers`);
 * - `onInboundMessage` is the webhook handler for `chat.inbound_message.received`: a
 *   `call_permission_reply` is recorded under the user's number and every BSUID the event
 *   names, then announced;
 * - `dialRefusal(from, user)` is what the call engine asks before a `call.dial`: the
 *   permission budget's call allowance (rejected / expired permission, 5 connected calls in
 *   24 h, the permission revoked by 4 unanswered calls in a row);
 * - `onCommitted(before, after)` (the engine's commit hook) records connected and unanswered
 *   business-initiated calls per pair in the store, for the budget on every node.
 *
 * Every change is pushed as `{type:'permission.updated', permission}` to all supervisors
 * and to the user who sent the request, through the hub (so other nodes' sockets get it).
 * The end of a temporary grant is pushed too (state `expired`), by a timer on the node that
 * recorded the grant: best effort (a restart loses it; readers still see `expired`).
 */
import type { Hono } from 'hono';
import type { EventOf } from '../../shared/events.ts';
import type { Permission, ServerMsg } from '../../shared/protocol.ts';
import type { Auth, AuthEnv } from '../auth/index.ts';
import type { Hub } from '../push/hub.ts';
import type { Logger } from '../log/logger.ts';
import type { Store, StreamEntry } from '../store/store.ts';
import { PermissionBook } from './book.ts';
import { permissionBudget } from './budget.ts';
import { applyReply, callOutcomeOf, replyOf, toView, type CallOutcomeView } from './model.ts';
import { createPermissionRoutes, type PermissionMessages, type PermissionRoutesOptions, type PermissionNumbers } from './routes.ts';

export { PermissionBook, permissionKey } from './book.ts';
export { DEFAULT_BODY } from './routes.ts';
export type { PermissionMessages, PermissionNumbers } from './routes.ts';

/** A refused dial: `NO_PERMISSION` (rejected, expired, revoked by unanswered calls) or `CALL_LIMIT` (connected calls per day). */
export interface DialRefusal {
  code: 'NO_PERMISSION' | 'CALL_LIMIT';
  message: string;
  /** For pages (error frame `params`): the budget's reason code, the pair, and when it lifts (epoch ms). */
  params: { reason: string; user: string; from: string; nextAt?: number; count?: number };
}

export interface PermissionsOptions {
  store: Store;
  hub: Hub;
  auth: Auth;
  log: Logger;
  messages?: PermissionMessages | undefined;
  phoneNumbers?: PermissionNumbers | undefined;
  /** Record a sent permission request (messaging history). */
  onSent?: PermissionRoutesOptions['onSent'];
  now?: () => number;
  /** Which numbers each agent may ask from and read (QUEUES_FILE). */
  scope?: PermissionRoutesOptions['scope'];
}

export interface Permissions {
  book: PermissionBook;
  routes: Hono<AuthEnv>;
  /** Handler for `chat.inbound_message.received` (ignores every other kind of inbound message). */
  onInboundMessage(event: EventOf<'chat.inbound_message.received'>, entry: StreamEntry): Promise<void>;
  /** Why a dial may not go (code and words) by the permission budget; undefined when it may. */
  dialRefusal(from: string, user: string): Promise<DialRefusal | undefined>;
  /** What the budget needs to know of this pair's calls (connected calls, the unanswered run). */
  callFacts(from: string, user: string, permission: Pick<Permission, 'state' | 'updatedAt'>): ReturnType<PermissionBook['callFacts']>;
  /** The engine's commit hook: a business-initiated call that connected or rang out is recorded (never awaited by the call). */
  onCommitted(before: CallOutcomeView | null, after: CallOutcomeView | null): void;
  /** Push one permission to supervisors and its requester. */
  announce(p: Permission): void;
  /** Stop the expiry timers. */
  close(): void;
}

/** setTimeout's limit (~24.8 days); later expiries are re-armed when it fires. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export function createPermissions(o: PermissionsOptions): Permissions {
  const now = o.now ?? Date.now;
  const log = o.log;
  const book = new PermissionBook(o.store, log, now);

  const announce = (permission: Permission): void => {
    const msg: ServerMsg = { type: 'permission.updated', permission };
    o.hub.toRole('supervisor', msg);
    const by = permission.requestedBy;
    // A requesting supervisor already has it through the role push.
    if (by && !o.auth.users.get(by)?.roles.includes('supervisor')) o.hub.toUser(by, msg);
  };

  const expiryTimers = new Map<string, NodeJS.Timeout>();
  let closed = false;
  /** Push `expired` when the grant recorded now runs out (if it is still that grant then). */
  const watchExpiry = (p: Permission): void => {
    const k = `${p.from}|${p.user}`;
    clearTimeout(expiryTimers.get(k));
    expiryTimers.delete(k);
    if (closed || p.state !== 'granted' || p.permanent || p.expiresAt === undefined) return;
    const expiresAt = p.expiresAt;
    const t = setTimeout(() => {
      expiryTimers.delete(k);
      if (now() < expiresAt) return watchExpiry(p);
      void book
        .get(p.from, p.user)
        .then((cur) => {
          if (cur.state === 'expired' && cur.expiresAt === expiresAt) announce(cur);
        })
        .catch((err: Error) => log.warn({ err: err.message, from: p.from, user: p.user }, 'permission expiry check failed'));
    }, Math.min(MAX_TIMER_MS, Math.max(0, expiresAt - now()) + 50));
    t.unref();
    expiryTimers.set(k, t);
  };

  const onInboundMessage = async (event: EventOf<'chat.inbound_message.received'>, entry: StreamEntry): Promise<void> => {
    const reply = replyOf(event, entry.receivedAt);
    if (!reply) return;
    // The request was keyed by the identifier it was sent to (number or BSUID): its sender
    // is whoever any of the user's records names.
    let requestedBy: string | undefined;
    for (const user of reply.users) requestedBy ??= (await book.read(reply.from, user))?.requestedBy;
    for (const user of reply.users) {
      const stored = await book.update(reply.from, user, (cur) => {
        const next = applyReply(cur, user, reply, now());
        if (next && next.requestedBy === undefined && requestedBy !== undefined) next.requestedBy = requestedBy;
        return next;
      });
      if (!stored) {
        log.debug({ from: reply.from, user, replyId: reply.id, eventId: entry.eventId }, 'call permission reply already known or older: ignored');
        continue;
      }
      const permission = toView(stored, reply.from, user, now());
      log.info({ from: reply.from, user, state: permission.state, permanent: permission.permanent, expiresAt: permission.expiresAt, eventId: entry.eventId }, 'call permission reply');
      announce(permission);
      watchExpiry(permission);
    }
  };

  const routes = createPermissionRoutes({ auth: o.auth, book, log, messages: o.messages, phoneNumbers: o.phoneNumbers, announce, onSent: o.onSent, scope: o.scope });

  return {
    book,
    routes,
    onInboundMessage,
    announce,
    close() {
      closed = true;
      for (const t of expiryTimers.values()) clearTimeout(t);
      expiryTimers.clear();
    },
    async dialRefusal(from, user) {
      const t0 = now();
      const rec = await book.read(from, user);
      const permission = toView(rec, from, user, t0);
      const facts = await book.callFacts(from, user, permission);
      const call = permissionBudget({ now: t0, permission, requests: rec?.requests ?? [], ...facts }).call;
      if (call.allowed) return undefined;
      const when = call.nextAt !== undefined ? ` ${call.nextText ?? 'From'} ${new Date(call.nextAt).toISOString()}.` : '';
      return {
        code: call.code === 'DAILY_CALL_LIMIT' ? 'CALL_LIMIT' : 'NO_PERMISSION',
        message: `${call.text}${when}`,
        params: { reason: call.code, user, from, ...(call.nextAt !== undefined ? { nextAt: call.nextAt } : {}), ...(call.code === 'REVOKED_UNANSWERED' ? { count: facts.unansweredInARow } : {}) },
      };
    },
    callFacts: (from, user, permission) => book.callFacts(from, user, permission),
    onCommitted(before, after) {
      const o = callOutcomeOf(before, after);
      if (!o || !after) return;
      book.recordCall(after.from, after.to, after.wacid, o.outcome, o.at).catch((err: Error) => log.warn({ err: err.message, wacid: after.wacid }, 'business-initiated call outcome not recorded: the permission budget misses it'));
    },
  };
}
