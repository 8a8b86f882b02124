/**
 * What history records of the call engine and the archive: pure functions from what
 * happened to history facts (`schema.ts`). No I/O, no clock: the caller passes `at`.
 *
 *   // engine, after a transition was committed (compare-and-set succeeded):
 *   history.enqueue(...factsOfTransition(before, after, event, now, { version: stored.version }));
 *   // archive, after a media event was handled:
 *   history.enqueue(...factsOfMedia(result, now));
 *
 * Every call fact carries everything known of the call (not a diff), and every timeline
 * fact a key naming the happening, so replays and disorder add nothing (store merge rules).
 */
import type { Call, CallEvent } from '../calls/lifecycle.ts';
import type { ArchiveOutcome } from '../archive/index.ts';
import { NO_AUDIO_CODES } from '../../shared/callErrors.ts';
import { QUEUE_WAIT_OVER } from '../calls/queueAudio.ts';
import { legsOf } from '../calls/legs.ts';
import type { HistoryFact, MediaStatus, Outcome } from './schema.ts';

const E164 = /^\+\d/;
const iso = (ms: number) => new Date(ms).toISOString();
const clip = (s: string, n: number) => (s.length > n ? s.slice(0, n) : s);

/**
 * The design's outcome of a call (design.md, "Wave 2 contracts"), from the live record
 * alone, so every observation of one call agrees (a later refinement of an ended record
 * gives the same answer):
 *
 * - not `ended` → `in-progress`;
 * - anchor mode, the caller left a message (voicemail: the bridge answered, no agent did) →
 *   `missed` (answered by the prompt is not answered by an agent; no talk time);
 * - anchor mode, queue audio (the bridge answered, greeting and music): an agent's answer is
 *   `startedAt` as always; until then (accepted by the bridge, no agent) hung up → `abandoned`
 *   (whatever the Service's terminate says of the greeting's talk), nobody within the longest
 *   wait (`QUEUE_WAIT_OVER`) → `missed`, an error → `failed`;
 * - accepted (`startedAt`), but the Service dropped it for audio that never flowed
 *   (`NO_AUDIO_CODES`: 138023) → `no-audio` (no talk time);
 * - a conversation happened (accepted: `startedAt`; or the Service's terminate says
 *   COMPLETED with a duration, when our accept's outcome was unknown) → `answered`;
 * - business-initiated: `failed` when the Service reported an error before the user's
 *   phone ever rang (no connect answer, no status); otherwise `no-answer` (declined,
 *   not picked up, or cancelled by the agent before an answer);
 * - user-initiated:
 *   - a terminate before we saw the call (tombstone): `failed` if the Service says FAILED
 *     with an error, else `abandoned`;
 *   - terminated while queued or ringing (the lifecycle writes result `MISSED`): the caller
 *     hung up before an answer → `abandoned`;
 *   - an agent was picking it up (accept in flight) and it ended: `failed` when accept was
 *     refused or never completed (error code, FAILED, or our timer), else `abandoned`
 *     (the caller hung up while accept was under way);
 *   - we rejected it (window closing, too late, unusable offer): `missed` when it rang at
 *     least one agent, `rejected` when nobody was ever offered it.
 */
export function outcomeOf(call: Call): Outcome {
  if (call.state !== 'ended') return 'in-progress';
  if (call.voicemail?.phase === 'recording') return 'missed';
  // Queue audio: answered by the greeting, not by an agent; nobody came within the longest wait.
  if (call.queueAudio && call.startedAt === undefined && call.answerSdp !== undefined) {
    if (call.reason === QUEUE_WAIT_OVER) return 'missed';
    return call.errorCode !== undefined || call.result === 'FAILED' || call.endedBy === 'timeout' ? 'failed' : 'abandoned';
  }
  if (call.startedAt !== undefined) return call.errorCode !== undefined && NO_AUDIO_CODES.has(call.errorCode) ? 'no-audio' : 'answered';
  if (call.result === 'COMPLETED' && (call.duration ?? 0) > 0 && call.endedBy === 'event') return 'answered';
  if (call.direction === 'BUSINESS_INITIATED') {
    const rang = call.remoteSdp !== undefined || call.remoteStatus !== undefined;
    return !rang && call.errorCode !== undefined ? 'failed' : 'no-answer';
  }
  if (call.tombstone) return call.result === 'FAILED' && call.errorCode !== undefined ? 'failed' : 'abandoned';
  if (call.result === 'MISSED') return 'abandoned';
  if (call.answerSdp !== undefined) {
    return call.errorCode !== undefined || call.result === 'FAILED' || call.endedBy === 'timeout' ? 'failed' : 'abandoned';
  }
  return call.offeredTo.length > 0 ? 'missed' : 'rejected';
}

/** The customer's side of the call: `from` inbound, `to` outbound; E.164 or a BSUID. */
function customerOf(call: Call): { phoneNumber?: string; userId?: string } {
  const who = call.direction === 'USER_INITIATED' ? call.from : call.to;
  if (!who) return {};
  return E164.test(who) ? { phoneNumber: who } : { userId: who };
}

function businessNumberOf(call: Call): string | undefined {
  const n = call.direction === 'USER_INITIATED' ? call.to : call.from;
  return n ? n : undefined;
}

/** The call fact: everything the record knows now. */
export function callFact(call: Call, version: number): Extract<HistoryFact, { type: 'call' }> {
  const outcome = outcomeOf(call);
  const ended = call.state === 'ended';
  const fact: Extract<HistoryFact, { type: 'call' }> = {
    type: 'call',
    wacid: call.wacid,
    // A tombstone may not know it (the terminate event carried none).
    phoneId: call.phoneId || 'unknown',
    customer: customerOf(call),
    direction: call.direction === 'USER_INITIATED' ? 'inbound' : 'outbound',
    outcome,
    receivedAt: iso(call.createdAt),
    version,
  };
  const business = businessNumberOf(call);
  if (business !== undefined) fact.businessNumber = clip(business, 64);
  // The agent who held it; for a call that only rang, the last agent it rang at is not "its" agent.
  // An ended inbound call keeps the last agent it rang at: it was theirs only if they answered it.
  // Queue audio: the bridge's accept (the greeting) is no agent's answer; only the agent's leg in (`startedAt`) is.
  const answered = call.direction === 'BUSINESS_INITIATED' || (call.answerSdp !== undefined && call.queueAudio === undefined) || call.startedAt !== undefined;
  const holder = call.state === 'queued' || call.state === 'ringing' || !answered ? undefined : call.agent;
  if (holder !== undefined) fact.agent = holder;
  // Voicemail: the bridge answered, no agent: the whole life was waiting (no answer, no talk time).
  const byAgent = call.voicemail === undefined;
  if (call.startedAt !== undefined && byAgent) {
    fact.answeredAt = iso(call.startedAt);
    fact.waitMs = Math.max(0, call.startedAt - call.createdAt);
  } else if (ended && call.endedAt !== undefined) {
    // Unanswered: the whole life was waiting.
    fact.waitMs = Math.max(0, call.endedAt - call.createdAt);
  }
  if (ended && call.endedAt !== undefined) {
    fact.endedAt = iso(call.endedAt);
    if (call.startedAt !== undefined && byAgent && outcome !== 'no-audio') fact.talkMs = Math.max(0, call.endedAt - call.startedAt);
  }
  if (ended && call.reason !== undefined) fact.endReason = clip(call.reason, 200);
  if (call.holdMs !== undefined) fact.holdMs = call.holdMs;
  // Anchor mode: each agent who talked with the caller, their talk and hold (a transfer, a consult, a conference).
  const legs = outcome === 'no-audio' ? undefined : legsOf(call);
  if (legs !== undefined) fact.legs = legs;
  if (call.path !== undefined) fact.networkPath = call.path;
  fact.mediaMode = call.media ?? 'direct';
  if (call.anchor) fact.mediaServer = call.anchor.janus;
  return fact;
}

/** Timeline detail of one event: what a supervisor wants to read, never an SDP. */
function detailOf(event: CallEvent, after: Call): Record<string, unknown> {
  const d: Record<string, unknown> = { state: after.state };
  switch (event.type) {
    case 'offer':
    case 'decline':
    case 'agentGone':
    case 'answer':
    case 'hangup':
    case 'hold':
    case 'resume':
    case 'dialed':
    case 'attach':
    case 'legReady':
      d.agent = event.agent;
      break;
    case 'path':
      d.agent = event.agent;
      d.path = event.path;
      break;
    case 'connLost':
      d.agent = event.agent;
      if (after.reason !== undefined) d.reason = after.reason;
      break;
    case 'terminate':
      d.result = event.result;
      if (event.duration !== undefined) d.duration = event.duration;
      if (event.errorCode !== undefined) d.errorCode = event.errorCode;
      if (event.reason !== undefined) d.reason = event.reason;
      break;
    case 'status':
      d.status = event.value;
      break;
    case 'acceptRefused':
      d.code = event.code;
      d.reason = event.reason;
      break;
    case 'connect':
      d.direction = event.direction;
      break;
    case 'transfer':
      d.agent = event.agent;
      d.mode = event.mode ?? 'cold';
      d.to = event.to;
      if (event.note !== undefined) d.note = event.note;
      break;
    case 'transferAction':
      d.agent = event.agent;
      d.action = event.action;
      break;
    default:
      break;
  }
  // Who talks with the caller now (a transfer, a consult, a conference): the call's legs.
  const stillOn = event.type === 'hangup' && after.state === 'active'; // a conference member left; the others talk on
  if (after.media === 'anchor' && (after.transfer || after.consult || after.conference?.length || stillOn || event.type === 'transferAction' || event.type === 'legReady')) {
    d.legs = [after.agent, ...(after.conference ?? []).map((m) => m.agent)].filter((a): a is string => a !== undefined);
    if (after.consult) d.consult = { by: after.consult.by, target: after.consult.target, phase: after.consult.phase };
    if (after.transfer?.ringing) d.ringing = after.transfer.ringing;
  }
  if (after.reason !== undefined && after.state !== 'ringing' && after.state !== 'queued' && d.reason === undefined) d.reason = after.reason;
  return d;
}

/** A transfer, a consult or a conference changed who is on the call (anchor mode): a timeline entry of its own. */
function legsMoved(before: Call | null, after: Call, event: CallEvent): boolean {
  if (event.type === 'transfer' || event.type === 'transferAction') return true;
  const involved = (c: Call | null) => c !== null && (c.transfer !== undefined || c.consult !== undefined || (c.conference?.length ?? 0) > 0);
  return (involved(before) || involved(after)) && ['answer', 'legReady', 'decline', 'hangup', 'tick', 'consultFailed'].includes(event.type);
}

/** The Service's events: recorded even when they change nothing (a repeat or a late one). */
const SERVICE_EVENTS = new Set<CallEvent['type']>(['connect', 'terminate', 'status']);

export interface TransitionOptions {
  /** The stored record's version after the commit (compare-and-set); orders the call facts. */
  version?: number;
  /** The webhook envelope's id, when the event came from the Service (dedupes its repeats). */
  eventId?: string;
}

/**
 * The history facts of one committed transition: the call fact (when the record changed),
 * and one timeline entry per state change and per Service event.
 *
 * Timeline keys: a Service event is keyed by its envelope id when known, else by its type,
 * its time and the state it led to (a redelivered webhook keeps its receipt time: the
 * receiver stores it); a state change is keyed by the event, its time and the new state.
 * The same happening replayed gives the same key, so the store keeps one row.
 */
export function factsOfTransition(before: Call | null, after: Call | null, event: CallEvent, at: number, o: TransitionOptions = {}): HistoryFact[] {
  if (after === null) return [];
  const facts: HistoryFact[] = [];
  const changed = after !== before;
  const version = o.version ?? 0;
  if (changed) facts.push(callFact(after, version));
  const stateChanged = before === null || before.state !== after.state;
  const when = iso(Number.isFinite(event.at) ? event.at : at);
  if (SERVICE_EVENTS.has(event.type)) {
    facts.push({
      type: 'timeline',
      wacid: after.wacid,
      key: o.eventId ? `event:${o.eventId}` : `${event.type}:${event.at}:${after.state}`,
      at: when,
      event: event.type === 'status' ? `status ${event.value}` : event.type,
      detail: detailOf(event, after),
    });
  } else if (handoffStarted(before, after)) {
    // Anchor mode: the agent's page did not come back; the call goes to the next agent (same call, same room).
    facts.push({ type: 'timeline', wacid: after.wacid, key: `handoff:${event.at}`, at: when, event: 'handoff', detail: { state: after.state, agent: before!.agent, reason: 'the agent\'s page did not come back' } });
  } else if (stateChanged || event.type === 'offer' || (changed && (event.type === 'hold' || event.type === 'resume' || event.type === 'path' || event.type === 'answer' || legsMoved(before, after, event)))) {
    // Our own events (routing, agents, timers) matter when they move the call (a handed-off call's answer, a transfer's legs too).
    facts.push({
      type: 'timeline',
      wacid: after.wacid,
      key: `${event.type}:${event.at}:${after.state}`,
      at: when,
      event: event.type === 'tick' ? `timeout → ${after.state}` : event.type,
      detail: detailOf(event, after),
    });
  }
  // Anchor mode, queue audio: the bridge answered the caller (greeting, music); no agent yet.
  if (after.queueAudio?.acceptedAt !== undefined && before?.queueAudio?.acceptedAt === undefined) {
    facts.push({ type: 'timeline', wacid: after.wacid, key: `queue-audio:${event.at}`, at: when, event: 'queue audio', detail: { state: after.state, reason: 'answered by the queue greeting; waiting for an agent' } });
  }
  // Anchor mode: the call went to voicemail (nobody answered in time, or out of hours).
  if (after.voicemail !== undefined && before?.voicemail === undefined) {
    const why = after.voicemail.closed ? 'outside business hours' : 'no agent answered in time';
    facts.push({ type: 'timeline', wacid: after.wacid, key: `voicemail:${event.at}`, at: when, event: 'voicemail', detail: { reason: why, ...(before?.agent && before.state === 'ringing' ? { rang: before.agent } : {}) } });
  }
  return facts;
}

/** Anchor mode: this transition took the call from its gone agent to wait for the next one. */
function handoffStarted(before: Call | null, after: Call): boolean {
  return before !== null && before.handoffUntil === undefined && after.handoffUntil !== undefined && before.agent !== undefined;
}

/** What the archive's result means for the media index. */
const MEDIA_STATUS: Record<ArchiveOutcome['status'], MediaStatus> = {
  saved: 'available',
  'already-archived': 'available',
  missing: 'missing',
  failed: 'failed',
  invalid: 'failed',
};

/**
 * The history facts of one archived media event: the media row (when the Service named the
 * asset) and a timeline entry. `at` is when it was handled.
 */
export function factsOfMedia(r: ArchiveOutcome, at: number): HistoryFact[] {
  const when = iso(at);
  const status = MEDIA_STATUS[r.status];
  const facts: HistoryFact[] = [];
  if (r.mediaAssetId !== undefined) {
    const m: Extract<HistoryFact, { type: 'media' }> = { type: 'media', wacid: r.wacid, mediaAssetId: r.mediaAssetId, kind: r.kind, status, at: when };
    if (r.status === 'saved' || r.status === 'already-archived') {
      m.path = r.path;
      if (r.bytes !== undefined) m.bytes = r.bytes;
      if (r.sha256 !== undefined) m.sha256 = r.sha256;
      if (r.text !== undefined) m.text = r.text;
    }
    facts.push(m);
  }
  const detail: Record<string, unknown> = { status };
  if (r.mediaAssetId !== undefined) detail.mediaAssetId = r.mediaAssetId;
  if (r.reason !== undefined) detail.reason = r.reason;
  facts.push({
    type: 'timeline',
    wacid: r.wacid,
    // One entry per asset and status: a repeated event (or a re-download) adds nothing.
    key: `media:${r.kind}:${r.mediaAssetId ?? '-'}:${status}`,
    at: when,
    event: `${r.kind} ${status}`,
    detail,
  });
  return facts;
}
