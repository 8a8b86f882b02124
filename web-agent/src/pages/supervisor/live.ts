/**
 * How the console names a live call's state: who it rings, who talks,
 * on hold, after-call work. States the server adds later (hold, wrap-up) fall back to
 * their own name, so nothing is ever hidden.
 */
import type { CallView } from '../../../../shared/protocol.ts';
import { formatDuration } from '../../format.ts';

const TEXT: Record<string, (agent: string | undefined) => string> = {
  queued: () => 'waiting for an agent',
  ringing: (a) => (a ? `ringing ${a}` : 'ringing'),
  answering: (a) => (a ? `${a} answering` : 'answering'),
  dialing: (a) => (a ? `${a} dialing` : 'dialing'),
  connected: () => 'customer’s phone ringing',
  active: (a) => (a ? `on call with ${a}` : 'on call'),
  held: (a) => (a ? `on hold by ${a}` : 'on hold'),
  hold: (a) => (a ? `on hold by ${a}` : 'on hold'),
  wrapup: (a) => (a ? `after-call work: ${a}` : 'after-call work'),
  rejecting: () => 'ending',
  ending: () => 'ending',
};

/** An active call on hold (`heldSince` set) reads as held; its state stays `active`. */
export function liveStateText(v: Pick<CallView, 'state' | 'agent' | 'direction' | 'heldSince'>): string {
  const state = v.state === 'active' && v.heldSince !== undefined ? 'held' : v.state;
  const t = TEXT[state]?.(v.agent) ?? state;
  return v.direction === 'BUSINESS_INITIATED' ? `${t} · callback` : t;
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
  const window = v.deadline !== undefined ? `accept window ${left(v.deadline)}` : '';
  if (v.state === 'ringing' && v.ringUntil !== undefined && (v.deadline === undefined || v.ringUntil < v.deadline)) return `rings ${left(v.ringUntil)} more · ${window}`.replace(/ · $/, '');
  return window;
}

/** Whom a missed call rang, in words: "rang agent1", "rang agent1 twice", "rang agent1 twice and agent2". */
export function rangText(rang: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const a of rang) counts.set(a, (counts.get(a) ?? 0) + 1);
  const parts = [...counts].map(([a, n]) => (n === 1 ? a : n === 2 ? `${a} twice` : `${a} ${n} times`));
  return `rang ${parts.length > 1 ? `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}` : parts[0]}`;
}
