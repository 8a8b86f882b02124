/**
 * The agent desk's one state line: what the agent is doing, in one place, from
 * the page's state. Pure. What this tab knows first (a call held here, a call ringing here,
 * the link down), then the server's `agent.state`, then the presence the agent chose: so
 * the line never says "available" while a call rings, nor "away" above a ringing call.
 *
 * `status` keeps the server's names (`data-status` in the page): available, ringing,
 * on-call, after-call-work, away, offline.
 */
import type { AgentStatus } from '../../../shared/protocol.ts';
import { callsElsewhere, ringingCalls, ringEnd, tabCall, type UiState } from '../reducer.ts';

export interface StateLine {
  status: AgentStatus;
  /** The words: "Available", "Ringing", "On a call", "On hold", "After-call work", "Away", "Offline". */
  words: string;
  /** After the words: the away reason, "in another tab", "no time limit", "paused while you type". */
  detail?: string;
  /** When the state began (server clock), for "for 1:23"; absent when the page does not know. */
  since?: number;
  /** Seconds left on this state's countdown (ringing: RING_TIMEOUT_MS; after-call work: WRAP_UP_MS). */
  secondsLeft?: number;
}

export interface LineInput {
  ui: UiState;
  /** Local clock. */
  now: number;
  /** The call this tab holds is on hold. */
  onHold: boolean;
  /** The agent typed into the wrap-up within the typing pause (the server's countdown stands still). */
  typing: boolean;
}

export function stateLine({ ui, now, onHold, typing }: LineInput): StateLine {
  const serverNow = now + ui.skewMs;
  const a = ui.agent;
  const since = (status: AgentStatus) => (a?.status === status ? { since: a.since } : {});
  if (ui.link !== 'online' && ui.link !== 'connecting') return { status: 'offline', words: 'Offline', detail: 'reconnecting to the server…' };
  const mine = tabCall(ui);
  if (mine) return onHold ? { status: 'on-call', words: 'On hold', ...since('on-call') } : { status: 'on-call', words: 'On a call', ...since('on-call') };
  const ringing = ringingCalls(ui, now)[0];
  if (ringing) {
    const end = ringEnd(ringing.view);
    return { status: 'ringing', words: 'Ringing', ...(end !== undefined ? { secondsLeft: Math.max(0, Math.ceil((end - serverNow) / 1000)) } : {}) };
  }
  if (callsElsewhere(ui).length > 0) return { status: 'on-call', words: 'On a call', detail: 'in another tab or window' };
  if (a?.status === 'after-call-work') {
    if (a.until === undefined) return { status: 'after-call-work', words: 'After-call work', detail: 'no time limit: end it when you are done', since: a.since };
    if (a.until > serverNow) {
      // Never more than the wrap-up's own length (the estimate of the server's clock can be a little off).
      const left = Math.max(0, Math.ceil(Math.min(a.until - serverNow, a.until - a.since) / 1000));
      return { status: 'after-call-work', words: 'After-call work', detail: typing ? 'paused: typing' : `next call in ${left} s`, since: a.since, secondsLeft: left };
    }
  }
  if (ui.presence === 'available') return { status: 'available', words: 'Available', ...since('available') };
  const reason = a?.status === 'away' ? a.reason : undefined;
  return { status: 'away', words: 'Away', ...(reason ? { detail: reason } : {}), ...since('away') };
}
