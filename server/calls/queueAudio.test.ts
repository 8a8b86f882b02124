/**
 * Queue audio in the lifecycle (anchor mode): the paths through the one pure `transition` —
 * the bridge answers at once, greeting, music, place in the queue, an agent in (the wait ends
 * there); the caller hanging up while waiting (an abandon); voicemail taking over; the longest
 * wait; the agent's leg failing (back to the queue); an agent answering before the bridge's
 * accept completed — and what history makes of each (answered by the greeting is not answered).
 */
import { describe, expect, it } from 'vitest';
import { anchorConnect, runEvents } from '../../test/support/anchor-call.ts';
import { VOICEMAIL_LEFT } from '../../shared/callErrors.ts';
import { callFact, factsOfTransition, outcomeOf } from '../history/recorder.ts';
import { DEFAULT_POLICY, nextDue, transition, type Call, type CallEvent, type Effect } from './lifecycle.ts';
import { QUEUE_WAIT_OVER, queuePlace } from './queueAudio.ts';

const T0 = 1_700_000_000_000;
const P = DEFAULT_POLICY;
const W = 'wacid.qa';
const ROOM = { janus: 'ws://janus:8188', room: 42 };
const QA = { greetingMs: 2_500, positionEveryMs: 10_000, maxWaitMs: 600_000 };
const JANUS_SDP = 'v=0\r\njanus\r\n';

const connect = (over: Partial<Extract<CallEvent, { type: 'connect' }>> = {}): CallEvent => anchorConnect(W, T0, { queueAudio: QA, ...over });
const ev = (at: number, e: Record<string, unknown> & { type: CallEvent['type'] }): CallEvent => ({ wacid: W, at: T0 + at, ...e }) as CallEvent;
const kinds = (effects: Effect[]) => effects.map((x) => x.kind);

const run = (events: CallEvent[], from: Call | null = null) => runEvents(events, from, P);

const answer = (at: number, agent = 'a1') => ev(at, { type: 'answer', agent, conn: `c-${agent}`, reqId: `r-${agent}`, sdp: '' });
const terminate = (at: number, result = 'COMPLETED') => ev(at, { type: 'terminate', result, duration: 30 });

/** Connected, in a room, the caller joined and accepted at +500, agent a1 ringing since +100. */
const waiting = run([connect(), ev(50, { type: 'anchored', ...ROOM }), ev(100, { type: 'offer', agent: 'a1' }), ev(300, { type: 'callerJoined', sdp: JANUS_SDP }), ev(500, { type: 'acceptOk' })]);

describe('queue audio: the bridge answers a waiting caller', () => {
  it('connect: queued with its plan, a room and routing at once; the room makes the caller join, its answer is accepted', () => {
    const { call, steps } = waiting;
    expect(kinds(steps[0]!)).toEqual(['anchor', 'route', 'notify']);
    expect(kinds(steps[1]!)).toEqual(['callerLeg']);
    expect(steps[3]).toEqual([{ kind: 'accept', sdp: JANUS_SDP }]);
    expect(call).toMatchObject({ state: 'ringing', agent: 'a1', answerSdp: JANUS_SDP, queueAudio: { ...QA, joining: true, acceptedAt: T0 + 500, musicAt: T0 + 3_000 } });
    // The greeting plays; the accept window no longer bounds the call: its longest wait does.
    expect(steps[4]).toEqual([{ kind: 'queueGreeting', ...ROOM }, { kind: 'notify' }]);
    expect(call.deadline).toBe(T0 + 500 + QA.maxWaitMs);
    expect(call.startedAt).toBeUndefined();
    expect(nextDue(call, P)).toBe(T0 + 3_000);
    // History's timeline says so; the call fact has no answer.
    const before = run([connect(), ev(50, { type: 'anchored', ...ROOM }), ev(100, { type: 'offer', agent: 'a1' }), ev(300, { type: 'callerJoined', sdp: JANUS_SDP })]).call;
    const facts = factsOfTransition(before, call, ev(500, { type: 'acceptOk' }), T0 + 500, { version: 5 });
    expect(facts).toContainEqual(expect.objectContaining({ type: 'timeline', event: 'queue audio', detail: { state: 'ringing', reason: 'answered by the queue greeting; waiting for an agent' } }));
    expect(facts.find((f) => f.type === 'call')).not.toHaveProperty('answeredAt');
  });

  it('direct mode, or out of hours: no queue audio', () => {
    expect(transition(null, connect({ media: undefined }), P).call!.queueAudio).toBeUndefined();
    expect(transition(null, connect({ closed: true }), P).call!.queueAudio).toBeUndefined();
  });

  it('greeting, then music, then the place in the queue every positionEveryMs; the accept window passing rejects nothing', () => {
    const music = transition(waiting.call, ev(3_000, { type: 'tick' }), P);
    expect(music.effects).toEqual([{ kind: 'roomMusic', ...ROOM, on: true }]);
    expect(music.call!.queueAudio).toMatchObject({ announceAt: T0 + 13_000 });
    expect(music.call!.queueAudio!.musicAt).toBeUndefined();
    const said = transition(music.call, ev(13_000, { type: 'tick' }), P);
    expect(said.effects).toEqual([{ kind: 'queuePosition', ...ROOM }]);
    expect(said.call!.queueAudio!.announceAt).toBe(T0 + 23_000);
    // The ring times out as always (the caller keeps hearing music); routing goes on.
    const rang = transition(said.call, ev(15_100, { type: 'tick' }), P);
    expect(rang.call!.state).toBe('queued');
    expect(kinds(rang.effects)).toEqual(['agentNoAnswer', 'revoke', 'route', 'notify']);
    // Past the old accept window (30 s): still waiting, the next announcement due.
    const late = transition(rang.call, ev(33_000, { type: 'tick' }), P);
    expect(late.call!.state).toBe('queued');
    expect(late.effects).toEqual([{ kind: 'queuePosition', ...ROOM }]);
  });

  it('an agent answers: its leg joins, then the call is active (the wait ends there), the queue sounds stop, the answer is acked; history: answered by the agent, wait until then', () => {
    const { call, steps } = run([ev(3_000, { type: 'tick' }), answer(9_000), ev(9_400, { type: 'legReady', agent: 'a1', conn: 'c-a1' }), terminate(40_000)], waiting.call);
    expect(kinds(steps[1]!)).toEqual(['agentLeg', 'revoke', 'agentBusy', 'notify']);
    expect(steps[2]).toEqual([{ kind: 'queueAudioStop', ...ROOM }, { kind: 'reply', conn: 'c-a1', reqId: 'r-a1', ok: true, result: { wacid: W, startedAt: T0 + 9_400 } }, { kind: 'notify' }]);
    expect(call).toMatchObject({ state: 'ended', agent: 'a1', startedAt: T0 + 9_400 });
    expect(outcomeOf(call)).toBe('answered');
    expect(callFact(call, 9)).toMatchObject({ outcome: 'answered', agent: 'a1', waitMs: 9_400, talkMs: 30_600 });
  });

  it('the caller hangs up while hearing music (ringing an agent): an abandon, no agent of its own, the whole life waited', () => {
    const { call, steps } = run([ev(3_000, { type: 'tick' }), terminate(8_000)], waiting.call);
    expect(steps[1]).toContainEqual({ kind: 'revoke', agent: 'a1', reason: 'caller hung up' });
    expect(steps[1]).toContainEqual({ kind: 'closeRoom', ...ROOM });
    expect(call).toMatchObject({ state: 'ended', result: 'MISSED' });
    expect(outcomeOf(call)).toBe('abandoned');
    const fact = callFact(call, 5);
    expect(fact).toMatchObject({ outcome: 'abandoned', waitMs: 8_000 });
    expect(fact.agent).toBeUndefined();
    expect(fact.answeredAt).toBeUndefined();
    expect(fact.talkMs).toBeUndefined();
  });

  it('an agent joining when the caller hangs up: abandoned, never answered (the Service\'s COMPLETED speaks of the greeting)', () => {
    const { call } = run([answer(9_000), terminate(9_200)], waiting.call);
    expect(outcomeOf(call)).toBe('abandoned');
    expect(callFact(call, 5).answeredAt).toBeUndefined();
  });

  it('VOICEMAIL_AFTER_S while waiting: the caller, answered already, goes straight to the prompt; history: missed', () => {
    const vm = run([connect({ voicemail: { afterMs: 20_000, maxMs: 60_000, promptMs: 3_000, closedMs: 6_000 } }), ev(50, { type: 'anchored', ...ROOM }), ev(100, { type: 'offer', agent: 'a1' }), ev(300, { type: 'callerJoined', sdp: JANUS_SDP }), ev(500, { type: 'acceptOk' }), ev(3_000, { type: 'tick' })]);
    expect(nextDue(vm.call, P)).toBe(T0 + 13_000);
    const { call, steps } = run([ev(13_000, { type: 'tick' }), ev(20_000, { type: 'tick' })], vm.call);
    expect(steps[1]).toEqual([
      { kind: 'revoke', agent: 'a1', reason: 'the caller went to voicemail' },
      { kind: 'queueAudioStop', ...ROOM },
      { kind: 'voicemailStart', ...ROOM, closed: false },
      { kind: 'notify' },
    ]);
    expect(call).toMatchObject({ state: 'active', voicemail: { phase: 'recording', from: T0 + 23_000, until: T0 + 83_000 } });
    expect(call.agent).toBeUndefined();
    const done = run([terminate(30_000)], call).call;
    expect(done.reason).toBe(VOICEMAIL_LEFT);
    expect(outcomeOf(done)).toBe('missed');
  });

  it('nobody within the longest wait: ended from our side (never rejected: it was accepted), reason kept through the terminate; history: missed', () => {
    const end = T0 + 500 + QA.maxWaitMs - P.rejectMarginMs;
    const { call, steps } = run([ev(end - T0, { type: 'tick' })], waiting.call);
    expect(kinds(steps[0]!)).toEqual(['revoke', 'terminate', 'notify']);
    expect(call).toMatchObject({ state: 'ending', reason: QUEUE_WAIT_OVER });
    const done = run([terminate(end - T0 + 300)], call).call;
    expect(done.reason).toBe(QUEUE_WAIT_OVER);
    expect(outcomeOf(done)).toBe('missed');
  });

  it('the agent\'s leg fails (or its page goes): back to the queue with music, the agent freed, routed again', () => {
    const answering = run([ev(3_000, { type: 'tick' }), answer(9_000)], waiting.call).call;
    const failed = transition(answering, ev(9_500, { type: 'legFailed', agent: 'a1', reason: 'no offer' }), P);
    expect(failed.call).toMatchObject({ state: 'queued', queueAudio: { announceAt: T0 + 19_500 } });
    expect(failed.call!.agent).toBeUndefined();
    expect(kinds(failed.effects)).toEqual(['reply', 'leaveRoom', 'agentFree', 'roomMusic', 'route', 'notify']);
    const lost = transition(answering, ev(9_500, { type: 'connLost', agent: 'a1', conn: 'c-a1' }), P);
    expect(lost.call!.state).toBe('queued');
    // Never in by its grace: the same.
    const late = transition(answering, ev(9_000 + P.answerGraceMs, { type: 'tick' }), P);
    expect(late.call!.state).toBe('queued');
  });

  it('an agent answers while the caller is still joining: one caller leg, the accept as the agent\'s (no greeting)', () => {
    const early = run([connect(), ev(50, { type: 'anchored', ...ROOM }), ev(100, { type: 'offer', agent: 'a1' }), answer(200), ev(250, { type: 'legReady', agent: 'a1', conn: 'c-a1' }), ev(300, { type: 'callerJoined', sdp: JANUS_SDP }), ev(500, { type: 'acceptOk' })]);
    expect(early.steps.flat().filter((x) => x.kind === 'callerLeg')).toHaveLength(1);
    expect(early.steps[4]).toEqual([]);
    expect(early.steps[5]).toEqual([{ kind: 'accept', sdp: JANUS_SDP }]);
    expect(early.call).toMatchObject({ state: 'active', startedAt: T0 + 500 });
    expect(early.steps.flat().some((x) => x.kind === 'queueGreeting')).toBe(false);
    // The accept done before the agent's leg is in: active at its legReady.
    const later = run([connect(), ev(50, { type: 'anchored', ...ROOM }), ev(100, { type: 'offer', agent: 'a1' }), answer(200), ev(300, { type: 'callerJoined', sdp: JANUS_SDP }), ev(500, { type: 'acceptOk' }), ev(700, { type: 'legReady', agent: 'a1', conn: 'c-a1' })]);
    expect(later.steps[5]).toEqual([{ kind: 'notify' }]);
    expect(later.call).toMatchObject({ state: 'active', startedAt: T0 + 700 });
    expect(kinds(later.steps[6]!)).toEqual(['queueAudioStop', 'reply', 'notify']);
  });

  it('the bridge\'s accept refused, or its outcome unknown: refused, or ended from our side', () => {
    const joined = run([connect(), ev(50, { type: 'anchored', ...ROOM }), ev(100, { type: 'offer', agent: 'a1' }), ev(300, { type: 'callerJoined', sdp: JANUS_SDP })]).call;
    const refused = transition(joined, ev(400, { type: 'acceptRefused', code: '131000', reason: 'no' }), P);
    expect(refused.call).toMatchObject({ state: 'rejecting', reason: 'no', errorCode: '131000' });
    expect(kinds(refused.effects)).toEqual(['revoke', 'reject', 'notify']);
    const unknown = transition(joined, ev(400, { type: 'acceptUnknown' }), P);
    expect(unknown.call!.state).toBe('ending');
    expect(kinds(unknown.effects)).toEqual(['revoke', 'terminate', 'notify']);
  });

  it('the media server lost while the caller waits: ended from our side', () => {
    const lost = transition(waiting.call, ev(5_000, { type: 'roomLost', reason: 'gone' }), P);
    expect(lost.call).toMatchObject({ state: 'ending', errorCode: 'MEDIA_SERVER_LOST' });
    expect(kinds(lost.effects)).toEqual(['revoke', 'terminate', 'notify']);
  });
});

describe('queuePlace', () => {
  it('counts the waiting calls that came before (ties by wacid), itself excluded', () => {
    const calls = [
      { wacid: 'b', createdAt: 10 },
      { wacid: 'a', createdAt: 20 },
      { wacid: 'c', createdAt: 20 },
      { wacid: 'd', createdAt: 30 },
    ];
    expect(queuePlace(calls[0]!, calls)).toBe(1);
    expect(queuePlace(calls[1]!, calls)).toBe(2);
    expect(queuePlace(calls[2]!, calls)).toBe(3);
    expect(queuePlace(calls[3]!, calls)).toBe(4);
    expect(queuePlace({ wacid: 'z', createdAt: 5 }, calls)).toBe(1);
  });
});
