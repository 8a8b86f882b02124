/**
 * The call-back queue's state: pure, no DOM, no clock of its own. Fed by
 * `GET /api/callbacks?state=open,claimed` (on start and after every `welcome`, so a
 * reconnect puts the list right), by `callback.updated` frames, and by the follow-up messages' records
 * (`message.updated` frames, or `GET /api/messages/:id` for agents, who are not sent those).
 * `queueView` turns it into what the panel draws, in words and local time.
 */
import type { CallbackTask, MessageRecord } from '../../shared/records.ts';
import { describeMoment, formatCaller, messageStatusWords, outcomeWords } from './format.ts';
import { locale, t as tr, type MessageKey } from './i18n/index.ts';

export interface QueueState {
  /** Open and claimed tasks by id (done and cancelled ones leave the list). */
  tasks: Record<string, CallbackTask>;
  /** Follow-up messages by id. */
  messages: Record<string, MessageRecord>;
  loaded: boolean;
  loadError?: string;
  /** A claim, done or permission request in flight, by task id. */
  busy: Record<string, 'claim' | 'done' | 'ask'>;
  /** What happened to a task's last call back or permission request, by task id (shown on the task). */
  notes: Record<string, string>;
  /** The last refusal of an action, by task id ("claimed by agent2", ...). */
  errors: Record<string, string>;
  /** Version at which a task left the list (a list answer older than that must not bring it back). */
  gone: Record<string, number>;
  /** Tasks put by a push or an action's answer so far: a list read notes it when it is sent (`loaded.since`). */
  pushes: number;
  /** By task id, the count of `pushes` that last put the task (a task put after a read was sent is newer than its answer). */
  pushedAt: Record<string, number>;
}

export const initialQueue: QueueState = { tasks: {}, messages: {}, loaded: false, busy: {}, errors: {}, notes: {}, gone: {}, pushes: 0, pushedAt: {} };

export type QueueEvent =
  /** A list answer; `since`: the state's `pushes` when the read was sent. */
  | { type: 'loaded'; items: CallbackTask[]; since: number }
  | { type: 'loadFailed'; message: string }
  | { type: 'task'; task: CallbackTask }
  | { type: 'message'; message: MessageRecord }
  | { type: 'busy'; id: string; action: 'claim' | 'done' | 'ask' }
  | { type: 'actionFailed'; id: string; message: string }
  | { type: 'actionDone'; id: string; note?: string }
  /** A call back to this pair ended without being answered, or was refused (138006...): said on its task. */
  | { type: 'callOutcome'; businessNumber: string; customer: string; message: string };

const LISTED = new Set(['open', 'claimed']);
const without = <T>(r: Record<string, T>, k: string): Record<string, T> => {
  if (!(k in r)) return r;
  const { [k]: _drop, ...rest } = r;
  return rest;
};

/** The newer of two views of one task (frames and list answers may cross). */
function newer(cur: CallbackTask | undefined, next: CallbackTask): boolean {
  return !cur || next.version > cur.version || (next.version === cur.version && next.updatedAt >= cur.updatedAt);
}

function putTask(s: QueueState, task: CallbackTask): QueueState {
  const cur = s.tasks[task.id];
  if (!newer(cur, task) || (s.gone[task.id] ?? -1) >= task.version) return s;
  // A frame may lack the permission words (a `done` push): keep the last known ones.
  const t = !task.permission && cur?.permission && LISTED.has(task.state) ? { ...task, permission: cur.permission } : task;
  if (LISTED.has(t.state)) return { ...s, tasks: { ...s.tasks, [t.id]: t }, pushes: s.pushes + 1, pushedAt: { ...s.pushedAt, [t.id]: s.pushes + 1 } };
  return { ...s, tasks: without(s.tasks, t.id), gone: { ...s.gone, [t.id]: t.version }, pushedAt: without(s.pushedAt, t.id) };
}

export function reduceQueue(s: QueueState, ev: QueueEvent): QueueState {
  switch (ev.type) {
    case 'loaded': {
      // The list (open and claimed tasks) is the truth as of its read; a newer push seen
      // meanwhile is kept, and so is a task pushed after the read was sent that the answer
      // lacks (created after the read; had it closed, its closing push would follow).
      const tasks: Record<string, CallbackTask> = {};
      for (const t of ev.items) {
        if (!LISTED.has(t.state) || (s.gone[t.id] ?? -1) >= t.version) continue;
        tasks[t.id] = newer(s.tasks[t.id], t) ? t : s.tasks[t.id]!;
      }
      const pushedAt: Record<string, number> = {};
      for (const [id, at] of Object.entries(s.pushedAt)) {
        if (at > ev.since && s.tasks[id]) tasks[id] ??= s.tasks[id];
        if (tasks[id]) pushedAt[id] = at;
      }
      const { loadError: _e, ...rest } = s;
      return { ...rest, tasks, pushedAt, loaded: true };
    }
    case 'loadFailed':
      return { ...s, loadError: ev.message };
    case 'task':
      return putTask(s, ev.task);
    case 'message': {
      const cur = s.messages[ev.message.id];
      if (cur && cur.updateTime > ev.message.updateTime) return s;
      return { ...s, messages: { ...s.messages, [ev.message.id]: ev.message } };
    }
    case 'busy':
      return { ...s, busy: { ...s.busy, [ev.id]: ev.action }, errors: without(s.errors, ev.id) };
    case 'actionFailed':
      return { ...s, busy: without(s.busy, ev.id), errors: { ...s.errors, [ev.id]: ev.message } };
    case 'actionDone':
      return { ...s, busy: without(s.busy, ev.id), ...(ev.note ? { notes: { ...s.notes, [ev.id]: ev.note } } : {}) };
    case 'callOutcome': {
      const t = Object.values(s.tasks).find((x) => x.businessNumber === ev.businessNumber && x.customer === ev.customer);
      return t ? { ...s, errors: { ...s.errors, [t.id]: ev.message } } : s;
    }
  }
}

/** Follow-up message ids the page still has to read (no record yet, or not final). */
export function followupsToFetch(s: QueueState): string[] {
  const out: string[] = [];
  for (const t of Object.values(s.tasks)) {
    const id = t.followup?.messageId;
    if (!id) continue;
    const m = s.messages[id];
    if (!m || !FINAL_STATUS.has(m.status)) out.push(id);
  }
  return out;
}

const FINAL_STATUS = new Set(['read', 'failed']);

/** The task's unanswered calls in all (it keeps only its latest misses). */
const missed = (t: CallbackTask): number => t.missCount ?? t.misses.length;

const REASON: Record<string, MessageKey> = {
  missed: 'queue.reasonMissed',
  abandoned: 'queue.reasonAbandoned',
  rejected: 'queue.reasonRejected',
  'cut-off': 'queue.reasonCutOff',
  'out-of-hours': 'queue.reasonOutOfHours',
  voicemail: 'queue.reasonVoicemail',
};

const FOLLOWUP_WORDS: Record<string, MessageKey> = {
  OFF: 'queue.followupOff',
  OPTED_OUT: 'queue.followupOptedOut',
  RATION: 'queue.followupRation',
  TEMPLATE_NOT_APPROVED: 'queue.followupTemplate',
  FAILED: 'queue.followupFailed',
  SENDING: 'queue.followupSending',
};

const CALL_CODES: Record<string, MessageKey> = {
  OK: 'budget.callOk',
  SERVICE_DECIDES: 'budget.callServiceDecides',
  REJECTED: 'budget.callRejected',
  EXPIRED: 'budget.callExpired',
  REVOKED_UNANSWERED: 'budget.callRevoked',
  DAILY_CALL_LIMIT: 'budget.callDailyLimit',
  UNREADABLE: 'budget.unreadable',
};
const REQUEST_CODES: Record<string, MessageKey> = {
  OK: 'budget.requestOk',
  ALREADY_GRANTED: 'budget.requestGranted',
  REJECTED_RECENTLY: 'budget.requestRejectedRecently',
  RATION: 'budget.requestRation',
};

/** The task's permission in words, from the budget's codes (the server's English `text` only from a server without them). */
function permissionWords(p: NonNullable<CallbackTask['permission']>): string {
  const call = p.callCode ? CALL_CODES[p.callCode] : undefined;
  if (!call) return p.text;
  const count = p.unanswered ?? 0;
  const warning = p.warning && count > 0 && p.callCode !== 'REVOKED_UNANSWERED' ? `${tr('budget.warning', { count })} ` : '';
  const request = !p.callAllowed && p.requestCode && REQUEST_CODES[p.requestCode] ? ` ${tr(REQUEST_CODES[p.requestCode]!)}` : '';
  return `${warning}${tr(call, { count })}${p.callCode === 'UNREADABLE' ? '' : request}`;
}

export interface TaskRow {
  id: string;
  state: 'open' | 'claimed';
  customer: string;
  customerText: string;
  businessNumber: string;
  businessText: string;
  reason: string;
  reasonText: string;
  /** "today at 14:05 (12 min)". */
  waitingText: string;
  attempts: number;
  attemptsText: string;
  permissionState: string;
  permissionText: string;
  /** "Calls allowed now." or what is allowed when, in local time. */
  allowedText: string;
  followupStatus: string;
  followupText: string;
  assignee?: string;
  mine: boolean;
  /** Not before (the retry schedule), in words. */
  dueText?: string;
  canClaim: boolean;
  canCall: boolean;
  callBlockedReason?: string;
  canDone: boolean;
  /** "Ask permission" is offered: the permission is not known (or expired) and a request may go now. */
  canAsk: boolean;
  busy?: 'claim' | 'done' | 'ask';
  error?: string;
  /** What the last permission request did ("Permission asked: ..."). */
  note?: string;
  /** The caller's voicemail messages (anchor mode), newest first: where to play each, and when it was left in words. */
  voicemails: Array<{ url: string; label: string }>;
}

function ago(ms: number): string {
  const m = Math.max(0, Math.round(ms / 60_000));
  if (m < 1) return tr('queue.justNow');
  if (m < 60) return tr('queue.minutes', { m });
  return tr('queue.hoursMinutes', { h: Math.floor(m / 60), m: m % 60 });
}

function followupOf(t: CallbackTask, messages: Record<string, MessageRecord>): { status: string; text: string } {
  const f = t.followup;
  if (!f) return { status: 'none', text: tr('queue.followupUndecided') };
  if (f.code === 'SENT' && f.messageId) {
    const m = messages[f.messageId];
    const status = m?.status ?? 'accepted';
    return { status, text: tr('queue.followupStatus', { status: messageStatusWords({ status }).toLocaleLowerCase(locale()) }) };
  }
  const base = FOLLOWUP_WORDS[f.code] ? tr(FOLLOWUP_WORDS[f.code]!) : tr('queue.followupOther', { code: f.code });
  // The Service's own reason of a failed follow-up is its text, kept as it came.
  return { status: f.code.toLowerCase(), text: f.reason && f.code === 'FAILED' ? `${base}: ${f.reason}` : base };
}

/** The rows to draw, oldest task first. */
export function queueView(s: QueueState, me: string | undefined, isSupervisor: boolean, now: number, timeZone?: string): TaskRow[] {
  return Object.values(s.tasks)
    .sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id))
    .map((t) => {
      const created = Date.parse(t.createdAt);
      const p = t.permission;
      const due = t.dueAt ? Date.parse(t.dueAt) : undefined;
      const notYet = due !== undefined && due > now;
      const mine = t.state === 'claimed' && t.assignee === me;
      const fu = followupOf(t, s.messages);
      // Not known: said plainly (a call may well be refused), with "Ask permission" beside it.
      const unknown = p?.state === 'unknown';
      const permissionText = !p ? tr('queue.permissionUnreadable') : unknown && p.callCode !== 'UNREADABLE' ? tr('queue.permissionUnknown') : permissionWords(p);
      const allowedText = !p
        ? ''
        : unknown
          ? p.requestAllowed
            ? tr('queue.askFirst')
            : tr('queue.cannotAsk')
          : p.callAllowed
          ? tr('queue.callsAllowed')
          : p.nextAt !== undefined
            ? tr(p.nextFor === 'request' || (!p.nextFor && p.nextText?.includes('ask')) ? 'refusal.askAgainAt' : 'refusal.callAgainAt', { when: describeMoment(p.nextAt, now, timeZone) })
            : p.requestAllowed
              ? tr('queue.noCallMayAsk')
              : tr('queue.nothingAllowed');
      const callBlockedReason = !mine
        ? t.state === 'claimed'
          ? tr('queue.claimedBy', { name: t.assignee ?? tr('queue.anotherAgent') })
          : tr('queue.claimFirst')
        : p && !p.callAllowed
          ? permissionText
          : notYet
            ? tr('queue.notBefore', { when: describeMoment(due!, now, timeZone) })
            : undefined;
      const row: TaskRow = {
        id: t.id,
        state: t.state as 'open' | 'claimed',
        customer: t.customer,
        customerText: formatCaller(t.customer),
        businessNumber: t.businessNumber,
        businessText: formatCaller(t.businessNumber),
        reason: t.reason,
        reasonText: `${REASON[t.reason] ? tr(REASON[t.reason]!) : t.reason}${missed(t) > 1 ? ` ${tr('queue.calls', { count: missed(t) })}` : ''}`,
        waitingText: `${describeMoment(created, now, timeZone)} (${ago(now - created)})`,
        attempts: t.attempts.length,
        attemptsText: t.attempts.length === 0 ? tr('queue.noAttempts') : tr('queue.attempts', { count: t.attempts.length, last: outcomeWords(t.attempts.at(-1)!.outcome ?? '') }),
        permissionState: p?.state ?? 'unreadable',
        permissionText,
        allowedText,
        followupStatus: fu.status,
        followupText: fu.text,
        mine,
        canClaim: t.state === 'open' && !s.busy[t.id],
        canCall: callBlockedReason === undefined && !s.busy[t.id],
        // The assignee, or a supervisor; anyone while it is unclaimed.
        canDone: !s.busy[t.id] && (t.state === 'open' || mine || isSupervisor),
        canAsk: !!p && p.requestAllowed && (p.state === 'unknown' || p.state === 'expired') && !s.busy[t.id],
        voicemails: t.misses
          .filter((m) => m.voicemail !== undefined)
          .reverse()
          .map((m) => ({ url: m.voicemail!, label: tr('queue.voicemailMessage', { when: describeMoment(Date.parse(m.at), now, timeZone) }) })),
      };
      if (t.assignee) row.assignee = t.assignee;
      if (notYet) row.dueText = tr('queue.callAgain', { when: describeMoment(due!, now, timeZone) });
      if (callBlockedReason) row.callBlockedReason = callBlockedReason;
      if (s.busy[t.id]) row.busy = s.busy[t.id]!;
      if (s.errors[t.id]) row.error = s.errors[t.id]!;
      if (s.notes[t.id]) row.note = s.notes[t.id]!;
      return row;
    });
}
