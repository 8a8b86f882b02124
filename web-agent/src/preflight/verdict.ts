/**
 * The preflight's results and what they mean: pure, so the words are tested
 * without a browser. `checks.ts` measures, `pages/preflight.tsx` draws, this file decides the
 * verdict in plain words and writes the report a user copies for support.
 */
import { locale, t, type MessageKey } from '../i18n/index.ts';

export type CheckStatus = 'pending' | 'running' | 'ok' | 'warn' | 'failed' | 'skipped';

export interface CheckResult {
  status: CheckStatus;
  /** One line in words: what was found ('' while pending or running: the page says so). */
  detail: string;
  /** Milliseconds the check took to its answer (allocation time, gathering time). */
  ms?: number;
}

export interface CallFigures {
  rttMs?: number;
  jitterMs?: number;
  /** 0..1 of the packets sent one way. */
  loss?: number;
  /** `direct` or `relay-udp` / `relay-tcp` / `relay-tls`. */
  path?: string;
  packets?: number;
}

export interface PreflightResults {
  mic: CheckResult & { level?: number };
  speaker: CheckResult;
  stun: CheckResult;
  turnUdp: CheckResult;
  turnTcp: CheckResult;
  call: CheckResult & { figures?: CallFigures };
}

export type CheckName = keyof PreflightResults;
export const CHECKS: Array<{ name: CheckName; label: MessageKey }> = [
  { name: 'mic', label: 'preflight.mic' },
  { name: 'speaker', label: 'preflight.speaker' },
  { name: 'stun', label: 'preflight.stun' },
  { name: 'turnUdp', label: 'preflight.turnUdp' },
  { name: 'turnTcp', label: 'preflight.turnTcp' },
  { name: 'call', label: 'preflight.call' },
];

export const pending = (): PreflightResults => ({
  mic: { status: 'pending', detail: '' },
  speaker: { status: 'pending', detail: '' },
  stun: { status: 'pending', detail: '' },
  turnUdp: { status: 'pending', detail: '' },
  turnTcp: { status: 'pending', detail: '' },
  call: { status: 'pending', detail: '' },
});

const STATUS_WORD: Record<CheckStatus, MessageKey> = {
  pending: 'preflight.statusPending',
  running: 'preflight.statusRunning',
  ok: 'preflight.statusOk',
  warn: 'preflight.statusWarn',
  failed: 'preflight.statusFailed',
  skipped: 'preflight.statusSkipped',
};

/** A check's status in a word. */
export const statusWord = (s: CheckStatus): string => t(STATUS_WORD[s]);

/** A check's line of detail ("Not checked yet." while pending, "Checking…" while running). */
export const detailOf = (c: CheckResult): string => (c.status === 'pending' ? t('preflight.notChecked') : c.status === 'running' ? t('preflight.checking') : c.detail);

export interface Verdict {
  level: 'good' | 'warn' | 'bad' | 'running';
  /** The headline: "Calls will work", "Calls need TURN over TCP", … (in the page's language) */
  title: string;
  /** What to do, in words (may be empty when all is well). */
  advice: string;
}

/** Poor-line thresholds, the same as the call's quality line (quality.ts). */
const POOR = { rttMs: 300, jitterMs: 30, loss: 0.02 };

export function verdict(r: PreflightResults, o: { turnHost?: string; turnPort?: number } = {}): Verdict {
  const all = Object.values(r) as CheckResult[];
  if (all.some((c) => c.status === 'pending' || c.status === 'running')) return { level: 'running', title: t('preflight.checking'), advice: '' };
  const host = o.turnHost ?? t('preflight.theTurnServer');
  const port = o.turnPort ?? 3478;
  if (r.mic.status === 'failed') return { level: 'bad', title: t('preflight.vMicTitle'), advice: t('preflight.vMicAdvice', { detail: r.mic.detail }) };
  const turnConfigured = r.turnUdp.status !== 'skipped' || r.turnTcp.status !== 'skipped';
  const udp = r.turnUdp.status === 'ok';
  const tcp = r.turnTcp.status === 'ok';
  if (r.call.status === 'failed') {
    if (turnConfigured && !udp && !tcp) {
      return { level: 'bad', title: t('preflight.vBadTitle'), advice: t('preflight.vNoRelayAdvice', { host, port: String(port) }) };
    }
    return { level: 'bad', title: t('preflight.vBadTitle'), advice: t('preflight.vNoCallAdvice', { detail: r.call.detail, host }) };
  }
  if (turnConfigured && !udp && tcp) {
    return { level: 'warn', title: t('preflight.vTcpTitle'), advice: t('preflight.vTcpAdvice', { host, port: String(port) }) };
  }
  if (turnConfigured && !udp && !tcp) {
    return { level: 'warn', title: t('preflight.vDirectTitle'), advice: t('preflight.vDirectAdvice', { host, port: String(port) }) };
  }
  const f = r.call.figures ?? {};
  const poor: string[] = [];
  if (f.rttMs !== undefined && f.rttMs >= POOR.rttMs) poor.push(t('preflight.poorDelay', { ms: f.rttMs }));
  if (f.jitterMs !== undefined && f.jitterMs >= POOR.jitterMs) poor.push(t('preflight.poorJitter', { ms: f.jitterMs }));
  if (f.loss !== undefined && f.loss >= POOR.loss) poor.push(t('preflight.poorLoss', { percent: percent(f.loss) }));
  if (r.mic.status === 'warn' || poor.length) {
    return { level: 'warn', title: t('preflight.vProblemTitle'), advice: [r.mic.status === 'warn' ? r.mic.detail : '', poor.length ? t('preflight.vPoorAdvice', { problems: poor.join(', ') }) : ''].filter(Boolean).join(' ') };
  }
  return { level: 'good', title: t('preflight.vGoodTitle'), advice: turnConfigured ? '' : t('preflight.vNoTurnAdvice') };
}

/** The report's status words (the page's badge says "Checking…"; the report "running"). */
const STATUS_REPORT: Record<CheckStatus, MessageKey> = {
  pending: 'preflight.reportPending',
  running: 'preflight.reportRunning',
  ok: 'preflight.statusOk',
  warn: 'preflight.reportWarn',
  failed: 'preflight.reportFailed',
  skipped: 'preflight.reportSkipped',
};

/** A fraction (0..1) as a percentage with one decimal, in the page's locale. */
export const percent = (fraction: number): string => new Intl.NumberFormat(locale(), { minimumFractionDigits: 1, maximumFractionDigits: 1 }).format(fraction * 100);

/** The report as plain text, for support (Copy results), in the user's language; codes, URLs and figures as they are. Names no credential. */
export function reportText(r: PreflightResults, v: Verdict, meta: { at: Date; user?: string; userAgent?: string; servers?: string[]; policy?: string }): string {
  const lines = [
    `${t('preflight.reportTitle')} — ${meta.at.toISOString()}${meta.user ? ` — ${meta.user}` : ''}`,
    t('preflight.reportVerdict', { verdict: `${v.title}${v.advice ? ` — ${v.advice}` : ''}` }),
    '',
  ];
  for (const { name, label } of CHECKS) {
    const c = r[name];
    lines.push(`${t(label)}: ${t(STATUS_REPORT[c.status])}${c.ms !== undefined ? ` (${Math.round(c.ms)} ms)` : ''} — ${detailOf(c)}`);
  }
  const f = r.call.figures;
  if (f)
    lines.push(
      '',
      t('preflight.reportCall', {
        path: f.path ?? '?',
        rtt: f.rttMs ?? '?',
        jitter: f.jitterMs ?? '?',
        loss: f.loss !== undefined ? `${percent(f.loss)} %` : '?',
        packets: f.packets ?? 0,
      }),
    );
  if (meta.servers) lines.push(t('preflight.reportServers', { servers: meta.servers.join(', ') || t('preflight.none'), policy: meta.policy ?? 'all' }));
  if (meta.userAgent) lines.push(t('preflight.reportBrowser', { browser: meta.userAgent }));
  return lines.join('\n');
}

/** The page's state: one reducer, the page draws from it. */
export interface PreflightState {
  results: PreflightResults;
  /** Checks started so far (a new run resets the results). */
  runs: number;
  running: boolean;
  /** Copy results: what happened. */
  copied?: 'copied' | 'select';
}

export type PreflightEvent =
  | { type: 'start' }
  | { type: 'result'; name: CheckName; result: PreflightResults[CheckName] }
  | { type: 'running'; name: CheckName }
  | { type: 'done' }
  | { type: 'copied'; how: 'copied' | 'select' };

export const initialPreflight: PreflightState = { results: pending(), runs: 0, running: false };

export function reducePreflight(s: PreflightState, ev: PreflightEvent): PreflightState {
  switch (ev.type) {
    case 'start':
      return { results: pending(), runs: s.runs + 1, running: true };
    case 'running':
      return { ...s, results: { ...s.results, [ev.name]: { status: 'running', detail: '' } } };
    case 'result':
      return { ...s, results: { ...s.results, [ev.name]: ev.result } };
    case 'done':
      return { ...s, running: false };
    case 'copied':
      return { ...s, copied: ev.how };
  }
}
