/**
 * The preflight's results and what they mean: pure, so the words are tested
 * without a browser. `checks.ts` measures, `pages/preflight.tsx` draws, this file decides the
 * verdict in plain words and writes the report a user copies for support.
 */

export type CheckStatus = 'pending' | 'running' | 'ok' | 'warn' | 'failed' | 'skipped';

export interface CheckResult {
  status: CheckStatus;
  /** One line in words: what was found. */
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
export const CHECKS: Array<{ name: CheckName; label: string }> = [
  { name: 'mic', label: 'Microphone' },
  { name: 'speaker', label: 'Speaker' },
  { name: 'stun', label: 'STUN (your public address)' },
  { name: 'turnUdp', label: 'TURN relay over UDP' },
  { name: 'turnTcp', label: 'TURN relay over TCP' },
  { name: 'call', label: 'Test call through the configured servers' },
];

export const pending = (): PreflightResults => ({
  mic: { status: 'pending', detail: 'Not checked yet.' },
  speaker: { status: 'pending', detail: 'Not checked yet.' },
  stun: { status: 'pending', detail: 'Not checked yet.' },
  turnUdp: { status: 'pending', detail: 'Not checked yet.' },
  turnTcp: { status: 'pending', detail: 'Not checked yet.' },
  call: { status: 'pending', detail: 'Not checked yet.' },
});

export interface Verdict {
  level: 'good' | 'warn' | 'bad' | 'running';
  /** The headline: "Calls will work", "Calls need TURN over TCP", … */
  title: string;
  /** What to do, in words (may be empty when all is well). */
  advice: string;
}

/** Poor-line thresholds, the same as the call's quality line (quality.ts). */
const POOR = { rttMs: 300, jitterMs: 30, loss: 0.02 };

export function verdict(r: PreflightResults, o: { turnHost?: string; turnPort?: number } = {}): Verdict {
  const all = Object.values(r) as CheckResult[];
  if (all.some((c) => c.status === 'pending' || c.status === 'running')) return { level: 'running', title: 'Checking…', advice: '' };
  const host = o.turnHost ?? 'the TURN server';
  const port = o.turnPort ?? 3478;
  if (r.mic.status === 'failed') return { level: 'bad', title: 'Your microphone does not work', advice: `${r.mic.detail} Fix it before taking calls: the caller would hear nothing.` };
  const turnConfigured = r.turnUdp.status !== 'skipped' || r.turnTcp.status !== 'skipped';
  const udp = r.turnUdp.status === 'ok';
  const tcp = r.turnTcp.status === 'ok';
  if (r.call.status === 'failed') {
    if (turnConfigured && !udp && !tcp) {
      return { level: 'bad', title: 'Calls will not work from this network', advice: `The relay server (${host}) cannot be reached over UDP or TCP. Ask your IT to allow UDP and TCP to ${host} port ${port} (and TCP 443 for TURN over TLS), or try another network.` };
    }
    return { level: 'bad', title: 'Calls will not work from this network', advice: `The test call did not connect (${r.call.detail}) Ask your IT to allow WebRTC audio (UDP) or TURN to ${host}.` };
  }
  if (turnConfigured && !udp && tcp) {
    return { level: 'warn', title: 'Calls need TURN over TCP', advice: `Calls will work, relayed over TCP, but audio may lag on a busy line: ask your IT to allow UDP to ${host} port ${port} and UDP 49152–65535.` };
  }
  if (turnConfigured && !udp && !tcp) {
    return { level: 'warn', title: 'Calls work only on a direct path', advice: `The relay server (${host}) cannot be reached: calls work from this network only while a direct path exists. Ask your IT to allow UDP and TCP to ${host} port ${port}.` };
  }
  const f = r.call.figures ?? {};
  const poor: string[] = [];
  if (f.rttMs !== undefined && f.rttMs >= POOR.rttMs) poor.push(`a long delay (${f.rttMs} ms round trip)`);
  if (f.jitterMs !== undefined && f.jitterMs >= POOR.jitterMs) poor.push(`uneven audio (jitter ${f.jitterMs} ms)`);
  if (f.loss !== undefined && f.loss >= POOR.loss) poor.push(`${(f.loss * 100).toFixed(1)} % of the audio lost`);
  if (r.mic.status === 'warn' || poor.length) {
    return { level: 'warn', title: 'Calls will work, with a problem', advice: [r.mic.status === 'warn' ? r.mic.detail : '', poor.length ? `The line has ${poor.join(', ')}: close other downloads or use a wired connection.` : ''].filter(Boolean).join(' ') };
  }
  return { level: 'good', title: 'Calls will work', advice: turnConfigured ? '' : 'No TURN server is configured: calls work where a direct path exists (ask your administrator about ICE_SERVERS for agents on other networks).' };
}

const STATUS_WORD: Record<CheckStatus, string> = { pending: 'not run', running: 'running', ok: 'OK', warn: 'warning', failed: 'FAILED', skipped: 'skipped' };

/** The report as plain text, for support (Copy results). Names no credential. */
export function reportText(r: PreflightResults, v: Verdict, meta: { at: Date; user?: string; userAgent?: string; servers?: string[]; policy?: string }): string {
  const lines = [`Switchboard network check — ${meta.at.toISOString()}${meta.user ? ` — ${meta.user}` : ''}`, `Verdict: ${v.title}${v.advice ? ` — ${v.advice}` : ''}`, ''];
  for (const { name, label } of CHECKS) {
    const c = r[name];
    lines.push(`${label}: ${STATUS_WORD[c.status]}${c.ms !== undefined ? ` (${Math.round(c.ms)} ms)` : ''} — ${c.detail}`);
  }
  const f = r.call.figures;
  if (f) lines.push('', `Test call: path ${f.path ?? 'unknown'}, round trip ${f.rttMs ?? '?'} ms, jitter ${f.jitterMs ?? '?'} ms, loss ${f.loss !== undefined ? (f.loss * 100).toFixed(1) + ' %' : '?'}, ${f.packets ?? 0} packets`);
  if (meta.servers) lines.push(`Servers: ${meta.servers.join(', ') || 'none'} (policy ${meta.policy ?? 'all'})`);
  if (meta.userAgent) lines.push(`Browser: ${meta.userAgent}`);
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
      return { ...s, results: { ...s.results, [ev.name]: { status: 'running', detail: 'Checking…' } } };
    case 'result':
      return { ...s, results: { ...s.results, [ev.name]: ev.result } };
    case 'done':
      return { ...s, running: false };
    case 'copied':
      return { ...s, copied: ev.how };
  }
}
