/**
 * Views: what clients see of calls. `view` (never the SDP), `offered` (the ringing agent's
 * offer, with the SDP) and `welcome` (everything a connection shows on every (re)connect).
 */
import { PROTOCOL_VERSION, type CallView, type ServerMsg, type User } from '../../shared/protocol.ts';
import type { CallRecord, Store } from '../store/store.ts';
import type { AgentBoard } from './agents.ts';
import { handingOff, type Call } from './lifecycle.ts';

/** The offer frame to the agent a call rings for. */
export function offered(call: Call): Extract<ServerMsg, { type: 'call.offered' }> {
  return {
    type: 'call.offered',
    wacid: call.wacid,
    phoneId: call.phoneId,
    from: call.from,
    to: call.to,
    direction: call.direction,
    sdp: call.offerSdp!,
    // Handing off (anchor): the call was accepted long ago; the offer stands until the handoff's end.
    deadline: call.handoffUntil ?? call.deadline!,
    ...(call.transfer?.ringUntil !== undefined ? { ringUntil: call.transfer.ringUntil } : call.ringUntil !== undefined ? { ringUntil: call.ringUntil } : {}),
    ...(call.media === 'anchor' ? { media: 'anchor' as const } : {}),
    ...(call.transfer ? { transfer: { by: call.transfer.by, ...(call.transfer.note !== undefined ? { note: call.transfer.note } : {}) } } : {}),
    ...(call.consult ? { transfer: { by: call.consult.by, ...(call.consult.note !== undefined ? { note: call.consult.note } : {}), consult: true as const }, ringUntil: call.consult.ringUntil ?? call.ringUntil } : {}),
  };
}

/** What clients see of a call (never the SDP, except in the ringing agent's offer). */
export function view(call: Call): CallView {
  // Handing off (anchor): clients see the call wait (queued) or ring at the next agent, as a new one would.
  const handoff = handingOff(call);
  const v: CallView = {
    wacid: call.wacid,
    phoneId: call.phoneId,
    from: call.from,
    to: call.to,
    direction: call.direction,
    state: handoff ? (call.nextAgent !== undefined ? 'ringing' : 'queued') : call.state,
  };
  if (handoff) {
    if (call.nextAgent !== undefined) (v.agent = call.nextAgent), (v.ringUntil = call.ringUntil);
    v.deadline = call.handoffUntil;
  }
  if (call.agent !== undefined) v.agent = call.agent;
  if (call.deadline !== undefined && (call.state === 'queued' || call.state === 'ringing')) v.deadline = call.deadline;
  if (call.ringUntil !== undefined && call.state === 'ringing') v.ringUntil = call.ringUntil;
  if (call.startedAt !== undefined) v.startedAt = call.startedAt;
  if (call.endedAt !== undefined) v.endedAt = call.endedAt;
  if (call.result !== undefined) v.result = call.result;
  if (call.duration !== undefined) v.duration = call.duration;
  if (call.reason !== undefined) v.reason = call.reason;
  if (call.heldSince !== undefined) v.heldSince = call.heldSince;
  if (call.holdMs !== undefined) v.holdMs = call.holdMs;
  if (call.path !== undefined) v.path = call.path;
  if (call.media === 'anchor') v.media = 'anchor';
  // The Service's code (e.g. 138006) when it gave a numeric one; `reason` says it in words.
  if (call.errorCode !== undefined && /^\d{1,9}$/.test(call.errorCode)) v.errorCode = Number(call.errorCode);
  if (call.consult) v.consult = { by: call.consult.by, target: call.consult.target, phase: call.consult.phase };
  if (call.conference?.length) v.conference = call.conference.map((m) => m.agent);
  if (call.voicemail) v.voicemail = { phase: call.voicemail.phase, ...(call.voicemail.closed ? { closed: true as const } : {}) };
  if (call.transfer) v.transfer = { by: call.transfer.by, ...(call.transfer.ringing !== undefined ? { ringing: call.transfer.ringing } : {}) };
  return v;
}

export interface WelcomeSources {
  store: Pick<Store, 'listLiveCalls'>;
  board: AgentBoard;
  /** Calls this node has seen live (the applier's), fetched by id. */
  live: () => Iterable<string>;
  getMany: (wacids: string[]) => Promise<CallRecord[]>;
  fromRecord: (rec: CallRecord) => Call;
  /** The configured wrap-up codes and away reasons, for the pages' pickers. */
  dispositions: readonly string[];
  awayReasons: readonly string[];
}

/**
 * Everything `welcome` shows this user now: their ringing offers (with the SDP, so a
 * reconnected tab can still answer) and the calls they hold; for supervisors every live
 * call. Agents' calls are found through the board (no scan of the call history).
 */
export async function welcome(user: User, s: WelcomeSources): Promise<ServerMsg> {
  const calls: CallView[] = [];
  const supervisor = user.roles.includes('supervisor');
  let recs: CallRecord[];
  if (supervisor) {
    recs = await s.store.listLiveCalls();
  } else if (!user.roles.includes('agent')) {
    recs = []; // ops: no calls of their own, and no place on the board
  } else {
    const v = s.board.view(user.name);
    recs = await s.getMany([...new Set([v.ringing, v.holding, ...s.live()].filter((w): w is string => typeof w === 'string'))]);
  }
  for (const rec of recs) {
    const call = s.fromRecord(rec);
    if (call.state === 'ended') continue;
    const v = view(call);
    const mine = v.agent === user.name;
    if (mine && v.state === 'ringing') calls.push({ ...v, sdp: call.offerSdp! });
    else if (mine || supervisor) calls.push(view(call));
  }
  return {
    type: 'welcome',
    protocol: PROTOCOL_VERSION,
    user,
    // Only agents are on the board (`ops` opening the archive is no agent of the wallboard).
    presence: user.roles.includes('agent') ? s.board.presence(user.name) : 'away',
    calls,
    ...(user.roles.includes('agent') ? { agentState: s.board.state(user.name) } : {}),
    dispositions: [...s.dispositions],
    awayReasons: [...s.awayReasons],
  };
}
