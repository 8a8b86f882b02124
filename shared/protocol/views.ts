/** Who and what a client is shown: users and roles, call states, one call's view (`CallView`), the agent's own state. */
import { z } from 'zod';
import { LIMITS } from '../limits.ts';
import { wacid, sdp, phoneId, party, word, reason, userName } from './fields.ts';

export const Presence = z.enum(['available', 'away']);
export type Presence = z.infer<typeof Presence>;

export const Direction = z.enum(['USER_INITIATED', 'BUSINESS_INITIATED']);
export type Direction = z.infer<typeof Direction>;

export const Role = z.enum(['agent', 'supervisor', 'ops', 'admin']);
export type Role = z.infer<typeof Role>;

export const User = z.object({ name: z.string(), roles: z.array(Role) });
export type User = z.infer<typeof User>;

/**
 * A call's state, as the call engine (`server/calls/lifecycle.ts`) names it; the one list
 * both ends use. User-initiated: queued (waiting for an agent), ringing (offered to one
 * agent), answering (accept in flight), rejecting; business-initiated: dialing, connected
 * (the user's phone rings). Both: active (talking), ending (terminate sent), ended.
 */
export const CallStateName = z.enum(['queued', 'ringing', 'answering', 'rejecting', 'dialing', 'connected', 'active', 'ending', 'ended']);
export type CallStateName = z.infer<typeof CallStateName>;

/** Final: the call is over and never changes state again (only its record is refined). */
export function isFinalState(state: CallStateName): boolean {
  return state === 'ended';
}

/**
 * How long the server waits for the Service's end of a call after a hang-up (`ending`)
 * before it ends the call on its own. A page that hung up shows "Hanging up…" for this
 * long (plus a margin) before it gives up waiting for `ended`, so both ends agree.
 */
export const ENDING_TIMEOUT_MS = 60_000;

/** Seconds a call lasted (or has lasted by `now`), from the server's `startedAt`/`endedAt`; undefined before audio started. */
export function callSeconds(view: Pick<CallView, 'startedAt' | 'endedAt'>, now: number): number | undefined {
  if (view.startedAt === undefined) return undefined;
  return Math.max(0, Math.round(((view.endedAt ?? now) - view.startedAt) / 1000));
}

/** What a client is shown of one call. */
export const CallView = z.object({
  wacid,
  phoneId,
  from: party,
  to: party,
  direction: Direction,
  state: CallStateName,
  /** Agent who holds (or held) the call, when any. */
  agent: userName.optional(),
  /** Epoch ms by which the call must be accepted (ringing calls): the accept window (ACCEPT_WINDOW_MS). */
  deadline: z.number().optional(),
  /** Epoch ms when the offer stops ringing its agent and moves on (RING_TIMEOUT_MS, never after `deadline`). */
  ringUntil: z.number().optional(),
  /** Epoch ms (server clock) when audio started (accept returned 200, or the user picked up). */
  startedAt: z.number().optional(),
  /** Epoch ms (server clock) when the call ended; set exactly when `state` is `ended`. */
  endedAt: z.number().optional(),
  /** Final result of an ended call: COMPLETED, FAILED, REJECTED, MISSED... */
  result: word.optional(),
  /** Seconds, from the terminate event when it carries one. */
  duration: z.number().optional(),
  /** Human-readable reason for an ending or a refusal (the Service's own when it gave one). */
  reason: reason.optional(),
  /** Present while this call is offered to the receiving agent: the offer to answer. */
  sdp: sdp.optional(),
  /** Epoch ms (server clock) since the agent put the call on hold; absent when not held. */
  heldSince: z.number().optional(),
  /** Milliseconds on hold so far (finished holds; add `now - heldSince` while held). */
  holdMs: z.number().optional(),
  /** How the call's audio travels, as the holding page's stats show it. */
  path: z.enum(['direct', 'relay-udp', 'relay-tcp', 'relay-tls']).optional(),
  /** The Service's numeric error code (e.g. 138006) when the call failed at the Service; `reason` words it. */
  errorCode: z.number().optional(),
  /**
   * `anchor` (MEDIA_MODE=anchor; added): the caller is held in a media server's room, so the
   * holding agent's page may take the call's audio back after a reload (`call.rejoin`).
   */
  media: z.literal('anchor').optional(),
  /** (added) Anchor mode: a transfer under way (the caller hears music): who transferred it, whom it rings now. */
  transfer: z.object({ by: userName, ringing: userName.optional() }).optional(),
  /** (added) Anchor mode: a warm transfer's consult (the caller hears music): the first agent, the target, how far. */
  consult: z.object({ by: userName, target: userName, phase: z.enum(['ringing', 'joining', 'talking']) }).optional(),
  /** (added) Anchor mode: the other agents in the call with `agent` (a conference), in the order they joined. */
  conference: z.array(userName).max(3).optional(),
  /**
   * (added) Anchor mode: the caller went to voicemail (no agent answered in time, or `closed`:
   * out of hours): `joining` while the bridge answers, `recording` while the prompt plays and
   * the message is taken. No agent holds such a call.
   */
  voicemail: z.object({ phase: z.enum(['joining', 'recording']), closed: z.literal(true).optional() }).optional(),
});
export type CallView = z.infer<typeof CallView>;

/**
 * The agent's own state (wave 2 contract, `design.md`; the rules are in the header).
 * Times are epoch ms, server clock.
 */
export const AgentStatus = z.enum(['available', 'ringing', 'on-call', 'after-call-work', 'away', 'offline']);
export type AgentStatus = z.infer<typeof AgentStatus>;
const agentStateFields = {
  status: AgentStatus,
  /** Away: the reason (one of `AWAY_REASONS`, or `Missed a call` after a ring timeout). */
  reason: z.string().max(LIMITS.reason).optional(),
  /** When this state began (time in state is counted from here). */
  since: z.number(),
  /** After-call work: when it ends on its own (the countdown). */
  until: z.number().optional(),
  /** Ringing, on-call, after-call-work: the call concerned (the one `call.wrapup` names). */
  wacid: wacid.optional(),
  /** After-call work: "More time" was used (it can be used once). */
  extended: z.boolean().optional(),
};
export const AgentState = z.object(agentStateFields);
export type AgentState = z.infer<typeof AgentState>;
/** The agent's own state, pushed to its pages. */
export const AgentStateMsg = z.object({ type: z.literal('agent.state'), ...agentStateFields });
export type AgentStateMsg = z.infer<typeof AgentStateMsg>;
/** An agent's state, to supervisors: the same fields as `agent.state` plus whose it is. */
export const AgentsStateMsg = z.object({ type: z.literal('agents.state'), name: userName, ...agentStateFields });
export type AgentsStateMsg = z.infer<typeof AgentsStateMsg>;
