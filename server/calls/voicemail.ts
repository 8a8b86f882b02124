/**
 * Voicemail (anchor mode): the lifecycle's steps for a caller who leaves a message, kept out
 * of `lifecycle.ts` (which imports this file; this one imports nothing of it). Pure, like the
 * lifecycle: each step takes the call and the event's time and says what changes and which
 * effects follow; the lifecycle turns that into its transition.
 *
 * The path (the Service must see the call accepted before the caller hears anything):
 * - no agent answered within `plan.at` (VOICEMAIL_AFTER_S from the call's arrival), or the
 *   number is closed (`HOURS_FILE`) → `answering` without an agent, `voicemail.phase` `joining`:
 *   the ring (if any) is revoked, the caller joins the room (`callerLeg`; out of hours the room
 *   is made first: `anchor`, then `anchored` asks for the leg);
 * - Janus's answer is accepted as for an agent (`callerJoined` → `accept`), then `acceptOk` →
 *   `active` with `phase` `recording`: `voicemailStart` plays the prompt (out of hours the
 *   closed greeting, then the prompt) and records the caller's own audio, until `until` (the
 *   prompt's length + VOICEMAIL_MAX_S);
 * - the caller hanging up (the terminate event) ends it; `until` passing ends it from our
 *   side (`terminate`). Whatever ends a call that was recording, the lifecycle adds
 *   `voicemailSave` (before the room closes): the message is archived as Ogg/Opus, and the
 *   call's reason becomes `VOICEMAIL_LEFT` (history: `missed`; the call-back queue: a task
 *   with reason `voicemail`).
 */
import type { CallStateName } from '../../shared/protocol.ts';
import { OUT_OF_HOURS, VOICEMAIL_LEFT, VOICEMAIL_NONE } from '../../shared/callErrors.ts';

/** Voicemail as offered to one inbound call (anchor mode), fixed when it arrives. */
export interface VoicemailPlan {
  /** Epoch ms from which nobody having answered turns the call into voicemail; absent: only out of hours. */
  at?: number;
  /** The longest message (VOICEMAIL_MAX_S), after the prompt. */
  maxMs: number;
  /** How long the prompt plays (its file's length), and the closed greeting with the prompt. */
  promptMs: number;
  closedMs: number;
}

/** The caller is leaving a message. */
export interface Voicemail {
  /** `joining`: the caller joins the room and the accept goes; `recording`: the prompt plays, then the message. */
  phase: 'joining' | 'recording';
  /** Out of hours: the closed greeting comes first. */
  closed?: true;
  /** Recording: the prompt is over then (what the caller says from then on is the message). */
  from?: number;
  /** Recording: the message ends by then (our terminate). */
  until?: number;
}

/** The effects only voicemail has. */
export type VoicemailEffect =
  /** The prompt (out of hours: the closed greeting and the prompt) plays into the room, and the caller's audio is recorded. */
  | { kind: 'voicemailStart'; janus: string; room: number; closed: boolean }
  /** The recording stops and the message goes into the archive (Ogg/Opus); `keep` false: the caller left no message (hung up during the prompt), the recording is thrown away. */
  | { kind: 'voicemailSave'; janus: string; room: number; keep: boolean };

/** The effects a voicemail step asks for (each also one of the lifecycle's). */
export type VoicemailStepEffect = VoicemailEffect | { kind: 'revoke'; agent: string; reason: string } | { kind: 'callerLeg' } | { kind: 'anchor' } | { kind: 'terminate' } | { kind: 'notify' };

/** What voicemail reads of a call (the lifecycle's `Call` has all of it). */
export interface VoicemailCall {
  state: CallStateName;
  media?: 'anchor';
  anchor?: { janus: string; room: number };
  agent?: string;
  deadline?: number;
  voicemailPlan?: VoicemailPlan;
  voicemail?: Voicemail;
}

export interface VoicemailStep {
  patch: {
    state?: CallStateName;
    agent?: undefined;
    ringUntil?: undefined;
    endBy?: number;
    reqId?: undefined;
    voicemail?: Voicemail;
    reason?: string;
  };
  effects: VoicemailStepEffect[];
}

/** When a queued or ringing call turns into voicemail (undefined: it does not). */
export function voicemailDue(call: VoicemailCall): number | undefined {
  if (call.media !== 'anchor' || call.voicemail || (call.state !== 'queued' && call.state !== 'ringing')) return undefined;
  return call.voicemailPlan?.at;
}

/**
 * Nobody answered by `plan.at` (or the number is closed, `closed`): the bridge takes the call
 * for voicemail. `graceMs`: how long past the accept deadline the accept may take (as an
 * agent's answer has).
 */
export function startVoicemail(call: VoicemailCall, at: number, graceMs: number, closed = false): VoicemailStep {
  const effects: VoicemailStepEffect[] = [];
  if (call.state === 'ringing' && call.agent) effects.push({ kind: 'revoke', agent: call.agent, reason: 'the caller went to voicemail' });
  // The caller joins once there is a room (else `anchored` asks for the leg).
  effects.push(call.anchor ? { kind: 'callerLeg' } : { kind: 'anchor' }, { kind: 'notify' });
  return {
    patch: { state: 'answering', agent: undefined, ringUntil: undefined, reqId: undefined, endBy: Math.max(call.deadline ?? at, at) + graceMs, voicemail: { phase: 'joining', ...(closed ? { closed: true } : {}) } },
    effects,
  };
}

/** The Service accepted the call: the prompt plays and the message is recorded, for at most the prompt and VOICEMAIL_MAX_S. */
export function voicemailAccepted(call: VoicemailCall, at: number): VoicemailStep {
  const v = call.voicemail!;
  const plan = call.voicemailPlan;
  const lead = v.closed ? (plan?.closedMs ?? 0) : (plan?.promptMs ?? 0);
  const until = at + lead + (plan?.maxMs ?? 0);
  const room = call.anchor;
  return {
    patch: { state: 'active', voicemail: { ...v, phase: 'recording', from: at + lead, until } },
    effects: [...(room ? [{ kind: 'voicemailStart', janus: room.janus, room: room.room, closed: v.closed === true } as const] : []), { kind: 'notify' }],
  };
}

/** Recording, time passed: the message is as long as it may be; the call ends from our side. */
export function voicemailTick(call: VoicemailCall, at: number, endingMs: number): VoicemailStep | undefined {
  const v = call.voicemail;
  if (call.state !== 'active' || v?.phase !== 'recording' || v.until === undefined || at < v.until) return undefined;
  return { patch: { state: 'ending', endBy: at + endingMs, reason: VOICEMAIL_LEFT }, effects: [{ kind: 'terminate' }, { kind: 'notify' }] };
}

/** Recording, the caller silent for VOICEMAIL_SILENCE_S after the prompt (server/calls/voicemail-silence.ts): the message is over; the call ends from our side. */
export function voicemailSilent(call: VoicemailCall, at: number, endingMs: number): VoicemailStep | undefined {
  const v = call.voicemail;
  if (call.state !== 'active' || v?.phase !== 'recording' || v.from === undefined || at < v.from) return undefined;
  return { patch: { state: 'ending', endBy: at + endingMs, reason: VOICEMAIL_LEFT }, effects: [{ kind: 'terminate' }, { kind: 'notify' }] };
}

/** When voicemail next has something to do by time (an active call recording). */
export function voicemailNextDue(call: VoicemailCall): number | undefined {
  return call.state === 'active' && call.voicemail?.phase === 'recording' ? call.voicemail.until : undefined;
}

/**
 * A call ends (whatever ended it): one that was recording keeps its message (`voicemailSave`,
 * before the room closes) and says so in its reason; one still joining (the caller hung up before the
 * accept) ends as the out-of-hours call it was, or as an unanswered call.
 */
export function voicemailEnded(call: VoicemailCall, at: number): VoicemailStep | undefined {
  const v = call.voicemail;
  if (!v) return undefined;
  if (v.phase === 'joining') return v.closed ? { patch: { reason: OUT_OF_HOURS }, effects: [] } : undefined;
  const room = call.anchor;
  // Gone before the prompt was over: no message (out of hours: still an out-of-hours call).
  const left = v.from === undefined || at >= v.from;
  return {
    patch: { reason: left ? VOICEMAIL_LEFT : v.closed ? OUT_OF_HOURS : VOICEMAIL_NONE },
    effects: room ? [{ kind: 'voicemailSave', janus: room.janus, room: room.room, keep: left }] : [],
  };
}
