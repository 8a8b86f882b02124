/** The pure lifecycle: the whole state × event table, and invariants over it. */
import { describe, expect, it } from 'vitest';
import { P, outbound, FIXTURES, EVENTS } from '../../test/support/lifecycle-fixtures.ts';
import { CALL_EVENT_TYPES, CALL_STATES, RANK, nextDue, transition, type Call, type CallStateName } from './lifecycle.ts';

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
