/**
 * The missed-call callback queue.
 *
 * `onCallEnded(call)` is the call engine's hook, given the call as history records it (a
 * `CallFact` of server/history/recorder.ts, or a `CallRecord`), once or many times per call
 * (repeats change nothing):
 * - inbound, `missed` / `abandoned` / `rejected`, or cut off (`no-audio`, or answered and ended
 *   `AGENT_PAGE_LOST`: reason `cut-off`; refused outside business hours: `out-of-hours`; the
 *   caller left a message in anchor mode: `voicemail`, the miss linking the message): the customer's open task for that business
 *   number is created or gains the call; the first time, the follow-up of
 *   `MISSED_CALL_FOLLOWUP` is decided and sent, once per task (across nodes);
 * - inbound, `answered`: the customer called in and was answered: their task is done;
 * - outbound to the customer: a call back; answered closes the task, otherwise the retry
 *   schedule puts it back to `open` with a later `dueAt`.
 * Every change is pushed as `callback.updated` to agents and supervisors.
 *
 * The engine hands ended calls to `take`: a call the database cannot take (an outage) is
 * kept in the process and tried again until it is, so a missed customer is not forgotten
 * because PostgreSQL was restarting when their call ended.
 */
import { randomUUID } from 'node:crypto';
import type { Permission } from '../../shared/protocol.ts';
import type { CallbackFollowup, CallbackPermission, CallbackState, CallbackTask } from '../../shared/records.ts';
import { RETRY_SCHEDULE_MS, type CallbackStore, type ClaimResult } from './store.ts';
import type { MessagingStore } from '../messaging/store.ts';
import type { Outcome } from '../history/schema.ts';
import type { Logger } from '../log/logger.ts';
import { permissionBudget } from '../permissions/budget.ts';
import { missedCallFollowup, type FollowupSetting } from '../messaging/followup.ts';
import { CHAT_CHANNEL, mayMessage } from '../messaging/optout.ts';
import type { Messaging, MessagingClient, Push } from '../messaging/service.ts';
import { AGENT_PAGE_LOST, OUT_OF_HOURS, VOICEMAIL_LEFT } from '../../shared/callErrors.ts';
import { voicemailUrl } from '../archive/voicemail.ts';
import type { PermissionBook } from '../permissions/book.ts';
import { applyRequest, toView } from '../permissions/model.ts';
import { surelyNotSent } from '../permissions/routes.ts';
import type { NumberScope } from '../auth/scope.ts';
import { retrier } from '../../shared/backoff.ts';

/** What the hook needs of a call: the shape of a history call fact / `CallRecord`. */
export interface EndedCall {
  wacid: string;
  direction: 'inbound' | 'outbound';
  outcome: Outcome;
  businessNumber?: string | undefined;
  customer: { phoneNumber?: string | undefined; userId?: string | undefined };
  endedAt?: string | undefined;
  agent?: string | undefined;
  endReason?: string | undefined;
}

/**
 * An inbound call the customer was cut off from on our side: accepted but no audio ever
 * flowed (`no-audio`), or the agent's page went away mid-call (`AGENT_PAGE_LOST`).
 */
const cutOff = (call: EndedCall): boolean => call.outcome === 'no-audio' || (call.outcome === 'answered' && call.endReason === AGENT_PAGE_LOST);

export interface CallbacksOptions {
  store: CallbackStore;
  messages: MessagingStore;
  messaging: Pick<Messaging, 'recordSent'>;
  client: Pick<MessagingClient, 'messages'>;
  /** Calling permissions (the ration is the store's atomic slot, shared with `/api/permissions/request`). */
  book: Pick<PermissionBook, 'read' | 'reserveRequest' | 'releaseRequest' | 'update' | 'callFacts'>;
  push: Push;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  followup: FollowupSetting;
  /** After a follow-up asked for permission (the permissions module pushes `permission.updated`). */
  onPermissionRequested?: (p: Permission) => void;
  schedule?: readonly number[];
  now?: () => number;
  /** Window in which changed tasks are pushed once each (default 250 ms). */
  announceMs?: number;
  /**
   * The agents taking calls to a business number (QUEUES_FILE), undefined when every agent
   * does or the number is not known yet: its tasks are pushed to, and listed for, those
   * agents only (supervisors see every task). With thousands of agents on many lines, a
   * task goes to its line's agents, not to the whole floor.
   */
  agentsFor?: (businessNumber: string) => ReadonlySet<string> | undefined;
  /**
   * Which numbers each agent may see (server/auth/scope.ts): with it, an agent lists, claims
   * and closes only their numbers' tasks (`list`, `visible`); without it `agentsFor` decides the list.
   */
  scope?: Pick<NumberScope, 'scoped' | 'allows' | 'allowed'> | undefined;
}

export interface Callbacks {
  onCallEnded(call: EndedCall): Promise<void>;
  /**
   * The engine's hook: `onCallEnded` without waiting and without losing the call. When the
   * database cannot take it (an outage), the call is kept (its latest observation, at most
   * `RETRY_KEPT` calls) and tried again, oldest first, every 100 ms doubling to 30 s, until taken.
   */
  take(call: EndedCall): void;
  /**
   * Tasks in one state or several (read at once), each with its permission in words; for an
   * agent who is not a supervisor, only those of the numbers they take calls for.
   */
  list(state: CallbackState | readonly CallbackState[], viewer?: { name: string; roles: readonly string[] }): Promise<CallbackTask[]>;
  /** Whether `viewer` may see (claim, close) task `id`: false for an unknown task and for another queue's. */
  visible(id: string, viewer: { name: string; roles: readonly string[] }): Promise<boolean>;
  claim(id: string, by: string): Promise<ClaimResult>;
  done(id: string, outcome: string, by: string, supervisor: boolean): Promise<ClaimResult>;
  /** The permission of the task's pair in words (what the budget allows now, and when); `unknown` when it cannot be read. */
  permissionOf(task: Pick<CallbackTask, 'businessNumber' | 'customer'>): Promise<CallbackPermission>;
}

/**
 * The tasks changed within this window are pushed once each, as their latest state: a missed
 * call creates its task and decides its follow-up milliseconds apart. The pushes are
 * announcements (`paced`): each socket gets them at its own turn, at most one write a second
 * for all of them, whichever node made them; with hundreds of agents a write per socket per
 * task was the cost of a missed call, and a second's worth written at once held up the
 * offers meanwhile. A queue is not an offer: a second is soon enough.
 */
const ANNOUNCE_MS = 250;

/** The permission of a task when the permission store cannot be read: nothing is allowed until it can. */
const UNREADABLE: CallbackPermission = {
  state: 'unknown',
  text: 'The calling permission could not be read just now; try again in a moment.',
  callAllowed: false,
  requestAllowed: false,
  callCode: 'UNREADABLE',
  requestCode: 'UNREADABLE',
};

const PACED = { paced: true } as const;

/** Tasks pushed per event-loop turn when the changes of a window go out. */
const PUSH_SLICE = 5;

/** Ended calls kept for another try while the database cannot take them; beyond, the oldest are dropped (logged). */
const RETRY_KEPT = 10_000;

const followupOff = (at: number): CallbackFollowup => ({ at: new Date(at).toISOString(), code: 'OFF', reason: 'missed-call follow-up is off (MISSED_CALL_FOLLOWUP)' });

const MISSED = new Set<Outcome>(['missed', 'abandoned', 'rejected']);

export function createCallbacks(o: CallbacksOptions): Callbacks {
  const now = o.now ?? Date.now;
  const { store, log } = o;
  const schedule = o.schedule ?? RETRY_SCHEDULE_MS;

  // A task's changes within ANNOUNCE_MS go out once, as its latest state: a missed call
  // creates its task and decides its follow-up milliseconds apart, and every frame goes to
  // every agent's socket (thousands of them).
  const pending = new Map<string, CallbackTask>();
  let flushing: NodeJS.Timeout | undefined;
  const flush = async () => {
    flushing = undefined;
    const changed = [...pending.values()];
    pending.clear();
    // Each with its permission as it is now (read once per task per push, whatever changed it).
    for (const [i, task] of (await Promise.all(changed.map(withPermission))).entries()) {
      // A few tasks per event-loop turn: each goes to every agent's outbox, and a webhook or an offer arriving meanwhile waits behind none of it.
      if (i > 0 && i % PUSH_SLICE === 0) await new Promise((r) => setImmediate(r));
      const msg = { type: 'callback.updated' as const, task };
      const agents = o.push.toUsers && o.agentsFor?.(task.businessNumber);
      if (agents) o.push.toUsers!(agents, msg, PACED);
      else o.push.toRole('agent', msg, PACED);
      o.push.toRole('supervisor', msg, PACED);
    }
  };
  const announce = (task: CallbackTask | null | undefined) => {
    if (!task) return;
    pending.delete(task.id); // re-inserted last: tasks go out in the order of their latest change
    pending.set(task.id, task);
    flushing ??= setTimeout(() => void flush(), o.announceMs ?? ANNOUNCE_MS);
  };

  async function permissionOf(t: Pick<CallbackTask, 'businessNumber' | 'customer'>): Promise<CallbackPermission> {
    try {
      const t0 = now();
      const rec = await o.book.read(t.businessNumber, t.customer);
      const permission = toView(rec, t.businessNumber, t.customer, t0);
      // The pair's connected calls and unanswered run (recorded by the engine's commit hook).
      const facts = await o.book.callFacts(t.businessNumber, t.customer, permission);
      const b = permissionBudget({ now: t0, permission, requests: rec?.requests ?? [], ...facts });
      const text = b.call.allowed ? b.call.text : `${b.call.text} ${b.request.text}`;
      const out: CallbackPermission = {
        state: permission.state,
        text: b.warning ? `${b.warning.text} ${text}` : text,
        ...(b.warning ? { warning: b.warning.text } : {}),
        callAllowed: b.call.allowed,
        requestAllowed: b.request.allowed,
        callCode: b.call.code,
        requestCode: b.request.code,
        ...(facts.unansweredInARow > 0 ? { unanswered: facts.unansweredInARow } : {}),
      };
      const next = b.call.allowed ? undefined : b.call.nextAt !== undefined ? b.call : b.request.nextAt !== undefined ? b.request : undefined;
      if (next?.nextAt !== undefined) {
        out.nextAt = next.nextAt;
        out.nextFor = next === b.call ? 'call' : 'request';
        if (next.nextText) out.nextText = next.nextText;
      }
      return out;
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'permission of a callback task could not be read');
      return UNREADABLE;
    }
  }

  // Every task the queue hands out (list, push, claim, done) carries its permission (design.md).
  const withPermission = async (t: CallbackTask): Promise<CallbackTask> => ({ ...t, permission: await permissionOf(t) });
  const withPermissionOf = async (r: ClaimResult): Promise<ClaimResult> => (r.ok || r.code === 'CONFLICT' ? { ...r, task: await withPermission(r.task) } : r);

  /** The follow-up of a new task: decided from opt-outs, catalog and budget, sent once. */
  async function followup(task: CallbackTask): Promise<void> {
    const at = () => new Date(now()).toISOString();
    const finish = async (f: CallbackFollowup) => announce(await store.setFollowup(task.id, f, false));
    if (o.followup.kind === 'off') {
      announce(await store.setFollowup(task.id, followupOff(now()), true));
      return;
    }
    const { customer, businessNumber: from } = task;
    const t0 = now();
    const rec = await o.book.read(from, customer);
    const permission = toView(rec, from, customer, t0);
    const decision = missedCallFollowup({
      setting: o.followup,
      optOut: mayMessage(await o.messages.optOutsOf([customer]), [customer], CHAT_CHANNEL),
      budget: permissionBudget({ now: t0, permission, requests: rec?.requests ?? [], ...(await o.book.callFacts(from, customer, permission)) }),
      catalog: await o.messages.catalog(),
    });
    // Take the task's one follow-up (any node): only the taker goes on.
    const taken = await store.setFollowup(task.id, decision.send ? { at: at(), code: 'SENDING' } : { at: at(), code: decision.code, reason: decision.reason }, true);
    if (!taken) return;
    if (!decision.send) {
      log.info({ task: task.id, code: decision.code }, 'missed-call follow-up not sent');
      announce(taken);
      return;
    }
    const slot = randomUUID();
    if (decision.asksPermission) {
      const r = await o.book.reserveRequest(from, customer, slot, t0);
      if (!r.ok) return finish({ at: at(), code: 'RATION', reason: `call permission requests are limited to ${r.rule}; the next one may be sent at ${new Date(r.nextAt).toISOString()}` });
    }
    const address = customer.startsWith('+') ? { to: customer } : { recipient: customer };
    const m = decision.message;
    const body =
      m.type === 'template'
        ? { from, ...address, type: 'template', template: { name: m.name, language: { code: m.language } }, filterUnsubscribed: true }
        : { from, ...address, type: 'interactive', interactive: { type: 'call_permission_request', action: { name: 'call_permission_request' }, body: { text: m.text } }, filterUnsubscribed: true };
    let messageId: string;
    try {
      const response = await o.client.messages.send(body);
      messageId = response.id;
      const { filterUnsubscribed: _f, ...sent } = body;
      await o.messaging.recordSent(response, sent);
    } catch (err) {
      if (decision.asksPermission && surelyNotSent(err)) await o.book.releaseRequest(from, customer, slot).catch(() => undefined);
      log.warn({ task: task.id, err: (err as Error).message }, 'missed-call follow-up failed');
      return finish({ at: at(), code: 'FAILED', reason: (err as Error).message.slice(0, 1000) });
    }
    if (decision.asksPermission) {
      try {
        const stored = await o.book.update(from, customer, (cur) => applyRequest(cur, { from, user: customer, by: 'switchboard', at: now() }));
        if (stored) o.onPermissionRequested?.(toView(stored, from, customer, now()));
      } catch (err) {
        log.error({ err: (err as Error).message, task: task.id }, 'follow-up sent, but the permission request could not be recorded');
      }
    }
    log.info({ task: task.id, messageId, type: m.type }, 'missed-call follow-up sent');
    await finish({ at: at(), code: 'SENT', messageId });
  }

  async function onCallEnded(call: EndedCall): Promise<void> {
    if (call.outcome === 'in-progress') return;
    const customer = call.customer.phoneNumber ?? call.customer.userId;
    const businessNumber = call.businessNumber;
    if (!customer || !businessNumber) return;
    const at = call.endedAt ?? new Date(now()).toISOString();
    if (call.direction === 'inbound') {
      if (MISSED.has(call.outcome) || cutOff(call)) {
        // Follow-up off: the new task is created with it (one statement for the missed call).
        // Voicemail (anchor mode): the caller left a message; the task links it.
        const left = call.endReason === VOICEMAIL_LEFT;
        const reason = left ? 'voicemail' : cutOff(call) ? 'cut-off' : call.endReason === OUT_OF_HOURS ? 'out-of-hours' : (call.outcome as 'missed' | 'abandoned' | 'rejected');
        const r = await store.noteMissedCall(
          { wacid: call.wacid, customer, businessNumber, reason, at, ...(left ? { voicemail: voicemailUrl(call.wacid) } : {}) },
          o.followup.kind === 'off' ? followupOff(now()) : undefined,
        );
        if (r.added) announce(r.task);
        // Also after a repeat: a crash between the task and its follow-up must not lose it.
        if (!r.task.followup) await followup(r.task);
      } else if (call.outcome === 'answered') {
        announce(await store.closeByInboundCall(customer, businessNumber, call.wacid));
      }
      return;
    }
    const outcome = call.outcome === 'answered' ? 'answered' : call.outcome === 'failed' ? 'failed' : 'no-answer';
    const attempt = { wacid: call.wacid, outcome, at, ...(call.agent ? { by: call.agent } : {}) };
    const t = await store.noteCallback(customer, businessNumber, attempt, schedule);
    if (t) announce(t);
  }

  // Ended calls the database could not take, by wacid (the latest observation), oldest first.
  const kept = new Map<string, EndedCall>();
  let retryTimer: NodeJS.Timeout | undefined;
  const retries = retrier({ baseMs: 200, maxMs: 30_000, minMs: 100 });
  const retryLater = () => {
    if (retryTimer || kept.size === 0) return;
    retryTimer = setTimeout(() => void retry(), retries.next());
    retryTimer.unref();
  };
  const keep = (call: EndedCall) => {
    kept.delete(call.wacid);
    kept.set(call.wacid, call);
    if (kept.size > RETRY_KEPT) {
      const oldest = kept.keys().next().value!;
      kept.delete(oldest);
      log.error({ wacid: oldest, kept: RETRY_KEPT }, 'callback queue: ended call dropped, too many waiting for the database');
    }
    retryLater();
  };
  // One at a time, oldest first; the first failure ends the try: the rest wait for the next,
  // the failed call behind them (one call that always fails does not hold up the others).
  const retry = async () => {
    const calls = [...kept.values()];
    kept.clear();
    let taken = 0;
    for (const [i, call] of calls.entries()) {
      try {
        await onCallEnded(call);
        taken++;
      } catch {
        const newer = [...kept.values()];
        kept.clear();
        for (const c of [...calls.slice(i + 1), call, ...newer]) kept.set(c.wacid, c);
        break;
      }
    }
    retryTimer = undefined;
    if (taken === calls.length) retries.reset();
    if (taken > 0) log.info({ calls: taken, waiting: kept.size }, 'callback queue: ended calls taken after all');
    retryLater();
  };
  const take = (call: EndedCall) => {
    onCallEnded(call).catch((err: Error) => {
      if (!kept.has(call.wacid)) log.warn({ err: err.message, wacid: call.wacid }, 'callback queue: ended call not taken yet; kept and tried again');
      keep(call);
    });
  };

  return {
    onCallEnded,
    take,
    async list(state, viewer) {
      const tasks = await store.list(state);
      if (!viewer || viewer.roles.includes('supervisor')) return Promise.all(tasks.map(withPermission));
      if (o.scope?.scoped) {
        const ok = await o.scope.allowed(viewer, tasks.map((t) => t.businessNumber));
        return Promise.all(tasks.filter((t) => ok.has(t.businessNumber)).map(withPermission));
      }
      const mine = (t: CallbackTask) => {
        const agents = o.agentsFor?.(t.businessNumber);
        return !agents || agents.has(viewer.name);
      };
      return Promise.all(tasks.filter(mine).map(withPermission));
    },
    async visible(id, viewer) {
      if (viewer.roles.includes('supervisor') || !o.scope?.scoped) return true;
      const t = await store.get(id);
      return t !== null && (await o.scope.allows(viewer, t.businessNumber));
    },
    async claim(id, by) {
      const r = await store.claim(id, by);
      if (r.ok) announce(r.task);
      return withPermissionOf(r);
    },
    async done(id, outcome, by, supervisor) {
      const r = await store.done(id, outcome, by, supervisor);
      if (r.ok) announce(r.task);
      return withPermissionOf(r);
    },
    permissionOf,
  };
}
