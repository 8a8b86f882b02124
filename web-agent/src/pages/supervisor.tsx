/**
 * Supervisor console (`/supervisor`): the live calls this user may see, from
 * `welcome.calls` and every `call.state` frame, the calls that ended while it was open, and
 * the "Call back" panel (callback/panel.tsx): permission for a user, and a callback placed
 * from this tab. The lists are Preact components drawn from the reducer's state.
 */
import { onLanguageChange, t } from '../i18n/index.ts';
import { adoptUserLanguage, startLanguage } from '../language.ts';
import { Phone } from '../ui/phone.tsx';
import { pathWords } from '../quality.ts';
import '../csp.ts'; // first: before any frame is parsed
import { render } from 'preact';
import { connectPage } from './connect-page.ts';
import { CallbackPanel } from './callback/panel.tsx';
import { CallbackQueue } from './queue/panel.tsx';
import type { Connection } from '../connection.ts';
import { getMe, goToLogin, type Me } from '../api.ts';
import { renderShell } from '../ui/shell.tsx';
import { describeReason, describeResult, formatCaller, formatDuration } from '../format.ts';
import { initialState, liveCalls, reduce, type EndedCall, type UiEvent, type UiState } from '../reducer.ts';
import type { CallView } from '../../../shared/protocol.ts';
import { legsText, liveStateText, rangText, timeText } from './supervisor/live.ts';
import { callLegs } from '../reducer.ts';
import { MonitorCell, SupervisorMonitoring } from './supervisor/monitor.tsx';
import { WallboardView } from './supervisor/wallboard.tsx';
import { mountReports } from './supervisor/reports.tsx';
import type { Wallboard } from '../../../shared/protocol.ts';

let state: UiState = initialState;
let conn: Connection | undefined;
let me: Me | undefined;
/** The last wallboard (GET /api/wallboard first, then every `wallboard` frame). */
let board: Wallboard | undefined;
const panel = new CallbackPanel(() => conn, () => state, (from, to, message) => queue.callOutcome(from, to, message));
const queue = new CallbackQueue({ me: () => me, dial: (from, to) => panel.callTo(from, to) }); // call-back queue
const monitoring = new SupervisorMonitoring(() => conn, () => draw(), (message) => dispatch({ type: 'error', message, code: 'MONITOR', now: Date.now() }));
function dispatch(ev: UiEvent): void {
  if (ev.type === 'server' && ev.msg.type === 'wallboard') board = ev.msg;
  const before = state;
  state = reduce(state, ev);
  draw();
  // The panel follows its own call and the pair's permission in the same frames.
  if (ev.type === 'server') {
    panel.onServer(ev.msg);
    queue.onServer(ev.msg);
    monitoring.onServer(ev.msg);
  }
  if (state.link !== before.link) panel.render(); // Call waits for the link
}

/** The customer's side of a call: the caller, or the user a callback went to. */
const customer = (v: { direction: string; from: string; to: string }) => (v.direction === 'BUSINESS_INITIATED' ? v.to : v.from);
const business = (v: { direction: string; from: string; to: string }) => (v.direction === 'BUSINESS_INITIATED' ? v.from : v.to);


export function LiveCalls({ live, now, m }: { live: CallView[]; now: number; m?: SupervisorMonitoring }) {
  return (
    <>
      <h1 id="live-title" class="card-title">
        {t('live.title')}{' '}
        <span class="count" data-testid="live-count">
          {String(live.length)}
        </span>
      </h1>
      <p class="empty" data-testid="live-empty" hidden={live.length > 0}>
        {t('live.none')}
      </p>
      <div class="table-wrap" tabIndex={0} data-testid="live-table" hidden={live.length === 0}>
        <table class="table" data-testid="live-calls">
          <thead>
            <tr>
              <th scope="col">{t('customer.title')}</th>
              <th scope="col">{t('live.business')}</th>
              <th scope="col">{t('live.state')}</th>
              <th scope="col">{t('live.agent')}</th>
              <th scope="col">{t('live.time')}</th>
              {m && <th scope="col">{t('live.monitor')}</th>}
            </tr>
          </thead>
          <tbody>
            {live.map((v) => (
              // data-label: on a phone each row is a small card and the cells carry their headings.
              <tr key={v.wacid} data-testid="live-call" data-wacid={v.wacid} data-state={v.state} data-held={v.heldSince !== undefined ? 'true' : undefined}>
                <td data-label={t('customer.title')}>
                  <Phone n={formatCaller(customer(v))} />
                </td>
                <td data-label={t('live.business')}>
                  <Phone n={formatCaller(business(v))} />
                </td>
                <td data-label={t('live.state')}>{liveStateText(v)}</td>
                <td data-label={t('live.agent')}>
                  {v.agent ?? '–'}
                  {v.media === 'anchor' && (
                    // Anchor mode: everyone on the call (a conference, a consult), a transfer under way.
                    <span class="live-legs" data-testid="live-legs" data-legs={callLegs(v).join(',')} data-consult={v.consult ? `${v.consult.by}>${v.consult.target}:${v.consult.phase}` : undefined} data-transfer={v.transfer?.by}>
                      {legsText(v)}
                    </span>
                  )}
                  {v.path && (
                    <span class="live-path" data-testid="live-path" data-path={v.path}>
                      {` · ${pathWords(v.path)}`}
                    </span>
                  )}
                </td>
                <td data-label={t('live.time')} dir="ltr">
                  {timeText(v, now)}
                </td>
                {m && <td data-label={t('live.monitor')}>{<MonitorCell call={v} m={m} />}</td>}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** "Missed · rang agent1 twice", "Completed · agent2 · The caller hung up." */
function recentMeta(e: EndedCall): string {
  if (e.rang?.length) return `${describeResult(e.result)} · ${rangText(e.rang)}`;
  return `${describeResult(e.result)}${e.agent ? ` · ${e.agent}` : ''}${e.reason ? ` · ${describeReason(e.reason)}` : ''}`;
}

export function RecentCalls({ ended }: { ended: EndedCall[] }) {
  return (
    <>
      <h2 id="recent-title" class="card-title">
        {t('recent.title')}
      </h2>
      <p class="empty" data-testid="recent-empty" hidden={ended.length > 0}>
        {t('recent.none')}
      </p>
      <ol class="history" data-testid="recent-calls">
        {ended.map((e) => (
          <li key={e.wacid} data-testid="recent-call" data-wacid={e.wacid} data-result={e.result}>
            <span class="h-caller">{e.direction === 'BUSINESS_INITIATED' ? t('recent.callback', { caller: formatCaller(e.to) }) : <Phone n={formatCaller(e.from)} />}</span>
            <span class="h-duration">{e.duration !== undefined ? formatDuration(e.duration) : '–'}</span>
            <span class="h-meta">{recentMeta(e)}</span>
          </li>
        ))}
      </ol>
    </>
  );
}

function draw(): void {
  renderShell({ me, link: state.link, error: state.error, onDismissError: () => dispatch({ type: 'dismissError' }) });
  render(<LiveCalls live={liveCalls(state)} now={Date.now() + state.skewMs} m={monitoring} />, document.getElementById('live')!);
  render(<WallboardView board={board} now={Date.now()} />, document.getElementById('wallboard')!);
  render(<RecentCalls ended={state.ended} />, document.getElementById('recent')!);
}

async function boot(): Promise<void> {
  Object.defineProperty(window, '__switchboard', { value: Object.freeze({ callback: panel.hook(), monitor: monitoring }), configurable: false });
  await startLanguage().catch(() => undefined);
  me = await getMe().catch(() => undefined);
  if (!me) return goToLogin();
  await adoptUserLanguage();
  onLanguageChange(() => (panel.render(), queue.render(), mountReports(document.getElementById('reports')!), draw()));
  draw();
  if (!me.roles.includes('supervisor')) {
    dispatch({ type: 'error', message: t('sup.forSupervisors'), code: 'FORBIDDEN', now: Date.now() });
    return;
  }
  panel.start();
  queue.start();
  mountReports(document.getElementById('reports')!);
  void fetch('/api/wallboard').then(async (r) => {
    if (r.ok && !board) board = (await r.json()) as Wallboard;
    draw();
  });
  conn = connectPage(me, dispatch);
  setInterval(draw, 1000); // call times
  setInterval(() => monitoring.controller.entries.size > 0 && draw(), 200); // the monitor's meter
  draw();
}

void boot();
