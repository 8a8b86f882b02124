import { describe, expect, it } from 'vitest';
import { AGENT_PAGE_LOST, OUT_OF_HOURS } from '../../shared/callErrors.ts';
import {
  CALL_EVENT_TYPES,
  CALL_STATES,
  DEFAULT_POLICY,
  RANK,
  acceptDeadline,
  nextDue,
  TERMINATE_RETRIES,
  terminateRetryDue,
  transition,
  type Call,
  type CallEvent,
  type CallStateName,
  type Effect,
} from './lifecycle.ts';

const T0 = 1_700_000_000_000;
const P = DEFAULT_POLICY;
const W = 'wacid.1';
const DEADLINE = T0 + P.acceptWindowMs;
const SOON = T0 + 1_000; // every timer of the fixtures is still in the future
const LATER = T0 + 10_000_000; // every timer of the fixtures has fired

const base: Call = {
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
const outbound: Call = { ...base, direction: 'BUSINESS_INITIATED', offerSdp: undefined, deadline: undefined, offeredTo: [], localSdp: 'v=0\r\nlocal\r\n' };

/** One representative call per state (agent a1 rings / holds it; a1 was offered it). */
const FIXTURES: Record<CallStateName, Call> = {
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
const EVENTS: Record<string, CallEvent> = {
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

/**
 * THE TABLE: every state (and "no record") × every event.
 * Cell: "=" the call is returned unchanged (the same object); otherwise the next state.
 * After a space: the kinds of the effects, in order.
 */
const TABLE: Record<CallStateName | 'none', Record<keyof typeof EVENTS, string>> = {
  none: {
    anchored: '=', callerJoined: '=', anchorFailed: '=', legReady: '=', legFailed: '=', rejoin: '=', roomLost: '=', // direct mode: no room (one opened anyway is given back; rejoin: CONFLICT or FORBIDDEN)
    transfer: '=', // direct mode: CONFLICT (no room); anchor mode below
    transferAction: '=', consultFailed: '=', voicemailSilent: '=', // no warm transfer under way
    connectIn: 'queued route notify',
    connectOut: 'connected notify',
    terminate: 'ended', // tombstone, no pushes
    status: '=',
    offer: '=',
    decline: '=',
    agentGone: '=', connLost: '=', attach: '=',
    answer: '=',
    acceptOk: '=',
    acceptRefused: '=',
    acceptUnknown: '=',
    hangup: '=',
    dialed: 'dialing agentBusy reply notify',
    hold: '=', resume: '=',
    path: '=', // only the holder, while the call is set up or up
    tickEarly: '=',
    tickLate: '=',
  },
  queued: {
    anchored: '= closeRoom', callerJoined: '=', anchorFailed: '=', legReady: '=', legFailed: '=', rejoin: '= reply', roomLost: '=', // direct mode: no room (one opened anyway is given back; rejoin: CONFLICT or FORBIDDEN)
    transfer: '= reply', // direct mode: CONFLICT (no room); anchor mode below
    transferAction: '= reply', consultFailed: '=', voicemailSilent: '=', // no warm transfer under way
    connectIn: '=', connectOut: '=',
    terminate: 'ended notify',
    status: '=',
    offer: 'ringing offer notify',
    decline: '= reply', // a1 was offered it earlier (timed out): harmless, acknowledged
    agentGone: '=', connLost: '=', attach: '=',
    answer: 'answering accept revoke agentBusy notify', // a1's late answer may still claim it
    acceptOk: '=', acceptRefused: '=', acceptUnknown: '=',
    hangup: '= reply',
    dialed: '= reply',
    hold: '= reply', resume: '= reply', // FORBIDDEN or CONFLICT: only an active call is held
    path: '= reply', // only the holder, while the call is set up or up
    tickEarly: '=',
    tickLate: 'rejecting reject notify',
  },
  ringing: {
    anchored: '= closeRoom', callerJoined: '=', anchorFailed: '=', legReady: '=', legFailed: '=', rejoin: '= reply', roomLost: '=', // direct mode: no room (one opened anyway is given back; rejoin: CONFLICT or FORBIDDEN)
    transfer: '= reply', // direct mode: CONFLICT (no room); anchor mode below
    transferAction: '= reply', consultFailed: '=', voicemailSilent: '=', // no warm transfer under way
    connectIn: '=', connectOut: '=',
    terminate: 'ended revoke notify',
    status: '=',
    offer: '=', // already ringing somebody
    decline: 'queued revoke reply route notify',
    agentGone: 'queued revoke route notify', connLost: '=', attach: '=',
    answer: 'answering accept revoke agentBusy notify',
    acceptOk: '=', acceptRefused: '=', acceptUnknown: '=',
    hangup: 'queued revoke reply route notify', // hangup while ringing = decline
    dialed: '= reply',
    hold: '= reply', resume: '= reply', // FORBIDDEN or CONFLICT: only an active call is held
    path: '= reply', // only the holder, while the call is set up or up
    tickEarly: '=',
    tickLate: 'rejecting revoke reject notify',
  },
  answering: {
    anchored: '= closeRoom', callerJoined: '=', anchorFailed: '=', legReady: '=', legFailed: '=', rejoin: '= reply', roomLost: '=', // direct mode: no room (one opened anyway is given back; rejoin: CONFLICT or FORBIDDEN)
    transfer: '= reply', // direct mode: CONFLICT (no room); anchor mode below
    transferAction: '= reply', consultFailed: '=', voicemailSilent: '=', // no warm transfer under way
    connectIn: '=', connectOut: '=',
    terminate: 'ended reply agentFree notify',
    status: '=', offer: '=',
    decline: '= reply',
    agentGone: '=', connLost: 'ending terminate notify', attach: 'answering',
    answer: '= reply', // a second request while the first is in flight: CONFLICT
    acceptOk: 'active reply notify',
    acceptRefused: 'rejecting reply reject agentFree notify',
    acceptUnknown: 'answering reply notify',
    hangup: 'ending terminate reply reply notify',
    dialed: '= reply',
    hold: '= reply', resume: '= reply', // FORBIDDEN or CONFLICT: only an active call is held
    path: 'answering reply notify', // only the holder, while the call is set up or up
    tickEarly: '=',
    tickLate: 'ending reply terminate notify',
  },
  rejecting: {
    anchored: '= closeRoom', callerJoined: '=', anchorFailed: '=', legReady: '=', legFailed: '=', rejoin: '= reply', roomLost: '=', // direct mode: no room (one opened anyway is given back; rejoin: CONFLICT or FORBIDDEN)
    transfer: '= reply', // direct mode: CONFLICT (no room); anchor mode below
    transferAction: '= reply', consultFailed: '=', voicemailSilent: '=', // no warm transfer under way
    connectIn: '=', connectOut: '=',
    terminate: 'ended notify',
    status: '=', offer: '=',
    decline: '= reply', agentGone: '=', connLost: '=', attach: '=',
    answer: '= reply',
    acceptOk: '=', acceptRefused: '=', acceptUnknown: '=',
    hangup: '= reply',
    dialed: '= reply',
    hold: '= reply', resume: '= reply', // FORBIDDEN or CONFLICT: only an active call is held
    path: '= reply', // only the holder, while the call is set up or up
    tickEarly: '=',
    tickLate: 'ended notify',
  },
  dialing: {
    anchored: '= closeRoom', callerJoined: '=', anchorFailed: '=', legReady: '=', legFailed: '=', rejoin: '= reply', roomLost: '=', // direct mode: no room (one opened anyway is given back; rejoin: CONFLICT or FORBIDDEN)
    transfer: '= reply', // direct mode: CONFLICT (no room); anchor mode below
    transferAction: '= reply', consultFailed: '=', voicemailSilent: '=', // no warm transfer under way
    connectIn: '=',
    connectOut: 'connected remoteAnswer notify',
    terminate: 'ended agentFree notify',
    status: 'active notify',
    offer: '=',
    decline: '= reply', // FORBIDDEN: nobody is offered an outbound call
    agentGone: '=', connLost: 'ending terminate notify', attach: 'dialing',
    answer: '= reply',
    acceptOk: '=', acceptRefused: '=', acceptUnknown: '=',
    hangup: 'ending terminate reply notify',
    dialed: '= reply',
    hold: '= reply', resume: '= reply', // FORBIDDEN or CONFLICT: only an active call is held
    path: 'dialing reply notify', // only the holder, while the call is set up or up
    tickEarly: '=',
    tickLate: 'ending terminate notify',
  },
  connected: {
    anchored: '= closeRoom', callerJoined: '=', anchorFailed: '=', legReady: '=', legFailed: '=', rejoin: '= reply', roomLost: '=', // direct mode: no room (one opened anyway is given back; rejoin: CONFLICT or FORBIDDEN)
    transfer: '= reply', // direct mode: CONFLICT (no room); anchor mode below
    transferAction: '= reply', consultFailed: '=', voicemailSilent: '=', // no warm transfer under way
    connectIn: '=', connectOut: '=',
    terminate: 'ended agentFree notify',
    status: 'active notify',
    offer: '=',
    decline: '= reply', agentGone: '=', connLost: 'ending terminate notify', attach: 'connected',
    answer: '= reply',
    acceptOk: '=', acceptRefused: '=', acceptUnknown: '=',
    hangup: 'ending terminate reply notify',
    dialed: '= reply',
    hold: '= reply', resume: '= reply', // FORBIDDEN or CONFLICT: only an active call is held
    path: 'connected reply notify', // only the holder, while the call is set up or up
    tickEarly: '=',
    tickLate: 'ending terminate notify',
  },
  active: {
    anchored: '= closeRoom', callerJoined: '=', anchorFailed: '=', legReady: '=', legFailed: '=', rejoin: '= reply', roomLost: '=', // direct mode: no room (one opened anyway is given back; rejoin: CONFLICT or FORBIDDEN)
    transfer: '= reply', // direct mode: CONFLICT (no room); anchor mode below
    transferAction: '= reply', consultFailed: '=', voicemailSilent: '=', // no warm transfer under way
    connectIn: '=', connectOut: '=',
    terminate: 'ended agentFree notify',
    status: '=', offer: '=',
    decline: '= reply', agentGone: '=', connLost: 'ending terminate notify', attach: 'active',
    answer: '= reply',
    acceptOk: '=', acceptRefused: '=', acceptUnknown: '=',
    hangup: 'ending terminate reply notify',
    dialed: '= reply',
    hold: 'active reply notify', resume: '= reply', // resume when not held: acknowledged
    path: 'active reply notify', // only the holder, while the call is set up or up
    tickEarly: '=', tickLate: '=', // a conversation has no time limit of ours
  },
  ending: {
    anchored: '= closeRoom', callerJoined: '=', anchorFailed: '=', legReady: '=', legFailed: '=', rejoin: '= reply', roomLost: '=', // direct mode: no room (one opened anyway is given back; rejoin: CONFLICT or FORBIDDEN)
    transfer: '= reply', // direct mode: CONFLICT (no room); anchor mode below
    transferAction: '= reply', consultFailed: '=', voicemailSilent: '=', // no warm transfer under way
    connectIn: '=', connectOut: '=',
    terminate: 'ended agentFree notify',
    status: '=', offer: '=',
    decline: '= reply', agentGone: '=', connLost: '=', attach: '=',
    answer: '= reply',
    acceptOk: '=', acceptRefused: '=', acceptUnknown: '=',
    hangup: '= reply',
    dialed: '= reply',
    hold: '= reply', resume: '= reply', // FORBIDDEN or CONFLICT: only an active call is held
    path: '= reply', // only the holder, while the call is set up or up
    tickEarly: '=',
    tickLate: 'ended agentFree notify',
  },
  ended: {
    anchored: '= closeRoom', callerJoined: '=', anchorFailed: '=', legReady: '=', legFailed: '=', rejoin: '= reply', roomLost: '=', // direct mode: no room (one opened anyway is given back; rejoin: CONFLICT or FORBIDDEN)
    transfer: '= reply', // direct mode: CONFLICT (no room); anchor mode below
    transferAction: '= reply', consultFailed: '=', voicemailSilent: '=', // no warm transfer under way
    connectIn: '=', connectOut: '=',
    terminate: '=', // duplicate terminate
    status: '=', offer: '=',
    decline: '= reply', agentGone: '=', connLost: '=', attach: '=',
    answer: '= reply',
    acceptOk: '=', acceptRefused: '=', acceptUnknown: '=',
    hangup: '= reply',
    dialed: '= reply',
    hold: '= reply', resume: '= reply', // FORBIDDEN or CONFLICT: only an active call is held
    path: '= reply', // only the holder, while the call is set up or up
    tickEarly: '=', tickLate: '=',
  },
};

function describeResult(before: Call | null, r: ReturnType<typeof transition>): string {
  const head = r.call === before ? '=' : (r.call?.state ?? 'null');
  return [head, ...r.effects.map((e) => e.kind)].join(' ');
}

describe('transition: every state × every event (the table)', () => {
  it('the table covers every state and every event type', () => {
    expect(Object.keys(TABLE).sort()).toEqual([...CALL_STATES, 'none'].sort());
    const covered = new Set(Object.values(EVENTS).map((e) => e.type));
    expect([...covered].sort()).toEqual([...CALL_EVENT_TYPES].sort());
    for (const row of Object.values(TABLE)) expect(Object.keys(row).sort()).toEqual(Object.keys(EVENTS).sort());
  });

  for (const [stateKey, row] of Object.entries(TABLE)) {
    for (const [eventKey, expected] of Object.entries(row)) {
      it(`${stateKey} + ${eventKey} → ${expected}`, () => {
        const before = stateKey === 'none' ? null : FIXTURES[stateKey as CallStateName];
        const frozen = before ? structuredClone(before) : null;
        const r = transition(before, EVENTS[eventKey]!, P);
        expect(describeResult(before, r)).toBe(expected);
        // Pure: the input is never mutated.
        expect(before).toEqual(frozen);
      });
    }
  }
});

describe('transition: invariants over the whole table', () => {
  const states = CALL_STATES.map((s) => FIXTURES[s]);
  const events = Object.values(EVENTS);

  it('a state never moves backwards, and only queued ⇄ ringing move sideways', () => {
    for (const c of states) {
      for (const e of events) {
        const next = transition(c, e, P).call!;
        expect(RANK[next.state], `${c.state} + ${e.type}`).toBeGreaterThanOrEqual(RANK[c.state]);
        if (RANK[next.state] === RANK[c.state] && next.state !== c.state) {
          expect([c.state, next.state].sort(), `${c.state} + ${e.type}`).toEqual(['queued', 'ringing']);
        }
      }
    }
  });

  it('ended is final: no event changes its state or pushes an offer', () => {
    for (const e of events) {
      const r = transition(FIXTURES.ended, e, P);
      expect(r.call!.state).toBe('ended');
      expect(r.effects.some((x) => x.kind === 'offer' || x.kind === 'accept' || x.kind === 'route')).toBe(false);
    }
  });

  it('every state but active and ended has a timer way out (nextDue)', () => {
    for (const s of CALL_STATES) {
      const due = nextDue(FIXTURES[s], P);
      if (s === 'active' || s === 'ended') expect(due, s).toBeUndefined();
      else expect(due, s).toBeTypeOf('number');
    }
  });

  it('the same event applied twice changes nothing the second time (duplicates are no-ops)', () => {
    for (const c of states) {
      for (const e of events) {
        const once = transition(c, e, P).call!;
        const twice = transition(once, e, P);
        const pushes = twice.effects.filter((x) => x.kind !== 'reply' && x.kind !== 'notify');
        // a repeated decline/hangup of the queued call it produced may re-route; nothing else acts twice
        if (twice.call !== once) expect(twice.call!.state, `${c.state} + ${e.type} twice`).toBe(once.state);
        expect(pushes.filter((x) => x.kind === 'accept' || x.kind === 'reject' || x.kind === 'terminate'), `${c.state} + ${e.type} twice`).toEqual([]);
      }
    }
  });
});

describe('transition: late, duplicate and out-of-order events', () => {
  it('a terminate before its connect leaves a tombstone, and the late connect never rings', () => {
    const tomb = transition(null, EVENTS.terminate!, P);
    expect(tomb.call).toMatchObject({ state: 'ended', tombstone: true, result: 'COMPLETED' });
    const late = transition(tomb.call, { ...(EVENTS.connectIn as CallEvent), at: SOON + 5 }, P);
    expect(late.call).toBe(tomb.call);
    expect(late.effects).toEqual([]);
  });

  it('a duplicate connect does not ring again', () => {
    const first = transition(null, EVENTS.connectIn!, P);
    expect(first.effects.map((e) => e.kind)).toContain('route');
    const again = transition(first.call, EVENTS.connectIn!, P);
    expect(again.call).toBe(first.call);
    expect(again.effects).toEqual([]);
  });

  it('the accept window runs from the earlier of dialTime and receipt', () => {
    expect(acceptDeadline(T0 + 5_000, T0, 30_000)).toBe(T0 + 30_000);
    // a dialTime "in the future" (clock skew) never extends the window
    expect(acceptDeadline(T0, T0 + 5_000, 30_000)).toBe(T0 + 30_000);
    expect(acceptDeadline(T0, undefined, 30_000)).toBe(T0 + 30_000);
  });

  it('a connect delivered too late to ring anyone is rejected at once, never rung', () => {
    const late = { ...(EVENTS.connectIn as Extract<CallEvent, { type: 'connect' }>), dialTime: T0, at: T0 + P.acceptWindowMs - P.rejectMarginMs + 1 };
    const r = transition(null, late, P);
    expect(r.call!.state).toBe('rejecting');
    expect(r.effects.map((e) => e.kind)).toEqual(['reject', 'notify']);
  });

  it('a connect outside business hours is rejected at once, never rung, in either media mode; its terminate keeps why', () => {
    for (const media of [undefined, 'anchor'] as const) {
      const closed = { ...(EVENTS.connectIn as Extract<CallEvent, { type: 'connect' }>), closed: true as const, ...(media ? { media } : {}) };
      const r = transition(null, closed, P);
      expect(r.call).toMatchObject({ state: 'rejecting', reason: OUT_OF_HOURS, offeredTo: [] });
      expect(r.effects.map((e) => e.kind)).toEqual(['reject', 'notify']);
      const over = transition(r.call, { wacid: W, type: 'terminate', at: T0 + 100, result: 'REJECTED', reason: 'Call rejected' }, P);
      expect(over.call).toMatchObject({ state: 'ended', result: 'REJECTED', reason: OUT_OF_HOURS });
    }
  });

  it('a terminate for a timed-out ending refines the result without changing the state', () => {
    const timedOut = transition(FIXTURES.ending, EVENTS.tickLate!, P).call!;
    expect(timedOut).toMatchObject({ state: 'ended', endedBy: 'timeout' });
    const refined = transition(timedOut, { ...(EVENTS.terminate as CallEvent), at: LATER + 1 }, P).call!;
    expect(refined).toMatchObject({ state: 'ended', endedBy: 'event', duration: 42, result: 'COMPLETED' });
  });

  it('an acceptOk arriving after the caller hung up does not revive the call', () => {
    const endedCall = transition(FIXTURES.answering, EVENTS.terminate!, P).call!;
    expect(transition(endedCall, EVENTS.acceptOk!, P).call).toBe(endedCall);
  });

  it('a terminate of an unanswered call ends it as MISSED and stops the ring', () => {
    const r = transition(FIXTURES.ringing, EVENTS.terminate!, P);
    expect(r.call).toMatchObject({ state: 'ended', result: 'MISSED', duration: 42 });
    expect(r.effects[0]).toEqual({ kind: 'revoke', agent: 'a1', reason: 'caller hung up' });
  });

  it('business-initiated: a connect event before the dialed response still delivers the answer', () => {
    const early = transition(null, EVENTS.connectOut!, P).call!;
    const r = transition(early, EVENTS.dialed!, P);
    expect(r.call).toMatchObject({ state: 'connected', agent: 'a1' });
    expect(r.effects).toContainEqual({ kind: 'remoteAnswer', agent: 'a1', sdp: 'v=0\r\nremote\r\n' });
  });

  // The dial knows only the business number; reject/terminate need the Service's phone id.
  const dialedByNumber = { ...(EVENTS.dialed as Extract<CallEvent, { type: 'dialed' }>), phoneId: '+15550002' };

  it("business-initiated: the connect event brings the Service's phone id, and a dialed response after it keeps it", () => {
    const dialing = transition(null, dialedByNumber, P).call!;
    expect(dialing.phoneId).toBe('+15550002');
    expect(transition(dialing, EVENTS.connectOut!, P).call).toMatchObject({ state: 'connected', phoneId: 'phone-1' });
    const early = transition(null, EVENTS.connectOut!, P).call!;
    expect(transition(early, dialedByNumber, P).call).toMatchObject({ state: 'connected', phoneId: 'phone-1', agent: 'a1' });
  });

  it('business-initiated: hung up before the connect event → the terminate is sent again with the phone id it brings', () => {
    const dialing = transition(null, dialedByNumber, P).call!;
    const ending = transition(dialing, EVENTS.hangup!, P).call!;
    expect(ending).toMatchObject({ state: 'ending', phoneId: '+15550002' });
    const r = transition(ending, EVENTS.connectOut!, P);
    expect(r.call).toMatchObject({ state: 'ending', phoneId: 'phone-1' });
    expect(r.effects.map((e) => e.kind)).toEqual(['terminate', 'notify']);
    expect(transition(r.call, EVENTS.connectOut!, P).call).toBe(r.call); // a duplicate connect changes nothing
  });

  it('business-initiated: ACCEPTED before the connect event → the remote answer still reaches the agent', () => {
    const active = transition(transition(null, dialedByNumber, P).call, EVENTS.status!, P).call!;
    expect(active.state).toBe('active');
    const r = transition(active, EVENTS.connectOut!, P);
    expect(r.call).toMatchObject({ state: 'active', phoneId: 'phone-1', remoteSdp: 'v=0\r\nremote\r\n' });
    expect(r.effects).toContainEqual({ kind: 'remoteAnswer', agent: 'a1', sdp: 'v=0\r\nremote\r\n' });
  });
});

describe('transition: claims, refusals and timers', () => {
  const reply = (effects: Effect[]) => effects.find((e) => e.kind === 'reply');

  it('an agent answering a call offered to someone else is refused FORBIDDEN', () => {
    const r = transition(FIXTURES.ringing, { ...(EVENTS.answer as Extract<CallEvent, { type: 'answer' }>), agent: 'a3' }, P);
    expect(r.call).toBe(FIXTURES.ringing);
    expect(reply(r.effects)).toMatchObject({ ok: false, code: 'FORBIDDEN' });
  });

  it('two agents answering together: the first claim wins, the second gets CONFLICT', () => {
    // a1's ring timed out and a2 rings now; both click at once.
    const ringingA2: Call = { ...FIXTURES.ringing, agent: 'a2', offeredTo: ['a1', 'a2'] };
    const a2 = transition(ringingA2, { ...(EVENTS.answer as Extract<CallEvent, { type: 'answer' }>), agent: 'a2', conn: 'c2' }, P);
    expect(a2.call).toMatchObject({ state: 'answering', agent: 'a2', conn: 'c2' });
    const a1 = transition(a2.call, EVENTS.answer!, P);
    expect(a1.call).toBe(a2.call);
    expect(reply(a1.effects)).toMatchObject({ ok: false, code: 'CONFLICT' });
  });

  it('two tabs of one agent answering together: one holds the call, the other gets CONFLICT, other tabs stop ringing', () => {
    const tab1 = transition(FIXTURES.ringing, EVENTS.answer!, P);
    expect(tab1.effects).toContainEqual({ kind: 'revoke', agent: 'a1', reason: 'answered on another tab', exceptConn: 'c1' });
    const tab2 = transition(tab1.call, { ...(EVENTS.answer as Extract<CallEvent, { type: 'answer' }>), conn: 'c2', reqId: 'x' }, P);
    expect(reply(tab2.effects)).toMatchObject({ ok: false, code: 'CONFLICT', message: 'answered on another tab' });
  });

  it('preAccept/accept get the exact SDP of the answer, and the ack waits for accept 200', () => {
    const r = transition(FIXTURES.ringing, EVENTS.answer!, P);
    expect(r.effects[0]).toEqual({ kind: 'accept', sdp: 'v=0\r\nanswer\r\n' });
    expect(reply(r.effects)).toBeUndefined();
    const ok = transition(r.call, EVENTS.acceptOk!, P);
    expect(reply(ok.effects)).toEqual({ kind: 'reply', conn: 'c1', reqId: 'r2', ok: true, result: { wacid: W, startedAt: SOON } });
  });

  it('an accept that timed out is never sent again: the state waits, then terminates at endBy', () => {
    const unknown = transition(FIXTURES.answering, EVENTS.acceptUnknown!, P);
    expect(unknown.effects.map((e) => e.kind)).not.toContain('accept');
    expect(reply(unknown.effects)).toMatchObject({ code: 'OUTCOME_UNKNOWN' });
    const again = transition(unknown.call, EVENTS.acceptUnknown!, P);
    expect(again.call).toBe(unknown.call);
    const late = transition(unknown.call, EVENTS.tickLate!, P);
    expect(late.call!.state).toBe('ending');
    expect(late.effects.map((e) => e.kind)).toEqual(['terminate', 'notify']);
  });

  it("a refused accept rejects the call and carries the Service's reason to the agent", () => {
    const r = transition(FIXTURES.answering, EVENTS.acceptRefused!, P);
    expect(reply(r.effects)).toMatchObject({ ok: false, code: 'SERVICE_ERROR', message: 'call already ended' });
    expect(r.call).toMatchObject({ state: 'rejecting', reason: 'call already ended' });
  });

  it('the ring never lasts past the deadline minus the margin', () => {
    const late = transition(FIXTURES.queued, { ...(EVENTS.offer as CallEvent), at: DEADLINE - P.rejectMarginMs - 2_000 }, P).call!;
    expect(late.ringUntil).toBe(DEADLINE - P.rejectMarginMs);
    const early = transition(FIXTURES.queued, EVENTS.offer!, P).call!;
    expect(early.ringUntil).toBe(SOON + P.ringTimeoutMs);
  });

  it('a ring timeout moves the call on and sets the silent agent away', () => {
    const r = transition(FIXTURES.ringing, { type: 'tick', wacid: W, at: T0 + P.ringTimeoutMs }, P);
    expect(r.call!.state).toBe('queued');
    expect(r.effects.map((e) => e.kind)).toEqual(['agentNoAnswer', 'revoke', 'route', 'notify']);
  });

  it('a declining agent is never offered the call again', () => {
    const declined = transition(FIXTURES.ringing, EVENTS.decline!, P).call!;
    const r = transition(declined, { ...(EVENTS.offer as Extract<CallEvent, { type: 'offer' }>), agent: 'a1' }, P);
    expect(r.call).toBe(declined);
  });

  it('the holding page lost (reload, close, crash): the call is ended at the Service, and the terminate event keeps why; another tab of the agent closing changes nothing; a page that attached again is not lost with its old socket', () => {
    const lost = { type: 'connLost', wacid: W, at: SOON, agent: 'a1', conn: 'c1' } as const;
    // Another tab (c9) of the same agent goes: the call stays.
    expect(transition(FIXTURES.active, { ...lost, conn: 'c9' }, P).call).toBe(FIXTURES.active);
    const r = transition(FIXTURES.active, lost, P);
    expect(r.call).toMatchObject({ state: 'ending', reason: AGENT_PAGE_LOST });
    expect(r.effects.map((e) => e.kind)).toEqual(['terminate', 'notify']);
    const done = transition(r.call, { type: 'terminate', wacid: W, at: SOON + 300, result: 'COMPLETED', duration: 4, reason: 'BUSINESS_HANGUP' }, P);
    expect(done.call).toMatchObject({ state: 'ended', reason: AGENT_PAGE_LOST, result: 'COMPLETED' });
    expect(done.effects).toContainEqual({ kind: 'agentFree', agent: 'a1', wrapUp: true });
    // The same page (tab t1) reconnected on c2: the call moved there, losing c1 later changes nothing.
    const attached = transition(FIXTURES.active, { type: 'attach', wacid: W, at: SOON, agent: 'a1', conn: 'c2', tab: 't1' }, P);
    expect(attached.call).toMatchObject({ state: 'active', conn: 'c2' });
    expect(transition(attached.call, lost, P).call).toBe(attached.call);
    // Another page (a reload has a new tab id), or another agent, does not take the call over.
    expect(transition(FIXTURES.active, { type: 'attach', wacid: W, at: SOON, agent: 'a1', conn: 'c3', tab: 't2' }, P).call).toBe(FIXTURES.active);
    expect(transition(FIXTURES.active, { type: 'attach', wacid: W, at: SOON, agent: 'a2', conn: 'c3', tab: 't1' }, P).call).toBe(FIXTURES.active);
    // The answering page's tab is what the call keeps.
    expect(transition(FIXTURES.ringing, { type: 'answer', wacid: W, at: SOON, agent: 'a1', conn: 'c1', tab: 't9', reqId: 'r2', sdp: 'v=0\r\nanswer\r\n' }, P).call).toMatchObject({ conn: 'c1', tab: 't9' });
  });

  it('hangup by someone not holding the call is refused', () => {
    const r = transition(FIXTURES.active, { ...(EVENTS.hangup as Extract<CallEvent, { type: 'hangup' }>), agent: 'a2' }, P);
    expect(reply(r.effects)).toMatchObject({ ok: false, code: 'FORBIDDEN' });
  });

  it('a hangup while ringing never reaches the Service as terminate', () => {
    const r = transition(FIXTURES.ringing, EVENTS.hangup!, P);
    expect(r.effects.map((e) => e.kind)).not.toContain('terminate');
  });
});

describe('hold', () => {
  const ev = (type: 'hold' | 'resume', at: number, agent = 'a1') => ({ type, wacid: W, at, agent, conn: 'c1', reqId: `r-${type}-${at}` }) as const;
  it('adds up every hold, and closes one still open when the call ends', () => {
    const a = FIXTURES.active;
    const held = transition(a, ev('hold', 1_000), P).call!;
    expect(held.heldSince).toBe(1_000);
    const resumed = transition(held, ev('resume', 4_000), P);
    expect(resumed.call).toMatchObject({ holdMs: 3_000 });
    expect(resumed.call!.heldSince).toBeUndefined();
    expect(resumed.effects).toContainEqual(expect.objectContaining({ kind: 'reply', ok: true, result: { holdMs: 3_000 } }));
    const again = transition(resumed.call!, ev('hold', 5_000), P).call!;
    const over = transition(again, { type: 'terminate', wacid: W, at: 7_000, result: 'COMPLETED' }, P).call!;
    expect(over).toMatchObject({ state: 'ended', holdMs: 5_000 });
    expect(over.heldSince).toBeUndefined();
  });
  it('only the agent holding the call may hold it', () => {
    const r = transition(FIXTURES.active, ev('hold', 1_000, 'a2'), P);
    expect(r.call).toBe(FIXTURES.active);
    expect(r.effects).toEqual([expect.objectContaining({ ok: false, code: 'FORBIDDEN' })]);
  });
});

describe('ending: a terminate with no terminate event is sent again, bounded', () => {
  const P2 = { ...P, endingTimeoutMs: 60_000, terminateRetryMs: 5_000 };
  const hungUp = transition(FIXTURES.active, { type: 'hangup', wacid: W, at: T0 + 1_000, agent: 'a1', conn: 'c1', reqId: 'r3' }, P2).call!;

  it('sends it again terminateRetryMs after ending began, then again, then no more; ends at endBy', () => {
    expect(hungUp.state).toBe('ending');
    expect(nextDue(hungUp, P2)).toBe(T0 + 6_000);
    expect(transition(hungUp, { type: 'tick', wacid: W, at: T0 + 5_999 }, P2).call).toBe(hungUp);
    const once = transition(hungUp, { type: 'tick', wacid: W, at: T0 + 6_000 }, P2);
    expect(once.call).toMatchObject({ state: 'ending', terminateRetries: 1 });
    expect(once.effects.map((e) => e.kind)).toEqual(['terminate']);
    expect(nextDue(once.call!, P2)).toBe(T0 + 11_000);
    const twice = transition(once.call, { type: 'tick', wacid: W, at: T0 + 11_000 }, P2);
    expect(twice.effects.map((e) => e.kind)).toEqual(['terminate']);
    expect(twice.call!.terminateRetries).toBe(TERMINATE_RETRIES);
    expect(nextDue(twice.call!, P2)).toBe(T0 + 61_000);
    expect(transition(twice.call, { type: 'tick', wacid: W, at: T0 + 20_000 }, P2).call).toBe(twice.call);
    expect(transition(twice.call, { type: 'tick', wacid: W, at: T0 + 61_000 }, P2).call).toMatchObject({ state: 'ended', endedBy: 'timeout' });
  });

  it('the terminate event ends it: no more retries', () => {
    const done = transition(hungUp, { type: 'terminate', wacid: W, at: T0 + 2_000, result: 'COMPLETED', duration: 1 }, P2).call!;
    expect(done.state).toBe('ended');
    expect(nextDue(done, P2)).toBeUndefined();
  });

  it('none when the user declined (REJECTED) or the phone id is not known yet', () => {
    expect(terminateRetryDue({ ...hungUp, remoteStatus: 'REJECTED' }, P2)).toBeUndefined();
    expect(terminateRetryDue({ ...hungUp, phoneId: '' }, P2)).toBeUndefined();
  });
});

describe('rejecting: a reject with no terminate event is sent again, bounded (as a terminate is)', () => {
  const P2 = { ...P, endingTimeoutMs: 60_000, terminateRetryMs: 5_000 };
  const W2: Call = { ...base, deadline: T0 + 30_000 };
  // Three ways into rejecting: nobody took it before the window closed, the Service refused
  // the accept, the connect came too late to ring anyone.
  const closing = transition(W2, { type: 'tick', wacid: W, at: T0 + 27_000 }, P2);
  const answering = transition(W2, { type: 'answer', wacid: W, at: T0 + 1_000, agent: 'a1', conn: 'c1', reqId: 'r1', sdp: 'v=0\r\nanswer\r\n' }, P2).call!;
  const refused = transition(answering, { type: 'acceptRefused', wacid: W, at: T0 + 2_000, code: 'BAD_REQUEST', reason: 'no' }, P2);
  const late = transition(null, { ...(EVENTS.connectIn as Extract<CallEvent, { type: 'connect' }>), dialTime: T0, at: T0 + 28_000 }, P2);

  it('every way into rejecting sends the reject and waits for its terminate event', () => {
    for (const r of [closing, refused, late]) {
      expect(r.call!.state).toBe('rejecting');
      expect(r.effects.map((e) => e.kind)).toContain('reject');
    }
  });

  it('sends it again terminateRetryMs after rejecting began, then again, then no more; ends at endBy as before (REJECTED, by our timer)', () => {
    const rejecting = closing.call!;
    expect(nextDue(rejecting, P2)).toBe(T0 + 32_000);
    expect(transition(rejecting, { type: 'tick', wacid: W, at: T0 + 31_999 }, P2).call).toBe(rejecting);
    const once = transition(rejecting, { type: 'tick', wacid: W, at: T0 + 32_000 }, P2);
    expect(once.call).toMatchObject({ state: 'rejecting', terminateRetries: 1 });
    expect(once.effects.map((e) => e.kind)).toEqual(['reject']);
    expect(nextDue(once.call!, P2)).toBe(T0 + 37_000);
    // The same tick again (two nodes' sweeps): nothing more is sent.
    expect(transition(once.call, { type: 'tick', wacid: W, at: T0 + 32_000 }, P2).call).toBe(once.call);
    const twice = transition(once.call, { type: 'tick', wacid: W, at: T0 + 37_000 }, P2);
    expect(twice.effects.map((e) => e.kind)).toEqual(['reject']);
    expect(twice.call!.terminateRetries).toBe(TERMINATE_RETRIES);
    expect(nextDue(twice.call!, P2)).toBe(T0 + 87_000);
    expect(transition(twice.call, { type: 'tick', wacid: W, at: T0 + 50_000 }, P2).call).toBe(twice.call);
    const gaveUp = transition(twice.call, { type: 'tick', wacid: W, at: T0 + 87_000 }, P2);
    expect(gaveUp.call).toMatchObject({ state: 'ended', result: 'REJECTED', endedBy: 'timeout' });
    expect(gaveUp.effects.map((e) => e.kind)).toEqual(['notify']);
  });

  it('a refused accept or a late connect: the reject is sent again the same way', () => {
    for (const r of [refused, late]) {
      const c = r.call!;
      const due = nextDue(c, P2)!;
      expect(due).toBe(c.endBy! - P2.endingTimeoutMs + P2.terminateRetryMs);
      expect(transition(c, { type: 'tick', wacid: W, at: due }, P2).effects.map((e) => e.kind)).toEqual(['reject']);
    }
  });

  it('the terminate event ends it: no more rejects', () => {
    const done = transition(closing.call, { type: 'terminate', wacid: W, at: T0 + 29_000, result: 'FAILED', reason: 'REJECTED' }, P2).call!;
    expect(done.state).toBe('ended');
    expect(nextDue(done, P2)).toBeUndefined();
  });

  it('a late tick (a node was down) sends one reject, counting the slots it missed, never a burst', () => {
    const r = transition(closing.call, { type: 'tick', wacid: W, at: T0 + 38_000 }, P2);
    expect(r.effects.map((e) => e.kind)).toEqual(['reject']);
    expect(r.call!.terminateRetries).toBe(2);
    expect(nextDue(r.call!, P2)).toBe(r.call!.endBy);
  });
});

describe('anchor mode (MEDIA_MODE=anchor): the caller in a Janus room, the agent joins with a leg of its own', () => {
  const JANUS_ANSWER = 'v=0\r\njanus answer\r\n';
  type Without<E> = E extends CallEvent ? Omit<E, 'wacid' | 'at'> : never;
  const ev = (e: Without<CallEvent>) => ({ wacid: W, at: SOON, ...e }) as CallEvent;
  const kinds = (effects: Effect[]) => effects.map((e) => e.kind);
  const connect: CallEvent = { ...(EVENTS.connectIn as Extract<CallEvent, { type: 'connect' }>), media: 'anchor' };
  const ROOM = { janus: 'ws://j1:8188', room: 7 };

  it('connect: queued, marked anchor; the room is made while routing rings an agent', () => {
    const r = transition(null, connect, P);
    expect(r.call).toMatchObject({ state: 'queued', media: 'anchor' });
    expect(kinds(r.effects)).toEqual(['anchor', 'route', 'notify']);
  });

  it("answer → the agent's leg; legReady → the caller joins; Janus's answer → preAccept + accept with it, byte-identical; the end gives the room back", () => {
    let c = transition(null, connect, P).call!;
    c = transition(c, ev({ type: 'anchored', ...ROOM }), P).call!;
    expect(c).toMatchObject({ state: 'queued', anchor: ROOM });
    c = transition(c, ev({ type: 'offer', agent: 'a1' }), P).call!;
    const answered = transition(c, ev({ type: 'answer', agent: 'a1', conn: 'c1', reqId: 'r1', sdp: '' }), P);
    expect(answered.call).toMatchObject({ state: 'answering', agent: 'a1', conn: 'c1' });
    expect(answered.call!.answerSdp).toBeUndefined();
    expect(answered.effects[0]).toEqual({ kind: 'agentLeg', agent: 'a1', conn: 'c1' });
    expect(kinds(answered.effects)).not.toContain('accept');
    // Only the holding connection's leg counts.
    expect(transition(answered.call, ev({ type: 'legReady', agent: 'a1', conn: 'c9' }), P).call).toBe(answered.call);
    const ready = transition(answered.call, ev({ type: 'legReady', agent: 'a1', conn: 'c1' }), P);
    expect(ready.call).toMatchObject({ state: 'answering', legReady: true });
    expect(ready.effects).toEqual([{ kind: 'callerLeg' }]);
    expect(transition(ready.call, ev({ type: 'legReady', agent: 'a1', conn: 'c1' }), P).call).toBe(ready.call); // once
    const joined = transition(ready.call, ev({ type: 'callerJoined', sdp: JANUS_ANSWER }), P);
    expect(joined.call).toMatchObject({ answerSdp: JANUS_ANSWER });
    expect(joined.effects).toEqual([{ kind: 'accept', sdp: JANUS_ANSWER }]);
    expect(transition(joined.call, ev({ type: 'callerJoined', sdp: 'v=0\r\nother\r\n' }), P).call).toBe(joined.call); // never a second answer
    const active = transition(joined.call, ev({ type: 'acceptOk' }), P);
    expect(active.call).toMatchObject({ state: 'active' });
    const ended = transition(active.call, ev({ type: 'terminate', result: 'COMPLETED' }), P);
    expect(ended.call?.state).toBe('ended');
    expect(ended.effects.at(-1)).toEqual({ kind: 'closeRoom', ...ROOM });
  });

  it("an answer before the room exists: the agent's leg is offered once it does", () => {
    let c = transition(null, connect, P).call!;
    c = transition(c, ev({ type: 'offer', agent: 'a1' }), P).call!;
    const answered = transition(c, ev({ type: 'answer', agent: 'a1', conn: 'c1', reqId: 'r1', sdp: '' }), P);
    expect(answered.call?.state).toBe('answering');
    expect(kinds(answered.effects)).not.toContain('agentLeg');
    const anchored = transition(answered.call, ev({ type: 'anchored', ...ROOM }), P);
    expect(anchored.effects).toEqual([{ kind: 'agentLeg', agent: 'a1', conn: 'c1' }]);
  });

  it('no room, or the caller could not join it: the call is refused through the Service saying why', () => {
    const q = transition(null, connect, P).call!;
    const r1 = transition(q, ev({ type: 'anchorFailed', reason: 'no Janus server of JANUS_URLS is reachable' }), P);
    expect(r1.call).toMatchObject({ state: 'rejecting', errorCode: 'ANCHOR_UNAVAILABLE', reason: 'media anchor unavailable: no Janus server of JANUS_URLS is reachable' });
    expect(kinds(r1.effects)).toEqual(['reject', 'notify']);
    const ringing = transition(q, ev({ type: 'offer', agent: 'a1' }), P).call!;
    expect(kinds(transition(ringing, ev({ type: 'anchorFailed', reason: 'x' }), P).effects)).toEqual(['revoke', 'reject', 'notify']);
    let c = transition(q, ev({ type: 'anchored', ...ROOM }), P).call!;
    c = transition(c, ev({ type: 'offer', agent: 'a1' }), P).call!;
    c = transition(c, ev({ type: 'answer', agent: 'a1', conn: 'c1', reqId: 'r1', sdp: '' }), P).call!;
    c = transition(c, ev({ type: 'legReady', agent: 'a1', conn: 'c1' }), P).call!;
    const failed = transition(c, ev({ type: 'anchorFailed', reason: 'janus refused the offer' }), P);
    expect(failed.call?.state).toBe('rejecting');
    expect(kinds(failed.effects)).toEqual(['reply', 'reject', 'agentFree', 'notify']);
  });

  it("the agent's leg failed: the answer is refused, the call rejected, the agent freed", () => {
    let c = transition(null, connect, P).call!;
    c = transition(c, ev({ type: 'anchored', ...ROOM }), P).call!;
    c = transition(c, ev({ type: 'offer', agent: 'a1' }), P).call!;
    c = transition(c, ev({ type: 'answer', agent: 'a1', conn: 'c1', reqId: 'r1', sdp: '' }), P).call!;
    const r = transition(c, ev({ type: 'legFailed', agent: 'a1', reason: 'janus gave no offer' }), P);
    expect(r.call?.state).toBe('rejecting');
    expect(kinds(r.effects)).toEqual(['reply', 'reject', 'agentFree', 'notify']);
    // The room goes when the terminate event ends it.
    expect(transition(r.call, ev({ type: 'terminate', result: 'REJECTED' }), P).effects.at(-1)).toMatchObject({ kind: 'closeRoom', room: 7 });
  });

  it('a room made for a call that is over already (or a second one) is given back', () => {
    const gone = { ...FIXTURES.ended, media: 'anchor' as const };
    expect(transition(gone, ev({ type: 'anchored', janus: 'ws://j1:8188', room: 9 }), P).effects).toEqual([{ kind: 'closeRoom', janus: 'ws://j1:8188', room: 9 }]);
    const held = { ...FIXTURES.queued, media: 'anchor' as const, anchor: ROOM };
    expect(transition(held, ev({ type: 'anchored', janus: 'ws://j1:8188', room: 8 }), P)).toEqual({ call: held, effects: [{ kind: 'closeRoom', janus: 'ws://j1:8188', room: 8 }] });
    expect(transition(held, ev({ type: 'anchored', ...ROOM }), P).effects).toEqual([]); // a repeat
  });
});

describe('anchor mode: the call outlives the agent\'s page', () => {
  const held: Call = { ...FIXTURES.active, media: 'anchor', anchor: { janus: 'ws://j1:8188', room: 7 }, answerSdp: 'v=0\r\njanus\r\n' };
  const lost = { type: 'connLost', wacid: W, at: SOON, agent: 'a1', conn: 'c1' } as const;

  it('the holding page lost: the call stays active (the caller in the room) until recoverBy, a timer way out', () => {
    const r = transition(held, lost, P);
    expect(r.call).toMatchObject({ state: 'active', recoverBy: SOON + P.agentRecoveryMs });
    // The caller hears the room's music meanwhile, never dead air.
    expect(r.effects).toEqual([{ kind: 'roomMusic', janus: 'ws://j1:8188', room: 7, on: true }]);
    expect(nextDue(r.call!, P)).toBe(SOON + P.agentRecoveryMs);
    expect(transition(r.call, lost, P).call).toBe(r.call); // once
    expect(transition(r.call, { type: 'tick', wacid: W, at: SOON + 1000 }, P).call).toBe(r.call);
    // Past it the caller (still in the room) waits for the next agent: a handoff, not an end.
    const late = transition(r.call, { type: 'tick', wacid: W, at: SOON + P.agentRecoveryMs }, P);
    expect(late.call).toMatchObject({ state: 'active', handoffUntil: SOON + P.agentRecoveryMs + P.acceptWindowMs, legs: ['a1'] });
    expect(late.call!.agent).toBeUndefined();
    expect(late.effects).toEqual([{ kind: 'agentFree', agent: 'a1', wrapUp: true }, { kind: 'route' }, { kind: 'notify' }]);
  });

  it("the agent gone for good: the call rings the next agent, who takes it in the same room (no new accept); a ring missed moves on; nobody in time ends it saying why", () => {
    const t0 = SOON + P.agentRecoveryMs;
    const waiting = transition(transition(held, lost, P).call, { type: 'tick', wacid: W, at: t0 }, P).call!;
    expect(nextDue(waiting, P)).toBe(t0 + P.acceptWindowMs);
    // Routing offers it to a2: it rings there; a1 (gone) is no longer its agent.
    const ringing = transition(waiting, { type: 'offer', wacid: W, at: t0 + 10, agent: 'a2' }, P);
    expect(ringing.call).toMatchObject({ state: 'active', nextAgent: 'a2', ringUntil: t0 + 10 + P.ringTimeoutMs });
    expect(ringing.effects).toEqual([{ kind: 'offer', agent: 'a2' }, { kind: 'notify' }]);
    expect(transition(ringing.call, { type: 'offer', wacid: W, at: t0 + 11, agent: 'a3' }, P).call).toBe(ringing.call); // one ring at a time
    // a2 lets it ring out: routing goes on (a2 away, as for a new call).
    const missed = transition(ringing.call, { type: 'tick', wacid: W, at: t0 + 10 + P.ringTimeoutMs }, P);
    expect(missed.call!.nextAgent).toBeUndefined();
    expect(missed.effects.map((e) => e.kind)).toEqual(['agentNoAnswer', 'revoke', 'route', 'notify']);
    // a3 answers: holds it now, joins the same room; acked at once (the Service accepted long ago).
    const rang3 = transition(missed.call, { type: 'offer', wacid: W, at: t0 + 20_000, agent: 'a3' }, P).call!;
    const taken = transition(rang3, { type: 'answer', wacid: W, at: t0 + 20_500, agent: 'a3', conn: 'c3', tab: 't3', reqId: 'r3', sdp: '' }, P);
    expect(taken.call).toMatchObject({ state: 'active', agent: 'a3', conn: 'c3', anchor: { janus: 'ws://j1:8188', room: 7 }, legs: ['a1', 'a3'], startedAt: held.startedAt });
    expect(taken.call!.handoffUntil).toBeUndefined();
    expect(taken.effects).toEqual([
      { kind: 'reply', conn: 'c3', reqId: 'r3', ok: true, result: { wacid: W, startedAt: held.startedAt } },
      { kind: 'revoke', agent: 'a3', reason: 'answered on another tab', exceptConn: 'c3' },
      { kind: 'agentBusy', agent: 'a3' },
      { kind: 'agentLeg', agent: 'a3', conn: 'c3' },
      { kind: 'notify' },
    ]);
    // a2, who let it ring out, may not take it from a3 now.
    expect(transition(taken.call, { type: 'answer', wacid: W, at: t0 + 20_600, agent: 'a2', conn: 'c2', reqId: 'r2', sdp: '' }, P).effects[0]).toMatchObject({ ok: false, code: 'CONFLICT' });
    // Nobody in time: the call ends at the Service, saying why.
    const over = transition(waiting, { type: 'tick', wacid: W, at: t0 + P.acceptWindowMs }, P);
    expect(over.call).toMatchObject({ state: 'ending' });
    expect(over.call!.reason).toMatch(new RegExp(`^${AGENT_PAGE_LOST.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}; no other agent took the call`));
    expect(over.effects.map((e) => e.kind)).toEqual(['terminate', 'notify']);
  });

  it("the agent's new page rejoins: the call moves to it and a new leg is offered there", () => {
    const away = transition(held, lost, P).call!;
    const r = transition(away, { type: 'rejoin', wacid: W, at: SOON + 2000, agent: 'a1', conn: 'c2', tab: 't2', reqId: 'r8' }, P);
    expect(r.call).toMatchObject({ state: 'active', conn: 'c2', tab: 't2' });
    expect(r.call!.recoverBy).toBeUndefined();
    expect(r.effects).toEqual([{ kind: 'reply', conn: 'c2', reqId: 'r8', ok: true }, { kind: 'roomMusic', janus: 'ws://j1:8188', room: 7, on: true }, { kind: 'agentLeg', agent: 'a1', conn: 'c2' }]);
    // The new leg is in the room: the music stops (only for the holder's connection).
    expect(transition(r.call, { type: 'legReady', wacid: W, at: SOON + 2500, agent: 'a1', conn: 'c2' }, P)).toEqual({ call: r.call, effects: [{ kind: 'roomMusic', janus: 'ws://j1:8188', room: 7, on: false }] });
    expect(transition(r.call, { type: 'legReady', wacid: W, at: SOON + 2500, agent: 'a1', conn: 'c1' }, P).effects).toEqual([]);
    // Another agent may not; a direct call cannot (its audio went with the page).
    expect(transition(away, { type: 'rejoin', wacid: W, at: SOON, agent: 'a2', conn: 'c3', reqId: 'r9' }, P).effects[0]).toMatchObject({ ok: false, code: 'FORBIDDEN' });
    expect(transition(FIXTURES.active, { type: 'rejoin', wacid: W, at: SOON, agent: 'a1', conn: 'c3', reqId: 'r9' }, P).effects[0]).toMatchObject({ ok: false, code: 'CONFLICT' });
  });

  it('hold is the room\'s state: the agent leaves the mix and the room plays music; resume brings the agent back; a leg rejoining on hold stays out of the mix', () => {
    const h = transition(held, { type: 'hold', wacid: W, at: SOON, agent: 'a1', conn: 'c1', reqId: 'h1' }, P);
    expect(h.call).toMatchObject({ heldSince: SOON });
    expect(h.effects.slice(0, 2)).toEqual([
      { kind: 'agentMuted', janus: 'ws://j1:8188', room: 7, agent: 'a1', muted: true },
      { kind: 'roomMusic', janus: 'ws://j1:8188', room: 7, on: true },
    ]);
    // The page is lost on hold: the music plays already; the rejoined leg is muted, the music goes on.
    const away = transition(h.call, lost, P);
    expect(away.effects).toEqual([]);
    const back = transition(away.call, { type: 'rejoin', wacid: W, at: SOON + 1, agent: 'a1', conn: 'c2', reqId: 'r1' }, P);
    expect(back.effects.map((e) => e.kind)).toEqual(['reply', 'agentLeg']);
    expect(transition(back.call, { type: 'legReady', wacid: W, at: SOON + 2, agent: 'a1', conn: 'c2' }, P).effects).toEqual([{ kind: 'agentMuted', janus: 'ws://j1:8188', room: 7, agent: 'a1', muted: true }]);
    const r = transition(back.call, { type: 'resume', wacid: W, at: SOON + 3000, agent: 'a1', conn: 'c2', reqId: 'h2' }, P);
    expect(r.call).toMatchObject({ holdMs: 3000 });
    expect(r.effects.slice(0, 2)).toEqual([
      { kind: 'agentMuted', janus: 'ws://j1:8188', room: 7, agent: 'a1', muted: false },
      { kind: 'roomMusic', janus: 'ws://j1:8188', room: 7, on: false },
    ]);
    // Direct mode: the page plays the music; no room effects.
    expect(transition(FIXTURES.active, { type: 'hold', wacid: W, at: SOON, agent: 'a1', conn: 'c1', reqId: 'h1' }, P).effects.map((e) => e.kind)).toEqual(['reply', 'notify']);
  });

  it("the media server is lost: an accepted call ends at the Service saying why (kept when the terminate comes); one not accepted yet is refused", () => {
    const r = transition(held, { type: 'roomLost', wacid: W, at: SOON, reason: 'ws://j1:8188 not answering for 3 s' }, P);
    expect(r.call).toMatchObject({ state: 'ending', reason: 'media server lost: ws://j1:8188 not answering for 3 s', errorCode: 'MEDIA_SERVER_LOST' });
    expect(r.effects.map((e) => e.kind)).toEqual(['terminate', 'notify']);
    const over = transition(r.call, { type: 'terminate', wacid: W, at: SOON + 100, result: 'COMPLETED', reason: 'BUSINESS_HANGUP' }, P).call!;
    expect(over).toMatchObject({ state: 'ended', reason: 'media server lost: ws://j1:8188 not answering for 3 s' });
    expect(transition(over, { type: 'roomLost', wacid: W, at: SOON, reason: 'x' }, P).call).toBe(over);
    const ringing = { ...FIXTURES.ringing, media: 'anchor' as const, anchor: { janus: 'ws://j1:8188', room: 7 } };
    expect(transition(ringing, { type: 'roomLost', wacid: W, at: SOON, reason: 'gone' }, P).call).toMatchObject({ state: 'rejecting', errorCode: 'ANCHOR_UNAVAILABLE' });
  });

  it('direct mode keeps ending the call when its page is lost', () => {
    expect(transition(FIXTURES.active, lost, P).call).toMatchObject({ state: 'ending', reason: AGENT_PAGE_LOST });
  });
});

describe('anchor mode: cold transfer (call.transfer) to an agent or a queue', () => {
  const held: Call = { ...FIXTURES.active, media: 'anchor', anchor: { janus: 'ws://j1:8188', room: 7 }, answerSdp: 'v=0\r\njanus\r\n' };
  type Without<E> = E extends CallEvent ? Omit<E, 'wacid' | 'at'> : never;
  const ev = (e: Without<CallEvent>, at = SOON) => ({ wacid: W, at, ...e }) as CallEvent;
  const kinds = (effects: Effect[]) => effects.map((e) => e.kind);
  const cold = ev({ type: 'transfer', agent: 'a1', conn: 'c1', reqId: 'r1', to: { agent: 'a2' }, note: 'billing' });

  it('transfer → the first agent leaves the room at once (after-call work), the caller hears music, the target is routed', () => {
    const r = transition(held, cold, P);
    expect(r.call).toMatchObject({ state: 'active', transfer: { by: 'a1', to: { agent: 'a2' }, note: 'billing', tried: [] } });
    expect(r.call!.agent).toBeUndefined();
    expect(r.call!.conn).toBeUndefined();
    expect(r.effects).toEqual([
      { kind: 'reply', conn: 'c1', reqId: 'r1', ok: true },
      { kind: 'leaveRoom', agent: 'a1' },
      { kind: 'music', on: true },
      { kind: 'agentFree', agent: 'a1', wrapUp: true },
      { kind: 'routeTransfer' },
      { kind: 'notify' },
    ]);
    expect(transition(r.call, cold, P).effects).toEqual([expect.objectContaining({ kind: 'reply', ok: false })]); // only the holder, once
  });

  it.each([
    ['not the holder', { ...held, agent: 'a3' }, 'FORBIDDEN'],
    ['another connection', { ...held, conn: 'c9' }, 'FORBIDDEN'],
    ['not active', { ...held, state: 'answering' as const }, 'FORBIDDEN'],
    ['direct mode', FIXTURES.active, 'CONFLICT'],
    ['under way already', { ...held, transfer: { by: 'a0', to: { agent: 'a1' }, tried: [] } }, 'CONFLICT'],
  ])('refused: %s', (_name, call, code) => {
    const r = transition(call, cold, P);
    expect(r.call).toBe(call);
    expect(r.effects).toEqual([expect.objectContaining({ kind: 'reply', ok: false, code })]);
  });

  it('to oneself is refused', () => {
    const r = transition(held, ev({ type: 'transfer', agent: 'a1', conn: 'c1', reqId: 'r1', to: { agent: 'a1' } }), P);
    expect(r.effects).toEqual([expect.objectContaining({ kind: 'reply', ok: false, code: 'CONFLICT' })]);
  });

  it('to an agent who declined this call before (its first ring, a consult): rings them all the same; a queue transfer still skips them', () => {
    const declined = { ...held, declined: ['a2', 'a3'] };
    const r = transition(declined, cold, P);
    expect(r.call!.declined).toEqual(['a3']);
    expect(transition(r.call, ev({ type: 'offer', agent: 'a2' }), P).call!.transfer).toMatchObject({ ringing: 'a2' });
    const toQueue = transition(declined, ev({ type: 'transfer', agent: 'a1', conn: 'c1', reqId: 'r1', to: { queue: 'p1' } }), P);
    expect(toQueue.call!.declined).toEqual(['a2', 'a3']);
    expect(transition(toQueue.call, ev({ type: 'offer', agent: 'a2' }), P).call!.transfer!.ringing).toBeUndefined();
  });

  it('a hold open at the transfer is closed: the music is the transfer’s now', () => {
    const r = transition({ ...held, heldSince: SOON - 4_000, holdMs: 1_000 }, cold, P);
    expect(r.call).toMatchObject({ holdMs: 5_000 });
    expect(r.call!.heldSince).toBeUndefined();
  });

  it('offer → the target rings (with a timer); answer → its leg; legReady → music off, the answer acked; holder is the target', () => {
    let c = transition(held, cold, P).call!;
    const offered = transition(c, ev({ type: 'offer', agent: 'a2' }), P);
    expect(offered.call!.transfer).toMatchObject({ ringing: 'a2', ringUntil: SOON + P.ringTimeoutMs });
    expect(kinds(offered.effects)).toEqual(['offer', 'notify']);
    expect(nextDue(offered.call!, P)).toBe(SOON + P.ringTimeoutMs);
    c = offered.call!;
    expect(transition(c, ev({ type: 'offer', agent: 'a3' }), P).call).toBe(c); // one ring at a time
    expect(transition(c, ev({ type: 'answer', agent: 'a3', conn: 'c3', reqId: 'r3', sdp: '' }), P).effects).toEqual([expect.objectContaining({ ok: false, code: 'FORBIDDEN' })]);
    const answered = transition(c, ev({ type: 'answer', agent: 'a2', conn: 'c2', reqId: 'r2', sdp: '' }), P);
    expect(answered.call).toMatchObject({ state: 'active', agent: 'a2', conn: 'c2', reqId: 'r2', transfer: { answered: 'a2' } });
    expect(kinds(answered.effects)).toEqual(['agentLeg', 'revoke', 'agentBusy', 'notify']);
    expect(answered.effects[0]).toEqual({ kind: 'agentLeg', agent: 'a2', conn: 'c2' });
    expect(transition(answered.call, ev({ type: 'legReady', agent: 'a2', conn: 'c9' }), P).call).toBe(answered.call);
    const joined = transition(answered.call, ev({ type: 'legReady', agent: 'a2', conn: 'c2' }), P);
    expect(joined.call!.transfer).toBeUndefined();
    expect(joined.call).toMatchObject({ state: 'active', agent: 'a2', conn: 'c2', startedAt: held.startedAt });
    expect(joined.effects).toEqual([
      { kind: 'music', on: false },
      { kind: 'reply', conn: 'c2', reqId: 'r2', ok: true, result: { wacid: W, startedAt: held.startedAt } },
      { kind: 'notify' },
    ]);
    expect(nextDue(joined.call!, P)).toBeUndefined();
    // The new holder may hang up as any holder.
    expect(transition(joined.call, ev({ type: 'hangup', agent: 'a2', conn: 'c2', reqId: 'r4' }), P).call?.state).toBe('ending');
  });

  it('not answered in time → the target is set away, the call goes back to the first agent when available (routeTransfer prefer)', () => {
    let c = transition(held, cold, P).call!;
    c = transition(c, ev({ type: 'offer', agent: 'a2' }), P).call!;
    expect(transition(c, ev({ type: 'tick' }, SOON + P.ringTimeoutMs - 1), P).call).toBe(c);
    const out = transition(c, ev({ type: 'tick' }, SOON + P.ringTimeoutMs), P);
    expect(out.call!.transfer).toMatchObject({ tried: ['a2'] });
    expect(out.call!.transfer!.ringing).toBeUndefined();
    expect(out.effects).toEqual([
      { kind: 'agentNoAnswer', agent: 'a2' },
      { kind: 'revoke', agent: 'a2', reason: 'not answered' },
      { kind: 'routeTransfer', prefer: 'a1' },
      { kind: 'notify' },
    ]);
    // Back at the first agent, who rings out too: the queue, not the first agent again.
    c = transition(out.call, ev({ type: 'offer', agent: 'a1' }, SOON + P.ringTimeoutMs + 10), P).call!;
    const again = transition(c, ev({ type: 'tick' }, LATER), P);
    expect(again.effects).toContainEqual({ kind: 'routeTransfer' });
  });

  it('declined → back to the first agent, and the decliner is never offered it again', () => {
    let c = transition(held, cold, P).call!;
    c = transition(c, ev({ type: 'offer', agent: 'a2' }), P).call!;
    const d = transition(c, ev({ type: 'decline', agent: 'a2', conn: 'c2', reqId: 'r5' }), P);
    expect(d.call!.declined).toContain('a2');
    expect(kinds(d.effects)).toEqual(['revoke', 'reply', 'routeTransfer', 'notify']);
    expect(d.effects).toContainEqual({ kind: 'routeTransfer', prefer: 'a1' });
    expect(transition(d.call, ev({ type: 'offer', agent: 'a2' }), P).call).toBe(d.call);
  });

  it('the caller hangs up during the transfer: ended, the ring stops, the room is given back', () => {
    let c = transition(held, cold, P).call!;
    c = transition(c, ev({ type: 'offer', agent: 'a2' }), P).call!;
    const r = transition(c, ev({ type: 'terminate', result: 'COMPLETED' }), P);
    expect(r.call?.state).toBe('ended');
    expect(r.effects).toContainEqual({ kind: 'revoke', agent: 'a2', reason: 'caller hung up' });
    expect(r.effects.at(-1)).toEqual({ kind: 'closeRoom', janus: 'ws://j1:8188', room: 7 });
    expect(kinds(r.effects)).not.toContain('agentFree'); // the first agent was freed at the transfer
  });

  it('to a queue: the same flow; routing picks among the queue', () => {
    const q = transition(held, ev({ type: 'transfer', agent: 'a1', conn: 'c1', reqId: 'r1', to: { queue: 'phone-2' } }), P);
    expect(q.call!.transfer).toEqual({ by: 'a1', to: { queue: 'phone-2' }, tried: [] });
    expect(q.effects).toContainEqual({ kind: 'routeTransfer' });
  });
});

describe('anchor mode: warm transfer (consult), complete / cancel / conference', () => {
  const held: Call = { ...FIXTURES.active, media: 'anchor', anchor: { janus: 'ws://j1:8188', room: 7 }, answerSdp: 'v=0\r\njanus\r\n' };
  type Without<E> = E extends CallEvent ? Omit<E, 'wacid' | 'at'> : never;
  const ev = (e: Without<CallEvent>, at = SOON) => ({ wacid: W, at, ...e }) as CallEvent;
  const kinds = (effects: Effect[]) => effects.map((e) => e.kind);
  const warm = ev({ type: 'transfer', agent: 'a1', conn: 'c1', reqId: 'r1', to: { agent: 'a2' }, note: 'needs a refund', mode: 'warm' });
  const action = (a: 'complete' | 'cancel' | 'conference', agent = 'a1', conn = 'c1') => ev({ type: 'transferAction', agent, conn, reqId: 'r7', action: a });
  /** a1 and a2 talking in the consult room. */
  const talking = () => {
    let c = transition(held, warm, P).call!;
    c = transition(c, ev({ type: 'answer', agent: 'a2', conn: 'c2', reqId: 'r2', sdp: '' }), P).call!;
    return transition(c, ev({ type: 'legReady', agent: 'a2', conn: 'c2' }), P);
  };

  it('start: music for the caller, the holder into a consult room, the target rings; the holder keeps the call', () => {
    const r = transition(held, warm, P);
    expect(r.call).toMatchObject({ state: 'active', agent: 'a1', conn: 'c1', consult: { by: 'a1', target: 'a2', phase: 'ringing', ringUntil: SOON + P.ringTimeoutMs, note: 'needs a refund' } });
    expect(r.effects).toEqual([
      { kind: 'reply', conn: 'c1', reqId: 'r1', ok: true },
      { kind: 'music', on: true },
      { kind: 'consult', agent: 'a1' },
      { kind: 'offer', agent: 'a2' },
      { kind: 'notify' },
    ]);
    expect(nextDue(r.call!, P)).toBe(SOON + P.ringTimeoutMs);
    expect(transition(held, { ...warm, to: { queue: 'phone-1' } } as CallEvent, P).effects).toEqual([expect.objectContaining({ ok: false, code: 'CONFLICT' })]);
  });

  it('the target answers into the consult room; legReady → talking, its answer acked', () => {
    let c = transition(held, warm, P).call!;
    const answered = transition(c, ev({ type: 'answer', agent: 'a2', conn: 'c2', reqId: 'r2', sdp: '' }), P);
    expect(answered.effects[0]).toEqual({ kind: 'agentLeg', agent: 'a2', conn: 'c2', consult: true });
    expect(answered.call!.consult).toMatchObject({ phase: 'joining', conn: 'c2', reqId: 'r2' });
    c = answered.call!;
    const r = transition(c, ev({ type: 'legReady', agent: 'a2', conn: 'c2' }), P);
    expect(r.call!.consult).toMatchObject({ phase: 'talking' });
    expect(r.effects).toEqual([{ kind: 'reply', conn: 'c2', reqId: 'r2', ok: true, result: { wacid: W, startedAt: held.startedAt } }, { kind: 'notify' }]);
    expect(nextDue(r.call!, P)).toBeUndefined();
  });

  it('complete: the target is moved to the caller, the first agent leaves (after-call work); the target holds the call', () => {
    const r = transition(talking().call, action('complete'), P);
    expect(r.call).toMatchObject({ state: 'active', agent: 'a2', conn: 'c2' });
    expect(r.call!.consult).toBeUndefined();
    expect(r.effects).toEqual([
      { kind: 'reply', conn: 'c1', reqId: 'r7', ok: true },
      { kind: 'moveAgent', agent: 'a2', to: 'call' },
      { kind: 'leaveRoom', agent: 'a1' },
      { kind: 'music', on: false },
      { kind: 'closeConsult' },
      { kind: 'agentFree', agent: 'a1', wrapUp: true },
      { kind: 'notify', also: 'a1' },
    ]);
  });

  it('cancel: the first agent is back with the caller, the target leaves (no after-call work); also before it answered', () => {
    const r = transition(talking().call, action('cancel'), P);
    expect(r.call).toMatchObject({ agent: 'a1', conn: 'c1' });
    expect(r.call!.consult).toBeUndefined();
    expect(kinds(r.effects)).toEqual(['leaveRoom', 'agentFree', 'reply', 'moveAgent', 'music', 'closeConsult', 'notify']);
    expect(r.effects).toContainEqual({ kind: 'agentFree', agent: 'a2', wrapUp: false });
    expect(r.effects).toContainEqual({ kind: 'moveAgent', agent: 'a1', to: 'call' });
    const early = transition(transition(held, warm, P).call, action('cancel'), P);
    expect(kinds(early.effects)).toEqual(['revoke', 'reply', 'moveAgent', 'music', 'closeConsult', 'notify']);
    // complete / conference before the target joined are refused
    expect(transition(transition(held, warm, P).call, action('complete'), P).effects).toEqual([expect.objectContaining({ ok: false, code: 'CONFLICT' })]);
  });

  it('not answered in time, or declined: cancelled the same way (the target set away on a ring-out)', () => {
    const c = transition(held, warm, P).call!;
    const out = transition(c, ev({ type: 'tick' }, SOON + P.ringTimeoutMs), P);
    expect(kinds(out.effects)).toEqual(['agentNoAnswer', 'revoke', 'moveAgent', 'music', 'closeConsult', 'notify']);
    const declined = transition(c, ev({ type: 'decline', agent: 'a2', conn: 'c2', reqId: 'r3' }), P);
    expect(declined.call!.declined).toContain('a2');
    expect(kinds(declined.effects)).toEqual(['revoke', 'reply', 'moveAgent', 'music', 'closeConsult', 'notify']);
    expect(kinds(transition(c, ev({ type: 'consultFailed', reason: 'no room' }), P).effects)).toEqual(['revoke', 'moveAgent', 'music', 'closeConsult', 'notify']);
  });

  it('only the agent who started it finishes it', () => {
    const c = talking().call!;
    expect(transition(c, action('complete', 'a2', 'c2'), P).effects).toEqual([expect.objectContaining({ ok: false, code: 'FORBIDDEN' })]);
    expect(transition(held, action('complete'), P).effects).toEqual([expect.objectContaining({ ok: false, code: 'CONFLICT' })]);
  });

  it('conference of three, one leaving at a time: the caller is never alone; the last hangup ends the call', () => {
    let c = transition(talking().call, action('conference'), P).call!;
    expect(c).toMatchObject({ agent: 'a1', conference: [{ agent: 'a2', conn: 'c2' }] });
    // A third agent through a second consult: a2 stays with the caller meanwhile (no music).
    const second = transition(c, { ...warm, to: { agent: 'a3' } } as CallEvent, P);
    expect(kinds(second.effects)).toEqual(['reply', 'consult', 'offer', 'notify']);
    expect(transition(c, { ...warm, to: { agent: 'a2' } } as CallEvent, P).effects).toEqual([expect.objectContaining({ ok: false, code: 'CONFLICT' })]); // on the call already
    c = transition(second.call, ev({ type: 'answer', agent: 'a3', conn: 'c3', reqId: 'r4', sdp: '' }), P).call!;
    c = transition(c, ev({ type: 'legReady', agent: 'a3', conn: 'c3' }), P).call!;
    c = transition(c, action('conference'), P).call!;
    expect(c.conference).toEqual([{ agent: 'a2', conn: 'c2' }, { agent: 'a3', conn: 'c3' }]);
    // At most four agents.
    const four = { ...c, conference: [...c.conference!, { agent: 'a4', conn: 'c4' }] };
    expect(transition(four, { ...warm, to: { agent: 'a5' } } as CallEvent, P).effects).toEqual([expect.objectContaining({ ok: false, code: 'CONFLICT', message: 'a call holds at most 4 agents' })]);
    const a2leaves = transition(c, ev({ type: 'hangup', agent: 'a2', conn: 'c2', reqId: 'r8' }), P);
    expect(a2leaves.call).toMatchObject({ state: 'active', agent: 'a1', conference: [{ agent: 'a3', conn: 'c3' }] });
    expect(a2leaves.effects).toEqual([
      { kind: 'leaveRoom', agent: 'a2' },
      { kind: 'agentFree', agent: 'a2', wrapUp: true },
      { kind: 'reply', conn: 'c2', reqId: 'r8', ok: true },
      { kind: 'notify', also: 'a2' },
    ]);
    const a1leaves = transition(a2leaves.call, ev({ type: 'hangup', agent: 'a1', conn: 'c1', reqId: 'r9' }), P);
    expect(a1leaves.call).toMatchObject({ state: 'active', agent: 'a3', conn: 'c3', conference: [] });
    expect(kinds(a1leaves.effects)).toEqual(['leaveRoom', 'agentFree', 'reply', 'notify']);
    const last = transition(a1leaves.call, ev({ type: 'hangup', agent: 'a3', conn: 'c3', reqId: 'r10' }), P);
    expect(last.call!.state).toBe('ending');
    expect(kinds(last.effects)).toContain('terminate');
  });

  it('the caller hangs up during a consult or a conference: everyone is freed', () => {
    const consulting = talking().call!;
    const r = transition(consulting, ev({ type: 'terminate', result: 'COMPLETED' }), P);
    expect(r.effects).toContainEqual({ kind: 'agentFree', agent: 'a2', wrapUp: false });
    expect(r.effects).toContainEqual({ kind: 'agentFree', agent: 'a1', wrapUp: true });
    const conf = transition(consulting, action('conference'), P).call!;
    const r2 = transition(conf, ev({ type: 'terminate', result: 'COMPLETED' }), P);
    expect(r2.effects).toContainEqual({ kind: 'agentFree', agent: 'a2', wrapUp: true });
    expect(r2.effects.at(-1)).toEqual({ kind: 'closeRoom', janus: 'ws://j1:8188', room: 7 });
  });
});
