/**
 * Supervisor console (`/supervisor`): the live calls this user may see, from
 * `welcome.calls` and every `call.state` frame, the calls that ended while it was open, and
 * the "Call back" panel (callback-panel.ts): permission for a user, and a callback placed
 * from this tab.
 */
import '../csp.ts'; // first: before any frame is parsed
import { connectPage } from './shell.ts';
import { CallbackPanel } from './callback-panel.ts';
import type { Connection } from '../connection.ts';
import { getMe, goToLogin } from '../api.ts';
import { el, h, renderError, renderLink, setText, setupChrome } from '../dom.ts';
import { describeReason, describeResult, formatCaller, formatDuration } from '../format.ts';
import { initialState, liveCalls, reduce, type UiEvent, type UiState } from '../reducer.ts';

let state: UiState = initialState;
let conn: Connection | undefined;
const panel = new CallbackPanel(() => conn, () => state);

function dispatch(ev: UiEvent): void {
  const before = state;
  state = reduce(state, ev);
  render();
  // The panel follows its own call and the pair's permission in the same frames.
  if (ev.type === 'server') panel.onServer(ev.msg);
  if (state.link !== before.link) panel.render(); // Call waits for the link
}

function render(): void {
  renderLink(state.link);
  renderError(state.error);
  const live = liveCalls(state);
  setText(el('live-count'), String(live.length));
  el('live-empty').hidden = live.length > 0;
  el('live-table').hidden = live.length === 0;
  const now = Date.now();
  el('live-calls').querySelector('tbody')!.replaceChildren(
    ...live.map((v) =>
      h(
        'tr',
        { 'data-testid': 'live-call', 'data-wacid': v.wacid, 'data-state': v.state },
        // data-label: on a phone each row is a small card and the cells carry their headings.
        h('td', { 'data-label': 'Customer' }, formatCaller(customer(v))),
        h('td', { 'data-label': 'Business number' }, formatCaller(business(v))),
        h('td', { 'data-label': 'State' }, v.direction === 'BUSINESS_INITIATED' ? `${v.state} · callback` : v.state),
        h('td', { 'data-label': 'Agent' }, v.agent ?? '–'),
        h('td', { 'data-label': 'Time' }, v.startedAt !== undefined ? formatDuration((now - v.startedAt) / 1000) : v.deadline !== undefined ? `rings ${formatDuration((v.deadline - now) / 1000)}` : ''),
      ),
    ),
  );
  el('recent-empty').hidden = state.ended.length > 0;
  el('recent-calls').replaceChildren(
    ...state.ended.map((e) =>
      h(
        'li',
        { 'data-testid': 'recent-call', 'data-wacid': e.wacid, 'data-result': e.result },
        h('span', { class: 'h-caller' }, e.direction === 'BUSINESS_INITIATED' ? `${formatCaller(e.to)} (callback)` : formatCaller(e.from)),
        h('span', { class: 'h-duration' }, e.duration !== undefined ? formatDuration(e.duration) : '–'),
        h('span', { class: 'h-meta' }, `${describeResult(e.result)}${e.agent ? ` · ${e.agent}` : ''}${e.reason ? ` · ${describeReason(e.reason)}` : ''}`),
      ),
    ),
  );
}

/** The customer's side of a call: the caller, or the user a callback went to. */
const customer = (v: { direction: string; from: string; to: string }) => (v.direction === 'BUSINESS_INITIATED' ? v.to : v.from);
const business = (v: { direction: string; from: string; to: string }) => (v.direction === 'BUSINESS_INITIATED' ? v.from : v.to);

async function boot(): Promise<void> {
  Object.defineProperty(window, '__switchboard', { value: Object.freeze({ callback: panel.hook() }), configurable: false });
  const me = await getMe().catch(() => undefined);
  if (!me) return goToLogin();
  setupChrome(me);
  el('error-dismiss').addEventListener('click', () => dispatch({ type: 'dismissError' }));
  if (!me.roles.includes('supervisor')) {
    dispatch({ type: 'error', message: 'This page is for supervisors. Use the links above.', code: 'FORBIDDEN', now: Date.now() });
    return;
  }
  panel.start();
  conn = connectPage(me, dispatch);
  setInterval(render, 1000); // call times
  render();
}

void boot();
