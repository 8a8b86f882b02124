/**
 * The "Call-back queue" panel of the agent and supervisor pages: effects around
 * the pure state in queue.ts, drawn by `QueueView`. It loads `GET /api/callbacks` (open and
 * claimed tasks) at start and after every `welcome` (a reconnect puts the list right),
 * follows `callback.updated` and `message.updated` frames, reads follow-up messages an agent
 * is not sent frames for (`GET /api/messages/:id`, again every few seconds until read or
 * failed), and claims and closes tasks over the JSON API. Call dials through the page's
 * Call back panel (callback/panel.tsx `callTo`): one dial path, one call session.
 *
 *   const queue = new CallbackQueue({ me: () => me, dial: (from, to) => panel.callTo(from, to) });
 *   queue.start();            // after login
 *   queue.onServer(msg);      // every server frame
 */
import { t, type MessageKey } from '../../i18n/index.ts';
import { Phone } from '../../ui/phone.tsx';
import { render as draw } from 'preact';
import { ApiError, claimCallback, finishCallback, getMessage, listCallbacks, requestPermission, type Me } from '../../api.ts';
import { followupsToFetch, initialQueue, queueView, reduceQueue, type QueueEvent, type QueueState, type TaskRow } from '../../queue.ts';
import type { ServerMsg } from '../../../../shared/protocol.ts';
import { readTimer } from '../../backoff.ts';

/** How often unfinished follow-ups are read again (agents get no `message.updated`). */
const FOLLOWUP_POLL_MS = 4_000;
/**
 * How often the list is read again: the permission words change with replies agents are
 * not sent (`permission.updated` goes to supervisors and the requester) and with time.
 */
const RELOAD_MS = 15_000;
/** The outcomes offered by Done (the server takes any short text). */
export const DONE_OUTCOMES = ['called-back', 'customer-called', 'unreachable', 'not-needed'] as const;

export interface QueueOptions {
  me(): Me | undefined;
  /** Place the call back (the page's Call back panel); absent: Call is not offered. */
  dial?: (from: string, to: string) => void;
  /** The element drawn into (default `#callback-queue`). */
  rootId?: string;
}

export class CallbackQueue {
  private s: QueueState = initialQueue;
  private fetching = new Set<string>();
  private readonly reads = readTimer();

  constructor(private readonly o: QueueOptions) {}

  start(): void {
    void this.load();
    setInterval(() => {
      this.readFollowups();
      this.render(); // "waiting 3 min"
    }, FOLLOWUP_POLL_MS);
    setInterval(() => void this.load(), RELOAD_MS);
    this.render();
  }

  /** Every server frame the page gets. */
  onServer(msg: ServerMsg): void {
    if (msg.type === 'welcome') void this.load();
    else if (msg.type === 'callback.updated') this.dispatch({ type: 'task', task: msg.task });
    else if (msg.type === 'message.updated') this.dispatch({ type: 'message', message: msg.message });
    // A task's permission changed: its words (what is allowed now and when) come with the list.
    else if (msg.type === 'permission.updated' && Object.values(this.s.tasks).some((t) => t.businessNumber === msg.permission.from && t.customer === msg.permission.user)) void this.load();
  }

  private dispatch(ev: QueueEvent): void {
    const before = this.s;
    this.s = reduceQueue(this.s, ev);
    if (this.s !== before) {
      if (ev.type === 'task' || ev.type === 'loaded') this.readFollowups();
      this.render();
    }
  }

  /**
   * Read the list. A read the server could not answer yet (503: its history still opening
   * after a restart; or no answer) is tried again by itself within a second, then less often,
   * rather than showing "load failed" until the next reload or reconnect.
   */
  private async load(): Promise<void> {
    this.reads.cancel();
    try {
      const since = this.s.pushes; // a task pushed while the read is under way is newer than its answer
      this.dispatch({ type: 'loaded', items: await listCallbacks(), since });
      this.reads.succeeded();
    } catch (e) {
      this.dispatch({ type: 'loadFailed', message: (e as Error).message });
      this.reads.failed(e instanceof ApiError ? e.status : undefined, () => void this.load());
    }
  }

  private readFollowups(): void {
    for (const id of followupsToFetch(this.s)) {
      if (this.fetching.has(id)) continue;
      this.fetching.add(id);
      void getMessage(id)
        .then((message) => this.dispatch({ type: 'message', message }))
        .catch(() => undefined) // shown as last known; read again on the next tick
        .finally(() => this.fetching.delete(id));
    }
  }

  private async claim(id: string): Promise<void> {
    this.dispatch({ type: 'busy', id, action: 'claim' });
    try {
      this.dispatch({ type: 'task', task: await claimCallback(id) });
      this.dispatch({ type: 'actionDone', id });
    } catch (e) {
      this.dispatch({ type: 'actionFailed', id, message: e instanceof ApiError ? e.message : String(e) });
    }
  }

  /** "Ask permission" on a task: the interactive request to the customer; the list then reads the new state. */
  private async ask(id: string): Promise<void> {
    const task = this.s.tasks[id];
    if (!task) return;
    this.dispatch({ type: 'busy', id, action: 'ask' });
    try {
      await requestPermission({ from: task.businessNumber, ...(task.customer.startsWith('+') ? { to: task.customer } : { recipient: task.customer }) });
      this.dispatch({ type: 'actionDone', id, note: t('queue.asked') });
      void this.load();
    } catch (e) {
      this.dispatch({ type: 'actionFailed', id, message: t('queue.notAsked', { why: e instanceof ApiError ? e.message : String(e) }) });
    }
  }

  /** How a call back placed from this page ended, when it was not answered or was refused: shown on its task. */
  callOutcome(businessNumber: string, customer: string, message: string): void {
    this.dispatch({ type: 'callOutcome', businessNumber, customer, message });
  }

  private async done(id: string, outcome: string): Promise<void> {
    this.dispatch({ type: 'busy', id, action: 'done' });
    try {
      this.dispatch({ type: 'task', task: await finishCallback(id, outcome) });
      this.dispatch({ type: 'actionDone', id });
    } catch (e) {
      this.dispatch({ type: 'actionFailed', id, message: e instanceof ApiError ? e.message : String(e) });
    }
  }

  render(): void {
    const root = document.getElementById(this.o.rootId ?? 'callback-queue');
    if (!root) return;
    const me = this.o.me();
    const rows = queueView(this.s, me?.name, me?.roles.includes('supervisor') ?? false, Date.now());
    draw(
      <QueueView
        rows={rows}
        loaded={this.s.loaded}
        {...(this.s.loadError ? { loadError: this.s.loadError } : {})}
        canDial={!!this.o.dial}
        claim={(id) => void this.claim(id)}
        ask={(id) => void this.ask(id)}
        call={(r) => this.o.dial?.(r.businessNumber, r.customer)}
        done={(id, outcome) => void this.done(id, outcome)}
      />,
      root,
    );
  }
}

interface ViewProps {
  rows: TaskRow[];
  loaded: boolean;
  loadError?: string;
  canDial: boolean;
  claim(id: string): void;
  ask(id: string): void;
  call(r: TaskRow): void;
  done(id: string, outcome: string): void;
}

export function QueueView({ rows, loaded, loadError, canDial, claim, ask, call, done }: ViewProps) {
  return (
    <>
      <h2 id="callback-queue-title" class="card-title">
        {t('queue.title')}{' '}
        <span class="count" data-testid="callback-queue-count">
          {String(rows.length)}
        </span>
      </h2>
      <p class="field-error" role="alert" data-testid="callback-queue-error" hidden={!loadError}>
        {loadError ? t('queue.loadFailed', { why: loadError }) : ''}
      </p>
      <p class="empty" data-testid="callback-queue-empty" hidden={!loaded || rows.length > 0}>
        {t('queue.empty')}
      </p>
      <ol class="queue-list" data-testid="callback-queue-list">
        {rows.map((r) => (
          <li key={r.id} class="queue-task" data-testid="queue-task" data-id={r.id} data-state={r.state} data-customer={r.customer} data-mine={String(r.mine)}>
            <p class="queue-head">
              <strong data-testid="queue-customer">
                <Phone n={r.customerText} />
              </strong>
              {' → '}
              <span data-testid="queue-business">
                <Phone n={r.businessText} />
              </span>
            </p>
            <p class="field-note" data-testid="queue-reason" data-reason={r.reason}>
              {r.reasonText}
            </p>
            <p class="field-note">
              {t('queue.waitingSince')} <span data-testid="queue-waiting">{r.waitingText}</span> · <span data-testid="queue-attempts" data-count={String(r.attempts)}>{r.attemptsText}</span>
              {r.dueText ? <span data-testid="queue-due">{` · ${r.dueText}`}</span> : null}
            </p>
            {r.voicemails.map((v) => (
              <p class="field-note queue-voicemail" key={v.url}>
                <span>{v.label}</span>{' '}
                <audio controls preload="metadata" src={`${v.url}?use=play`} aria-label={v.label} data-testid="queue-voicemail" />
              </p>
            ))}
            <p class="field-note" data-testid="queue-permission" data-state={r.permissionState}>
              {r.permissionText} <span data-testid="queue-allowed">{r.allowedText}</span>
            </p>
            <p class="field-note" data-testid="queue-followup" data-status={r.followupStatus}>
              {r.followupText}
            </p>
            <p class="field-note" data-testid="queue-assignee" hidden={!r.assignee}>
              {r.assignee ? (r.mine ? t('queue.claimedByYou') : t('queue.assignee', { name: r.assignee })) : ''}
            </p>
            <div class="actions">
              <button type="button" class="btn" data-testid="queue-claim" hidden={r.state !== 'open'} disabled={!r.canClaim} onClick={() => claim(r.id)}>
                {r.busy === 'claim' ? t('queue.claiming') : t('queue.claim')}
              </button>
              {canDial ? (
                <button type="button" class="btn btn-go" data-testid="queue-call" disabled={!r.canCall} title={r.callBlockedReason ?? ''} onClick={() => call(r)}>
                  {t('queue.call')}
                </button>
              ) : null}
              <button type="button" class="btn" data-testid="queue-ask" hidden={!r.canAsk && r.busy !== 'ask'} disabled={!r.canAsk} onClick={() => ask(r.id)}>
                {r.busy === 'ask' ? t('queue.asking') : t('queue.ask')}
              </button>
              <DoneForm row={r} done={done} />
            </div>
            <p class="field-note" role="status" data-testid="queue-task-note" hidden={!r.note}>
              {r.note ?? ''}
            </p>
            <p class="field-note" data-testid="queue-call-reason" hidden={!canDial || r.canCall}>
              {r.callBlockedReason ?? ''}
            </p>
            <p class="field-error" role="alert" data-testid="queue-task-error" hidden={!r.error}>
              {r.error ?? ''}
            </p>
          </li>
        ))}
      </ol>
    </>
  );
}

/** How a task may be closed (queue.ts DONE_OUTCOMES), in words. */
const DONE_WORDS: Record<(typeof DONE_OUTCOMES)[number], MessageKey> = { 'called-back': 'queue.doneCalledBack', 'customer-called': 'queue.doneCustomerCalled', unreachable: 'queue.doneUnreachable', 'not-needed': 'queue.doneNotNeeded' };

function DoneForm({ row, done }: { row: TaskRow; done(id: string, outcome: string): void }) {
  return (
    <form
      class="queue-done"
      onSubmit={(e) => {
        e.preventDefault();
        const sel = (e.currentTarget as HTMLFormElement).elements.namedItem('outcome') as HTMLSelectElement;
        done(row.id, sel.value);
      }}
    >
      <label>
        <span class="sr-only">{t('queue.outcome')}</span>
        <select name="outcome" data-testid="queue-done-outcome" disabled={!row.canDone}>
          {DONE_OUTCOMES.map((o) => (
            <option key={o} value={o}>
              {t(DONE_WORDS[o])}
            </option>
          ))}
        </select>
      </label>
      <button type="submit" class="btn" data-testid="queue-done" disabled={!row.canDone}>
        {row.busy === 'done' ? t('queue.closing') : t('queue.done')}
      </button>
    </form>
  );
}
