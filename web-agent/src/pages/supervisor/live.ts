/**
 * How the console names a live call's state (issue 17 item 2): who it rings, who talks,
 * on hold, after-call work. States the server adds later (hold, wrap-up) fall back to
 * their own name, so nothing is ever hidden.
 */
import type { CallView } from '../../../../shared/protocol.ts';

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
