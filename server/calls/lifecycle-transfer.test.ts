/** The pure lifecycle in anchor mode: cold and warm transfers, conferences. */
import { describe, expect, it } from 'vitest';
import { P, W, SOON, LATER, FIXTURES } from '../../test/support/lifecycle-fixtures.ts';
import { CONSULT_JOIN_MS, nextDue, transition, type Call, type CallEvent, type Effect } from './lifecycle.ts';

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

  it("the target's leg failing, or not in the consult room within CONSULT_JOIN_MS, ends the consult: its answer refused, the holder back, the target free", () => {
    const joining = transition(transition(held, warm, P).call, ev({ type: 'answer', agent: 'a2', conn: 'c2', reqId: 'r2', sdp: '' }), P).call!;
    expect(nextDue(joining, P)).toBe(SOON + CONSULT_JOIN_MS);
    expect(transition(joining, ev({ type: 'tick' }, SOON + CONSULT_JOIN_MS - 1), P).call).toBe(joining);
    const ends = ['reply', 'leaveRoom', 'agentFree', 'moveAgent', 'music', 'closeConsult', 'notify'];
    for (const [name, e] of [
      ['ran out', ev({ type: 'tick' }, SOON + CONSULT_JOIN_MS)],
      ['failed', ev({ type: 'legFailed', agent: 'a2', reason: 'no consult room' })],
    ] as const) {
      const r = transition(joining, e, P);
      expect(r.call!.consult, name).toBeUndefined();
      expect(r.call, name).toMatchObject({ state: 'active', agent: 'a1', conn: 'c1' });
      expect(kinds(r.effects), name).toEqual(ends);
      expect(r.effects[0], name).toMatchObject({ conn: 'c2', reqId: 'r2', ok: false, code: 'CONFLICT' });
      expect(r.effects).toContainEqual({ kind: 'agentFree', agent: 'a2', wrapUp: false });
    }
    // Another agent's leg failing changes nothing; once talking the deadline is gone.
    expect(transition(joining, ev({ type: 'legFailed', agent: 'a3', reason: 'x' }), P).call).toBe(joining);
    expect(nextDue(transition(joining, ev({ type: 'legReady', agent: 'a2', conn: 'c2' }), P).call!, P)).toBeUndefined();
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
