/**
 * Voicemail in the lifecycle (anchor mode): table tests of each step through the one pure
 * `transition`, then the paths end to end (no answer → message; out of hours → greeting and
 * message; the caller gone before the accept; the message at its longest).
 */
import { describe, expect, it } from 'vitest';
import { anchorConnect, runEvents } from '../../test/support/anchor-call.ts';
import { OUT_OF_HOURS, VOICEMAIL_LEFT, VOICEMAIL_NONE } from '../../shared/callErrors.ts';
import { DEFAULT_POLICY, nextDue, transition, type Call, type CallEvent, type Effect } from './lifecycle.ts';
import { factsOfTransition, outcomeOf } from '../history/recorder.ts';

const T0 = 1_700_000_000_000;
const P = DEFAULT_POLICY;
const W = 'wacid.vm';
const ROOM = { janus: 'ws://janus:8188', room: 42 };
const VM = { afterMs: 20_000, maxMs: 60_000, promptMs: 3_000, closedMs: 6_000 };

const connect = (over: Partial<Extract<CallEvent, { type: 'connect' }>> = {}): CallEvent => anchorConnect(W, T0, { voicemail: VM, ...over });
const ev = (e: Record<string, unknown> & { type: CallEvent['type'] }): CallEvent => ({ wacid: W, at: T0, ...e }) as CallEvent;
const kinds = (effects: Effect[]) => effects.map((x) => x.kind);

const run = (events: CallEvent[], from: Call | null = null) => runEvents(events, from, P);

const queued = run([connect(), ev({ type: 'anchored', ...ROOM })]).call;
const ringing: Call = { ...queued, state: 'ringing', agent: 'a1', ringUntil: T0 + 15_000, offeredTo: ['a1'] };
const joining = transition(ringing, ev({ type: 'tick', at: T0 + VM.afterMs }), P).call!;
const accepting = transition(joining, ev({ type: 'callerJoined', at: T0 + 20_100, sdp: 'v=0\r\njanus\r\n' }), P).call!;
const recording = transition(accepting, ev({ type: 'acceptOk', at: T0 + 20_500 }), P).call!;

describe('voicemail steps (table)', () => {
  const rows: Array<{ name: string; call: Call | null; event: CallEvent; state: Call['state']; effects: string[]; check?: (c: Call, fx: Effect[]) => void }> = [
    {
      name: 'connect (anchor, voicemail on): queued with its plan, routed',
      call: null,
      event: connect(),
      state: 'queued',
      effects: ['anchor', 'route', 'notify'],
      check: (c) => expect(c.voicemailPlan).toEqual({ at: T0 + VM.afterMs, maxMs: VM.maxMs, promptMs: VM.promptMs, closedMs: VM.closedMs }),
    },
    {
      name: 'connect without VOICEMAIL_AFTER_S: a plan for out of hours only, nothing due by it',
      call: null,
      event: connect({ voicemail: { maxMs: 60_000, promptMs: 3_000, closedMs: 6_000 } }),
      state: 'queued',
      effects: ['anchor', 'route', 'notify'],
      check: (c) => expect(nextDue(c, P)).toBe(c.deadline! - P.rejectMarginMs),
    },
    {
      name: 'connect in direct mode ignores voicemail (no plan)',
      call: null,
      event: connect({ media: undefined }),
      state: 'queued',
      effects: ['route', 'notify'],
      check: (c) => expect(c.voicemailPlan).toBeUndefined(),
    },
    {
      name: 'connect out of hours (anchor): answered for voicemail with the closed greeting, a room first, nobody rings',
      call: null,
      event: connect({ closed: true }),
      state: 'answering',
      effects: ['anchor', 'notify'],
      check: (c) => expect(c.voicemail).toEqual({ phase: 'joining', closed: true }),
    },
    {
      name: 'connect out of hours in direct mode: refused as before',
      call: null,
      event: connect({ closed: true, media: undefined, voicemail: undefined }),
      state: 'rejecting',
      effects: ['reject', 'notify'],
      check: (c) => expect(c.reason).toBe(OUT_OF_HOURS),
    },
    {
      name: 'queued: due at VOICEMAIL_AFTER_S',
      call: queued,
      event: ev({ type: 'tick', at: T0 + VM.afterMs - 1 }),
      state: 'queued',
      effects: [],
      check: (c) => expect(nextDue(c, P)).toBe(T0 + VM.afterMs),
    },
    {
      name: 'ringing at VOICEMAIL_AFTER_S: the ring is revoked, the caller joins the room',
      call: ringing,
      event: ev({ type: 'tick', at: T0 + VM.afterMs }),
      state: 'answering',
      effects: ['revoke', 'callerLeg', 'notify'],
      check: (c, fx) => {
        expect(c.agent).toBeUndefined();
        expect(c.voicemail).toEqual({ phase: 'joining' });
        expect(fx[0]).toEqual({ kind: 'revoke', agent: 'a1', reason: 'the caller went to voicemail' });
        expect(c.endBy).toBe(c.deadline! + P.answerGraceMs);
      },
    },
    {
      name: 'the accept window closing first still refuses (voicemail later than the window)',
      call: { ...queued, voicemailPlan: { ...queued.voicemailPlan!, at: T0 + 29_000 } },
      event: ev({ type: 'tick', at: T0 + 27_000 }),
      state: 'rejecting',
      effects: ['reject', 'notify'],
    },
    {
      name: "joining: Janus's answer is accepted without an agent's leg",
      call: joining,
      event: ev({ type: 'callerJoined', sdp: 'v=0\r\njanus\r\n' }),
      state: 'answering',
      effects: ['accept'],
    },
    {
      name: 'joining, out of hours, room made: the caller joins it',
      call: run([connect({ closed: true })]).call,
      event: ev({ type: 'anchored', ...ROOM }),
      state: 'answering',
      effects: ['callerLeg'],
      check: (c) => expect(c.anchor).toEqual(ROOM),
    },
    {
      name: 'accepted: recording, the prompt plays, the message may last the prompt and VOICEMAIL_MAX_S',
      call: accepting,
      event: ev({ type: 'acceptOk', at: T0 + 20_500 }),
      state: 'active',
      effects: ['voicemailStart', 'notify'],
      check: (c, fx) => {
        expect(c.voicemail).toEqual({ phase: 'recording', from: T0 + 20_500 + VM.promptMs, until: T0 + 20_500 + VM.promptMs + VM.maxMs });
        expect(c.startedAt).toBe(T0 + 20_500);
        expect(fx[0]).toEqual({ kind: 'voicemailStart', ...ROOM, closed: false });
        expect(nextDue(c, P)).toBe(c.voicemail!.until);
      },
    },
    {
      name: 'an agent answering meanwhile is told it is taken',
      call: joining,
      event: ev({ type: 'answer', agent: 'a1', conn: 'c1', reqId: 'r9', sdp: 'x' }),
      state: 'answering',
      effects: ['reply'],
    },
    {
      name: 'recording, the caller hangs up: ended, the message saved before the room closes',
      call: recording,
      event: ev({ type: 'terminate', at: T0 + 30_000, result: 'COMPLETED', duration: 9 }),
      state: 'ended',
      effects: ['notify', 'voicemailSave', 'closeRoom'],
      check: (c, fx) => {
        expect(c.reason).toBe(VOICEMAIL_LEFT);
        expect(outcomeOf(c)).toBe('missed');
        expect(fx[1]).toEqual({ kind: 'voicemailSave', ...ROOM, keep: true });
      },
    },
    {
      name: 'recording, the caller hangs up during the prompt: no message (the recording thrown away), a missed call',
      call: recording,
      event: ev({ type: 'terminate', at: recording.voicemail!.from! - 1, result: 'COMPLETED', duration: 2 }),
      state: 'ended',
      effects: ['notify', 'voicemailSave', 'closeRoom'],
      check: (c, fx) => {
        expect(c.reason).toBe(VOICEMAIL_NONE);
        expect(outcomeOf(c)).toBe('missed');
        expect(fx[1]).toEqual({ kind: 'voicemailSave', ...ROOM, keep: false });
      },
    },
    {
      name: 'recording out of hours, the caller hangs up during the greeting: an out-of-hours call, no message',
      call: { ...recording, voicemail: { ...recording.voicemail!, closed: true } },
      event: ev({ type: 'terminate', at: recording.voicemail!.from! - 1, result: 'COMPLETED', duration: 2 }),
      state: 'ended',
      effects: ['notify', 'voicemailSave', 'closeRoom'],
      check: (c) => expect(c.reason).toBe(OUT_OF_HOURS),
    },
    {
      name: 'recording, VOICEMAIL_MAX_S reached: ended from our side',
      call: recording,
      event: ev({ type: 'tick', at: recording.voicemail!.until! }),
      state: 'ending',
      effects: ['terminate', 'notify'],
      check: (c) => expect(c.reason).toBe(VOICEMAIL_LEFT),
    },
    {
      name: 'recording, the caller silent for VOICEMAIL_SILENCE_S after the prompt: ended from our side, the message kept',
      call: recording,
      event: ev({ type: 'voicemailSilent', at: recording.voicemail!.from! + 5_000 }),
      state: 'ending',
      effects: ['terminate', 'notify'],
      check: (c) => expect(c.reason).toBe(VOICEMAIL_LEFT),
    },
    {
      name: 'recording, silent before the prompt is over (a late report): nothing',
      call: recording,
      event: ev({ type: 'voicemailSilent', at: recording.voicemail!.from! - 1 }),
      state: 'active',
      effects: [],
    },
    {
      name: 'joining (not recording yet), a silence report: nothing',
      call: joining,
      event: ev({ type: 'voicemailSilent', at: T0 + 30_000 }),
      state: 'answering',
      effects: [],
    },
    {
      name: 'recording, not yet at its end: nothing',
      call: recording,
      event: ev({ type: 'tick', at: recording.voicemail!.until! - 1 }),
      state: 'active',
      effects: [],
    },
    {
      name: 'joining, the caller hangs up before the accept: no message, an unanswered call',
      call: joining,
      event: ev({ type: 'terminate', at: T0 + 20_050, result: 'MISSED' }),
      state: 'ended',
      effects: ['notify', 'closeRoom'],
      check: (c) => expect(c.reason).not.toBe(VOICEMAIL_LEFT),
    },
    {
      name: 'joining out of hours, the caller hangs up: still an out-of-hours call',
      call: { ...joining, voicemail: { phase: 'joining', closed: true } },
      event: ev({ type: 'terminate', at: T0 + 20_050, result: 'MISSED' }),
      state: 'ended',
      effects: ['notify', 'closeRoom'],
      check: (c) => expect(c.reason).toBe(OUT_OF_HOURS),
    },
    {
      name: 'joining, the Service refuses the accept: rejected, no message',
      call: accepting,
      event: ev({ type: 'acceptRefused', code: '138000', reason: 'refused' }),
      state: 'rejecting',
      effects: ['reject', 'notify'],
    },
  ];
  for (const r of rows) {
    it(r.name, () => {
      const t = transition(r.call, r.event, P);
      expect(t.call!.state).toBe(r.state);
      expect(kinds(t.effects)).toEqual(r.effects);
      r.check?.(t.call!, t.effects);
    });
  }
});

describe('voicemail in history', () => {
  it("the timeline says when and why the call went to voicemail (and whom it rang), once", () => {
    const tick = ev({ type: 'tick', at: T0 + VM.afterMs });
    const entries = factsOfTransition(ringing, joining, tick, T0 + VM.afterMs).filter((f) => f.type === 'timeline' && f.event === 'voicemail');
    expect(entries).toMatchObject([{ detail: { reason: 'no agent answered in time', rang: 'a1' } }]);
    const closed = transition(null, connect({ closed: true }), P).call!;
    expect(factsOfTransition(null, closed, connect({ closed: true }), T0).filter((f) => f.type === 'timeline' && f.event === 'voicemail')).toMatchObject([{ detail: { reason: 'outside business hours' } }]);
    expect(factsOfTransition(accepting, recording, ev({ type: 'acceptOk', at: T0 + 20_500 }), T0 + 20_500).some((f) => f.type === 'timeline' && f.event === 'voicemail')).toBe(false);
  });
});

describe('voicemail paths', () => {
  it('out of hours: greeting and prompt, the message until the caller hangs up', () => {
    const { call, steps } = run([
      connect({ closed: true }),
      ev({ type: 'anchored', ...ROOM, at: T0 + 50 }),
      ev({ type: 'callerJoined', at: T0 + 100, sdp: 'v=0\r\njanus\r\n' }),
      ev({ type: 'acceptOk', at: T0 + 400 }),
      ev({ type: 'tick', at: T0 + 400 + VM.closedMs + VM.maxMs - 1 }),
      ev({ type: 'terminate', at: T0 + 20_000, result: 'COMPLETED', duration: 19 }),
    ]);
    expect(steps.map(kinds)).toEqual([['anchor', 'notify'], ['callerLeg'], ['accept'], ['voicemailStart', 'notify'], [], ['notify', 'voicemailSave', 'closeRoom']]);
    expect(steps[3]![0]).toEqual({ kind: 'voicemailStart', ...ROOM, closed: true });
    expect(call.state).toBe('ended');
    expect(call.reason).toBe(VOICEMAIL_LEFT);
    expect(call.offeredTo).toEqual([]);
    expect(outcomeOf(call)).toBe('missed');
  });

  it('no answer: rang an agent, then the message at its longest, ended by the terminate that follows ours', () => {
    const { call, steps } = run([
      connect(),
      ev({ type: 'anchored', ...ROOM, at: T0 + 50 }),
      ev({ type: 'offer', agent: 'a1', at: T0 + 60 }),
      ev({ type: 'tick', at: T0 + 15_060 }), // the ring times out; routed again
      ev({ type: 'tick', at: T0 + VM.afterMs }),
      ev({ type: 'callerJoined', at: T0 + 20_100, sdp: 'v=0\r\njanus\r\n' }),
      ev({ type: 'acceptOk', at: T0 + 20_400 }),
      ev({ type: 'tick', at: T0 + 20_400 + VM.promptMs + VM.maxMs }),
      ev({ type: 'terminate', at: T0 + 84_000, result: 'COMPLETED', duration: 63 }),
    ]);
    expect(steps.map(kinds).slice(4)).toEqual([['callerLeg', 'notify'], ['accept'], ['voicemailStart', 'notify'], ['terminate', 'notify'], ['notify', 'voicemailSave', 'closeRoom']]);
    expect(call.reason).toBe(VOICEMAIL_LEFT);
    expect(outcomeOf(call)).toBe('missed');
  });
});
