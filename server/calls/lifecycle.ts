/**
 * The call lifecycle: ONE pure function, `transition(call, event, policy)`, owns every
 * state change of a call in both directions. It does no I/O and reads no clock: events
 * carry their time (`at`), and the result lists the effects (Service requests, socket
 * pushes, routing) that the engine (`engine.ts`) runs after the store accepted the new
 * state through compare-and-set.
 *
 * Rules it enforces (from the Service's interface; README.md in this folder has the table):
 * - Events repeat, arrive late and out of order. A terminate before its connect leaves a
 *   tombstone (an `ended` record) so the late connect never rings.
 * - A state never moves backwards (see `RANK`); `ended` is final.
 * - Every state except `active` has a way out by time (`nextDue`), so nothing rings or
 *   waits forever; a call nobody can take is REJECTED before the accept window closes.
 * - An accept whose outcome is unknown (timeout) is never retried: we wait for events.
 */

import { AGENT_PAGE_LOST, OUT_OF_HOURS } from '../../shared/callErrors.ts';
import { CallStateName, ENDING_TIMEOUT_MS } from '../../shared/protocol.ts';
import { queueAcceptFailed, queueAcceptOk, queueAccepted, queueAgentIn, queueAudioDue, queueJoin, queueJoined, queueRoomLost, queueTick, queueToVoicemail, QUEUE_WAIT_OVER, requeue, type QueueAudio, type QueueAudioEffect, type QueueAudioPlan } from './queueAudio.ts';
import { trackLegs, type LegTime } from './legs.ts';
import { startVoicemail, voicemailAccepted, voicemailDue, voicemailEnded, voicemailNextDue, voicemailSilent, voicemailTick, type Voicemail, type VoicemailEffect, type VoicemailPlan, type VoicemailStep } from './voicemail.ts';

// The state names are the protocol's (`shared/protocol.ts`), so server and browser share one list:
// user-initiated: queued (nobody rings), ringing (offered to `agent` until `ringUntil`),
// answering (claimed by `agent`/`conn`; preAccept/accept in flight or outcome unknown),
// rejecting (reject sent; waiting for the terminate event); business-initiated: dialing
// (connect sent with our offer), connected (remote SDP known; the user's phone rings);
// both: active (talking), ending (terminate sent or the user rejected), ended (final).
export type { CallStateName };
export const CALL_STATES: readonly CallStateName[] = CallStateName.options;

/** Progress order. A transition never lowers it; equal rank moves only queued ⇄ ringing. */
export const RANK: Readonly<Record<CallStateName, number>> = {
  queued: 1,
  ringing: 1,
  dialing: 1,
  answering: 2,
  connected: 2,
  active: 3,
  rejecting: 4,
  ending: 4,
  ended: 5,
};

export type Direction = 'USER_INITIATED' | 'BUSINESS_INITIATED';

/** What the bridge keeps of one call (stored as the call record, plus the store's `version`). */
export interface Call {
  wacid: string;
  phoneId: string;
  direction: Direction;
  from: string;
  to: string;
  state: CallStateName;
  /** Epoch ms the record was created (first event seen). */
  createdAt: number;
  /** Inbound: the caller's SDP offer, byte-exact. */
  offerSdp?: string;
  /** Inbound: epoch ms by which accept must have happened (window from min(dialTime, receipt)). */
  deadline?: number;
  /** Ringing: the agent it rings at; from `answering` on: the agent holding the call. */
  agent?: string;
  /** The connection (browser tab / program) that holds the call. */
  conn?: string;
  /**
   * The page that holds it (`/ws?tab=`: the same on every reconnect of one page, new after a
   * reload), when it sends one: a reconnect of that page moves `conn` to its new socket
   * (`attach`), so only the page's going away ends the call (`connLost`).
   */
  tab?: string;
  /** Request id of the pending `call.answer` (acked after accept returns 200) or `call.dial`. */
  reqId?: string;
  /** Ringing: when this agent's ring times out. */
  ringUntil?: number;
  /** Every agent this call was offered to, in order. */
  offeredTo: string[];
  /** Agents who declined it (never offered again, may not claim it). */
  declined: string[];
  /** Inbound: the SDP answer sent with preAccept and accept (the same text for both). */
  answerSdp?: string;
  /** Set when accept timed out: the Service may or may not have accepted. */
  acceptOutcome?: 'unknown';
  /** Outbound: our offer and the remote answer. */
  localSdp?: string;
  remoteSdp?: string;
  /** Outbound: last chat.call.status.updated value. */
  remoteStatus?: string;
  /** Epoch ms the state gives up waiting (answering, rejecting, ending, dialing, connected). */
  endBy?: number;
  /**
   * `rejecting` / `ending`: how often the reject / terminate was sent again because no
   * terminate event came (bounded, `TERMINATE_RETRIES`). The name predates rejects; stored
   * records carry it.
   */
  terminateRetries?: number;
  startedAt?: number;
  endedAt?: number;
  /** COMPLETED / FAILED (from the terminate event), REJECTED, MISSED, UNKNOWN. */
  result?: string;
  /** Seconds. */
  duration?: number;
  /** Human-readable: why it ended or was refused (the Service's own words when it gave some). */
  reason?: string;
  errorCode?: string;
  /** Ended by a terminate that came before any connect. */
  tombstone?: boolean;
  /** How `ended` was reached: the terminate event, or our own timer when none came. */
  endedBy?: 'event' | 'timeout';
  /** Epoch ms the agent put the (active) call on hold; absent when not held. */
  heldSince?: number;
  /** Milliseconds on hold, finished holds (a hold still open at the end is closed by `ended`). */
  holdMs?: number;
  /** How the audio travels, as the holding page reported it. */
  path?: NetworkPath;
  /**
   * `anchor` (MEDIA_MODE=anchor, inbound): the caller's leg is held in a Janus room and the
   * agent joins it with a leg of its own; absent: direct (the caller's audio ends in the page).
   */
  media?: 'anchor';
  /** Anchor mode: the room holding the caller's leg (which Janus, which room). Set once the caller joined. */
  anchor?: { janus: string; room: number };
  /** Anchor mode, answering: the agent's leg into the room is complete (its answer configured). */
  legReady?: boolean;
  /**
   * Anchor mode, active: the holding page was lost (reload, crash) while the caller stays in
   * the room; the agent has until then to come back (`rejoin`), or the call is ended.
   */
  recoverBy?: number;
  /**
   * Anchor mode, active: the holding agent's page did not come back within the recovery
   * time, so the call (the caller still in its room, hearing music) is offered to the next
   * agent until then; `agent` is unset meanwhile. Past it the call ends.
   */
  handoffUntil?: number;
  /** Anchor mode, handing off: the agent the call rings at now (until `ringUntil`). */
  nextAgent?: string;
  /** Anchor mode: every agent who held the call, in order (a handed-off call has several). */
  legs?: string[];
  /**
   * Anchor mode: who talked with the caller and how long, per agent (server/calls/legs.ts), once
   * a transfer, a consult, a conference or a handoff changed who is on the call; absent while
   * one agent held it from the answer on.
   */
  legTimes?: LegTime[];
  /**
   * Anchor mode, active: a cold transfer under way. The first agent (`by`) left the room and the
   * caller hears music; `ringing` is offered it until `ringUntil`; `answered` joins the room
   * (its leg); `tried`: agents it rang that did not take it.
   */
  transfer?: Transfer;
  /** Anchor mode, active: a warm transfer's consult (the holder `by` and `target` talk in a consult room; the caller hears music). */
  consult?: Consult;
  /** Anchor mode, active: the other agents in the call's room with the holder (a conference; at most 3). */
  conference?: Member[];
  /** Anchor mode, inbound: voicemail as offered to this call (`VOICEMAIL_AFTER_S`, out of hours): server/calls/voicemail.ts. */
  voicemailPlan?: VoicemailPlan;
  /** Anchor mode: the caller is leaving a message (nobody answered in time, or out of hours). */
  voicemail?: Voicemail;
  /** Anchor mode, inbound, the number has queue audio (`QUEUE_AUDIO_FILE`): the bridge answers the caller at once (greeting, music, place in the queue): server/calls/queueAudio.ts. */
  queueAudio?: QueueAudio;
}

/** An agent in a call with its own connection (a conference member, a consult's target). */
export interface Member {
  agent: string;
  conn: string;
  tab?: string;
}

export interface Consult {
  by: string;
  target: string;
  note?: string;
  phase: 'ringing' | 'joining' | 'talking';
  ringUntil?: number;
  /** Joining: the target's leg is in the consult room by then, or the consult ends (`CONSULT_JOIN_MS`). */
  joinUntil?: number;
  /** The target's connection once it answered, and its pending answer's request. */
  conn?: string;
  tab?: string;
  reqId?: string;
}

/**
 * A consult's target has this long from its answer to its leg in the consult room (the page
 * waits as long for its answer's reply); past it, or its leg failing, the consult ends: the
 * holder back with the caller, the target free. Without it a leg that never came left both
 * agents in a consult that could not start and never ended.
 */
export const CONSULT_JOIN_MS = 20_000;

/** A conference holds at most this many agents (the holder and three more). */
export const MAX_CONFERENCE_AGENTS = 4;

/** Where a transfer goes: an agent, or a queue (a business number's phone id: its QUEUES_FILE agents). */
export type TransferTo = { agent: string } | { queue: string };

export interface Transfer {
  by: string;
  note?: string;
  to: TransferTo;
  ringing?: string;
  ringUntil?: number;
  answered?: string;
  tried: string[];
}

/** `direct`, or relayed through TURN over UDP, TCP or TLS (the page's selected candidate pair). */
export type NetworkPath = 'direct' | 'relay-udp' | 'relay-tcp' | 'relay-tls';

interface At {
  wacid: string;
  /** Epoch ms the event happened (receipt time for webhooks). */
  at: number;
}

export type CallEvent =
  | (At & {
      type: 'connect';
      direction: Direction;
      phoneId: string;
      from: string;
      to: string;
      sdp?: string;
      dialTime?: number;
      /** MEDIA_MODE=anchor: an inbound call's caller leg goes into a Janus room. */
      media?: 'anchor';
      /** Inbound: the business number is closed at `at` (`HOURS_FILE`): refused at once, nobody rings (anchor mode with `voicemail`: the closed greeting and voicemail). */
      closed?: true;
      /** Anchor mode, inbound: voicemail on offer (after `afterMs` unanswered, when set; out of hours always). */
      voicemail?: { afterMs?: number; maxMs: number; promptMs: number; closedMs: number };
      /** Anchor mode, inbound: the number's queue audio (the bridge answers at once, greeting then music). */
      queueAudio?: QueueAudioPlan;
    })
  | (At & {
      type: 'terminate';
      phoneId?: string;
      result: string;
      duration?: number;
      errorCode?: string;
      reason?: string;
    })
  | (At & { type: 'status'; value: string })
  /** Routing chose `agent` for this queued call (the engine reserved the agent); `ringMs`: its queue's ring timeout. */
  | (At & { type: 'offer'; agent: string; ringMs?: number })
  | (At & { type: 'decline'; agent: string; conn: string; reqId: string })
  /** Every connection of `agent` vanished (closed, or heartbeat missed) past the grace. */
  | (At & { type: 'agentGone'; agent: string })
  /**
   * The connection that holds the call (`conn`: the page with its audio, in direct mode) is
   * gone — the page left (reload, close) or the socket stayed lost past the reconnect grace
   * without the page attaching again — so nobody hears the caller: the call is ended.
   */
  | (At & { type: 'connLost'; agent: string; conn: string })
  /** The page that holds the call (its `tab`) is back on a new connection (a reconnect): the call is held there now. */
  | (At & { type: 'attach'; agent: string; conn: string; tab: string })
  | (At & { type: 'answer'; agent: string; conn: string; tab?: string; reqId: string; sdp: string })
  | (At & { type: 'acceptOk' })
  | (At & { type: 'acceptRefused'; code: string; reason: string })
  | (At & { type: 'acceptUnknown' })
  | (At & { type: 'hangup'; agent: string; conn: string; reqId: string })
  /** The holding agent puts the active call on hold / takes it off hold (the page plays the music). */
  | (At & { type: 'hold'; agent: string; conn: string; reqId: string })
  | (At & { type: 'resume'; agent: string; conn: string; reqId: string })
  /** The holding page says how the audio travels. */
  | (At & { type: 'path'; agent: string; conn: string; reqId: string; path: NetworkPath })
  /** Outbound: the connect request returned this wacid. */
  | (At & {
      type: 'dialed';
      agent: string;
      conn: string;
      tab?: string;
      reqId: string;
      phoneId: string;
      from: string;
      to: string;
      sdp: string;
    })
  /** Anchor mode: the call has a room (which Janus, which room). */
  | (At & { type: 'anchored'; janus: string; room: number })
  /** Anchor mode: the caller joined the room with the Service's offer; `sdp` is Janus's complete answer (the business SDP). */
  | (At & { type: 'callerJoined'; sdp: string })
  /** Anchor mode: no room could hold the caller (no Janus reachable, Janus refused the offer). */
  | (At & { type: 'anchorFailed'; reason: string })
  /** Anchor mode: the holding agent's leg into the room is complete (it answered Janus's offer). */
  | (At & { type: 'legReady'; agent: string; conn: string })
  /** Anchor mode: the agent's leg could not be set up (no offer from Janus, or its answer refused). */
  | (At & { type: 'legFailed'; agent: string; reason: string })
  /** Anchor mode: the Janus holding the call's room is lost (killed, restarted, unreachable): the caller's audio is gone. */
  | (At & { type: 'roomLost'; reason: string })
  /** Anchor mode: the holding agent's page (a new one after a reload) joins the call's room again with a new leg. */
  | (At & { type: 'rejoin'; agent: string; conn: string; tab?: string; reqId: string })
  /** Anchor mode: the holding agent hands the active call to another agent or a queue (cold: it leaves at once). */
  | (At & { type: 'transfer'; agent: string; conn: string; reqId: string; to: TransferTo; note?: string; mode?: 'cold' | 'warm' })
  /** Anchor mode: the holder finishes a warm transfer: `complete`, `cancel` or `conference`. */
  | (At & { type: 'transferAction'; agent: string; conn: string; reqId: string; action: 'complete' | 'cancel' | 'conference' })
  /** Anchor mode: the consult room could not be made (or the holder not moved into it): the consult is cancelled. */
  | (At & { type: 'consultFailed'; reason: string })
  /** Anchor mode, voicemail: the caller has been silent for VOICEMAIL_SILENCE_S (measured on the recording): the message ends. */
  | (At & { type: 'voicemailSilent' })
  /** Time passed (timer or sweep): fire whatever is due at `at`. */
  | (At & { type: 'tick' });

export type CallEventType = CallEvent['type'];
export const CALL_EVENT_TYPES: readonly CallEventType[] = [
  'connect',
  'terminate',
  'status',
  'offer',
  'decline',
  'agentGone',
  'connLost',
  'attach',
  'answer',
  'acceptOk',
  'acceptRefused',
  'acceptUnknown',
  'hangup',
  'hold',
  'resume',
  'path',
  'dialed',
  'anchored',
  'callerJoined',
  'anchorFailed',
  'legReady',
  'legFailed',
  'rejoin',
  'roomLost',
  'transfer',
  'transferAction',
  'consultFailed',
  'voicemailSilent',
  'tick',
];

export type ReplyCode = 'FORBIDDEN' | 'CONFLICT' | 'SERVICE_ERROR' | 'OUTCOME_UNKNOWN';

export type Effect =
  /** Find an agent for this queued call (routing), then apply an `offer` event. */
  | { kind: 'route' }
  /** Push `call.offered` to every connection of `agent`. */
  | { kind: 'offer'; agent: string }
  /** Push `call.revoked` to `agent`'s connections (all but `exceptConn`). */
  | { kind: 'revoke'; agent: string; reason: string; exceptConn?: string }
  /** preAccept, then accept, with this exact SDP answer. */
  | { kind: 'accept'; sdp: string }
  | { kind: 'reject' }
  | { kind: 'terminate' }
  /** Answer a client request. */
  | { kind: 'reply'; conn: string; reqId: string; ok: true; result?: Record<string, unknown> }
  | { kind: 'reply'; conn: string; reqId: string; ok: false; code: ReplyCode; message: string }
  /** Push `call.state` to everyone who may see this call. */
  | { kind: 'notify'; also?: string }
  | { kind: 'remoteAnswer'; agent: string; sdp: string }
  /** The agent holds a call now (not offered others). */
  | { kind: 'agentBusy'; agent: string }
  /** The agent no longer holds this call; `wrapUp` when a conversation happened. */
  | { kind: 'agentFree'; agent: string; wrapUp: boolean }
  /** Ring timed out: set the agent away so calls stop ringing at an empty desk. */
  | { kind: 'agentNoAnswer'; agent: string }
  /** Anchor mode: a room for the call (`anchored` / `anchorFailed` follow). */
  | { kind: 'anchor' }
  /** Anchor mode: the caller joins the room with the Service's offer, right before the accept (`callerJoined` / `anchorFailed` follow). */
  | { kind: 'callerLeg' }
  /** Anchor mode: a leg for the agent into the room (or the consult room), offered to its connection (`call.legOffer`). */
  | { kind: 'agentLeg'; agent: string; conn: string; consult?: true }
  /** Anchor mode: a consult room beside the call's, and the agent's leg moved into it (`consultFailed` if not). */
  | { kind: 'consult'; agent: string }
  /** Anchor mode: the agent's leg moves into the call's room or the consult room (the same peer connection). */
  | { kind: 'moveAgent'; agent: string; to: 'call' | 'consult' }
  /** Anchor mode: the consult room is over. */
  | { kind: 'closeConsult' }
  /** Anchor mode: the agent's leg leaves the room (a transfer: the first agent is out at once). */
  | { kind: 'leaveRoom'; agent: string }
  /** Anchor mode: music into the room (the caller waits for a transfer's target), or no more of it. */
  | { kind: 'music'; on: boolean }
  /** Anchor mode: offer the transferred call (an `offer` event follows): the target, or back to `prefer` (the first agent) when available, else the queue. */
  | { kind: 'routeTransfer'; prefer?: string }
  /** Anchor mode: the call's room is no longer needed: legs detached, room destroyed. */
  | { kind: 'closeRoom'; janus: string; room: number }
  /** Anchor mode: music into the room while the caller waits (on hold, the agent's page away), or no more. */
  | { kind: 'roomMusic'; janus: string; room: number; on: boolean }
  /** Anchor mode: the agent leaves the caller's mix (hold) or comes back. */
  | { kind: 'agentMuted'; janus: string; room: number; agent: string; muted: boolean }
  /** Anchor mode: voicemail's prompt and recording, and the message saved (server/calls/voicemail.ts). */
  | VoicemailEffect
  /** Anchor mode: queue audio's greeting, place in the queue, and their end (server/calls/queueAudio.ts). */
  | QueueAudioEffect;

export interface Policy {
  acceptWindowMs: number;
  ringTimeoutMs: number;
  /** A call still unclaimed this long before its deadline is rejected. */
  rejectMarginMs: number;
  /** After the deadline, how long an `answering` call waits for accept's outcome. */
  answerGraceMs: number;
  /** How long `rejecting`/`ending` wait for the terminate event before ending anyway. */
  endingTimeoutMs: number;
  /**
   * `rejecting` / `ending`: with no terminate event this long after the reject / terminate
   * was sent (its answer was an error, or none came), send it again; at most
   * `TERMINATE_RETRIES` times. The engine gives each request up before the next is due, so
   * two never overlap.
   */
  terminateRetryMs: number;
  /** How long an outbound call may stay unanswered (dialing/connected). */
  dialTimeoutMs: number;
  /** Anchor mode: how long the caller waits in the room for the agent's lost page to come back before the call ends. */
  agentRecoveryMs: number;
}

export const DEFAULT_POLICY: Policy = Object.freeze({
  acceptWindowMs: 30_000,
  ringTimeoutMs: 15_000,
  rejectMarginMs: 3_000,
  answerGraceMs: 10_000,
  endingTimeoutMs: ENDING_TIMEOUT_MS,
  terminateRetryMs: 5_000,
  dialTimeoutMs: 90_000,
  agentRecoveryMs: 20_000,
});

export interface Transition {
  /** The next call (the same object when nothing changed). */
  call: Call | null;
  effects: Effect[];
}

/** The accept deadline: the window runs from the earlier of dialTime and receipt. */
export function acceptDeadline(receivedAt: number, dialTime: number | undefined, windowMs: number): number {
  const start = dialTime !== undefined && Number.isFinite(dialTime) ? Math.min(dialTime, receivedAt) : receivedAt;
  return start + windowMs;
}

/** When `tick` next has something to do for this call (undefined: nothing by time). */
export function nextDue(call: Call, policy: Policy = DEFAULT_POLICY): number | undefined {
  const closing = call.deadline !== undefined ? call.deadline - policy.rejectMarginMs : undefined;
  switch (call.state) {
    case 'queued':
      return min(min(closing, voicemailDue(call)), queueAudioDue(call));
    case 'ringing':
      return min(min(min(call.ringUntil, closing), voicemailDue(call)), queueAudioDue(call));
    case 'rejecting':
    case 'ending':
      return min(call.endBy, terminateRetryDue(call, policy));
    case 'answering':
    case 'dialing':
    case 'connected':
      return call.endBy;
    case 'active':
      return min(min(min(call.recoverBy, min(call.handoffUntil, call.nextAgent !== undefined ? call.ringUntil : undefined)), min(call.transfer?.ringUntil, min(call.consult?.ringUntil, call.consult?.joinUntil))), voicemailNextDue(call));
    case 'ended':
      return undefined;
  }
}

/** Rejects / terminates sent again at most this many times (the Service's rule: bounded retries). */
export const TERMINATE_RETRIES = 2;

/**
 * When `rejecting` sends its reject again, or `ending` its terminate: `terminateRetryMs`
 * after it entered the state (`endBy` − `endingTimeoutMs`), then as long again after each
 * retry. Sending it again is safe (the call is over for us either way; the Service refuses a
 * reject or terminate of an ended call and changes nothing) and reconciles first: the
 * terminate event a request that took effect would have brought is not here. Without it a
 * reject answered 500 or nothing left the caller ringing until the Service's own accept
 * window ran out. None when the user's REJECTED status ended it, or the phone id is not
 * known yet.
 */
export function terminateRetryDue(call: Call, policy: Policy): number | undefined {
  const tries = call.terminateRetries ?? 0;
  if ((call.state !== 'rejecting' && call.state !== 'ending') || call.endBy === undefined || tries >= TERMINATE_RETRIES) return undefined;
  if (!call.phoneId || call.remoteStatus === 'REJECTED') return undefined;
  return call.endBy - policy.endingTimeoutMs + (tries + 1) * policy.terminateRetryMs;
}

function min(a: number | undefined, b: number | undefined): number | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Math.min(a, b);
}

const same = (call: Call | null, ...effects: Effect[]): Transition => ({ call, effects });
const to = (call: Call, patch: Partial<Call>, ...effects: Effect[]): Transition => ({
  call: { ...call, ...patch },
  effects,
});
const ok = (e: { conn: string; reqId: string }, result?: Record<string, unknown>): Effect =>
  result ? { kind: 'reply', conn: e.conn, reqId: e.reqId, ok: true, result } : { kind: 'reply', conn: e.conn, reqId: e.reqId, ok: true };
const fail = (e: { conn: string; reqId: string }, code: ReplyCode, message: string): Effect => ({
  kind: 'reply',
  conn: e.conn,
  reqId: e.reqId,
  ok: false,
  code,
  message,
});

/** A voicemail or queue-audio step (server/calls/voicemail.ts, queueAudio.ts) as a transition; `extra` patches more of the call. */
const stepTo = (call: Call, s: VoicemailStep | { patch: Partial<Call>; effects: Effect[] }, extra: Partial<Call> = {}): Transition => to(call, { ...s.patch, ...extra }, ...s.effects);

/** Ends a call: the fields every route into `ended` sets. */
function ended(call: Call, at: number, patch: Partial<Call>): Partial<Call> {
  return {
    state: 'ended',
    endedAt: at,
    ringUntil: undefined,
    endBy: undefined,
    reqId: undefined,
    duration: call.startedAt !== undefined ? Math.max(0, Math.round((at - call.startedAt) / 1000)) : 0,
    // A call that ends on hold: the open hold counts up to the end.
    ...(call.heldSince !== undefined ? { heldSince: undefined, holdMs: (call.holdMs ?? 0) + Math.max(0, at - call.heldSince) } : {}),
    ...patch,
  };
}

/** The agent holding the call from `answering` on (not a merely ringing one). */
function holder(call: Call): string | undefined {
  return call.state === 'ringing' || call.state === 'queued' ? undefined : call.agent;
}

/**
 * Apply one event to a call (`null`: no record yet). Pure: the same inputs always give
 * the same output; the input is never mutated.
 */
export function transition(call: Call | null, event: CallEvent, policy: Policy = DEFAULT_POLICY): Transition {
  let t = step(call, event, policy);
  // Voicemail: a call that ends while recording keeps its message (saved before the room closes).
  const vm = t.call?.state === 'ended' && call?.state !== 'ended' ? voicemailEnded(t.call, t.call.endedAt ?? event.at) : undefined;
  if (vm) t = { call: { ...t.call!, ...vm.patch }, effects: [...t.effects, ...vm.effects] };
  // Anchor mode: who is on the call now (a transfer, a consult, a conference moved it).
  const tracked = trackLegs(call, t.call, event.at);
  if (tracked !== t.call) t = { ...t, call: tracked };
  // Anchor mode: a call that ends gives its room back (whatever ended it).
  const after = t.call;
  if (after?.anchor && after.state === 'ended' && call?.state !== 'ended') {
    return { call: after, effects: [...t.effects, { kind: 'closeRoom', janus: after.anchor.janus, room: after.anchor.room }] };
  }
  return t;
}

function step(call: Call | null, event: CallEvent, policy: Policy): Transition {
  if (call === null) return fromNothing(event, policy);
  const e = event;
  switch (e.type) {
    case 'connect':
      return onConnect(call, e);
    case 'terminate':
      return onTerminate(call, e);
    case 'status':
      return onStatus(call, e, policy);
    case 'offer': {
      if (handingOff(call)) return onHandoffOffer(call, e, policy);
      if (call.transfer) return onTransferOffer(call, e, policy);
      const closing = call.deadline !== undefined ? call.deadline - policy.rejectMarginMs : Infinity;
      if (call.state !== 'queued' || call.declined.includes(e.agent) || e.at >= closing) return same(call);
      return to(
        call,
        {
          state: 'ringing',
          agent: e.agent,
          ringUntil: Math.min(e.at + (e.ringMs ?? policy.ringTimeoutMs), closing),
          offeredTo: call.offeredTo.includes(e.agent) ? call.offeredTo : [...call.offeredTo, e.agent],
        },
        { kind: 'offer', agent: e.agent },
        { kind: 'notify' },
      );
    }
    case 'decline': {
      if (handingOff(call) && call.nextAgent === e.agent) return ringMissed(call, e.agent, 'declined', ok(e), { declined: [...call.declined, e.agent] });
      if (call.transfer?.ringing === e.agent) return transferNotTaken(call, e.agent, 'declined', ok(e));
      if (call.consult?.phase === 'ringing' && call.consult.target === e.agent) return endConsult(call, e.at, 'declined', ok(e));
      if (call.state === 'ringing' && call.agent === e.agent) {
        return to(
          call,
          { state: 'queued', agent: undefined, ringUntil: undefined, declined: [...call.declined, e.agent] },
          { kind: 'revoke', agent: e.agent, reason: 'declined' },
          ok(e),
          { kind: 'route' },
          { kind: 'notify' },
        );
      }
      // A repeated decline, or one racing a ring timeout: nothing left to do.
      if (call.offeredTo.includes(e.agent)) return same(call, ok(e));
      return same(call, fail(e, 'FORBIDDEN', 'this call was not offered to you'));
    }
    case 'agentGone':
      if (handingOff(call) && call.nextAgent === e.agent) return ringMissed(call, e.agent, 'agent unreachable');
      if (call.transfer?.ringing === e.agent) return transferNotTaken(call, e.agent, 'agent unreachable');
      if (call.state === 'ringing' && call.agent === e.agent) {
        return to(
          call,
          { state: 'queued', agent: undefined, ringUntil: undefined },
          { kind: 'revoke', agent: e.agent, reason: 'agent unreachable' },
          { kind: 'route' },
          { kind: 'notify' },
        );
      }
      return same(call);
    case 'connLost':
      return onConnLost(call, e, policy);
    case 'attach':
      return onAttach(call, e);
    case 'answer':
      return onAnswer(call, e, policy);
    case 'acceptOk': {
      // Queue audio: the bridge's own accept of a waiting caller.
      const q = queueAcceptOk(call, e.at);
      if (q) return stepTo(call, q);
      if (call.state !== 'answering') return same(call);
      if (call.voicemail) return stepTo(call, voicemailAccepted(call, e.at), { startedAt: e.at, acceptOutcome: undefined, endBy: undefined, reqId: undefined });
      return to(
        call,
        { state: 'active', startedAt: e.at, acceptOutcome: undefined, endBy: undefined, reqId: undefined },
        ...(call.conn && call.reqId ? [ok({ conn: call.conn, reqId: call.reqId }, { wacid: call.wacid, startedAt: e.at })] : []),
        { kind: 'notify' },
      );
    }
    case 'acceptRefused': {
      const q = queueAcceptFailed(call, e.at, policy.endingTimeoutMs, { code: e.code, reason: e.reason });
      if (q) return stepTo(call, q);
      if (call.state !== 'answering') return same(call);
      // The Service said no: the caller must not be left ringing, so reject, and show its reason.
      return to(
        call,
        { state: 'rejecting', reason: e.reason, errorCode: e.code, endBy: e.at + policy.endingTimeoutMs, reqId: undefined },
        ...(call.conn && call.reqId ? [fail({ conn: call.conn, reqId: call.reqId }, 'SERVICE_ERROR', e.reason)] : []),
        { kind: 'reject' },
        ...(call.agent ? [{ kind: 'agentFree', agent: call.agent, wrapUp: false } as Effect] : []),
        { kind: 'notify' },
      );
    }
    case 'acceptUnknown': {
      const q = queueAcceptFailed(call, e.at, policy.endingTimeoutMs);
      if (q) return stepTo(call, q);
      if (call.state !== 'answering' || call.acceptOutcome === 'unknown') return same(call);
      // Accepting again could double-accept: wait for the terminate event or `endBy`.
      return to(
        call,
        { acceptOutcome: 'unknown', reqId: undefined },
        ...(call.conn && call.reqId
          ? [fail({ conn: call.conn, reqId: call.reqId }, 'OUTCOME_UNKNOWN', 'the Service did not answer in time; waiting for its events')]
          : []),
        { kind: 'notify' },
      );
    }
    case 'hangup':
      return onHangup(call, e, policy);
    case 'hold':
    case 'resume':
      return onHold(call, e);
    case 'path':
      return onPath(call, e);
    case 'dialed':
      return onDialed(call, e);
    case 'anchored':
      return onAnchored(call, e);
    case 'callerJoined':
      // Janus's answer: the accept (preAccept + accept, the same text) goes with it.
      // Queue audio: the caller joined at once (waiting, or an agent answered meanwhile).
      if (queueJoined(call)) return to(call, { answerSdp: e.sdp }, { kind: 'accept', sdp: e.sdp });
      if (call.state !== 'answering' || call.media !== 'anchor' || call.answerSdp !== undefined || (!call.legReady && !call.voicemail)) return same(call);
      return to(call, { answerSdp: e.sdp }, { kind: 'accept', sdp: e.sdp });
    case 'anchorFailed':
      return onAnchorFailed(call, e, policy);
    case 'legReady':
      if (call.transfer?.answered !== undefined) return onTransferJoined(call, e);
      if (call.consult?.phase === 'joining' && call.consult.target === e.agent && call.consult.conn === e.conn) {
        const c = call.consult;
        return to(call, { consult: { ...c, phase: 'talking', reqId: undefined, joinUntil: undefined } }, ...(c.reqId ? [ok({ conn: e.conn, reqId: c.reqId }, { wacid: call.wacid, startedAt: call.startedAt ?? e.at })] : []), { kind: 'notify' });
      }
      if (holder(call) === e.agent) {
        // Queue audio: the caller is in the room already (and answered: active now, the music stops).
        const q = queueAgentIn(call, e.at, e.conn);
        if (q) return stepTo(call, q);
      }
      if (call.state === 'active') return onLegBack(call, e);
      if (call.state !== 'answering' || call.media !== 'anchor' || holder(call) !== e.agent || call.conn !== e.conn || call.legReady) return same(call);
      // The agent is in the room: the caller joins now, and its answer goes to the Service (`callerJoined`).
      return to(call, { legReady: true }, { kind: 'callerLeg' });
    case 'rejoin':
      return onRejoin(call, e);
    case 'roomLost':
      return onRoomLost(call, e, policy);
    case 'legFailed':
      // A consult's target whose leg could not join the consult room: the consult ends.
      if (call.state === 'active' && call.consult?.phase === 'joining' && call.consult.target === e.agent) {
        return endConsult(call, e.at, `${e.agent}'s audio could not join: ${e.reason}`);
      }
      // Active (a rejoin's leg failed): the agent is still without audio; the recovery clock runs.
      if (call.state === 'active' && call.media === 'anchor' && holder(call) === e.agent) {
        return call.recoverBy !== undefined ? same(call) : to(call, { recoverBy: e.at + policy.agentRecoveryMs });
      }
      if (call.state !== 'answering' || call.media !== 'anchor' || holder(call) !== e.agent) return same(call);
      {
        // Queue audio: the caller was answered already: back to the queue, not refused.
        const q = requeue(call, e.at, `your audio could not join the call: ${e.reason}`);
        if (q) return stepTo(call, q);
      }
      return refuseAnswering(call, e.at, 'INTERNAL', `the agent's audio could not join the call: ${e.reason}`, policy);
    case 'transfer':
      return e.mode === 'warm' ? onConsult(call, e, policy) : onTransfer(call, e);
    case 'transferAction':
      return onTransferAction(call, e);
    case 'consultFailed':
      return call.consult ? endConsult(call, e.at, `the consult could not start: ${e.reason}`) : same(call);
    case 'voicemailSilent': {
      const vm = voicemailSilent(call, e.at, policy.endingTimeoutMs);
      return vm ? stepTo(call, vm) : same(call);
    }
    case 'tick':
      if (call.state === 'active' && call.transfer?.ringing && call.transfer.ringUntil !== undefined && e.at >= call.transfer.ringUntil) {
        return transferNotTaken(call, call.transfer.ringing, 'not answered', { kind: 'agentNoAnswer', agent: call.transfer.ringing });
      }
      if (call.state === 'active' && call.consult?.phase === 'ringing' && call.consult.ringUntil !== undefined && e.at >= call.consult.ringUntil) {
        return endConsult(call, e.at, 'not answered', { kind: 'agentNoAnswer', agent: call.consult.target });
      }
      if (call.state === 'active' && call.consult?.phase === 'joining' && call.consult.joinUntil !== undefined && e.at >= call.consult.joinUntil) {
        return endConsult(call, e.at, `${call.consult.target}'s audio did not join in time`);
      }
      return onTick(call, e, policy);
  }
}

// ---- transfer (anchor mode) -------------------------------------------------------------

/** The holding agent hands the call on (cold): out of the room at once, the caller hears music, the target is offered it. */
function onTransfer(call: Call, e: Extract<CallEvent, { type: 'transfer' }>): Transition {
  if (call.media !== 'anchor' || !call.anchor) return same(call, fail(e, 'CONFLICT', 'transfer needs the media anchor (MEDIA_MODE=anchor): in direct mode the caller’s audio ends in your page'));
  if (call.state !== 'active' || holder(call) !== e.agent || call.conn !== e.conn) return same(call, fail(e, 'FORBIDDEN', 'you do not hold this call on this connection'));
  if (call.transfer) return same(call, fail(e, 'CONFLICT', 'a transfer of this call is under way'));
  if ('agent' in e.to && e.to.agent === e.agent) return same(call, fail(e, 'CONFLICT', 'you cannot transfer a call to yourself'));
  const transfer: Transfer = { by: e.agent, to: e.to, tried: [], ...(e.note ? { note: e.note } : {}) };
  // An agent named by the holder is asked afresh: an earlier decline of this call (its first
  // ring, a consult) does not keep the transfer from ringing them. Routing to a queue still skips it.
  const named = 'agent' in e.to ? e.to.agent : undefined;
  return to(
    call,
    {
      transfer,
      ...(named !== undefined && call.declined.includes(named) ? { declined: call.declined.filter((a) => a !== named) } : {}),
      agent: undefined,
      conn: undefined,
      tab: undefined,
      reqId: undefined,
      recoverBy: undefined,
      // A hold still open ends here: the music is the transfer's now.
      ...(call.heldSince !== undefined ? { heldSince: undefined, holdMs: (call.holdMs ?? 0) + Math.max(0, e.at - call.heldSince) } : {}),
    },
    ok(e),
    { kind: 'leaveRoom', agent: e.agent },
    { kind: 'music', on: true },
    { kind: 'agentFree', agent: e.agent, wrapUp: true },
    { kind: 'routeTransfer' },
    { kind: 'notify' },
  );
}

/** Routing chose who the transferred call rings now. */
function onTransferOffer(call: Call, e: Extract<CallEvent, { type: 'offer' }>, policy: Policy): Transition {
  const t = call.transfer!;
  if (call.state !== 'active' || t.ringing !== undefined || t.answered !== undefined || call.declined.includes(e.agent)) return same(call);
  return to(
    call,
    {
      transfer: { ...t, ringing: e.agent, ringUntil: e.at + policy.ringTimeoutMs },
      offeredTo: call.offeredTo.includes(e.agent) ? call.offeredTo : [...call.offeredTo, e.agent],
    },
    { kind: 'offer', agent: e.agent },
    { kind: 'notify' },
  );
}

/** The transfer's target answered: its leg into the room is offered to the answering connection. */
function onTransferAnswer(call: Call, e: Extract<CallEvent, { type: 'answer' }>): Transition {
  const t = call.transfer!;
  if (t.ringing !== e.agent) return same(call, fail(e, t.answered === e.agent ? 'CONFLICT' : 'FORBIDDEN', t.answered === e.agent ? 'you answered this call already' : 'this call is not offered to you'));
  return to(
    call,
    { agent: e.agent, conn: e.conn, ...(e.tab !== undefined ? { tab: e.tab } : {}), reqId: e.reqId, transfer: { ...t, ringing: undefined, ringUntil: undefined, answered: e.agent } },
    { kind: 'agentLeg', agent: e.agent, conn: e.conn },
    { kind: 'revoke', agent: e.agent, reason: 'answered on another tab', exceptConn: e.conn },
    { kind: 'agentBusy', agent: e.agent },
    { kind: 'notify' },
  );
}

/** The target's leg is in the room: the music stops, the transfer is over, the answer is acked. */
function onTransferJoined(call: Call, e: Extract<CallEvent, { type: 'legReady' }>): Transition {
  const t = call.transfer!;
  if (call.state !== 'active' || t.answered !== e.agent || call.agent !== e.agent || call.conn !== e.conn) return same(call);
  return to(
    call,
    { transfer: undefined, reqId: undefined },
    { kind: 'music', on: false },
    ...(call.reqId ? [ok({ conn: e.conn, reqId: call.reqId }, { wacid: call.wacid, startedAt: call.startedAt ?? e.at })] : []),
    { kind: 'notify' },
  );
}

/** A warm transfer: the holder moves into a consult room (the caller hears music) and the target agent rings. */
function onConsult(call: Call, e: Extract<CallEvent, { type: 'transfer' }>, policy: Policy): Transition {
  if (call.media !== 'anchor' || !call.anchor) return same(call, fail(e, 'CONFLICT', 'transfer needs the media anchor (MEDIA_MODE=anchor): in direct mode the caller’s audio ends in your page'));
  if (call.state !== 'active' || holder(call) !== e.agent || call.conn !== e.conn) return same(call, fail(e, 'FORBIDDEN', 'you do not hold this call on this connection'));
  if (call.transfer || call.consult) return same(call, fail(e, 'CONFLICT', 'a transfer of this call is under way'));
  if (!('agent' in e.to)) return same(call, fail(e, 'CONFLICT', 'a warm transfer goes to an agent (to.agent), not a queue'));
  const target = e.to.agent;
  if (target === e.agent || call.conference?.some((m) => m.agent === target)) return same(call, fail(e, 'CONFLICT', `${target} is on this call already`));
  if (1 + (call.conference?.length ?? 0) >= MAX_CONFERENCE_AGENTS) return same(call, fail(e, 'CONFLICT', `a call holds at most ${MAX_CONFERENCE_AGENTS} agents`));
  return to(
    call,
    {
      consult: { by: e.agent, target, phase: 'ringing', ringUntil: e.at + policy.ringTimeoutMs, ...(e.note ? { note: e.note } : {}) },
      offeredTo: call.offeredTo.includes(target) ? call.offeredTo : [...call.offeredTo, target],
      ...(call.heldSince !== undefined ? { heldSince: undefined, holdMs: (call.holdMs ?? 0) + Math.max(0, e.at - call.heldSince) } : {}),
    },
    ok(e),
    // The caller hears music, unless a conference's other agents stay with them.
    ...(call.conference?.length ? [] : [{ kind: 'music', on: true } as Effect]),
    { kind: 'consult', agent: e.agent },
    { kind: 'offer', agent: target },
    { kind: 'notify' },
  );
}

/** The consult's target answered: its leg goes into the consult room; the answer's ack once it is there. */
function onConsultAnswer(call: Call, e: Extract<CallEvent, { type: 'answer' }>): Transition {
  const c = call.consult!;
  if (c.phase !== 'ringing' || c.target !== e.agent) return same(call, fail(e, c.target === e.agent ? 'CONFLICT' : 'FORBIDDEN', c.target === e.agent ? 'you answered this call already' : 'this call is not offered to you'));
  return to(
    call,
    { consult: { ...c, phase: 'joining', ringUntil: undefined, joinUntil: e.at + CONSULT_JOIN_MS, conn: e.conn, reqId: e.reqId, ...(e.tab !== undefined ? { tab: e.tab } : {}) } },
    { kind: 'agentLeg', agent: e.agent, conn: e.conn, consult: true },
    { kind: 'revoke', agent: e.agent, reason: 'answered on another tab', exceptConn: e.conn },
    { kind: 'agentBusy', agent: e.agent },
    { kind: 'notify' },
  );
}

/** The consult is over without a hand-over (cancelled, declined, not answered, failed): the holder is back with the caller. */
function endConsult(call: Call, at: number, reason: string, ...extra: Effect[]): Transition {
  const c = call.consult!;
  const effects: Effect[] = [];
  if (c.phase === 'ringing') {
    effects.push(...extra.filter((x) => x.kind === 'agentNoAnswer'), { kind: 'revoke', agent: c.target, reason });
  } else {
    if (c.conn && c.reqId) effects.push(fail({ conn: c.conn, reqId: c.reqId }, 'CONFLICT', `the consult ended: ${reason}`));
    effects.push({ kind: 'leaveRoom', agent: c.target }, { kind: 'agentFree', agent: c.target, wrapUp: false });
  }
  effects.push(...extra.filter((x) => x.kind !== 'agentNoAnswer'));
  effects.push({ kind: 'moveAgent', agent: c.by, to: 'call' }, { kind: 'music', on: false }, { kind: 'closeConsult' }, { kind: 'notify', also: c.target });
  const declined = reason === 'declined' && !call.declined.includes(c.target) ? { declined: [...call.declined, c.target] } : {};
  return to(call, { consult: undefined, ...declined }, ...effects);
}

/** The holder finishes a warm transfer: complete (the target takes the caller), cancel, or conference (all three together). */
function onTransferAction(call: Call, e: Extract<CallEvent, { type: 'transferAction' }>): Transition {
  const c = call.consult;
  if (!c) return same(call, fail(e, 'CONFLICT', 'no warm transfer of this call is under way'));
  if (call.state !== 'active' || holder(call) !== e.agent || call.conn !== e.conn || c.by !== e.agent) return same(call, fail(e, 'FORBIDDEN', 'only the agent who started the transfer finishes it, from the same connection'));
  if (e.action === 'cancel') return endConsult(call, e.at, `cancelled by ${e.agent}`, ok(e));
  if (c.phase !== 'talking' || !c.conn) return same(call, fail(e, 'CONFLICT', `${c.target} has not joined the consult yet`));
  const member: Member = { agent: c.target, conn: c.conn, ...(c.tab !== undefined ? { tab: c.tab } : {}) };
  const back: Effect[] = [{ kind: 'music', on: false }, { kind: 'closeConsult' }];
  if (e.action === 'complete') {
    return to(
      call,
      { agent: member.agent, conn: member.conn, tab: member.tab, consult: undefined, recoverBy: undefined },
      ok(e),
      { kind: 'moveAgent', agent: member.agent, to: 'call' },
      { kind: 'leaveRoom', agent: e.agent },
      ...back,
      { kind: 'agentFree', agent: e.agent, wrapUp: true },
      { kind: 'notify', also: e.agent },
    );
  }
  return to(
    call,
    { consult: undefined, conference: [...(call.conference ?? []), member] },
    ok(e),
    { kind: 'moveAgent', agent: e.agent, to: 'call' },
    { kind: 'moveAgent', agent: member.agent, to: 'call' },
    ...back,
    { kind: 'notify' },
  );
}

/** A conference: an agent leaves (its `call.hangup`); the caller stays with the others. The holder leaving hands the call to the next. */
function leaveConference(call: Call, e: Extract<CallEvent, { type: 'hangup' }>): Transition | undefined {
  const members = call.conference ?? [];
  const i = members.findIndex((m) => m.agent === e.agent);
  if (i >= 0) {
    if (members[i]!.conn !== e.conn) return same(call, fail(e, 'FORBIDDEN', 'you are on this call from another connection'));
    return to(
      call,
      { conference: members.filter((_, k) => k !== i) },
      { kind: 'leaveRoom', agent: e.agent },
      { kind: 'agentFree', agent: e.agent, wrapUp: true },
      ok(e),
      { kind: 'notify', also: e.agent },
    );
  }
  if (holder(call) !== e.agent || call.conn !== e.conn) return undefined;
  const [next, ...rest] = members;
  return to(
    call,
    { agent: next!.agent, conn: next!.conn, tab: next!.tab, conference: rest, recoverBy: undefined },
    { kind: 'leaveRoom', agent: e.agent },
    { kind: 'agentFree', agent: e.agent, wrapUp: true },
    ok(e),
    { kind: 'notify', also: e.agent },
  );
}

/** The agent it rang did not take it (declined, rang out, gone): back to the first agent when available, else the queue. */
function transferNotTaken(call: Call, agent: string, reason: string, ...extra: Effect[]): Transition {
  const t = call.transfer!;
  const rangOut = extra.some((x) => x.kind === 'agentNoAnswer');
  return to(
    call,
    {
      transfer: { ...t, ringing: undefined, ringUntil: undefined, tried: t.tried.includes(agent) ? t.tried : [...t.tried, agent] },
      ...(reason === 'declined' && !call.declined.includes(agent) ? { declined: [...call.declined, agent] } : {}),
    },
    // Away first (a ring-out), then the ring stops, as for any offer.
    ...extra.filter((x) => x.kind === 'agentNoAnswer'),
    { kind: 'revoke', agent, reason },
    ...extra.filter((x) => x.kind !== 'agentNoAnswer'),
    { kind: 'routeTransfer', ...(agent !== t.by || !rangOut ? { prefer: t.by } : {}) },
    { kind: 'notify' },
  );
}

/**
 * Anchor mode: the call has a room; an agent who answered meanwhile is offered its leg now.
 * A room opened for a call that is over already (or a second room) is given back.
 */
function onAnchored(call: Call, e: Extract<CallEvent, { type: 'anchored' }>): Transition {
  const room = { janus: e.janus, room: e.room };
  const live = call.state === 'queued' || call.state === 'ringing' || call.state === 'answering';
  if (call.media !== 'anchor' || call.anchor !== undefined || !live) {
    const same_ = call.anchor?.janus === e.janus && call.anchor.room === e.room;
    return same(call, ...(same_ ? [] : [{ kind: 'closeRoom', ...room } as Effect]));
  }
  // Queue audio: the caller joins at once (the accept follows), while routing goes on.
  const q = queueJoin(call);
  if (q) return stepTo(call, q, { anchor: room });
  // Answered while the room was being made: the agent's leg is offered now (voicemail: the caller's).
  const leg =
    call.state === 'answering' && call.voicemail?.phase === 'joining' ? [{ kind: 'callerLeg' } as Effect] : call.state === 'answering' && call.agent && call.conn ? [{ kind: 'agentLeg', agent: call.agent, conn: call.conn } as Effect] : [];
  return to(call, { anchor: room }, ...leg);
}

/**
 * Anchor mode: the holding agent's new leg (a reloaded page's, or one after a network change)
 * is in the room again: the waiting music stops, or, on hold, the new leg is kept out of the
 * caller's mix as the old one was.
 */
function onLegBack(call: Call, e: Extract<CallEvent, { type: 'legReady' }>): Transition {
  if (call.media !== 'anchor' || !call.anchor || holder(call) !== e.agent || call.conn !== e.conn) return same(call);
  const room = call.anchor;
  if (call.heldSince !== undefined) return same(call, { kind: 'agentMuted', ...room, agent: e.agent, muted: true });
  return same(call, { kind: 'roomMusic', ...room, on: false });
}

/**
 * Anchor mode: the media server holding the room is gone, and with it the caller's audio.
 * Not accepted yet: refused as when no room could be had. Accepted: ended at the Service,
 * saying why (`MEDIA_SERVER_LOST`, kept when the terminate event comes).
 */
function onRoomLost(call: Call, e: Extract<CallEvent, { type: 'roomLost' }>, policy: Policy): Transition {
  if (call.media !== 'anchor' || !call.anchor) return same(call);
  const q = queueRoomLost(call, e.at, policy.endingTimeoutMs, e.reason);
  if (q) return stepTo(call, q, { errorCode: MEDIA_SERVER_LOST });
  if (call.answerSdp === undefined) return onAnchorFailed(call, { type: 'anchorFailed', wacid: e.wacid, at: e.at, reason: e.reason }, policy);
  if (call.state !== 'answering' && call.state !== 'active') return same(call);
  return to(
    call,
    { state: 'ending', reqId: undefined, recoverBy: undefined, nextAgent: undefined, ringUntil: undefined, handoffUntil: undefined, reason: `media server lost: ${e.reason}`, errorCode: MEDIA_SERVER_LOST, endBy: e.at + policy.endingTimeoutMs },
    ...(call.state === 'answering' && call.conn && call.reqId ? [fail({ conn: call.conn, reqId: call.reqId }, 'SERVICE_ERROR', `media server lost: ${e.reason}`)] : []),
    ...(call.nextAgent ? [{ kind: 'revoke', agent: call.nextAgent, reason: 'media server lost' } as Effect] : []),
    { kind: 'terminate' },
    { kind: 'notify' },
  );
}

/** The error code of a call whose media server was lost (anchor mode). */
export const MEDIA_SERVER_LOST = 'MEDIA_SERVER_LOST';

/** Anchor mode: nobody can hear the caller without a room: refuse the call through the Service, saying why. */
function onAnchorFailed(call: Call, e: Extract<CallEvent, { type: 'anchorFailed' }>, policy: Policy): Transition {
  // No room, or the caller could not join it (before any accept was sent).
  if (call.media !== 'anchor' || call.answerSdp !== undefined) return same(call);
  const reason = `media anchor unavailable: ${e.reason}`;
  if (call.state === 'answering') return refuseAnswering(call, e.at, 'ANCHOR_UNAVAILABLE', reason, policy);
  if (call.state !== 'queued' && call.state !== 'ringing') return same(call);
  return to(
    call,
    { state: 'rejecting', agent: undefined, ringUntil: undefined, reason, errorCode: 'ANCHOR_UNAVAILABLE', endBy: e.at + policy.endingTimeoutMs },
    ...(call.state === 'ringing' && call.agent ? [{ kind: 'revoke', agent: call.agent, reason: 'media unavailable' } as Effect] : []),
    { kind: 'reject' },
    { kind: 'notify' },
  );
}

/** An answering call that cannot be accepted (nothing was sent to the Service yet): reject it, tell the agent why, free the agent. */
function refuseAnswering(call: Call, at: number, code: string, reason: string, policy: Policy): Transition {
  return to(
    call,
    { state: 'rejecting', reason, errorCode: code, endBy: at + policy.endingTimeoutMs, reqId: undefined },
    ...(call.conn && call.reqId ? [fail({ conn: call.conn, reqId: call.reqId }, 'SERVICE_ERROR', reason)] : []),
    { kind: 'reject' },
    ...(call.agent ? [{ kind: 'agentFree', agent: call.agent, wrapUp: false } as Effect] : []),
    { kind: 'notify' },
  );
}

function fromNothing(e: CallEvent, policy: Policy): Transition {
  switch (e.type) {
    case 'connect': {
      const base: Call = {
        wacid: e.wacid,
        phoneId: e.phoneId,
        direction: e.direction,
        from: e.from,
        to: e.to,
        state: 'queued',
        createdAt: e.at,
        offeredTo: [],
        declined: [],
      };
      if (e.direction === 'BUSINESS_INITIATED') {
        // The connect event beat the connect request's response: keep the answer for `dialed`.
        return {
          call: { ...base, state: 'connected', remoteSdp: e.sdp, endBy: e.at + policy.dialTimeoutMs },
          effects: [{ kind: 'notify' }],
        };
      }
      const deadline = acceptDeadline(e.at, e.dialTime, policy.acceptWindowMs);
      const plan: VoicemailPlan | undefined =
        e.media === 'anchor' && e.voicemail ? { ...(e.voicemail.afterMs !== undefined ? { at: e.at + e.voicemail.afterMs } : {}), maxMs: e.voicemail.maxMs, promptMs: e.voicemail.promptMs, closedMs: e.voicemail.closedMs } : undefined;
      // Queue audio (anchor mode, an open number): the bridge answers the caller at once.
      const queue = e.media === 'anchor' && e.queueAudio && !e.closed ? { queueAudio: { ...e.queueAudio } } : {};
      const call: Call = { ...base, deadline, ...(e.sdp !== undefined ? { offerSdp: e.sdp } : {}), ...(e.media === 'anchor' ? { media: 'anchor' } : {}), ...(plan ? { voicemailPlan: plan } : {}), ...queue };
      if (e.closed && plan && e.sdp !== undefined && e.at < deadline - policy.rejectMarginMs) {
        // Anchor mode, out of hours: the bridge answers; the caller hears the closed greeting, then leaves a message.
        return stepTo(call, startVoicemail(call, e.at, policy.answerGraceMs, true));
      }
      if (e.sdp === undefined || e.at >= deadline - policy.rejectMarginMs || e.closed) {
        // Delivered too late to ring anyone (or unusable), or outside business hours: refuse it now rather than let it ring.
        return {
          call: {
            ...call,
            state: 'rejecting',
            reason: e.closed ? OUT_OF_HOURS : e.sdp === undefined ? 'connect event without an SDP offer' : 'arrived too late to ring an agent',
            endBy: e.at + policy.endingTimeoutMs,
          },
          effects: [{ kind: 'reject' }, { kind: 'notify' }],
        };
      }
      // Anchor mode: the caller goes into a room while the call rings (the answer waits for it if it must).
      return { call, effects: [...(call.media === 'anchor' ? [{ kind: 'anchor' } as Effect] : []), { kind: 'route' }, { kind: 'notify' }] };
    }
    case 'terminate':
      // Tombstone: the call is over before we saw it start; a late connect must not ring.
      return {
        call: {
          wacid: e.wacid,
          phoneId: e.phoneId ?? '',
          direction: 'USER_INITIATED',
          from: '',
          to: '',
          state: 'ended',
          createdAt: e.at,
          offeredTo: [],
          declined: [],
          endedAt: e.at,
          result: e.result,
          duration: e.duration ?? 0,
          ...(e.reason !== undefined ? { reason: e.reason } : {}),
          ...(e.errorCode !== undefined ? { errorCode: e.errorCode } : {}),
          tombstone: true,
          endedBy: 'event',
        },
        effects: [],
      };
    case 'dialed':
      return {
        call: {
          wacid: e.wacid,
          phoneId: e.phoneId,
          direction: 'BUSINESS_INITIATED',
          from: e.from,
          to: e.to,
          state: 'dialing',
          createdAt: e.at,
          offeredTo: [],
          declined: [],
          agent: e.agent,
          conn: e.conn,
          ...(e.tab !== undefined ? { tab: e.tab } : {}),
          localSdp: e.sdp,
          endBy: e.at + policy.dialTimeoutMs,
        },
        effects: [{ kind: 'agentBusy', agent: e.agent }, ok(e, { wacid: e.wacid }), { kind: 'notify' }],
      };
    case 'decline':
    case 'answer':
    case 'hangup':
      // The engine answers NOT_FOUND for requests about unknown calls; nothing to create.
      return same(null);
    default:
      return same(null);
  }
}

function onConnect(call: Call, e: Extract<CallEvent, { type: 'connect' }>): Transition {
  if (e.direction === 'BUSINESS_INITIATED' && call.direction === 'BUSINESS_INITIATED' && call.state !== 'ended') {
    const patch: Partial<Call> = {};
    const effects: Effect[] = [];
    // The dial only knew the business number; the Service's phone id (which reject and
    // terminate must carry) first arrives here.
    const phoneIdLearned = e.phoneId !== '' && e.phoneId !== call.phoneId;
    if (phoneIdLearned) patch.phoneId = e.phoneId;
    const firstAnswer = e.sdp !== undefined && call.remoteSdp === undefined;
    if (firstAnswer) patch.remoteSdp = e.sdp;
    if (call.state === 'dialing') patch.state = 'connected';
    // The answer is needed for media even when ACCEPTED overtook this event.
    if (firstAnswer && call.agent && (call.state === 'dialing' || call.state === 'connected' || call.state === 'active')) {
      effects.push({ kind: 'remoteAnswer', agent: call.agent, sdp: e.sdp! });
    }
    // Hung up before this event: the terminate went out with the business number as the phone
    // id and was refused; send it again with the Service's id so the user's phone stops ringing.
    if (call.state === 'ending' && phoneIdLearned && call.remoteStatus !== 'REJECTED') effects.push({ kind: 'terminate' });
    if (Object.keys(patch).length === 0) return same(call); // a duplicate
    return to(call, patch, ...effects, { kind: 'notify' });
  }
  // Duplicate, late (tombstone), or out of order: the record already knows more.
  return same(call);
}

function onTerminate(call: Call, e: Extract<CallEvent, { type: 'terminate' }>): Transition {
  // Our reject after the Service refused the accept: the refusal's code and words are why the
  // call failed; the terminate that follows only says REJECTED (it carries no code of its own).
  const keepRefusal =
    (call.state === 'rejecting' && call.errorCode !== undefined && e.errorCode === undefined) ||
    call.reason?.startsWith(AGENT_PAGE_LOST) === true ||
    call.errorCode === MEDIA_SERVER_LOST ||
    call.reason === OUT_OF_HOURS ||
    call.reason === QUEUE_WAIT_OVER;
  const detail: Partial<Call> = {
    result: e.result,
    endedBy: 'event',
    ...(e.reason !== undefined && !keepRefusal ? { reason: e.reason } : {}),
    ...(e.errorCode !== undefined ? { errorCode: e.errorCode } : {}),
  };
  if (call.state === 'ended') {
    // Our timer ended it first; the real outcome refines the record (same state).
    if (call.endedBy === 'timeout') {
      return to(call, { ...detail, ...(e.duration !== undefined ? { duration: e.duration } : {}) }, { kind: 'notify' });
    }
    return same(call);
  }
  const effects: Effect[] = [];
  const unanswered = call.state === 'queued' || call.state === 'ringing';
  if (call.state === 'ringing' && call.agent) effects.push({ kind: 'revoke', agent: call.agent, reason: 'caller hung up' });
  if (call.nextAgent) effects.push({ kind: 'revoke', agent: call.nextAgent, reason: 'caller hung up' });
  if (call.transfer?.ringing) effects.push({ kind: 'revoke', agent: call.transfer.ringing, reason: 'caller hung up' });
  // A warm transfer's target and the conference's other agents are free again.
  if (call.consult?.phase === 'ringing') effects.push({ kind: 'revoke', agent: call.consult.target, reason: 'caller hung up' });
  else if (call.consult) effects.push({ kind: 'agentFree', agent: call.consult.target, wrapUp: false });
  for (const m of call.conference ?? []) effects.push({ kind: 'agentFree', agent: m.agent, wrapUp: true });
  // A transfer's target still joining: its answer is refused.
  if (call.transfer?.answered && call.conn && call.reqId) effects.push(fail({ conn: call.conn, reqId: call.reqId }, 'CONFLICT', 'the call ended before you joined it'));
  if (call.state === 'answering' && call.conn && call.reqId) {
    effects.push(fail({ conn: call.conn, reqId: call.reqId }, 'CONFLICT', 'the call ended before it was accepted'));
  }
  const h = holder(call);
  if (h && call.state !== 'rejecting') effects.push({ kind: 'agentFree', agent: h, wrapUp: call.startedAt !== undefined });
  effects.push({ kind: 'notify' });
  const patch = ended(call, e.at, {
    ...detail,
    nextAgent: undefined,
    handoffUntil: undefined,
    ...(unanswered ? { result: 'MISSED', reason: e.reason ?? 'caller hung up before an agent answered' } : {}),
    ...(e.duration !== undefined ? { duration: e.duration } : {}),
  });
  return to(call, patch, ...effects);
}

function onStatus(call: Call, e: Extract<CallEvent, { type: 'status' }>, policy: Policy): Transition {
  if (call.direction !== 'BUSINESS_INITIATED') return same(call);
  if (call.state !== 'dialing' && call.state !== 'connected') {
    // Statuses repeat and arrive late: record the value, never move back.
    return same(call);
  }
  if (e.value === 'ACCEPTED') return to(call, { state: 'active', remoteStatus: e.value, startedAt: e.at, endBy: undefined }, { kind: 'notify' });
  if (e.value === 'REJECTED') {
    return to(
      call,
      { state: 'ending', remoteStatus: e.value, reason: 'the user declined the call', endBy: e.at + policy.endingTimeoutMs },
      { kind: 'notify' },
    );
  }
  if (call.remoteStatus === e.value) return same(call);
  return to(call, { remoteStatus: e.value }, { kind: 'notify' });
}

function onAnswer(call: Call, e: Extract<CallEvent, { type: 'answer' }>, policy: Policy): Transition {
  if (call.state === 'active' && call.transfer) return onTransferAnswer(call, e);
  if (call.state === 'active' && call.consult) return onConsultAnswer(call, e);
  if (call.direction !== 'USER_INITIATED' || !call.offeredTo.includes(e.agent)) {
    return same(call, fail(e, 'FORBIDDEN', 'this call was not offered to you'));
  }
  if (handingOff(call)) return onHandoffAnswer(call, e);
  if (call.state === 'queued' || call.state === 'ringing') {
    if (call.declined.includes(e.agent)) return same(call, fail(e, 'CONFLICT', 'you declined this call'));
    if (call.deadline !== undefined && e.at >= call.deadline) return same(call, fail(e, 'CONFLICT', 'the accept window has closed'));
    // First claim wins: the current ringing agent, or an earlier one whose ring just timed out.
    // Anchor mode: the agent's leg into the room first (offered to the answering connection,
    // once the room holds the caller: else `anchored` offers it); the accept, with Janus's
    // answer, goes when that leg is ready (`legReady`).
    const anchor = call.media === 'anchor';
    const effects: Effect[] = [
      ...(!anchor ? [{ kind: 'accept', sdp: e.sdp } as Effect] : call.anchor ? [{ kind: 'agentLeg', agent: e.agent, conn: e.conn } as Effect] : []),
      { kind: 'revoke', agent: e.agent, reason: 'answered on another tab', exceptConn: e.conn },
    ];
    if (call.state === 'ringing' && call.agent && call.agent !== e.agent) {
      effects.push({ kind: 'revoke', agent: call.agent, reason: 'taken by another agent' });
    }
    effects.push({ kind: 'agentBusy', agent: e.agent }, { kind: 'notify' });
    return to(
      call,
      {
        state: 'answering',
        agent: e.agent,
        conn: e.conn,
        tab: e.tab,
        reqId: e.reqId,
        ...(anchor ? {} : { answerSdp: e.sdp }),
        ringUntil: undefined,
        // Queue audio, answered by the bridge: `deadline` is the longest wait, not the accept window.
        endBy: Math.max(queueAccepted(call) ? e.at : (call.deadline ?? e.at), e.at) + policy.answerGraceMs,
      },
      ...effects,
    );
  }
  if (call.state === 'answering' && call.agent === e.agent && call.conn === e.conn && call.reqId === e.reqId) {
    return same(call); // a repeated frame: the ack follows accept's 200
  }
  if (holder(call) === e.agent && call.state !== 'ended') {
    return same(call, fail(e, 'CONFLICT', call.conn === e.conn ? 'you already answered this call' : 'answered on another tab'));
  }
  if (call.state === 'ended' || call.state === 'rejecting' || call.state === 'ending') {
    return same(call, fail(e, 'CONFLICT', 'the call is over'));
  }
  return same(call, fail(e, 'CONFLICT', 'taken by another agent'));
}

function onHold(call: Call, e: Extract<CallEvent, { type: 'hold' | 'resume' }>): Transition {
  if (holder(call) !== e.agent) return same(call, fail(e, 'FORBIDDEN', 'you do not hold this call'));
  if (call.state !== 'active') return same(call, fail(e, 'CONFLICT', `a call that is ${call.state} cannot be put on hold or resumed`));
  // Anchor mode: hold is the room's state: the agent leaves the caller's mix and Janus plays the music.
  const room = call.media === 'anchor' ? call.anchor : undefined;
  const held = (on: boolean): Effect[] => (room ? [{ kind: 'agentMuted', ...room, agent: e.agent, muted: on }, { kind: 'roomMusic', ...room, on }] : []);
  if (e.type === 'hold') {
    if (call.heldSince !== undefined) return same(call, ok(e, { heldSince: call.heldSince }));
    return to(call, { heldSince: e.at }, ...held(true), ok(e, { heldSince: e.at }), { kind: 'notify' });
  }
  if (call.heldSince === undefined) return same(call, ok(e, { holdMs: call.holdMs ?? 0 }));
  const holdMs = (call.holdMs ?? 0) + Math.max(0, e.at - call.heldSince);
  return to(call, { heldSince: undefined, holdMs }, ...held(false), ok(e, { holdMs }), { kind: 'notify' });
}

/** Only the call's holder reports its path, while the call is set up or up; a repeat changes nothing. */
function onPath(call: Call, e: Extract<CallEvent, { type: 'path' }>): Transition {
  if (holder(call) !== e.agent) return same(call, fail(e, 'FORBIDDEN', 'you do not hold this call'));
  if (call.state === 'ending' || call.state === 'ended') return same(call, fail(e, 'CONFLICT', `the call is ${call.state}`));
  if (call.path === e.path) return same(call, ok(e, {}));
  return to(call, { path: e.path }, ok(e, {}), { kind: 'notify' });
}

function onHangup(call: Call, e: Extract<CallEvent, { type: 'hangup' }>, policy: Policy): Transition {
  if (call.state === 'ringing' && call.agent === e.agent) {
    // Hanging up a ringing call means declining it.
    return transition(call, { type: 'decline', wacid: e.wacid, at: e.at, agent: e.agent, conn: e.conn, reqId: e.reqId }, policy);
  }
  if (call.state === 'active' && call.conference?.length && !call.consult) {
    const left = leaveConference(call, e);
    if (left) return left;
  }
  if (holder(call) !== e.agent) {
    if (call.offeredTo.includes(e.agent) && (call.state === 'ended' || call.state === 'rejecting')) return same(call, ok(e));
    return same(call, fail(e, 'FORBIDDEN', 'you do not hold this call'));
  }
  switch (call.state) {
    case 'answering':
    case 'active':
    case 'dialing':
    case 'connected': {
      const effects: Effect[] = [{ kind: 'terminate' }, ok(e)];
      if (call.state === 'answering' && call.conn && call.reqId) {
        effects.push(fail({ conn: call.conn, reqId: call.reqId }, 'CONFLICT', 'hung up before the call was accepted'));
      }
      effects.push({ kind: 'notify' });
      return to(
        call,
        { state: 'ending', reqId: undefined, reason: 'agent hung up', endBy: e.at + policy.endingTimeoutMs },
        ...effects,
      );
    }
    default:
      // ending / rejecting / ended: already on its way out.
      return same(call, ok(e));
  }
}

/**
 * The holding page is gone: end the call at the Service as a hangup would, saying why
 * (`AGENT_PAGE_LOST`, kept when the terminate event comes). Only for the connection that
 * holds it: another tab of the same agent closing changes nothing.
 */
function onConnLost(call: Call, e: Extract<CallEvent, { type: 'connLost' }>, policy: Policy): Transition {
  if (holder(call) !== e.agent || call.conn !== e.conn) return same(call);
  if (call.media === 'anchor' && call.state === 'active') {
    // Anchor mode: the caller stays in the room; the agent's page may come back (`rejoin`) until `recoverBy`.
    if (call.recoverBy !== undefined) return same(call);
    // The caller hears music meanwhile (never dead air); on hold it plays already.
    const music = call.anchor && call.heldSince === undefined ? [{ kind: 'roomMusic', ...call.anchor, on: true } as Effect] : [];
    return to(call, { recoverBy: e.at + policy.agentRecoveryMs }, ...music);
  }
  // Queue audio: the caller was answered already: back to the queue.
  const q = requeue(call, e.at, AGENT_PAGE_LOST);
  if (q) return stepTo(call, q);
  switch (call.state) {
    case 'answering':
    case 'active':
    case 'dialing':
    case 'connected':
      return to(
        call,
        { state: 'ending', reqId: undefined, reason: AGENT_PAGE_LOST, endBy: e.at + policy.endingTimeoutMs },
        { kind: 'terminate' },
        { kind: 'notify' },
      );
    default:
      return same(call);
  }
}

function onAttach(call: Call, e: Extract<CallEvent, { type: 'attach' }>): Transition {
  const live = call.state === 'answering' || call.state === 'active' || call.state === 'dialing' || call.state === 'connected';
  if (!live || holder(call) !== e.agent || call.tab === undefined || call.tab !== e.tab || call.conn === e.conn) return same(call);
  return to(call, { conn: e.conn, recoverBy: undefined });
}

/** Anchor mode: the agent's page (a reload's new one) takes the call back: a new leg into the same room. */
function onRejoin(call: Call, e: Extract<CallEvent, { type: 'rejoin' }>): Transition {
  if (holder(call) !== e.agent) return same(call, fail(e, 'FORBIDDEN', 'you do not hold this call'));
  if (call.media !== 'anchor') return same(call, fail(e, 'CONFLICT', "this call has no media room: its audio was in the page that held it"));
  if (call.state !== 'active') return same(call, fail(e, 'CONFLICT', `a call that is ${call.state} cannot be rejoined`));
  // The old leg goes at once: music until the new one is in the room (`legReady`), unless on hold (it plays already).
  const music = call.anchor && call.heldSince === undefined ? [{ kind: 'roomMusic', ...call.anchor, on: true } as Effect] : [];
  return to(call, { conn: e.conn, tab: e.tab, recoverBy: undefined }, ok(e), ...music, { kind: 'agentLeg', agent: e.agent, conn: e.conn });
}

/** Anchor mode: the call's agent is gone for good and the call waits for the next one (`handoffUntil`). */
export function handingOff(call: Call): boolean {
  return call.state === 'active' && call.handoffUntil !== undefined;
}

/** Handing off: routing chose the next agent; it rings there (`nextAgent`) until `ringUntil`. */
function onHandoffOffer(call: Call, e: Extract<CallEvent, { type: 'offer' }>, policy: Policy): Transition {
  if (call.nextAgent !== undefined || call.declined.includes(e.agent) || e.at >= call.handoffUntil!) return same(call);
  return to(
    call,
    {
      nextAgent: e.agent,
      ringUntil: Math.min(e.at + policy.ringTimeoutMs, call.handoffUntil!),
      offeredTo: call.offeredTo.includes(e.agent) ? call.offeredTo : [...call.offeredTo, e.agent],
    },
    { kind: 'offer', agent: e.agent },
    { kind: 'notify' },
  );
}

/** Handing off: the ring at `agent` ended without an answer (declined, timed out, the agent gone): the next one. */
function ringMissed(call: Call, agent: string, reason: string, ...extra: Array<Effect | Partial<Call>>): Transition {
  const effects = extra.filter((x): x is Effect => 'kind' in x);
  const patch = Object.assign({}, ...extra.filter((x) => !('kind' in x))) as Partial<Call>;
  return to(
    call,
    { ...patch, nextAgent: undefined, ringUntil: undefined },
    ...(reason === 'not answered' ? [{ kind: 'agentNoAnswer', agent } as Effect] : []),
    { kind: 'revoke', agent, reason },
    ...effects,
    { kind: 'route' },
    { kind: 'notify' },
  );
}

/**
 * Handing off: an agent it was offered to answers: it holds the call now and joins the same
 * room with a leg of its own; the call is accepted already (no Service request), so the
 * answer is acknowledged at once.
 */
function onHandoffAnswer(call: Call, e: Extract<CallEvent, { type: 'answer' }>): Transition {
  if (call.declined.includes(e.agent)) return same(call, fail(e, 'CONFLICT', 'you declined this call'));
  return to(
    call,
    { agent: e.agent, conn: e.conn, tab: e.tab, nextAgent: undefined, ringUntil: undefined, handoffUntil: undefined, legs: [...(call.legs ?? []), e.agent] },
    ok(e, { wacid: call.wacid, ...(call.startedAt !== undefined ? { startedAt: call.startedAt } : {}) }),
    { kind: 'revoke', agent: e.agent, reason: 'answered on another tab', exceptConn: e.conn },
    ...(call.nextAgent && call.nextAgent !== e.agent ? [{ kind: 'revoke', agent: call.nextAgent, reason: 'taken by another agent' } as Effect] : []),
    { kind: 'agentBusy', agent: e.agent },
    { kind: 'agentLeg', agent: e.agent, conn: e.conn },
    { kind: 'notify' },
  );
}

/** Handing off, time passed: the ring moves on, or nobody took the call in time and it ends at the Service. */
function onHandoffTick(call: Call, e: Extract<CallEvent, { type: 'tick' }>, policy: Policy): Transition {
  if (e.at >= call.handoffUntil!) {
    return to(
      call,
      { state: 'ending', nextAgent: undefined, ringUntil: undefined, handoffUntil: undefined, reqId: undefined, reason: `${AGENT_PAGE_LOST}; no other agent took the call`, endBy: e.at + policy.endingTimeoutMs },
      ...(call.nextAgent ? [{ kind: 'revoke', agent: call.nextAgent, reason: 'window closing' } as Effect] : []),
      { kind: 'terminate' },
      { kind: 'notify' },
    );
  }
  if (call.nextAgent !== undefined && call.ringUntil !== undefined && e.at >= call.ringUntil) return ringMissed(call, call.nextAgent, 'not answered');
  return same(call);
}

function onDialed(call: Call, e: Extract<CallEvent, { type: 'dialed' }>): Transition {
  if (call.direction !== 'BUSINESS_INITIATED' && !call.tombstone) {
    return same(call, fail(e, 'CONFLICT', 'this id belongs to an inbound call'));
  }
  if (call.agent !== undefined) return same(call, ok(e, { wacid: call.wacid })); // repeated
  // A connect event that came first carried the Service's phone id; the dial knows only the number.
  const patch: Partial<Call> = { agent: e.agent, conn: e.conn, tab: e.tab, localSdp: e.sdp, from: e.from, to: e.to, phoneId: call.phoneId || e.phoneId, direction: 'BUSINESS_INITIATED' };
  const effects: Effect[] = [ok(e, { wacid: call.wacid })];
  if (call.state === 'connected' || call.state === 'active') {
    effects.unshift({ kind: 'agentBusy', agent: e.agent });
    if (call.remoteSdp !== undefined) effects.push({ kind: 'remoteAnswer', agent: e.agent, sdp: call.remoteSdp });
  }
  effects.push({ kind: 'notify' });
  // A tombstone stays ended; the agent learns it from the notify.
  return to(call, patch, ...effects);
}

function onTick(call: Call, e: Extract<CallEvent, { type: 'tick' }>, policy: Policy): Transition {
  const closing = call.deadline !== undefined ? call.deadline - policy.rejectMarginMs : undefined;
  switch (call.state) {
    case 'queued':
    case 'ringing': {
      // Queue audio (the caller answered by the bridge): its longest wait, music, announcements.
      const q = queueTick(call, e.at, policy.rejectMarginMs, policy.endingTimeoutMs);
      if (q) return stepTo(call, q);
      if (closing !== undefined && e.at >= closing) {
        // Nobody took it in time: refuse it through the Service, never leave it ringing.
        return to(
          call,
          { state: 'rejecting', agent: undefined, ringUntil: undefined, reason: 'no agent answered in time', endBy: e.at + policy.endingTimeoutMs },
          ...(call.state === 'ringing' && call.agent ? [{ kind: 'revoke', agent: call.agent, reason: 'window closing' } as Effect] : []),
          { kind: 'reject' },
          { kind: 'notify' },
        );
      }
      // Anchor mode: nobody answered within VOICEMAIL_AFTER_S: the caller leaves a message.
      const vm = voicemailDue(call);
      if (vm !== undefined && e.at >= vm) {
        // Queue audio: answered already: the prompt at once, after the queue's sounds stop.
        const qv = queueToVoicemail(call);
        if (qv) {
          const rec = voicemailAccepted({ ...call, voicemail: { phase: 'joining' } }, e.at);
          return to(call, { ...qv.patch, ...rec.patch, startedAt: e.at, endBy: undefined }, ...(qv.effects as Effect[]), ...rec.effects);
        }
        const start = startVoicemail(call, e.at, policy.answerGraceMs);
        // The caller is joining for queue audio already: no second leg.
        return stepTo(call, call.queueAudio?.joining ? { ...start, effects: start.effects.filter((x) => x.kind !== 'callerLeg') } : start);
      }
      if (call.state === 'ringing' && call.ringUntil !== undefined && e.at >= call.ringUntil && call.agent) {
        return to(
          call,
          { state: 'queued', agent: undefined, ringUntil: undefined },
          // Away first, then the ring stops: the agent goes ringing → away "Missed a call",
          // never through a moment of "available" (supervisors saw it; routing could use it).
          { kind: 'agentNoAnswer', agent: call.agent },
          { kind: 'revoke', agent: call.agent, reason: 'not answered' },
          { kind: 'route' },
          { kind: 'notify' },
        );
      }
      return same(call);
    }
    case 'answering':
    case 'dialing':
    case 'connected': {
      if (call.endBy === undefined || e.at < call.endBy) return same(call);
      // Queue audio: the agent's leg never got in; the caller, answered already, waits again.
      const q = requeue(call, e.at, 'your audio did not join the call in time');
      if (q) return stepTo(call, q);
      // Outcome never became known: end it on the Service's side too (terminate is safe either way).
      return to(
        call,
        {
          state: 'ending',
          reqId: undefined,
          reason: call.state === 'answering' ? 'accept did not complete' : 'not answered',
          endBy: e.at + policy.endingTimeoutMs,
        },
        ...(call.state === 'answering' && call.conn && call.reqId
          ? [fail({ conn: call.conn, reqId: call.reqId }, 'OUTCOME_UNKNOWN', 'accept did not complete in time')]
          : []),
        { kind: 'terminate' },
        { kind: 'notify' },
      );
    }
    case 'rejecting':
    case 'ending': {
      const retry = terminateRetryDue(call, policy);
      if (retry !== undefined && e.at >= retry && call.endBy !== undefined && e.at < call.endBy) {
        // One request per tick: a late tick (a node was down, a slow sweep) counts the retry
        // slots it missed instead of sending them back to back, so the next is due later.
        const missed = Math.floor((e.at - (call.endBy - policy.endingTimeoutMs)) / policy.terminateRetryMs);
        const tries = Math.min(TERMINATE_RETRIES, Math.max((call.terminateRetries ?? 0) + 1, missed));
        return to(call, { terminateRetries: tries }, { kind: call.state === 'rejecting' ? 'reject' : 'terminate' });
      }
      if (call.endBy === undefined || e.at < call.endBy) return same(call);
      const h = holder(call);
      return to(
        call,
        ended(call, e.at, {
          result: call.state === 'rejecting' ? 'REJECTED' : call.startedAt !== undefined ? 'COMPLETED' : 'FAILED',
          endedBy: 'timeout',
          reason: call.reason ?? 'no terminate event from the Service',
        }),
        ...(h && call.state === 'ending' ? [{ kind: 'agentFree', agent: h, wrapUp: call.startedAt !== undefined } as Effect] : []),
        { kind: 'notify' },
      );
    }
    case 'active': {
      const vm = voicemailTick(call, e.at, policy.endingTimeoutMs);
      if (vm) return stepTo(call, vm);
      if (handingOff(call)) return onHandoffTick(call, e, policy);
      if (call.recoverBy === undefined || e.at < call.recoverBy) return same(call);
      // Anchor mode: the caller is still in the room: the call goes to the next agent.
      if (call.media === 'anchor' && call.agent) {
        return to(
          call,
          { agent: undefined, conn: undefined, tab: undefined, recoverBy: undefined, handoffUntil: e.at + policy.acceptWindowMs, legs: call.legs ?? [call.agent] },
          { kind: 'agentFree', agent: call.agent, wrapUp: true },
          { kind: 'route' },
          { kind: 'notify' },
        );
      }
      // The agent's page did not come back: end the call at the Service, saying why.
      return to(
        call,
        { state: 'ending', reqId: undefined, recoverBy: undefined, reason: AGENT_PAGE_LOST, endBy: e.at + policy.endingTimeoutMs },
        { kind: 'terminate' },
        { kind: 'notify' },
      );
    }
    case 'ended':
      return same(call);
  }
}
