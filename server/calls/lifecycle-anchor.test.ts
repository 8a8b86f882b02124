/** The pure lifecycle in anchor mode: the caller in a Janus room, the agent's own leg, a call that outlives its page. */
import { describe, expect, it } from 'vitest';
import { AGENT_PAGE_LOST } from '../../shared/callErrors.ts';
import { P, W, SOON, FIXTURES, EVENTS } from '../../test/support/lifecycle-fixtures.ts';
import { nextDue, transition, type Call, type CallEvent, type Effect } from './lifecycle.ts';

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
