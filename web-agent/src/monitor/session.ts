/**
 * The state of one monitor session in a tab, as a pure transition: `idle → offering →
 * live → ended`. Both sides use it: the agent's tab enters `offering` when it sends its
 * offer, the supervisor's when it receives one; `live` once the answer is applied (agent)
 * or sent (supervisor). `ended` is final and every event after it is a no-op, so ending
 * twice (a remote end racing a local stop) does nothing the second time.
 *
 * A monitor ends when this tab stops it, when the other tab or the server says so, when
 * the call ends, or when its media goes away (the other tab closed its DTLS transport, or
 * the connection failed, or stayed disconnected, past a grace time).
 */
import type { MonitorEndReason, MonitorMode } from '../../../shared/protocol.ts';

export type MonitorPhase = 'idle' | 'offering' | 'live' | 'ended';
export type MonitorSide = 'agent' | 'supervisor';

export interface MonitorSession {
  readonly side: MonitorSide;
  readonly phase: MonitorPhase;
  readonly mode: MonitorMode;
  readonly endReason?: MonitorEndReason;
}

export type MonitorEvent =
  /** Agent: its offer went out. Supervisor: an offer came in. */
  | { type: 'offer' }
  /** Agent: the answer is applied. Supervisor: its answer went out. */
  | { type: 'answer' }
  | { type: 'mode'; mode: MonitorMode }
  /** The monitor connection's state (`connectionState`, or `peer-closed`: the DTLS transport was closed by the other side). */
  | { type: 'media'; state: RTCPeerConnectionState | 'peer-closed' }
  /** `disconnected` lasted past the grace time. */
  | { type: 'media-lost' }
  /** This tab ends the monitor (tells the other side). */
  | { type: 'stop'; reason: MonitorEndReason }
  /** The other tab or the server ended it (nothing to tell). */
  | { type: 'ended'; reason: MonitorEndReason };

export type MonitorEffect =
  /** Send `monitor.signal {kind: end, reason}`. */
  | { type: 'send-end'; reason: MonitorEndReason }
  /** Close the monitor connection, restore the call's microphone, release the audio graph. */
  | { type: 'teardown' }
  /** Apply `routingFor(mode)`. */
  | { type: 'route' }
  /** `closed`: the other side closed its connection; wait briefly for the end's reason on the signaling path. */
  | { type: 'arm-lost-timer'; grace: 'closed' | 'disconnected' }
  | { type: 'disarm-lost-timer' };

export function newSession(side: MonitorSide, mode: MonitorMode): MonitorSession {
  return { side, phase: 'idle', mode };
}

/** The other side going away, named from this side. */
export function peerGone(side: MonitorSide): MonitorEndReason {
  return side === 'agent' ? 'supervisor-gone' : 'agent-gone';
}

export function step(s: MonitorSession, e: MonitorEvent): { session: MonitorSession; effects: MonitorEffect[] } {
  const same = { session: s, effects: [] as MonitorEffect[] };
  if (s.phase === 'ended') return same;
  const end = (reason: MonitorEndReason, tell: boolean) => ({
    session: { ...s, phase: 'ended' as const, endReason: reason },
    effects: [...(tell ? [{ type: 'send-end' as const, reason }] : []), { type: 'disarm-lost-timer' as const }, { type: 'teardown' as const }],
  });
  switch (e.type) {
    case 'offer':
      return s.phase === 'idle' ? { session: { ...s, phase: 'offering' }, effects: [] } : same;
    case 'answer':
      return s.phase === 'offering' ? { session: { ...s, phase: 'live' }, effects: [{ type: 'route' }] } : same;
    case 'mode':
      if (e.mode === s.mode) return same;
      // Routing applies once live; before that the mode is only remembered.
      return { session: { ...s, mode: e.mode }, effects: s.phase === 'live' ? [{ type: 'route' }] : [] };
    case 'media':
      if (e.state === 'failed') return end('failed', true);
      // The other tab closed its connection: its tab closed, or it ended the monitor itself
      // and its `end` (with the reason) is on the slower signaling path: wait briefly for it.
      if (e.state === 'peer-closed') return { session: s, effects: [{ type: 'arm-lost-timer', grace: 'closed' }] };
      if (e.state === 'disconnected') return { session: s, effects: [{ type: 'arm-lost-timer', grace: 'disconnected' }] };
      if (e.state === 'connected') return { session: s, effects: [{ type: 'disarm-lost-timer' }] };
      return same;
    case 'media-lost':
      return end(peerGone(s.side), true);
    case 'stop':
      return end(e.reason, true);
    case 'ended':
      return end(e.reason, false);
  }
}
