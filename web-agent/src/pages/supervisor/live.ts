/**
 * How the console names a live call's state: who it rings, who talks,
 * on hold, after-call work. States the server adds later (hold, wrap-up) fall back to
 * their own name, so nothing is ever hidden.
 */
import { locale, t } from '../../i18n/index.ts';
import type { CallView } from '../../../../shared/protocol.ts';
import { formatDuration } from '../../format.ts';
import { callLegs } from '../../reducer.ts';

const TEXT: Record<string, (agent: string | undefined) => string> = {
  queued: () => t('live.queued'),
  ringing: (a) => (a ? t('live.ringingAgent', { agent: a }) : t('live.ringing')),
  answering: (a) => (a ? t('live.answeringAgent', { agent: a }) : t('live.answering')),
  dialing: (a) => (a ? t('live.dialingAgent', { agent: a }) : t('live.dialing')),
  connected: () => t('live.connected'),
  active: (a) => (a ? t('live.activeAgent', { agent: a }) : t('live.active')),
  held: (a) => (a ? t('live.heldAgent', { agent: a }) : t('live.held')),
  hold: (a) => (a ? t('live.heldAgent', { agent: a }) : t('live.held')),
  wrapup: (a) => (a ? t('live.wrapupAgent', { agent: a }) : t('live.wrapup')),
  rejecting: () => t('live.ending'),
  ending: () => t('live.ending'),
};

/**
 * An active call on hold (`heldSince` set) reads as held; its state stays `active`. A call in
 * voicemail (anchor mode: answered by the bridge, no agent) reads as such.
 */
export function liveStateText(v: Pick<CallView, 'state' | 'agent' | 'direction' | 'heldSince' | 'voicemail'>): string {
  if (v.voicemail && (v.state === 'answering' || v.state === 'active')) return t(v.voicemail.phase === 'recording' ? 'live.voicemailRecording' : 'live.voicemailJoining');
  const state = v.state === 'active' && v.heldSince !== undefined ? 'held' : v.state;
  const words = TEXT[state]?.(v.agent) ?? state;
  return v.direction === 'BUSINESS_INITIATED' ? t('live.callback', { state: words }) : words;
}

/**
 * The live calls' time column (server times; `now` is server time too): talking time once
 * started; while it rings an agent, that agent's ring time left (RING_TIMEOUT_MS, then the
 * call moves on); and the accept window (ACCEPT_WINDOW_MS: the call is rejected when it
 * closes), labelled as such.
 */
export function timeText(v: Pick<CallView, 'state' | 'startedAt' | 'deadline' | 'ringUntil'>, now: number): string {
  if (v.startedAt !== undefined) return formatDuration((now - v.startedAt) / 1000);
  const left = (at: number) => formatDuration(Math.max(0, at - now) / 1000);
  const window = v.deadline !== undefined ? t('live.window', { time: left(v.deadline) }) : '';
  if (v.state === 'ringing' && v.ringUntil !== undefined && (v.deadline === undefined || v.ringUntil < v.deadline)) {
    const rings = t('live.ringsMore', { time: left(v.ringUntil) });
    return window ? `${rings} · ${window}` : rings;
  }
  return window;
}

/** Whom a missed call rang, in words: "rang agent1", "rang agent1 twice", "rang agent1 twice and agent2". */
export function rangText(rang: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const a of rang) counts.set(a, (counts.get(a) ?? 0) + 1);
  const parts = [...counts].map(([a, n]) => (n === 1 ? a : t('live.times', { agent: a, count: n })));
  return t('live.rang', { agents: new Intl.ListFormat(locale(), { type: 'conjunction' }).format(parts) });
}

/**
 * Anchor mode: who is on a call besides what the Agent cell says: " · on the call: agent1, agent2"
 * (a conference, a consult's two agents), " · agent1 consulting agent2" while the consult rings,
 * " · transferred by agent1, caller hears music" while a transfer waits for its target.
 */
export function legsText(v: Pick<CallView, 'agent' | 'consult' | 'conference' | 'transfer'>): string {
  const parts: string[] = [];
  const legs = callLegs(v);
  if (legs.length > 1) parts.push(t('live.legs', { agents: new Intl.ListFormat(locale(), { type: 'conjunction' }).format(legs) }));
  if (v.consult) parts.push(t('live.consult', { agent: v.consult.by, target: v.consult.target }));
  if (v.transfer && v.agent === undefined) parts.push(t('live.transferring', { agent: v.transfer.by }));
  return parts.map((p) => ` · ${p}`).join('');
}
