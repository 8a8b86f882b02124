/** The lifecycle tests' calls and events (server/calls/lifecycle*.test.ts): one representative call per state, one event of each kind. */
import { DEFAULT_POLICY, type Call, type CallEvent, type CallStateName } from '../../server/calls/lifecycle.ts';

export const T0 = 1_700_000_000_000;
export const P = DEFAULT_POLICY;
export const W = 'wacid.1';
export const DEADLINE = T0 + P.acceptWindowMs;
export const SOON = T0 + 1_000; // every timer of the fixtures is still in the future
export const LATER = T0 + 10_000_000; // every timer of the fixtures has fired

export const base: Call = {
  wacid: W,
  phoneId: 'phone-1',
  direction: 'USER_INITIATED',
  from: '+15550001',
  to: '+15550002',
  state: 'queued',
  createdAt: T0,
  offerSdp: 'v=0\r\noffer\r\n',
  deadline: DEADLINE,
  offeredTo: ['a1'],
  declined: [],
};
export const outbound: Call = { ...base, direction: 'BUSINESS_INITIATED', offerSdp: undefined, deadline: undefined, offeredTo: [], localSdp: 'v=0\r\nlocal\r\n' };

/** One representative call per state (agent a1 rings / holds it; a1 was offered it). */
export const FIXTURES: Record<CallStateName, Call> = {
  queued: base,
  ringing: { ...base, state: 'ringing', agent: 'a1', ringUntil: T0 + P.ringTimeoutMs },
  answering: { ...base, state: 'answering', agent: 'a1', conn: 'c1', tab: 't1', reqId: 'r1', answerSdp: 'v=0\r\nanswer\r\n', endBy: DEADLINE + P.answerGraceMs },
  rejecting: { ...base, state: 'rejecting', reason: 'no agent answered in time', endBy: T0 + 60_000 },
  dialing: { ...outbound, state: 'dialing', agent: 'a1', conn: 'c1', tab: 't1', endBy: T0 + P.dialTimeoutMs },
  connected: { ...outbound, state: 'connected', agent: 'a1', conn: 'c1', tab: 't1', remoteSdp: 'v=0\r\nremote\r\n', endBy: T0 + P.dialTimeoutMs },
  active: { ...base, state: 'active', agent: 'a1', conn: 'c1', tab: 't1', answerSdp: 'v=0\r\nanswer\r\n', startedAt: T0 + 500 },
  ending: { ...base, state: 'ending', agent: 'a1', conn: 'c1', tab: 't1', startedAt: T0 + 500, endBy: T0 + 60_000 },
  ended: { ...base, state: 'ended', agent: 'a1', conn: 'c1', tab: 't1', startedAt: T0 + 500, endedAt: T0 + 900, result: 'COMPLETED', duration: 0, endedBy: 'event' },
};

/** One representative event of each kind; a1 is the ringing/holding agent, a2 another agent. */
export const EVENTS: Record<string, CallEvent> = {
  connectIn: { type: 'connect', wacid: W, at: SOON, direction: 'USER_INITIATED', phoneId: 'phone-1', from: '+15550001', to: '+15550002', sdp: 'v=0\r\noffer\r\n', dialTime: T0 },
  connectOut: { type: 'connect', wacid: W, at: SOON, direction: 'BUSINESS_INITIATED', phoneId: 'phone-1', from: '+15550002', to: '+15550001', sdp: 'v=0\r\nremote\r\n' },
  terminate: { type: 'terminate', wacid: W, at: SOON, result: 'COMPLETED', duration: 42 },
  status: { type: 'status', wacid: W, at: SOON, value: 'ACCEPTED' },
  offer: { type: 'offer', wacid: W, at: SOON, agent: 'a2' },
  decline: { type: 'decline', wacid: W, at: SOON, agent: 'a1', conn: 'c1', reqId: 'r9' },
  agentGone: { type: 'agentGone', wacid: W, at: SOON, agent: 'a1' },
  connLost: { type: 'connLost', wacid: W, at: SOON, agent: 'a1', conn: 'c1' },
  attach: { type: 'attach', wacid: W, at: SOON, agent: 'a1', conn: 'c2', tab: 't1' },
  answer: { type: 'answer', wacid: W, at: SOON, agent: 'a1', conn: 'c1', reqId: 'r2', sdp: 'v=0\r\nanswer\r\n' },
  acceptOk: { type: 'acceptOk', wacid: W, at: SOON },
  acceptRefused: { type: 'acceptRefused', wacid: W, at: SOON, code: 'BAD_REQUEST', reason: 'call already ended' },
  acceptUnknown: { type: 'acceptUnknown', wacid: W, at: SOON },
  hangup: { type: 'hangup', wacid: W, at: SOON, agent: 'a1', conn: 'c1', reqId: 'r3' },
  hold: { type: 'hold', wacid: W, at: SOON, agent: 'a1', conn: 'c1', reqId: 'r5' },
  resume: { type: 'resume', wacid: W, at: SOON, agent: 'a1', conn: 'c1', reqId: 'r6' },
  path: { type: 'path', wacid: W, at: SOON, agent: 'a1', conn: 'c1', reqId: 'r7', path: 'relay-tcp' },
  dialed: { type: 'dialed', wacid: W, at: SOON, agent: 'a1', conn: 'c1', reqId: 'r4', phoneId: 'phone-1', from: '+15550002', to: '+15550001', sdp: 'v=0\r\nlocal\r\n' },
  anchored: { type: 'anchored', wacid: W, at: SOON, janus: 'ws://j1:8188', room: 7 },
  callerJoined: { type: 'callerJoined', wacid: W, at: SOON, sdp: 'v=0\r\njanus\r\n' },
  anchorFailed: { type: 'anchorFailed', wacid: W, at: SOON, reason: 'no Janus server of JANUS_URLS is reachable' },
  legReady: { type: 'legReady', wacid: W, at: SOON, agent: 'a1', conn: 'c1' },
  legFailed: { type: 'legFailed', wacid: W, at: SOON, agent: 'a1', reason: 'janus gave no offer' },
  rejoin: { type: 'rejoin', wacid: W, at: SOON, agent: 'a1', conn: 'c2', tab: 't2', reqId: 'r8' },
  roomLost: { type: 'roomLost', wacid: W, at: SOON, reason: 'ws://j1:8188 not answering for 3 s' },
  transfer: { type: 'transfer', wacid: W, at: SOON, agent: 'a1', conn: 'c1', reqId: 'r10', to: { agent: 'a2' }, note: 'billing question' },
  transferAction: { type: 'transferAction', wacid: W, at: SOON, agent: 'a1', conn: 'c1', reqId: 'r11', action: 'complete' },
  consultFailed: { type: 'consultFailed', wacid: W, at: SOON, reason: 'janus said no' },
  voicemailSilent: { type: 'voicemailSilent', wacid: W, at: SOON },
  tickEarly: { type: 'tick', wacid: W, at: SOON },
  tickLate: { type: 'tick', wacid: W, at: LATER },
};
