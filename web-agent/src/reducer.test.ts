import { describe, expect, test } from 'vitest';
import type { CallView, ServerMsg } from '../../shared/protocol.ts';
import { agentShown, callsElsewhere, initialState, reduce, ringEnd, ringingCalls, tabCall, type UiEvent, type UiState } from './reducer.ts';

const T = 1_000_000;
const me = { name: 'agent1', roles: ['agent' as const] };
const offer = (wacid = 'w1', deadline = T + 30_000): ServerMsg => ({
  type: 'call.offered',
  wacid,
  phoneId: 'p1',
  from: '15551234567',
  to: '15550001000',
  direction: 'USER_INITIATED',
  sdp: 'v=0\r\n',
  deadline,
});
const view = (wacid: string, extra: Partial<CallView> = {}): CallView => ({
  wacid,
  phoneId: 'p1',
  from: '15551234567',
  to: '15550001000',
  direction: 'USER_INITIATED',
  state: 'ringing',
  ...extra,
});
const welcome = (calls: CallView[] = [], presence: 'available' | 'away' = 'available'): ServerMsg => ({
  type: 'welcome',
  protocol: 1,
  user: me,
  presence,
  calls,
});
const srv = (msg: ServerMsg, now = T): UiEvent => ({ type: 'server', msg, now });
const run = (...events: UiEvent[]): UiState => events.reduce(reduce, initialState);
const local = (wacid: string, l: 'answering' | 'held' | 'hangingUp' | 'declined' | 'none', now = T): UiEvent => ({ type: 'local', wacid, local: l, now });

describe('welcome', () => {
  test('sets the link online, the user, the presence and the calls from the server', () => {
    const s = run(srv(welcome([view('w1', { sdp: 'v=0\r\n', deadline: T + 10_000 })])));
    expect(s).toMatchObject({ link: 'online', me, presence: 'available' });
    expect(ringingCalls(s, T).map((c) => c.view.wacid)).toEqual(['w1']);
  });

  test('after a reconnect, an offer still ringing reappears and keeps its countdown start', () => {
    const before = run(srv(welcome()), srv(offer('w1'), T), { type: 'link', link: 'reconnecting' });
    const after = reduce(before, srv(welcome([view('w1', { sdp: 'v=0\r\n', deadline: T + 30_000 })]), T + 5000));
    expect(ringingCalls(after, T + 5000).map((c) => c.view.wacid)).toEqual(['w1']);
    expect(after.calls.w1!.offeredAt).toBe(T);
    expect(after.link).toBe('online');
  });

  test('an offer that is not in the new welcome stops ringing (resync drops what the server dropped)', () => {
    const s = run(srv(welcome()), srv(offer('w1')), srv(welcome([])));
    expect(ringingCalls(s, T)).toEqual([]);
    expect(s.history).toEqual([]); // it was not ours
  });

  test("a call this tab holds that the server still lists keeps the tab's part and timer", () => {
    const s = run(srv(welcome()), srv(offer('w1')), local('w1', 'answering'), local('w1', 'held', T + 1000),
      srv(welcome([view('w1', { state: 'active', agent: 'agent1', startedAt: T + 900 })]), T + 9000));
    expect(tabCall(s)).toMatchObject({ local: 'held', heldAt: T + 1000 });
  });

  test('a call this tab held that the server no longer lists is over: it goes to history, not a ghost', () => {
    const s = run(srv(welcome()), srv(offer('w1')), local('w1', 'answering'), local('w1', 'held', T), srv(welcome([]), T + 65_000));
    expect(tabCall(s)).toBeUndefined();
    expect(s.history).toHaveLength(1);
    expect(s.history[0]).toMatchObject({ wacid: 'w1', duration: 65, reason: 'The server no longer lists this call.' });
    expect(s.lastEnded?.wacid).toBe('w1');
  });
});

describe('unanswered offers and the agent\'s own state', () => {
  test('an offer that rang out here is listed as missed; one taken by another agent is not listed', () => {
    const s = run(srv(welcome()), srv(offer('w1')), srv({ type: 'call.revoked', wacid: 'w1', reason: 'not answered' }));
    expect(s.history.map((h) => [h.wacid, h.result])).toEqual([['w1', 'MISSED']]);
    expect(s.lastEnded).toBeUndefined();
    const t = run(srv(welcome()), srv(offer('w2')), srv({ type: 'call.revoked', wacid: 'w2', reason: 'taken by another agent' }));
    expect(t.history).toEqual([]);
  });

  test('away with the server\'s reason until the agent goes available again', () => {
    const s = run(srv(welcome()), srv({ type: 'presence', presence: 'away' }), srv({ type: 'agent.state', status: 'away', reason: 'not answered', since: T }));
    expect(agentShown(s, T)).toEqual({ status: 'away', reason: 'not answered' });
    expect(agentShown(reduce(s, srv({ type: 'presence', presence: 'available' })), T)).toEqual({ status: 'available' });
  });

  test('on a call while this tab (or another) holds one; wrap-up counts down to `until`, then available', () => {
    const held = run(srv(welcome()), srv(offer('w1')), local('w1', 'answering'), local('w1', 'held'));
    expect(agentShown(held, T)).toEqual({ status: 'on-call' });
    const wrap = reduce(
      reduce(held, srv({ type: 'call.state', ...view('w1', { state: 'ended', agent: 'agent1', result: 'COMPLETED', startedAt: T, endedAt: T + 5000 }) })),
      srv({ type: 'agent.state', status: 'after-call-work', since: T + 5000, until: T + 11_000 }),
    );
    expect(agentShown(wrap, T + 5000)).toEqual({ status: 'wrap-up', until: T + 11_000, secondsLeft: 6 });
    expect(agentShown(wrap, T + 11_000)).toEqual({ status: 'available' });
  });
});

describe('ringing', () => {
  test('an offer rings until its deadline, then stops with no frame needed', () => {
    const s = run(srv(welcome()), srv(offer('w1', T + 30_000)));
    expect(ringingCalls(s, T + 29_999)).toHaveLength(1);
    expect(ringingCalls(s, T + 30_000)).toHaveLength(0);
  });

  test('the deadline is server time: a server clock ahead of ours (from ping.t) shortens the ring', () => {
    const s = run(srv(welcome()), srv({ type: 'ping', t: T + 5000 }, T), srv(offer('w1', T + 30_000)));
    expect(s.skewMs).toBe(5000);
    expect(ringingCalls(s, T + 24_999)).toHaveLength(1);
    expect(ringingCalls(s, T + 25_000)).toHaveLength(0);
  });

  test('a ping with a clock from another epoch is not taken as skew', () => {
    expect(run(srv({ type: 'ping', t: 12 }, T)).skewMs).toBe(0);
  });

  test('call.revoked stops the ring, and a later ringing state without an offer does not restart it', () => {
    const s = run(srv(welcome()), srv(offer('w1')), srv({ type: 'call.revoked', wacid: 'w1', reason: 'taken elsewhere' }));
    expect(ringingCalls(s, T)).toEqual([]);
    expect(s.calls.w1?.revoked).toBe('taken elsewhere');
    const again = reduce(s, srv({ type: 'call.state', ...view('w1', { state: 'ringing', agent: 'agent2' }) }));
    expect(ringingCalls(again, T)).toEqual([]);
  });

  test('a new offer of a revoked call rings again (routed back to this agent)', () => {
    const s = run(srv(welcome()), srv(offer('w1')), srv({ type: 'call.revoked', wacid: 'w1', reason: 'ring timeout' }), srv(offer('w1'), T + 20_000));
    expect(ringingCalls(s, T + 20_000)).toHaveLength(1);
    expect(s.calls.w1?.offeredAt).toBe(T + 20_000);
  });

  test('a revoke for an unknown call changes nothing', () => {
    const s = run(srv(welcome()));
    expect(reduce(s, srv({ type: 'call.revoked', wacid: 'nope', reason: 'x' }))).toBe(s);
  });

  test('declined here: no ring; listed as declined, and when it ends elsewhere that end is not this agent\'s', () => {
    const s = run(srv(welcome()), srv(offer('w1')), local('w1', 'declined'));
    expect(ringingCalls(s, T)).toEqual([]);
    const ended = reduce(s, srv({ type: 'call.state', ...view('w1', { state: 'ended', agent: 'agent2', result: 'COMPLETED' }) }));
    expect(ended.history.map((h) => [h.wacid, h.result])).toEqual([['w1', 'DECLINED']]);
    expect(ended.ended).toHaveLength(1);
  });

  test('answered in another tab of this agent: the ring stops here and the call shows as elsewhere', () => {
    const s = run(srv(welcome()), srv(offer('w1')), srv({ type: 'call.state', ...view('w1', { state: 'active', agent: 'agent1', startedAt: T }) }));
    expect(ringingCalls(s, T)).toEqual([]);
    expect(tabCall(s)).toBeUndefined();
    expect(callsElsewhere(s).map((c) => c.view.wacid)).toEqual(['w1']);
  });

  test('answered by another agent: the ring stops and nothing shows here', () => {
    const s = run(srv(welcome()), srv(offer('w1')), srv({ type: 'call.state', ...view('w1', { state: 'active', agent: 'agent2' }) }));
    expect(ringingCalls(s, T)).toEqual([]);
    expect(callsElsewhere(s)).toEqual([]);
  });

  test('the caller hanging up while it rings here is a missed call in history', () => {
    const s = run(srv(welcome()), srv(offer('w1')), srv({ type: 'call.state', ...view('w1', { state: 'ended' }) }));
    expect(s.history[0]).toMatchObject({ wacid: 'w1', result: 'MISSED' });
  });

  test('a new offer hides the previous call-ended panel', () => {
    const s = run(srv(welcome()), srv(offer('w1')), srv({ type: 'call.state', ...view('w1', { state: 'ended' }) }));
    expect(s.lastEnded).toBeDefined();
    expect(reduce(s, srv(offer('w2'))).lastEnded).toBeUndefined();
  });
});

describe('answering and ending', () => {
  const held = () => run(srv(welcome()), srv(offer('w1')), local('w1', 'answering'), local('w1', 'held', T + 2000));

  test('answering takes the call out of the ring list into the tab call', () => {
    const s = run(srv(welcome()), srv(offer('w1')), local('w1', 'answering'));
    expect(ringingCalls(s, T)).toEqual([]);
    expect(tabCall(s)?.local).toBe('answering');
  });

  test('a revoke while answering (another agent won) leaves this tab without the call', () => {
    const s = run(srv(welcome()), srv(offer('w1')), local('w1', 'answering'), srv({ type: 'call.revoked', wacid: 'w1', reason: 'taken' }));
    expect(tabCall(s)).toBeUndefined();
  });

  test('a revoke never takes away a call this tab holds', () => {
    const s = reduce(held(), srv({ type: 'call.revoked', wacid: 'w1', reason: 'late duplicate' }));
    expect(tabCall(s)?.local).toBe('held');
  });

  test('the end uses the duration the server gives', () => {
    const s = reduce(held(), srv({ type: 'call.state', ...view('w1', { state: 'ended', result: 'COMPLETED', duration: 42, agent: 'agent1' }) }, T + 99_000));
    expect(tabCall(s)).toBeUndefined();
    expect(s.lastEnded).toMatchObject({ wacid: 'w1', result: 'COMPLETED', duration: 42 });
    expect(s.history.map((h) => h.wacid)).toEqual(['w1']);
  });

  test('without a duration, endedAt − startedAt is used; without those, the tab\'s own timer', () => {
    const a = reduce(held(), srv({ type: 'call.state', ...view('w1', { state: 'ended', startedAt: T, endedAt: T + 61_400 }) }));
    expect(a.lastEnded?.duration).toBe(61);
    const b = reduce(held(), srv({ type: 'call.state', ...view('w1', { state: 'ended' }) }, T + 32_000));
    expect(b.lastEnded).toMatchObject({ duration: 30, result: 'COMPLETED' });
  });

  test('endedAt alone means over, whatever the state name', () => {
    const s = reduce(held(), srv({ type: 'call.state', ...view('w1', { state: 'ending', endedAt: T + 5000 }) }));
    expect(tabCall(s)).toBeUndefined();
  });

  test('a duplicate end does not add the call twice to history', () => {
    const end = srv({ type: 'call.state', ...view('w1', { state: 'ended', duration: 3 }) });
    const s = [end, end].reduce(reduce, held());
    expect(s.history).toHaveLength(1);
  });

  test('hanging up keeps the call on screen until the server says it ended', () => {
    const s = reduce(held(), local('w1', 'hangingUp'));
    expect(tabCall(s)?.local).toBe('hangingUp');
    const mid = reduce(s, srv({ type: 'call.state', ...view('w1', { state: 'ending', agent: 'agent1' }) }));
    expect(tabCall(mid)?.local).toBe('hangingUp');
  });

  test('a state frame without an sdp keeps the offer sdp (merge, not replace)', () => {
    const s = run(srv(welcome()), srv(offer('w1')), srv({ type: 'call.state', ...view('w1', { state: 'ringing', deadline: T + 30_000 }) }));
    expect(s.calls.w1?.view.sdp).toBe('v=0\r\n');
    expect(ringingCalls(s, T)).toHaveLength(1);
  });
});

describe('other frames', () => {
  test('presence frames set the presence', () => {
    expect(run(srv(welcome([], 'away')), srv({ type: 'presence', presence: 'available' })).presence).toBe('available');
  });
  test('media.available is listed once per call and kind', () => {
    const m: ServerMsg = { type: 'media.available', wacid: 'w1', kind: 'recording', url: '/api/media/w1.ogg' };
    const s = run(srv(m), srv(m), srv({ ...m, kind: 'transcription', url: '/api/media/w1.json' }));
    expect(s.media.map((x) => x.kind)).toEqual(['transcription', 'recording']);
  });
  test('errors show until dismissed', () => {
    const s = run({ type: 'error', message: 'The Service refused the call: no permission', code: 'SERVICE_ERROR', now: T });
    expect(s.error).toEqual({ message: 'The Service refused the call: no permission', code: 'SERVICE_ERROR', at: T });
    expect(reduce(s, { type: 'dismissError' }).error).toBeUndefined();
  });
  test('supervisors see every ended call, newest first, at most 50', () => {
    const events: UiEvent[] = [];
    for (let i = 0; i < 60; i++) events.push(srv({ type: 'call.state', ...view(`w${i}`, { state: 'ended', agent: 'agent2' }) }));
    const s = run(...events);
    expect(s.ended).toHaveLength(50);
    expect(s.ended[0]?.wacid).toBe('w59');
  });
});

describe('transfer (anchor mode)', () => {
  const anchored = (extra: Partial<CallView> = {}): ServerMsg => ({ type: 'call.state', ...view('w1', { state: 'active', media: 'anchor', startedAt: T, ...extra }) });
  const holding = () => run(srv(welcome()), srv({ ...offer(), media: 'anchor' } as ServerMsg), local('w1', 'answering'), local('w1', 'held'), srv(anchored({ agent: 'agent1' })));

  test('a transferred offer keeps who handed it on and the note ("Transferred by A: …"); a call.state does not wipe it', () => {
    const s = run(srv(welcome()), srv({ ...offer(), media: 'anchor', transfer: { by: 'agent2', note: 'billing question' } } as ServerMsg), srv(anchored({ transfer: { by: 'agent2', ringing: 'agent1' } })));
    expect(s.calls.w1!.transferred).toEqual({ by: 'agent2', note: 'billing question' });
    expect(s.calls.w1!.view.transfer).toEqual({ by: 'agent2', ringing: 'agent1' });
  });

  test('a consult ringing here keeps ringing while the call itself is active (the caller on music); it stops once the consult is over', () => {
    const consult = { by: 'agent2', target: 'agent1', phase: 'ringing' as const };
    const s = run(srv(welcome()), srv({ ...offer(), media: 'anchor', transfer: { by: 'agent2', consult: true } } as ServerMsg), srv(anchored({ agent: 'agent2', consult })));
    expect(ringingCalls(s, T).map((c) => c.view.wacid)).toEqual(['w1']);
    expect(s.calls.w1!.transferred).toEqual({ by: 'agent2', consult: true });
    expect(ringingCalls(reduce(s, srv(anchored({ agent: 'agent2' }))), T)).toEqual([]);
  });

  test('cold transfer sent: the call leaves this tab (no longer held here, not shown as another tab\'s) while it goes on', () => {
    const { agent: _a, ...noHolder } = view('w1', { state: 'active', media: 'anchor', startedAt: T, transfer: { by: 'agent1' } });
    const s = reduce(holding(), srv({ type: 'call.state', ...noHolder }));
    expect(tabCall(s)).toBeUndefined();
    expect(callsElsewhere(s)).toEqual([]);
    expect(s.calls.w1!.local).toBe('none');
    expect(s.calls.w1!.view.sdp).toBeUndefined();
    expect(ringingCalls(s, T)).toEqual([]);
    expect(s.lastEnded).toBeUndefined();
  });

  test('this agent stays on the call while it holds it, consults, is the consult\'s target or a conference member', () => {
    const h = holding();
    for (const extra of [
      { agent: 'agent1', consult: { by: 'agent1', target: 'agent2', phase: 'talking' as const } },
      { agent: 'agent2', consult: { by: 'agent2', target: 'agent1', phase: 'talking' as const } },
      { agent: 'agent2', conference: ['agent1'] },
      { agent: undefined, transfer: { by: 'agent2', ringing: 'agent1' } },
    ]) {
      expect(tabCall(reduce(h, srv(anchored(extra))))?.local).toBe('held');
    }
    // Completed to agent2 (or a conference left: agent2 holds it now): off this tab.
    expect(tabCall(reduce(h, srv(anchored({ agent: 'agent2' }))))).toBeUndefined();
    // A direct-mode call is never let go this way (its audio is in this page).
    const direct = run(srv(welcome()), srv(offer()), local('w1', 'answering'), local('w1', 'held'));
    expect(tabCall(reduce(direct, srv({ type: 'call.state', ...view('w1', { state: 'active', agent: 'agent2' }) })))?.local).toBe('held');
  });
});

describe('ringEnd', () => {
  test('an offer rings until its ring timeout, never past the accept window; a transfer or consult ring of an accepted call only until its ring timeout', () => {
    expect(ringEnd({ ringUntil: 2_000, deadline: 1_500 })).toBe(1_500);
    expect(ringEnd({ ringUntil: 2_000, deadline: 3_000 })).toBe(2_000);
    // Accepted long ago: the old accept deadline has passed, the consult still rings to its timeout.
    expect(ringEnd({ ringUntil: 90_000, deadline: 30_000, startedAt: 5_000 })).toBe(90_000);
  });
});
