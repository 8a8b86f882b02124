/**
 * Network check (`/preflight`; linked from the agent's ready-check and every page's
 * top bar): microphone and its level, speaker, STUN, TURN over UDP and over TCP (allocation
 * time), and a loopback call through the configured servers with its round trip, jitter and
 * loss; a verdict in plain words; the results as text to copy for support. The servers come
 * from `welcome` like every other page's peer connections (ice.ts); credentials are never shown.
 * One reducer (`preflight/verdict.ts`) holds what the page draws.
 */
import { onLanguageChange, t } from '../i18n/index.ts';
import { adoptUserLanguage, startLanguage } from '../language.ts';
import '../csp.ts'; // first: before any frame is parsed
import { render } from 'preact';
import { getMe, goToLogin, type Me } from '../api.ts';
import { iceConfig, iceVersion } from '../ice.ts';
import { checkCall, checkMic, checkSpeaker, checkStun, checkTurn, turnUrlFor } from '../preflight/checks.ts';
import { CHECKS, detailOf, initialPreflight, percent, reducePreflight, reportText, statusWord, verdict, type PreflightEvent, type PreflightState } from '../preflight/verdict.ts';
import { pathWords, type NetworkPath } from '../quality.ts';
import { initialState, reduce, type UiEvent, type UiState } from '../reducer.ts';
import { renderShell } from '../ui/shell.tsx';
import { connectPage } from './connect-page.ts';

let ui: UiState = initialState;
let pf: PreflightState = initialPreflight;
let me: Me | undefined;

function dispatch(ev: UiEvent): void {
  ui = reduce(ui, ev);
  draw();
}
function act(ev: PreflightEvent): void {
  pf = reducePreflight(pf, ev);
  draw();
}

const servers = () => iceConfig().iceServers.flatMap((s) => s.urls);
/** The TURN server's host and port, for the verdict's advice. */
const turnWhere = (): { turnHost?: string; turnPort?: number } => {
  const t = turnUrlFor(iceConfig(), 'udp') ?? turnUrlFor(iceConfig(), 'tcp');
  const m = t?.url.match(/^turns?:(\[[^\]]+\]|[^:?]+)(?::(\d+))?/);
  return m ? { turnHost: m[1]!, ...(m[2] ? { turnPort: Number(m[2]) } : {}) } : {};
};

function report(): string {
  return reportText(pf.results, verdict(pf.results, turnWhere()), {
    at: new Date(),
    ...(me ? { user: me.name } : {}),
    userAgent: navigator.userAgent,
    servers: servers(),
    policy: iceConfig().iceTransportPolicy,
  });
}

async function run(): Promise<void> {
  if (pf.running) return;
  act({ type: 'start' });
  const cfg = iceConfig();
  act({ type: 'running', name: 'mic' });
  const mic = await checkMic();
  act({ type: 'result', name: 'mic', result: mic.result });
  act({ type: 'running', name: 'speaker' });
  act({ type: 'result', name: 'speaker', result: await checkSpeaker() });
  act({ type: 'running', name: 'stun' });
  act({ type: 'running', name: 'turnUdp' });
  act({ type: 'running', name: 'turnTcp' });
  const [stun, udp, tcp] = await Promise.all([checkStun(cfg), checkTurn(cfg, 'udp'), checkTurn(cfg, 'tcp')]);
  act({ type: 'result', name: 'stun', result: stun });
  act({ type: 'result', name: 'turnUdp', result: udp });
  act({ type: 'result', name: 'turnTcp', result: tcp });
  act({ type: 'running', name: 'call' });
  act({ type: 'result', name: 'call', result: await checkCall(cfg, mic.stream?.getAudioTracks()[0]) });
  mic.stream?.getTracks().forEach((t) => t.stop());
  act({ type: 'done' });
}

async function copy(): Promise<void> {
  try {
    await navigator.clipboard.writeText(report());
    act({ type: 'copied', how: 'copied' });
  } catch {
    act({ type: 'copied', how: 'select' });
  }
}

const isNetworkPath = (p: string | undefined): p is NetworkPath => p === 'direct' || p === 'relay-udp' || p === 'relay-tcp' || p === 'relay-tls';

function Page() {
  const v = verdict(pf.results, turnWhere());
  const fig = pf.results.call.figures;
  return (
    <>
      <section class="card" aria-labelledby="preflight-title">
        <h1 class="card-title" id="preflight-title">
          {t('preflight.title')}
        </h1>
        <p class="hint">{t('preflight.intro')}</p>
        <div class={`verdict verdict-${v.level}`} data-testid="preflight-verdict" data-level={v.level} role="status" aria-live="polite">
          <strong data-testid="preflight-verdict-title">{v.title}</strong>
          {v.advice && <p data-testid="preflight-advice">{v.advice}</p>}
        </div>
        <ul class="checks" data-testid="preflight-checks">
          {CHECKS.map(({ name, label }) => {
            const c = pf.results[name];
            return (
              <li key={name} data-testid={`preflight-${name}`} data-status={c.status} class={`check check-${c.status}`}>
                <span class="label">{t(label)}</span>{' '}
                <span class="status">{c.status === 'pending' ? '—' : statusWord(c.status)}</span>
                {c.ms !== undefined && <span class="ms" data-testid={`preflight-${name}-ms`}>{` ${t('preflight.ms', { ms: Math.round(c.ms) })}`}</span>}
                <span class="detail">{` ${detailOf(c)}`}</span>
              </li>
            );
          })}
        </ul>
        {fig && (
          <dl class="figures" data-testid="preflight-figures">
            <dt>{t('preflight.path')}</dt>
            <dd data-testid="preflight-path">{isNetworkPath(fig.path) ? pathWords(fig.path) : (fig.path ?? t('preflight.unknown'))}</dd>
            <dt>{t('preflight.rtt')}</dt>
            <dd data-testid="preflight-rtt">{fig.rttMs !== undefined ? t('preflight.ms', { ms: fig.rttMs }) : '—'}</dd>
            <dt>{t('preflight.jitter')}</dt>
            <dd data-testid="preflight-jitter">{fig.jitterMs !== undefined ? t('preflight.ms', { ms: fig.jitterMs }) : '—'}</dd>
            <dt>{t('preflight.loss')}</dt>
            <dd data-testid="preflight-loss">{fig.loss !== undefined ? `${percent(fig.loss)} %` : '—'}</dd>
          </dl>
        )}
        <div class="actions">
          <button type="button" class="btn btn-go" data-testid="preflight-run" disabled={pf.running} onClick={() => void run()}>
            {pf.runs ? t('preflight.runAgain') : t('preflight.run')}
          </button>
          <button type="button" class="btn" data-testid="preflight-copy" disabled={pf.running || pf.runs === 0} onClick={() => void copy()}>
            {t('preflight.copy')}
          </button>
          <span class="hint" data-testid="preflight-copied" role="status">
            {pf.copied === 'copied' ? t('preflight.copied') : pf.copied === 'select' ? t('preflight.selectToCopy') : ''}
          </span>
        </div>
        {pf.runs > 0 && !pf.running && <textarea class="report" data-testid="preflight-report" readOnly rows={10} value={report()} aria-label={t('preflight.reportLabel')} />}
        <p class="hint">
          {t('preflight.servers')} <span data-testid="preflight-servers" dir="ltr">{servers().join(', ') || t('preflight.noneConfigured')}</span> {t('preflight.policy', { policy: iceConfig().iceTransportPolicy })}
        </p>
      </section>
    </>
  );
}

function draw(): void {
  renderShell({ me, link: ui.link, error: ui.error, onDismissError: () => dispatch({ type: 'dismissError' }) });
  const root = document.getElementById('main');
  if (root && me) render(<Page />, root);
}

async function boot(): Promise<void> {
  await startLanguage().catch(() => undefined);
  me = await getMe().catch(() => undefined);
  if (!me) return goToLogin();
  await adoptUserLanguage();
  onLanguageChange(draw);
  draw();
  connectPage(me, dispatch);
  // The servers come with `welcome`: run once they are known (or after 5 s with none).
  const t0 = Date.now();
  while (iceVersion() === 0 && Date.now() - t0 < 5_000) await new Promise((r) => setTimeout(r, 50));
  draw();
  void run();
}

void boot();
