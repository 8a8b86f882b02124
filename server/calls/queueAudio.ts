/**
 * Queue audio (anchor mode, per business number: `QUEUE_AUDIO_FILE`): the lifecycle's steps
 * for a caller the bridge answers at once, kept out of `lifecycle.ts` (which imports this
 * file; this one imports nothing of it). Pure, like the lifecycle and `voicemail.ts`.
 *
 * The call stays `queued` / `ringing` (it waits for an agent: routing, the wallboard's
 * waiting counts and an abandon are as for any waiting call); what changes is the media:
 * - at the connect the room is made (`anchor`) and routing starts as always; `anchored` asks
 *   for the caller's leg at once (`callerLeg`, `joining`), `callerJoined` sends the accept;
 * - `acceptOk` → `acceptedAt`: `queueGreeting` plays the number's greeting once; at `musicAt`
 *   (the greeting's end) the hold music starts (`roomMusic`), and from then on every
 *   `positionEveryMs` the caller's place in the queue (`queuePosition`, at `announceAt`);
 *   the accept window no longer applies: `deadline` becomes the longest wait (`maxWaitMs`),
 *   past which (less the usual margin) the call ends from our side (`QUEUE_WAIT_OVER`);
 * - an agent answers: `answering` and its leg (`agentLeg`) as always; its `legReady` needs no
 *   accept (done): `active` now, `startedAt` (the wait ends here: history's answer), the
 *   greeting, announcement and music stop (`queueAudioStop`), the answer is acked;
 * - the agent's leg fails, or its page goes, before that: the call goes back to the queue
 *   (`requeue`), music again (the caller was answered: never refused now);
 * - VOICEMAIL_AFTER_S passing while waiting: the caller (answered already) goes straight to
 *   the voicemail prompt (`toVoicemail`).
 * Answered by the greeting is not answered by an agent: until an agent's leg is in, the call
 * has no `startedAt`, and a hangup while waiting is an abandon (`MISSED`, as for any waiting call).
 */
import type { CallStateName } from '../../shared/protocol.ts';

/** The error words of a call whose caller waited the longest wait (`maxWaitS`) with nobody answering. */
export const QUEUE_WAIT_OVER = 'no agent answered within the longest queue wait';

/** Queue audio as offered to one inbound call (fixed at the connect, from its number's entry). */
export interface QueueAudioPlan {
  greetingMs: number;
  /** 0: no position announcements. */
  positionEveryMs: number;
  maxWaitMs: number;
}

export interface QueueAudio extends QueueAudioPlan {
  /** The caller's leg was asked for (the accept follows its `callerJoined`). */
  joining?: true;
  /** The Service accepted the call (the bridge answered the caller). */
  acceptedAt?: number;
  /** The greeting's end: the music starts then. */
  musicAt?: number;
  /** The next position announcement. */
  announceAt?: number;
}

export type QueueAudioEffect =
  /** The number's greeting plays once into the room. */
  | { kind: 'queueGreeting'; janus: string; room: number }
  /** The caller's place in the queue (among the number's waiting calls, by arrival) is announced. */
  | { kind: 'queuePosition'; janus: string; room: number }
  /** An agent is in: greeting, announcement and music stop. */
  | { kind: 'queueAudioStop'; janus: string; room: number };

type Room = { janus: string; room: number };

/** What plays queue audio's sounds (server/calls/queueMedia.ts; the engine runs the effects through it). */
export interface QueueMedia {
  run(call: QueueAudioCall & { phoneId: string; to: string; createdAt: number }, e: QueueAudioEffect): Promise<void>;
}

/** The effects a queue-audio step asks for (each also one of the lifecycle's). */
export type QueueAudioStepEffect =
  | QueueAudioEffect
  | { kind: 'callerLeg' }
  | { kind: 'roomMusic'; janus: string; room: number; on: boolean }
  | { kind: 'revoke'; agent: string; reason: string }
  | { kind: 'agentFree'; agent: string; wrapUp: boolean }
  | { kind: 'leaveRoom'; agent: string }
  | { kind: 'reply'; conn: string; reqId: string; ok: true; result?: Record<string, unknown> }
  | { kind: 'reply'; conn: string; reqId: string; ok: false; code: 'CONFLICT' | 'SERVICE_ERROR'; message: string }
  | { kind: 'route' }
  | { kind: 'terminate' }
  | { kind: 'reject' }
  | { kind: 'notify' };

/** What queue audio reads of a call (the lifecycle's `Call` has all of it). */
export interface QueueAudioCall {
  wacid: string;
  state: CallStateName;
  anchor?: Room;
  agent?: string;
  conn?: string;
  reqId?: string;
  legReady?: boolean;
  answerSdp?: string;
  voicemail?: unknown;
  queueAudio?: QueueAudio;
}

export interface QueueAudioStep {
  patch: {
    state?: CallStateName;
    agent?: undefined;
    conn?: undefined;
    tab?: undefined;
    reqId?: undefined;
    ringUntil?: undefined;
    legReady?: true | undefined;
    endBy?: number | undefined;
    deadline?: number;
    startedAt?: number;
    acceptOutcome?: undefined;
    reason?: string;
    errorCode?: string;
    queueAudio?: QueueAudio;
  };
  effects: QueueAudioStepEffect[];
}

const waiting = (call: QueueAudioCall) => call.state === 'queued' || call.state === 'ringing';

/** The bridge answered the caller (the accept went through for queue audio). */
export function queueAccepted(call: QueueAudioCall): boolean {
  return call.queueAudio?.acceptedAt !== undefined;
}

/** `anchored`: a waiting queue-audio call's caller joins the room at once (undefined: not queue audio, or an agent answered first). */
export function queueJoin(call: QueueAudioCall): QueueAudioStep | undefined {
  const q = call.queueAudio;
  if (!q || q.joining || !waiting(call)) return undefined;
  return { patch: { queueAudio: { ...q, joining: true } }, effects: [{ kind: 'callerLeg' }] };
}

/** The caller joined for queue audio (a waiting call, or one an agent answered meanwhile): the accept goes. */
export function queueJoined(call: QueueAudioCall): boolean {
  return call.queueAudio?.joining === true && call.answerSdp === undefined && (waiting(call) || call.state === 'answering');
}

/**
 * `acceptOk` of the bridge's own accept: the greeting plays (a waiting call), the longest wait
 * replaces the accept window. An agent answering meanwhile whose leg is not in yet: accepted,
 * still answering (its `legReady` makes it active). Undefined: not this case.
 */
export function queueAcceptOk(call: QueueAudioCall, at: number): QueueAudioStep | undefined {
  const q = call.queueAudio;
  if (!q?.joining || q.acceptedAt !== undefined || call.voicemail) return undefined; // voicemail took it: its own accept
  if (call.state === 'answering' && call.legReady) return undefined; // the agent is in: an ordinary answer
  if (!waiting(call) && call.state !== 'answering') return undefined;
  const room = call.anchor;
  const greeting = waiting(call) && room;
  return {
    patch: {
      acceptOutcome: undefined,
      deadline: at + q.maxWaitMs,
      queueAudio: { ...q, acceptedAt: at, ...(greeting ? { musicAt: at + q.greetingMs } : {}) },
    },
    effects: [...(greeting ? [{ kind: 'queueGreeting', ...room } as const] : []), { kind: 'notify' }],
  };
}

/**
 * `legReady` of the answering agent: accepted already, the call is active now (the wait ends:
 * `startedAt`), the queue's sounds stop and the answer is acked. Caller still joining: only
 * noted (`callerJoined` sends the accept, `acceptOk` makes it active). Undefined: not queue
 * audio's (the room came after the answer: the ordinary path joins the caller).
 */
export function queueAgentIn(call: QueueAudioCall, at: number, conn: string): QueueAudioStep | undefined {
  const q = call.queueAudio;
  if (!q?.joining || call.state !== 'answering' || call.conn !== conn || call.legReady) return undefined;
  if (q.acceptedAt === undefined) return { patch: { legReady: true }, effects: [] };
  const room = call.anchor;
  return {
    patch: { state: 'active', legReady: true, startedAt: at, endBy: undefined, reqId: undefined, queueAudio: stopped(q) },
    effects: [
      ...(room ? [{ kind: 'queueAudioStop', ...room } as const] : []),
      ...(call.reqId && call.conn ? [{ kind: 'reply', conn: call.conn, reqId: call.reqId, ok: true, result: { wacid: call.wacid, startedAt: at } } as const] : []),
      { kind: 'notify' },
    ],
  };
}

const stopped = (q: QueueAudio): QueueAudio => {
  const { musicAt: _m, announceAt: _a, ...rest } = q;
  return rest;
};

/**
 * The answering agent's leg failed, its page went, or it never got in by `endBy`: the caller
 * (answered already) waits again, with music; routing tries the next agent.
 */
export function requeue(call: QueueAudioCall, at: number, reason: string): QueueAudioStep | undefined {
  const q = call.queueAudio;
  if (!q || q.acceptedAt === undefined || call.state !== 'answering' || !call.agent) return undefined;
  const room = call.anchor;
  return {
    patch: {
      state: 'queued',
      agent: undefined,
      conn: undefined,
      tab: undefined,
      reqId: undefined,
      legReady: undefined,
      endBy: undefined,
      queueAudio: { ...stopped(q), ...(q.positionEveryMs > 0 ? { announceAt: at + q.positionEveryMs } : {}) },
    },
    effects: [
      ...(call.conn && call.reqId ? [{ kind: 'reply', conn: call.conn, reqId: call.reqId, ok: false, code: 'SERVICE_ERROR', message: reason } as const] : []),
      { kind: 'leaveRoom', agent: call.agent },
      { kind: 'agentFree', agent: call.agent, wrapUp: false },
      ...(room ? [{ kind: 'roomMusic', ...room, on: true } as const] : []),
      { kind: 'route' },
      { kind: 'notify' },
    ],
  };
}

/**
 * The bridge's own accept (a waiting call's) was refused, or its outcome is unknown: refused
 * (`reject`), or ended from our side (`terminate`: it may have been accepted). Undefined: not this case.
 */
export function queueAcceptFailed(call: QueueAudioCall, at: number, endingMs: number, refused?: { code: string; reason: string }): QueueAudioStep | undefined {
  const q = call.queueAudio;
  if (!q?.joining || q.acceptedAt !== undefined || !waiting(call)) return undefined;
  const ring = call.state === 'ringing' && call.agent ? [{ kind: 'revoke', agent: call.agent, reason: 'the call could not be answered' } as const] : [];
  return refused
    ? { patch: { state: 'rejecting', agent: undefined, ringUntil: undefined, reason: refused.reason, errorCode: refused.code, endBy: at + endingMs }, effects: [...ring, { kind: 'reject' }, { kind: 'notify' }] }
    : { patch: { state: 'ending', agent: undefined, ringUntil: undefined, reason: 'accept did not complete', endBy: at + endingMs }, effects: [...ring, { kind: 'terminate' }, { kind: 'notify' }] };
}

/** The room's Janus is lost while the caller (answered) waits: ended from our side. */
export function queueRoomLost(call: QueueAudioCall, at: number, endingMs: number, reason: string): QueueAudioStep | undefined {
  if (!queueAccepted(call) || !waiting(call)) return undefined;
  return {
    patch: { state: 'ending', agent: undefined, ringUntil: undefined, reason: `media server lost: ${reason}`, endBy: at + endingMs },
    effects: [...(call.state === 'ringing' && call.agent ? [{ kind: 'revoke', agent: call.agent, reason: 'media server lost' } as const] : []), { kind: 'terminate' }, { kind: 'notify' }],
  };
}

/** When queue audio next has something to do by time (a waiting call the bridge answered). */
export function queueAudioDue(call: QueueAudioCall): number | undefined {
  const q = call.queueAudio;
  if (!q || q.acceptedAt === undefined || !waiting(call)) return undefined;
  if (q.musicAt !== undefined && q.announceAt !== undefined) return Math.min(q.musicAt, q.announceAt);
  return q.musicAt ?? q.announceAt;
}

/**
 * Time passed for a waiting call the bridge answered: the longest wait is over (`deadline`
 * less `marginMs`: ended from our side, never rejected — it was accepted), or the greeting's
 * end (music), or an announcement is due. Undefined: nothing of queue audio's.
 */
export function queueTick(call: QueueAudioCall & { deadline?: number }, at: number, marginMs: number, endingMs: number): QueueAudioStep | undefined {
  const q = call.queueAudio;
  const room = call.anchor;
  if (!q || q.acceptedAt === undefined || !waiting(call) || !room) return undefined;
  const ring = call.state === 'ringing' && call.agent ? [{ kind: 'revoke', agent: call.agent, reason: 'the caller waited too long' } as const] : [];
  if (call.deadline !== undefined && at >= call.deadline - marginMs) {
    return {
      patch: { state: 'ending', agent: undefined, ringUntil: undefined, reason: QUEUE_WAIT_OVER, endBy: at + endingMs, queueAudio: stopped(q) },
      effects: [...ring, { kind: 'terminate' }, { kind: 'notify' }],
    };
  }
  if (q.musicAt !== undefined && at >= q.musicAt) {
    const { musicAt: _m, ...rest } = q;
    const next: QueueAudio = { ...rest, ...(q.positionEveryMs > 0 ? { announceAt: q.musicAt + q.positionEveryMs } : {}) };
    return { patch: { queueAudio: next }, effects: [{ kind: 'roomMusic', ...room, on: true }] };
  }
  if (q.announceAt !== undefined && at >= q.announceAt) {
    // A late tick (a node was down) says it once and keeps the rhythm from now.
    return { patch: { queueAudio: { ...q, announceAt: Math.max(q.announceAt + q.positionEveryMs, at + 1) } }, effects: [{ kind: 'queuePosition', ...room }] };
  }
  return undefined;
}

/** Voicemail takes over a waiting call the bridge answered: the ring revoked, the queue's sounds stopped (the prompt follows). */
export function queueToVoicemail(call: QueueAudioCall): QueueAudioStep | undefined {
  const q = call.queueAudio;
  if (!q || q.acceptedAt === undefined || !waiting(call)) return undefined;
  const room = call.anchor;
  return {
    patch: { agent: undefined, ringUntil: undefined, queueAudio: stopped(q) },
    effects: [...(call.state === 'ringing' && call.agent ? [{ kind: 'revoke', agent: call.agent, reason: 'the caller went to voicemail' } as const] : []), ...(room ? [{ kind: 'queueAudioStop', ...room } as const] : [])],
  };
}

/** The place of a waiting call in its number's queue (1-based): the waiting calls of that number that arrived before it, plus one. */
export function queuePlace(call: { wacid: string; createdAt: number }, waitingCalls: ReadonlyArray<{ wacid: string; createdAt: number }>): number {
  return 1 + waitingCalls.filter((c) => c.wacid !== call.wacid && (c.createdAt < call.createdAt || (c.createdAt === call.createdAt && c.wacid < call.wacid))).length;
}
