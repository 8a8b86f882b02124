/**
 * The recorder: calls driven through the real lifecycle (`transition`) event by event, the
 * facts of every committed step collected as the engine will enqueue them; then the
 * outcome of each path, and replays and disorder through a real store (PGlite).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestHistory, type TestHistory } from '../../test/support/history.ts';
import { DEFAULT_POLICY, transition, type Call, type CallEvent } from '../calls/lifecycle.ts';
import { factsOfMedia, factsOfTransition, outcomeOf } from './recorder.ts';
import { OUT_OF_HOURS } from '../../shared/callErrors.ts';
import { HistoryFact, type Outcome } from './schema.ts';

const T0 = Date.parse('2026-04-01T09:00:00.000Z');
const s = (sec: number) => T0 + sec * 1000;
const iso = (sec: number) => new Date(s(sec)).toISOString();
const SDP = 'v=0\r\n';
const CALLER = '+15550123456';
const BUSINESS = '+15550100001';

type Ev = Omit<CallEvent, 'wacid'> & { eventId?: string };

/** Apply events as the engine does: facts only for committed steps (and Service events). */
function drive(wacid: string, events: Ev[]): { call: Call | null; facts: HistoryFact[] } {
  let call: Call | null = null;
  let version = -1;
  const facts: HistoryFact[] = [];
  for (const { eventId, ...e } of events) {
    const event = { ...e, wacid } as CallEvent;
    const next: Call | null = transition(call, event, DEFAULT_POLICY).call;
    if (next !== call) version++;
    facts.push(...factsOfTransition(call, next, event, event.at, { version, ...(eventId ? { eventId } : {}) }));
    call = next;
  }
  return { call, facts };
}

const connectIn = (sec: number, extra: Partial<Extract<CallEvent, { type: 'connect' }>> = {}): Ev =>
  ({ type: 'connect', at: s(sec), direction: 'USER_INITIATED', phoneId: 'ph1', from: CALLER, to: BUSINESS, sdp: SDP, dialTime: s(sec), ...extra }) as Ev;
const offer = (sec: number, agent = 'agent1'): Ev => ({ type: 'offer', at: s(sec), agent }) as Ev;
const answer = (sec: number, agent = 'agent1'): Ev => ({ type: 'answer', at: s(sec), agent, conn: 'c1', reqId: 'r1', sdp: SDP }) as Ev;
const tick = (sec: number): Ev => ({ type: 'tick', at: s(sec) }) as Ev;
const terminate = (sec: number, result: string, extra: Record<string, unknown> = {}): Ev => ({ type: 'terminate', at: s(sec), result, ...extra }) as Ev;
const dialed = (sec: number, to = CALLER): Ev => ({ type: 'dialed', at: s(sec), agent: 'agent2', conn: 'c2', reqId: 'd1', phoneId: BUSINESS, from: BUSINESS, to, sdp: SDP }) as Ev;
const connectOut = (sec: number): Ev => ({ type: 'connect', at: s(sec), direction: 'BUSINESS_INITIATED', phoneId: 'ph1', from: BUSINESS, to: CALLER, sdp: SDP }) as Ev;
const status = (sec: number, value: string): Ev => ({ type: 'status', at: s(sec), value }) as Ev;

const lastCall = (facts: HistoryFact[]) => facts.filter((f) => f.type === 'call').at(-1) as Extract<HistoryFact, { type: 'call' }>;

// Window 30 s from the connect, ring 15 s, rejected 3 s before the window closes (27 s).
const PATHS: Array<[string, Ev[], Outcome, Record<string, unknown>?]> = [
  ['inbound, answered and hung up by the caller', [connectIn(0), offer(1), answer(4), { type: 'acceptOk', at: s(5) } as Ev, terminate(65, 'COMPLETED', { duration: 60 })], 'answered', { agent: 'agent1', answeredAt: iso(5), endedAt: iso(65), waitMs: 5000, talkMs: 60_000 }],
  ['inbound, rang an agent who did not answer, window closed: missed', [connectIn(0), offer(1), tick(16), tick(27), terminate(28, 'FAILED')], 'missed', { waitMs: 28_000, endReason: 'no agent answered in time' }],
  ['inbound, rang, our reject never confirmed (timer ends it): missed', [connectIn(0), offer(1), tick(16), tick(27), tick(87)], 'missed'],
  ['inbound, caller hung up while it rang: abandoned', [connectIn(0), offer(1), terminate(6, 'FAILED')], 'abandoned', { waitMs: 6000 }],
  ['inbound, caller hung up while queued: abandoned', [connectIn(0), terminate(9, 'FAILED')], 'abandoned'],
  ['inbound, declined by the only agent then hung up: abandoned', [connectIn(0), offer(1), { type: 'decline', at: s(2), agent: 'agent1', conn: 'c1', reqId: 'x' } as Ev, terminate(8, 'FAILED')], 'abandoned'],
  ['inbound, nobody available, window closed: rejected', [connectIn(0), tick(27), terminate(28, 'FAILED')], 'rejected'],
  ['inbound, delivered too late to ring anyone: rejected', [connectIn(0, { dialTime: s(-29) }), terminate(1, 'FAILED')], 'rejected'],
  ['inbound, connect without an offer: rejected', [connectIn(0, { sdp: undefined }), terminate(1, 'FAILED')], 'rejected'],
  ['inbound, outside business hours: rejected at once, saying why', [connectIn(0, { closed: true }), terminate(1, 'REJECTED')], 'rejected', { endReason: OUT_OF_HOURS }],
  ['inbound, the Service refused accept: failed', [connectIn(0), offer(1), answer(2), { type: 'acceptRefused', at: s(3), code: 'BAD_REQUEST', reason: 'bad sdp' } as Ev, terminate(4, 'FAILED')], 'failed', { agent: 'agent1' }],
  ['inbound, accept never completed (timers): failed', [connectIn(0), offer(1), answer(2), { type: 'acceptUnknown', at: s(3) } as Ev, tick(40), tick(100)], 'failed'],
  ['inbound, caller hung up while accept was under way: abandoned', [connectIn(0), offer(1), answer(2), terminate(3, 'COMPLETED', { duration: 0 })], 'abandoned'],
  ['inbound, accept outcome unknown but the Service connected it: answered', [connectIn(0), offer(1), answer(2), { type: 'acceptUnknown', at: s(3) } as Ev, terminate(50, 'COMPLETED', { duration: 45 })], 'answered'],
  ['inbound, terminate before the connect (tombstone): abandoned', [terminate(0, 'FAILED'), connectIn(1)], 'abandoned'],
  ['inbound tombstone with a provider error: failed', [terminate(0, 'FAILED', { errorCode: '138019' })], 'failed'],
  ['inbound, accepted but no audio ever flowed, dropped by the Service at 20 s (138023): no-audio, no talk time', [connectIn(0), offer(1), answer(2), { type: 'acceptOk', at: s(3) } as Ev, terminate(23, 'FAILED', { duration: 20, errorCode: '138023' })], 'no-audio', { agent: 'agent1', answeredAt: iso(3) }],
  ['inbound, audio lost mid-call (138021): still answered', [connectIn(0), offer(1), answer(2), { type: 'acceptOk', at: s(3) } as Ev, terminate(63, 'FAILED', { duration: 60, errorCode: '138021' })], 'answered', { talkMs: 60_000 }],
  ['inbound, still ringing: in-progress', [connectIn(0), offer(1)], 'in-progress'],
  ['outbound, accepted and hung up by the agent', [dialed(0), connectOut(1), status(2, 'RINGING'), status(6, 'ACCEPTED'), { type: 'hangup', at: s(36), agent: 'agent2', conn: 'c2', reqId: 'h' } as Ev, terminate(37, 'COMPLETED', { duration: 31 })], 'answered', { agent: 'agent2', direction: 'outbound', customer: { phoneNumber: CALLER }, businessNumber: BUSINESS, talkMs: 31_000 }],
  ['outbound, the user declined: no-answer', [dialed(0), connectOut(1), status(4, 'REJECTED'), terminate(5, 'FAILED')], 'no-answer', { agent: 'agent2' }],
  ['outbound, rang out at the Service (138007): no-answer', [dialed(0), connectOut(1), status(2, 'RINGING'), terminate(60, 'FAILED', { errorCode: '138007' })], 'no-answer'],
  ['outbound, agent cancelled before an answer: no-answer', [dialed(0), connectOut(1), { type: 'hangup', at: s(3), agent: 'agent2', conn: 'c2', reqId: 'h' } as Ev, terminate(4, 'FAILED')], 'no-answer'],
  ['outbound, set-up failed before the phone rang: failed', [dialed(0), terminate(1, 'FAILED', { errorCode: '138019' })], 'failed'],
  ['outbound to a BSUID, still dialing: in-progress', [dialed(0, 'US.13491208655302741918')], 'in-progress', { customer: { userId: 'US.13491208655302741918' } }],
];

describe('outcomes: every path through the lifecycle', () => {
  it.each(PATHS)('%s', (_name, events, outcome, fields) => {
    const { call, facts } = drive('w-path', events);
    expect(outcomeOf(call!)).toBe(outcome);
    const fact = lastCall(facts);
    expect(fact.outcome).toBe(outcome);
    // Every fact is valid for the queue's schema (the writer parses them again).
    for (const f of facts) expect(() => HistoryFact.parse(f), JSON.stringify(f)).not.toThrow();
    if (fields) expect(fact).toMatchObject(fields);
    if (outcome === 'no-audio') expect(fact).not.toHaveProperty('talkMs');
    if (outcome === 'in-progress') expect(fact.endedAt).toBeUndefined();
    else expect(fact.endedAt).toBeDefined();
  });

  it('covers every outcome of the design', () => {
    expect(new Set(PATHS.map((p) => p[2]))).toEqual(new Set(['answered', 'missed', 'abandoned', 'rejected', 'failed', 'no-answer', 'no-audio', 'in-progress']));
  });

  it('a call that only rang has no agent; the one who answered is its agent', () => {
    expect(lastCall(drive('w', [connectIn(0), offer(1)]).facts).agent).toBeUndefined();
    expect(lastCall(drive('w', [connectIn(0), offer(1), answer(2)]).facts).agent).toBe('agent1');
    // Ended while it rang (the caller gave up, or nobody answered in time): still nobody's.
    expect(lastCall(drive('w', [connectIn(0), offer(1), terminate(6, 'FAILED')]).facts).agent).toBeUndefined();
    expect(lastCall(drive('w', [connectIn(0), offer(1), tick(16), tick(27), terminate(28, 'FAILED')]).facts).agent).toBeUndefined();
  });
});

describe('timeline', () => {
  it('one entry per state change and per Service event; nothing for steps that change nothing', () => {
    const { facts } = drive('w-tl', [connectIn(0), offer(1), tick(5) /* nothing due */, answer(4), { type: 'acceptOk', at: s(5) } as Ev, terminate(65, 'COMPLETED', { duration: 60 })]);
    const tl = facts.filter((f) => f.type === 'timeline') as Array<Extract<HistoryFact, { type: 'timeline' }>>;
    expect(tl.map((t) => [t.event, t.detail?.state])).toEqual([
      ['connect', 'queued'],
      ['offer', 'ringing'],
      ['answer', 'answering'],
      ['acceptOk', 'active'],
      ['terminate', 'ended'],
    ]);
    expect(tl[1]!.detail).toMatchObject({ agent: 'agent1' });
    expect(tl[4]!.detail).toMatchObject({ result: 'COMPLETED', duration: 60 });
    // Never an SDP in history.
    expect(JSON.stringify(facts)).not.toContain('v=0');
  });

  it('a repeated Service event that changes nothing is still recorded, under the same key (so stored once)', () => {
    const { facts } = drive('w-rep', [connectIn(0), terminate(5, 'FAILED', { eventId: 'evt_t' }), terminate(5, 'FAILED', { eventId: 'evt_t' })]);
    const keys = facts.filter((f) => f.type === 'timeline').map((f) => (f as { key: string }).key);
    expect(keys).toEqual([expect.stringMatching(/^connect:/), 'event:evt_t', 'event:evt_t']);
    // The repeat changed nothing: no new call fact.
    expect(facts.filter((f) => f.type === 'call')).toHaveLength(2);
  });
});

/** One migrated PGlite history for the file's cases that go through the store. */
let h: TestHistory;
beforeAll(async () => {
  h = await openTestHistory();
});
afterAll(async () => {
  await h?.close();
});

describe('replays and disorder through the store (PGlite)', () => {

  const counts = async (wacid: string) => {
    const [t] = await h.db.query<{ n: number }>('SELECT count(*)::int AS n FROM history_timeline WHERE wacid = $1', [wacid]);
    const [c] = await h.db.query<{ n: number }>('SELECT count(*)::int AS n FROM history_calls WHERE wacid = $1', [wacid]);
    return { calls: c!.n, timeline: t!.n };
  };
  const write = (facts: HistoryFact[]) => h.store.apply(facts.map((f) => HistoryFact.parse(f)));

  it.each(PATHS.filter((p) => p[2] !== 'in-progress').map((p, i) => [p[0], p[1], i] as const))('%s: in order, reversed, shuffled and twice give the same record', async (_name, events, i) => {
    const { facts } = drive(`ref-${i}`, events);
    await write(facts);
    const reference = await h.store.getCall(`ref-${i}`);
    const refCounts = await counts(`ref-${i}`);
    expect(refCounts.timeline).toBe(facts.filter((f) => f.type === 'timeline').length);

    const w = `mix-${i}`;
    const { facts: again } = drive(w, events);
    // Reversed, one fact per transaction; then shuffled in one batch; then all once more.
    for (const f of [...again].reverse()) await write([f]);
    const shuffled = [...again].sort((a, b) => (JSON.stringify(a).length * 7919 + i) % 13 - (JSON.stringify(b).length * 7919 + i) % 13);
    await write(shuffled);
    await write([...again, ...again]);
    // The same events handled again (a worker retry, a redelivered webhook): facts made afresh.
    await write(drive(w, events).facts);
    expect(await counts(w)).toEqual(refCounts);
    expect({ ...(await h.store.getCall(w)), wacid: `ref-${i}` }).toEqual(reference);
  });

  it('a late in-progress observation never turns an ended call back', async () => {
    const { facts } = drive('late-1', [connectIn(0), offer(1), answer(2), { type: 'acceptOk', at: s(3) } as Ev, terminate(30, 'COMPLETED', { duration: 27 })]);
    const end = facts.slice(-2);
    await write(end);
    await write(facts.slice(0, -2));
    expect(await h.store.getCall('late-1')).toMatchObject({ outcome: 'answered', agent: 'agent1', answeredAt: iso(3), endedAt: iso(30), talkMs: 27_000, receivedAt: iso(0) });
  });

  it('the network path the holding page reported is kept per call, in any order, with a timeline entry', async () => {
    const path = (sec: number, p: string): Ev => ({ type: 'path', at: s(sec), agent: 'agent1', conn: 'c1', reqId: `p${sec}`, path: p }) as Ev;
    const { facts } = drive('path-1', [connectIn(0), offer(1), answer(2), { type: 'acceptOk', at: s(3) } as Ev, path(4, 'relay-tcp'), path(5, 'relay-tcp'), terminate(30, 'COMPLETED', { duration: 27 })]);
    expect(facts.filter((f) => f.type === 'timeline' && f.event === 'path')).toHaveLength(1); // the repeat changed nothing
    for (const f of [...facts].reverse()) await write([f]);
    expect(await h.store.getCall('path-1')).toMatchObject({ outcome: 'answered', networkPath: 'relay-tcp' });
  });

  it('each call names its media mode: direct, or anchor with the media server holding its room', async () => {
    const direct = drive('mode-direct', [connectIn(0), offer(1), answer(2), { type: 'acceptOk', at: s(3) } as Ev, terminate(30, 'COMPLETED', { duration: 27 })]);
    await write(direct.facts);
    expect(await h.store.getCall('mode-direct')).toMatchObject({ mediaMode: 'direct' });
    const anchored: Ev = { type: 'anchored', at: s(0.2), janus: 'ws://janus-2.internal:8188', room: 4242 } as Ev;
    const inRoom = drive('mode-anchor', [connectIn(0, { media: 'anchor' }), anchored, terminate(20, 'FAILED')]);
    for (const f of [...inRoom.facts].reverse()) await write([f]);
    expect(await h.store.getCall('mode-anchor')).toMatchObject({ mediaMode: 'anchor', mediaServer: 'ws://janus-2.internal:8188' });
  });

  it('media facts: the archive result indexed once, the transcript searchable', async () => {
    const { facts } = drive('media-1', [connectIn(0), offer(1), answer(2), { type: 'acceptOk', at: s(3) } as Ev, terminate(30, 'COMPLETED', { duration: 27 })]);
    const sha = 'a'.repeat(64);
    const rec = factsOfMedia({ kind: 'recording', status: 'saved', wacid: 'media-1', mediaAssetId: 'cma_r', path: '/arch/media-1/cma_r.ogg', bytes: 1234, sha256: sha }, s(40));
    const tr = factsOfMedia({ kind: 'transcription', status: 'saved', wacid: 'media-1', mediaAssetId: 'cma_t', path: '/arch/media-1/cma_t.json', bytes: 50, sha256: sha, text: 'refund for order forty two' }, s(41));
    const repeat = factsOfMedia({ kind: 'recording', status: 'already-archived', wacid: 'media-1', mediaAssetId: 'cma_r', path: '/arch/media-1/cma_r.ogg', bytes: 1234, sha256: sha }, s(90));
    await write([...tr, ...rec]); // media before the call
    await write(facts);
    await write(repeat);
    const got = await h.store.getCall('media-1');
    expect(got!.media).toEqual([
      { kind: 'recording', mediaAssetId: 'cma_r', status: 'available', bytes: 1234, sha256: sha, path: '/arch/media-1/cma_r.ogg' },
      { kind: 'transcription', mediaAssetId: 'cma_t', status: 'available', bytes: 50, sha256: sha, path: '/arch/media-1/cma_t.json' },
    ]);
    expect(got!.timeline.filter((t) => t.event.startsWith('recording') || t.event.startsWith('transcription')).map((t) => t.event)).toEqual(['recording available', 'transcription available']);
    expect((await h.store.searchCalls({ q: 'order forty' })).items.map((c) => c.wacid)).toEqual(['media-1']);
  });

  it('a FAILED media result without an asset id is a timeline entry only; missing and invalid are recorded', async () => {
    expect(factsOfMedia({ kind: 'recording', status: 'failed', wacid: 'm2', path: '/a/m2/recording.failed.json', reason: 'the Service reported FAILED' }, s(1))).toEqual([
      { type: 'timeline', wacid: 'm2', key: 'media:recording:-:failed', at: iso(1), event: 'recording failed', detail: { status: 'failed', reason: 'the Service reported FAILED' } },
    ]);
    const missing = factsOfMedia({ kind: 'recording', status: 'missing', wacid: 'm2', mediaAssetId: 'x', path: '/a/m2/x.missing.json' }, s(2));
    expect(missing[0]).toEqual({ type: 'media', wacid: 'm2', mediaAssetId: 'x', kind: 'recording', status: 'missing', at: iso(2) });
    const invalid = factsOfMedia({ kind: 'recording', status: 'invalid', wacid: 'm2', mediaAssetId: 'y', path: '/a/m2/y.invalid.json', bytes: 3, sha256: 'b'.repeat(64), reason: 'not an Ogg file' }, s(3));
    // The bytes of an invalid file are not the asset's: the row says failed, without a path.
    expect(invalid[0]).toEqual({ type: 'media', wacid: 'm2', mediaAssetId: 'y', kind: 'recording', status: 'failed', at: iso(3) });
    expect(invalid[1]).toMatchObject({ event: 'recording failed', detail: { reason: 'not an Ogg file' } });
  });
});

/** Events the anchor-mode cases build from. */
const ev = (e: Record<string, unknown>) => e as Ev;
// An anchor-mode call answered by agent1 at 3 s (the caller's talk starts there).
const answered: Ev[] = [
  connectIn(0, { media: 'anchor' }),
  ev({ type: 'anchored', at: s(0), janus: 'ws://j:1', room: 5 }),
  offer(1),
  answer(2),
  ev({ type: 'legReady', at: s(2), agent: 'agent1', conn: 'c1' }),
  ev({ type: 'callerJoined', at: s(2), sdp: SDP }),
  ev({ type: 'acceptOk', at: s(3) }),
];

describe('transfers in the timeline (anchor mode)', () => {
  it('a cold transfer, its ring and the target joining are entries, each with who is on the call after it', () => {
    const { facts } = drive('w-transfer', [
      ...answered,
      ev({ type: 'transfer', at: s(10), agent: 'agent1', conn: 'c1', reqId: 'r2', to: { agent: 'agent2' }, note: 'billing' }),
      offer(11, 'agent2'),
      ev({ type: 'answer', at: s(12), agent: 'agent2', conn: 'c2', reqId: 'r3', sdp: '' }),
      ev({ type: 'legReady', at: s(13), agent: 'agent2', conn: 'c2' }),
    ]);
    const entries = facts.filter((f): f is Extract<HistoryFact, { type: 'timeline' }> => f.type === 'timeline' && f.at >= iso(10));
    expect(entries.map((t) => [t.event, t.detail?.agent, t.detail?.legs])).toEqual([
      ['transfer', 'agent1', []],
      ['offer', 'agent2', []],
      ['answer', 'agent2', ['agent2']],
      ['legReady', 'agent2', ['agent2']],
    ]);
    expect(entries[0]!.detail).toMatchObject({ mode: 'cold', to: { agent: 'agent2' }, note: 'billing' });
    expect(lastCall(facts).agent).toBe('agent2');
  });
});

describe('legs: handle time per agent who talked with the caller (anchor mode)', () => {
  const hold = (sec: number, agent: string, conn: string): Ev => ev({ type: 'hold', at: s(sec), agent, conn, reqId: `h${sec}` });
  const resume = (sec: number, agent: string, conn: string): Ev => ev({ type: 'resume', at: s(sec), agent, conn, reqId: `u${sec}` });
  const warm = (sec: number, to: string): Ev => ev({ type: 'transfer', at: s(sec), agent: 'agent1', conn: 'c1', reqId: `t${sec}`, to: { agent: to }, mode: 'warm' });
  const joins = (sec: number, agent: string, conn: string): Ev[] => [
    ev({ type: 'answer', at: s(sec), agent, conn, reqId: `a${sec}`, sdp: '' }),
    ev({ type: 'legReady', at: s(sec + 1), agent, conn }),
  ];
  const action = (sec: number, a: string): Ev => ev({ type: 'transferAction', at: s(sec), agent: 'agent1', conn: 'c1', reqId: `x${sec}`, action: a });
  const end = (sec: number) => terminate(sec, 'COMPLETED', { duration: sec - 3 });

  const TABLE: Array<[string, Ev[], Record<string, unknown>, Array<{ agent: string; talkMs: number; holdMs: number; answered: boolean }>]> = [
    ['one agent, a hold: one leg, the call’s talk and hold', [...answered, hold(5, 'agent1', 'c1'), resume(7, 'agent1', 'c1'), end(41)], { agent: 'agent1', talkMs: 38_000, holdMs: 2_000 }, [{ agent: 'agent1', talkMs: 38_000, holdMs: 2_000, answered: true }]],
    [
      'cold transfer agent1 → agent2: agent1 until the transfer (10 s), music while agent2 rings and joins, agent2 from its leg in (13 s) to the end',
      [...answered, hold(5, 'agent1', 'c1'), resume(7, 'agent1', 'c1'), ev({ type: 'transfer', at: s(10), agent: 'agent1', conn: 'c1', reqId: 'r2', to: { agent: 'agent2' } }), offer(11, 'agent2'), ...joins(12, 'agent2', 'c2'), hold(20, 'agent2', 'c2'), resume(24, 'agent2', 'c2'), end(41)],
      { agent: 'agent2', talkMs: 38_000, holdMs: 6_000 },
      [
        { agent: 'agent1', talkMs: 7_000, holdMs: 2_000, answered: true },
        { agent: 'agent2', talkMs: 28_000, holdMs: 4_000, answered: false },
      ],
    ],
    [
      'warm transfer completed at 20 s: agent1 (consult included) until the hand-over, agent2 from it; together the call’s talk',
      [...answered, warm(10, 'agent2'), ...joins(12, 'agent2', 'c2'), action(20, 'complete'), end(41)],
      { agent: 'agent2', talkMs: 38_000 },
      [
        { agent: 'agent1', talkMs: 17_000, holdMs: 0, answered: true },
        { agent: 'agent2', talkMs: 21_000, holdMs: 0, answered: false },
      ],
    ],
    ['warm transfer cancelled: agent2 only consulted, one agent only', [...answered, warm(10, 'agent2'), ...joins(12, 'agent2', 'c2'), action(20, 'cancel'), end(41)], { agent: 'agent1', talkMs: 38_000 }, [{ agent: 'agent1', talkMs: 38_000, holdMs: 0, answered: true }]],
    [
      'conference of 3 (agent2 at 20 s, agent3 at 28 s), agent2 leaves at 35 s, the caller hangs up at 50 s',
      [...answered, warm(10, 'agent2'), ...joins(12, 'agent2', 'c2'), action(20, 'conference'), warm(25, 'agent3'), ...joins(26, 'agent3', 'c3'), action(28, 'conference'), ev({ type: 'hangup', at: s(35), agent: 'agent2', conn: 'c2', reqId: 'l2' }), end(50)],
      { agent: 'agent1', talkMs: 47_000 },
      [
        { agent: 'agent1', talkMs: 47_000, holdMs: 0, answered: true },
        { agent: 'agent2', talkMs: 15_000, holdMs: 0, answered: false },
        { agent: 'agent3', talkMs: 22_000, holdMs: 0, answered: false },
      ],
    ],
    [
      'conference, then the holder leaves (its hangup): the next agent holds the call to the end',
      [...answered, warm(10, 'agent2'), ...joins(12, 'agent2', 'c2'), action(20, 'conference'), ev({ type: 'hangup', at: s(30), agent: 'agent1', conn: 'c1', reqId: 'l1' }), end(41)],
      { agent: 'agent2', talkMs: 38_000 },
      [
        { agent: 'agent1', talkMs: 27_000, holdMs: 0, answered: true },
        { agent: 'agent2', talkMs: 21_000, holdMs: 0, answered: false },
      ],
    ],
    [
      'handoff: agent1’s page lost at 10 s and not back in 20 s (30 s), agent2 takes the call at 33 s',
      [...answered, ev({ type: 'connLost', at: s(10), agent: 'agent1', conn: 'c1' }), tick(30), offer(31, 'agent2'), ev({ type: 'answer', at: s(33), agent: 'agent2', conn: 'c2', reqId: 'a33', sdp: '' }), end(50)],
      { agent: 'agent2', talkMs: 47_000 },
      [
        { agent: 'agent1', talkMs: 27_000, holdMs: 0, answered: true },
        { agent: 'agent2', talkMs: 17_000, holdMs: 0, answered: false },
      ],
    ],
  ];

  it.each(TABLE)('%s', (_name, events, fields, legs) => {
    const { call, facts } = drive('w-legs', events);
    for (const f of facts) expect(() => HistoryFact.parse(f), JSON.stringify(f)).not.toThrow();
    const fact = lastCall(facts);
    expect(fact).toMatchObject({ outcome: 'answered', ...fields });
    expect(fact.legs).toEqual(legs);
    // The live record keeps a tally only once someone else came on the call.
    if (legs.length === 1) expect(call!.legTimes).toBeUndefined();
    else expect(call!.legTimes?.map((l) => l.agent)).toEqual(legs.map((l) => l.agent));
  });

  it.each(TABLE.map((r, i) => [r[0], r[1], r[3], i] as const))('through the store (PGlite), in order, reversed and twice: %s', async (_name, events, legs, i) => {
    {
      const write = (facts: HistoryFact[]) => h.store.apply(facts.map((f) => HistoryFact.parse(f)));
      const { facts } = drive(`legs-${i}`, events);
      await write(facts);
      const { facts: again } = drive(`legs-r-${i}`, events);
      for (const f of [...again].reverse()) await write([f]);
      await write([...again, ...again]);
      expect((await h.store.getCall(`legs-${i}`))!.legs).toEqual(legs);
      expect({ ...(await h.store.getCall(`legs-r-${i}`)), wacid: `legs-${i}` }).toEqual(await h.store.getCall(`legs-${i}`));
    }
  });

  it('direct mode and calls no agent answered have no legs', () => {
    expect(lastCall(drive('w', PATHS[0]![1]).facts).legs).toBeUndefined();
    expect(lastCall(drive('w', [connectIn(0, { media: 'anchor' }), offer(1), terminate(6, 'FAILED')]).facts).legs).toBeUndefined();
  });

  it('an observation while the call is on names who came on so far (their finished stretches)', () => {
    const { facts } = drive('w', [...answered, ev({ type: 'transfer', at: s(10), agent: 'agent1', conn: 'c1', reqId: 'r2', to: { agent: 'agent2' } }), offer(11, 'agent2'), ...joins(12, 'agent2', 'c2')]);
    expect(lastCall(facts)).toMatchObject({ outcome: 'in-progress', legs: [{ agent: 'agent1', talkMs: 7_000, holdMs: 0, answered: true }, { agent: 'agent2', talkMs: 0, holdMs: 0, answered: false }] });
  });
});
