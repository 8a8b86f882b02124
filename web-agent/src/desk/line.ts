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
import { t } from '../i18n/index.ts';

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
  if (ui.link !== 'online' && ui.link !== 'connecting') return { status: 'offline', words: t('status.offline'), detail: t('line.reconnecting') };
  const mine = tabCall(ui);
  if (mine) return onHold ? { status: 'on-call', words: t('status.onHold'), ...since('on-call') } : { status: 'on-call', words: t('status.onCall'), ...since('on-call') };
  const ringing = ringingCalls(ui, now)[0];
  if (ringing) {
    const end = ringEnd(ringing.view);
    return { status: 'ringing', words: t('status.ringing'), ...(end !== undefined ? { secondsLeft: Math.max(0, Math.ceil((end - serverNow) / 1000)) } : {}) };
  }
  if (callsElsewhere(ui).length > 0) return { status: 'on-call', words: t('status.onCall'), detail: t('line.elsewhere') };
  if (a?.status === 'after-call-work') {
    if (a.until === undefined) return { status: 'after-call-work', words: t('status.afterCallWork'), detail: t('line.noLimit'), since: a.since };
    if (a.until > serverNow) {
      // Never more than the wrap-up's own length (the estimate of the server's clock can be a little off).
      const left = Math.max(0, Math.ceil(Math.min(a.until - serverNow, a.until - a.since) / 1000));
      return { status: 'after-call-work', words: t('status.afterCallWork'), detail: typing ? t('line.pausedTyping') : t('line.nextCallIn', { seconds: left }), since: a.since, secondsLeft: left };
    }
  }
  if (ui.presence === 'available') return { status: 'available', words: t('status.available'), ...since('available') };
  // The away reason as the operator configured it (AWAY_REASONS), except the server's own "Missed a call".
  const reason = a?.status === 'away' ? (a.reason === 'Missed a call' ? t('line.missedACall') : a.reason) : undefined;
  return { status: 'away', words: t('status.away'),
 ...(reason ? { detail: reason } : {}), ...since('away') };
}
