/**
 * The agent desk's effects (issue 15): it watches the phone's state (reducer.ts) and runs
 * what the desk needs — the customer panel is fetched when a call rings (the call never
 * waits for it), the after-call form opens when this tab's call ends, the call log is read
 * from history at start and after every call, the wave 2 requests go to the server, and
 * the keyboard shortcuts work anywhere on the page (Alt + a letter, never while typing).
 */
import type { ServerMsg } from '../../../../shared/protocol.ts';
import { ApiError, listTemplates, searchCalls, sendMessage } from '../../api.ts';
import type { Connection, Request } from '../../connection.ts';
import { getCustomer } from '../../desk/customer.ts';
import { initialMessages, messageBody, reduceMessages, sendRefusal, type MessageEvent, type MessageState } from '../../desk/message.ts';
import { initialDesk, reduceDesk, shortcutFor, type DeskEvent, type DeskState, type ShortcutAction } from '../../desk/state.ts';
import { ringingCalls, tabCall, type UiState } from '../../reducer.ts';
import type { DeskActions } from './desk-view.tsx';

/** History writes are queued off the call path: read the log again a moment after a call ends. */
const LOG_RELOAD_DELAY_MS = 1_500;

export interface DeskContext {
  conn(): Connection;
  ui(): UiState;
  render(): void;
  showError(message: string, code?: string): void;
  shortcut(action: ShortcutAction): void;
}

export function agentDesk(x: DeskContext) {
  let desk: DeskState = initialDesk;
  let logTimer: ReturnType<typeof setTimeout> | undefined;
  const dispatch = (ev: DeskEvent) => {
    const before = desk;
    desk = reduceDesk(desk, ev);
    if (desk !== before) x.render();
  };
  const send = (msg: Request) => x.conn().request(msg);
  // "Send a message" (issue 16): its own small state beside the desk's.
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
  async function loadCustomer(id: string, fresh = false): Promise<void> {
    dispatch({ type: 'customer.load', id });
    dispatchMsg({ type: 'msg.open', customer: id });
    if (!fresh && desk.customer?.status === 'ready') return;
    try {
      dispatch({ type: 'customer.loaded', data: await getCustomer(id) });
    } catch (e) {
      dispatch({ type: 'customer.failed', id, error: (e as Error).message });
    }
  }

  async function loadLog(): Promise<void> {
    dispatch({ type: 'log.loading' });
    try {
      // Agents get their own calls only (the server filters by role).
      const page = await searchCalls('limit=50');
      dispatch({ type: 'log.loaded', items: page.items });
    } catch (e) {
      dispatch({ type: 'log.failed', error: (e as Error).message });
    }
  }

  async function saveWrap(): Promise<void> {
    const w = desk.wrap;
    if (!w) return;
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
    clearTimeout(logTimer);
    logTimer = setTimeout(() => void loadLog(), LOG_RELOAD_DELAY_MS);
  }

  const actions: DeskActions = {
    ready: () => {
      // With a form open, "Ready now" is saving it (call.wrapup ends after-call work).
      // "Ready now" is saving the form: call.wrapup ends after-call work (design.md).
      void saveWrap();
    },
    moreTime: () => {
      send({ type: 'agent.moreTime' })
        .then(() => dispatch({ type: 'wrap.extended' }))
        .catch((e: Error) => x.showError(`Could not get more time: ${e.message}`));
    },
    chooseAwayReason: (reason) => dispatch({ type: 'awayReason', reason }),
    editWrap: (edit) => dispatch({ type: 'wrap.edit', ...edit }),
    saveWrap: () => void saveWrap(),
    closeWrap: () => dispatch({ type: 'wrap.close' }),
    toggleHold: () => x.shortcut('hold'),
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
    actions,
    send,
    /** Frames the desk reads itself: the server's lists in `welcome`, the sent message's status. */
    onMessage(msg: ServerMsg): void {
      if (msg.type === 'message.updated') dispatchMsg({ type: 'msg.updated', message: msg.message });
      if (msg.type === 'welcome') dispatch({ type: 'lists', ...(msg.dispositions ? { dispositions: msg.dispositions } : {}), ...(msg.awayReasons ? { awayReasons: msg.awayReasons } : {}) });
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
      if (ringing && ringing.view.wacid !== (ringingCalls(before, now)[0] ?? tabCall(before))?.view.wacid) void loadCustomer(ringing.view.from, true);
      const ended = after.lastEnded;
      if (ended && ended !== before.lastEnded) {
        const wasHere = tabCall(before)?.view.wacid === ended.wacid && tabCall(before)?.local === 'held';
        if (wasHere) dispatch({ type: 'wrap.start', wacid: ended.wacid, caller: ended.from });
        scheduleLog();
      } else if (after.history.length !== before.history.length) scheduleLog(); // missed / declined here
    },
  };
}
