/** The pure lifecycle: late, duplicate and out-of-order events; claims, refusals, timers; hold; retried terminates and rejects. */
import { describe, expect, it } from 'vitest';
import { AGENT_PAGE_LOST, OUT_OF_HOURS } from '../../shared/callErrors.ts';
import { T0, P, W, DEADLINE, SOON, LATER, base, FIXTURES, EVENTS } from '../../test/support/lifecycle-fixtures.ts';
import { acceptDeadline, nextDue, TERMINATE_RETRIES, terminateRetryDue, transition, type Call, type CallEvent, type Effect } from './lifecycle.ts';

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
