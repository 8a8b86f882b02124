/** Monitoring (the flow is in shared/protocol.ts's header): its frames both ways. */
import { z } from 'zod';
import { wacid, sdp, userName, reqId } from './fields.ts';

/** listen: the supervisor hears caller + agent; whisper: the agent also hears the supervisor; barge: the caller too. */
export const MonitorMode = z.enum(['listen', 'whisper', 'barge']);
export type MonitorMode = z.infer<typeof MonitorMode>;
/**
 * Why a monitor ended: `stopped` (the supervisor stopped it), `call-ended`, `agent-gone` /
 * `supervisor-gone` (that tab closed or its socket or media went away), `failed` (the
 * monitor's media could not be set up or broke; the call itself goes on).
 */
export const MonitorEndReason = z.enum(['stopped', 'call-ended', 'agent-gone', 'supervisor-gone', 'failed']);
export type MonitorEndReason = z.infer<typeof MonitorEndReason>;
export const MonitorSignalKind = z.enum(['offer', 'answer', 'end']);
export type MonitorSignalKind = z.infer<typeof MonitorSignalKind>;
const monitorId = z.string().min(1).max(64);

/**
 * On the media anchor, where the supervisor's voice goes in each mode: its leg in the call's
 * room is muted unless barging (the room's one mix reaches the caller), and in whisper the
 * whisper link plays it to the agent alone. One table for the server and both pages.
 */
export function anchorRouting(mode: MonitorMode): { legMutedInRoom: boolean; whisperLink: boolean } {
  return { legMutedInRoom: mode !== 'barge', whisperLink: mode === 'whisper' };
}

/**
 * Whether the agent's page shows that the call is monitored. Whisper and barge always are
 * (the agent hears the supervisor); listening only when the server's setting says so.
 */
export function monitorShown(mode: MonitorMode, showListening: boolean): boolean {
  return mode !== 'listen' || showListening;
}

const signalFields = {
  monitorId,
  kind: MonitorSignalKind,
  /** The complete SDP (every candidate in it) of an offer or answer; absent on `end`. */
  sdp: sdp.optional(),
  /** On `end`: why this tab ends it (`stopped` from the supervisor, `failed`, `call-ended`). */
  reason: MonitorEndReason.optional(),
  /**
   * `whisper` (added): on a call on the media anchor, the offer / answer of the whisper link,
   * a connection between the agent's tab (offers, receives) and the supervisor's tab (answers,
   * sends its microphone in whisper only), relayed like a direct monitor's. Absent: the
   * monitor's own connection (direct: the agent's relay; anchor: Janus's leg).
   */
  path: z.literal('whisper').optional(),
};
const sdpMatchesKind = (m: { kind: MonitorSignalKind; sdp?: string | undefined }) => (m.kind === 'end') === (m.sdp === undefined);
const sdpMatchesKindError = { message: 'offer and answer carry sdp, end does not', path: ['sdp'] };

/** To both tabs when a monitor begins: `side` says which end this tab is. */
export const MonitorStarted = z.object({
  type: z.literal('monitor.started'),
  monitorId,
  wacid,
  mode: MonitorMode,
  side: z.enum(['agent', 'supervisor']),
  supervisor: userName,
  agent: userName,
  /** Agent side: show the agent that the call is monitored (`monitorShown`). */
  shown: z.boolean(),
  /**
   * `anchor`: the call is on the media anchor and the supervisor's tab has its own leg into
   * the call's room (Janus offers it: `monitor.signal` offer from the server, the supervisor
   * answers); the agent's tab sends nothing. Absent: the agent's tab offers, as above.
   */
  via: z.literal('anchor').optional(),
});
export const MonitorModeChanged = z.object({ type: z.literal('monitor.mode'), monitorId, wacid, mode: MonitorMode, shown: z.boolean() });
export const MonitorEnded = z.object({ type: z.literal('monitor.ended'), monitorId, wacid, reason: MonitorEndReason });
/** The other tab's offer, answer or end, relayed as it was sent (without its request id). */
export const MonitorSignalRelayed = z
  .object({ type: z.literal('monitor.signal'), ...signalFields })
  .refine(sdpMatchesKind, sdpMatchesKindError);

/** Supervisor: monitor a live call. Ack `{monitorId}`. */
export const MonitorStart = z.object({ type: z.literal('monitor.start'), id: reqId, wacid, mode: MonitorMode });
/** Supervisor: switch the mode of a running monitor (nothing is renegotiated). */
export const MonitorModeSet = z.object({ type: z.literal('monitor.mode'), id: reqId, monitorId, mode: MonitorMode });
/** Either tab of a monitor: an offer / answer to relay, or the end. */
export const MonitorSignal = z
  .object({ type: z.literal('monitor.signal'), id: reqId, ...signalFields })
  .refine(sdpMatchesKind, sdpMatchesKindError);
