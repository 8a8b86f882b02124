/**
 * The agent desk's effects: it watches the phone's state (reducer.ts) and runs
 * what the desk needs — the customer panel is fetched when a call rings (the call never
 * waits for it), the after-call form opens when this tab's call ends, the call log is read
 * from history at start and after every call, the wave 2 requests go to the server, and
 * the keyboard shortcuts work anywhere on the page (Alt + a letter, never while typing).
 */
import { t } from '../../i18n/index.ts';
import { WRAP_TYPING_PAUSE_MS, type ServerMsg } from '../../../../shared/protocol.ts';
import { ApiError, listTemplates, searchCalls, sendMessage } from '../../api.ts';
import type { Connection, Request } from '../../connection.ts';
import { getCustomer } from '../../desk/customer.ts';
import { initialMessages, messageBody, reduceMessages, sendRefusal, type MessageEvent, type MessageState } from '../../desk/message.ts';
import { initialDesk, reduceDesk, shortcutFor, type DeskEvent, type DeskState, type ShortcutAction } from '../../desk/state.ts';
import { ringingCalls, tabCall, type UiState } from '../../reducer.ts';
import type { DeskActions } from './desk-view.tsx';
import { leadingThrottle } from '../../throttle.ts';
import { readTimer } from '../../backoff.ts';

/** History writes are queued off the call path: read the log again a moment after a call ends. */
const LOG_RELOAD_DELAY_MS = 1_500;
/**
 * The wrap-up draft goes to the server at most this often while the agent types (well under
 * WRAP_TYPING_PAUSE_MS, so the server's countdown stands still between drafts).
 */
const DRAFT_EVERY_MS = 600;

export interface DeskContext {
  conn(): Connection;
  ui(): UiState;
  render(): void;
  showError(message: string, code?: string): void;
  shortcut(action: ShortcutAction): void;
}

export function agentDesk(x: DeskContext) {
  let desk: DeskState = initialDesk;
  const logReads = readTimer();
  /** Local time of the agent's last keystroke or choice in the wrap-up. */
  let typedAt = Number.NEGATIVE_INFINITY;
  const dispatch = (ev: DeskEvent) => {
    const before = desk;
    desk = reduceDesk(desk, ev);
    if (desk !== before) x.render();
  };
  const send = (msg: Request) => x.conn().request(msg);
  // "Send a message": its own small state beside the desk's.
  let messages: MessageState = initialMessages;
  const dispatchMsg = (ev: MessageEvent) => {
    const before = messages;
    messages = reduceMessages(messages, ev);
    if (messages !== before) x.render();
  };

  async function loadTemplates(): Promise<void> {
    if (messages.templates.status === 'loading' || messages.templates.status === 'ready') return;
    dispatchMsg({ type: 'templates.loading' });
    try {
      dispatchMsg({ type: 'templates.loaded', items: await listTemplates() });
    } catch (e) {
      dispatchMsg({ type: 'templates.failed', error: (e as Error).message });
    }
  }

  async function sendTheMessage(from: string): Promise<void> {
    const body = messageBody(messages, from);
    if (!body) return;
    dispatchMsg({ type: 'msg.sending' });
    try {
      dispatchMsg({ type: 'msg.sent', message: await sendMessage(body) });
    } catch (e) {
      dispatchMsg({ type: 'msg.failed', error: e instanceof ApiError ? sendRefusal(e.code, e.message) : (e as Error).message });
    }
  }

  /** `fresh`: fetch even when this customer is shown already (a new call: its past calls changed). */
  async function loadCustomer(id: string, fresh = false, forCall?: string): Promise<void> {
    dispatch({ type: 'customer.load', id, forCall });
    dispatchMsg({ type: 'msg.open', customer: id });
    if (!fresh && desk.customer?.status === 'ready') return;
    try {
      dispatch({ type: 'customer.loaded', data: await getCustomer(id) });
    } catch (e) {
      dispatch({ type: 'customer.failed', id, error: (e as Error).message });
    }
  }

  async function loadLog(): Promise<void> {
    logReads.cancel();
    dispatch({ type: 'log.loading' });
    try {
      // Agents get their own calls only (the server filters by role).
      const page = await searchCalls('limit=50');
      dispatch({ type: 'log.loaded', items: page.items });
      logReads.succeeded();
    } catch (e) {
      dispatch({ type: 'log.failed', error: (e as Error).message });
      // History still opening after a restart (503), or no answer: read again by itself.
      logReads.failed(e instanceof ApiError ? e.status : undefined, () => void loadLog());
    }
  }

  /**
   * What the agent typed goes to the server as it is typed (a reload or a crash keeps it):
   * the first keystroke after a pause at once — the server stops the countdown from that
   * draft on, so it must not wait — then at most every DRAFT_EVERY_MS.
   */
  const draft = leadingThrottle(() => {
    const w = desk.wrap;
    if (!w || w.status === 'saving') return;
    // Refused when the wrap-up is over meanwhile (CONFLICT): the form's own save says what counts.
    send({ type: 'call.wrapupDraft', wacid: w.wacid, notes: w.notes, ...(w.disposition ? { disposition: w.disposition } : {}) }).catch(() => undefined);
  }, DRAFT_EVERY_MS);

  async function saveWrap(): Promise<void> {
    const w = desk.wrap;
    if (!w) return;
    draft.cancel();
    dispatch({ type: 'wrap.saving' });
    if (desk.wrap?.status !== 'saving') return;
    try {
      await send({ type: 'call.wrapup', wacid: w.wacid, disposition: w.disposition, ...(w.notes.trim() ? { notes: w.notes.trim() } : {}) });
      dispatch({ type: 'wrap.saved' });
      scheduleLog();
    } catch (e) {
      dispatch({ type: 'wrap.failed', error: (e as Error).message });
    }
  }

  function scheduleLog(): void {
    logReads.after(LOG_RELOAD_DELAY_MS, () => void loadLog());
  }

  const actions: DeskActions = {
    moreTime: () => {
      send({ type: 'agent.moreTime' })
        .then(() => dispatch({ type: 'wrap.extended' }))
        .catch((e: Error) => x.showError(t('wrap.moreTimeFailed', { why: e.message })));

    },
    chooseAwayReason: (reason) => dispatch({ type: 'awayReason', reason }),
    editWrap: (edit) => {
      typedAt = Date.now();
      dispatch({ type: 'wrap.edit', ...edit });
      draft.call();
    },
    // The one button that ends the wrap-up: call.wrapup (design.md) saves and ends it.
    saveWrap: () => void saveWrap(),
    closeWrap: () => dispatch({ type: 'wrap.close' }),
    openCustomer: (id) => void loadCustomer(id),
    reloadLog: () => void loadLog(),
    editMessage: (edit) => {
      dispatchMsg({ type: 'msg.edit', ...edit });
      if (edit.mode === 'template') void loadTemplates();
    },
    sendMessage: (from) => void sendTheMessage(from),
  };

  return {
    state: () => desk,
    messages: () => messages,
    /** The agent typed into the wrap-up within the typing pause (the countdown stands still). */
    typing: (now: number) => desk.wrap !== undefined && now - typedAt < WRAP_TYPING_PAUSE_MS,
    actions,
    send,
    /** Frames the desk reads itself: the server's lists in `welcome`, the sent message's status. */
    onMessage(msg: ServerMsg): void {
      if (msg.type === 'message.updated') dispatchMsg({ type: 'msg.updated', message: msg.message });
      if (msg.type === 'welcome') {
        dispatch({ type: 'lists', ...(msg.dispositions ? { dispositions: msg.dispositions } : {}), ...(msg.awayReasons ? { awayReasons: msg.awayReasons } : {}) });
        // After a reload: the wrap-up as far as it was typed, and whom the call was with.
        if (msg.wrapDraft) {
          dispatch({ type: 'wrap.restore', ...msg.wrapDraft });
          if (msg.wrapDraft.caller && !desk.customer) void loadCustomer(msg.wrapDraft.caller, false, msg.wrapDraft.wacid);
        }
      }
    },
    start(): void {
      void loadLog();
      document.addEventListener('keydown', (e) => {
        const action = shortcutFor(e);
        if (!action) return;
        e.preventDefault();
        x.shortcut(action);
      });
    },
    /** After every change of the phone's state. */
    observe(before: UiState, after: UiState, now: number): void {
      const a = after.agent;
      if (a && a !== before.agent) {
        const caller = a.wacid ? (after.lastEnded?.wacid === a.wacid ? after.lastEnded.from : after.history.find((h) => h.wacid === a.wacid)?.from) : undefined;
        dispatch({ type: 'agent.state', status: a.status, wacid: a.wacid, extended: a.extended, caller });
      }
      // The customer of a call that starts ringing (or is held here after a reload): read
      // again even when the same customer is shown (the last call is history now).
      const ringing = ringingCalls(after, now)[0] ?? tabCall(after);
      if (ringing && ringing.view.wacid !== (ringingCalls(before, now)[0] ?? tabCall(before))?.view.wacid) {
        // A new call: nothing of the last one stays on screen (a wrap-up being saved excepted).
        dispatch({ type: 'call.started', wacid: ringing.view.wacid });
        void loadCustomer(ringing.view.from, true, ringing.view.wacid);
      }

      const ended = after.lastEnded;
      if (ended && ended !== before.lastEnded) {
        // Held here until it ended (hung up here, or by the caller): its wrap-up opens here.
        const wasHere = tabCall(before)?.view.wacid === ended.wacid && (tabCall(before)?.local === 'held' || tabCall(before)?.local === 'hangingUp');
        if (wasHere) dispatch({ type: 'wrap.start', wacid: ended.wacid, caller: ended.from });
        scheduleLog();
      } else if (after.history.length !== before.history.length) scheduleLog(); // missed / declined here
      // The call the customer panel was opened for is over, without a wrap-up here (declined,
      // missed, taken elsewhere) or after it: the panel goes with it.
      const c = desk.customer;
      if (c?.forCall && !ringing && desk.wrap?.wacid !== c.forCall) dispatch({ type: 'customer.close' });
    },
  };
}
