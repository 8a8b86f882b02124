import { describe, expect, test } from 'vitest';
import type { CallView } from '../../../shared/protocol.ts';
import { initialState, reduce, type UiState } from '../reducer.ts';
import { stateLine } from './line.ts';
import { inLanguage } from '../i18n/testing.ts';

// The pages' words in English (the catalogue the server serves).
inLanguage('en');

const T = 1_000_000;
const me = { name: 'agent1', roles: ['agent' as const] };
const online: UiState = { ...initialState, link: 'online', me };
const call = (over: Partial<CallView> = {}): CallView => ({ wacid: 'w1', phoneId: 'p', from: '+4477', to: '+1555', direction: 'USER_INITIATED', state: 'ringing', ...over });
const offered = (s: UiState, ringUntil: number, deadline: number) => reduce(s, { type: 'server', msg: { type: 'call.offered', wacid: 'w1', phoneId: 'p', from: '+4477', to: '+1555', direction: 'USER_INITIATED', sdp: 'v=0', deadline, ringUntil }, now: T });
const line = (ui: UiState, o: { onHold?: boolean; typing?: boolean; now?: number } = {}) => stateLine({ ui, now: o.now ?? T, onHold: o.onHold ?? false, typing: o.typing ?? false });

describe('the one state line', () => {
  test('a call ringing here says ringing, never "available" (presence) nor "away" (the server set it away as the ring ran out)', () => {
    let s = reduce(online, { type: 'server', msg: { type: 'presence', presence: 'available' }, now: T });
    s = offered(s, T + 15_000, T + 30_000);
    expect(line(s)).toMatchObject({ status: 'ringing', words: 'Ringing', secondsLeft: 15 });
    s = reduce(s, { type: 'server', msg: { type: 'agent.state', status: 'away', reason: 'Missed a call', since: T }, now: T });
    expect(line(s).status).toBe('ringing');
  });

  test('the ring countdown is the ring timeout (ringUntil), not the accept window (deadline)', () => {
    const s = offered(online, T + 15_000, T + 30_000);
    expect(line(s, { now: T + 5_000 }).secondsLeft).toBe(10);
    // Past the ring timeout the offer no longer rings here.
    expect(line(s, { now: T + 16_000 }).status).toBe('away');
  });

  test('a call held here: on a call, or on hold; a call in another tab says so', () => {
    let s = offered(online, T + 15_000, T + 30_000);
    s = reduce(s, { type: 'local', wacid: 'w1', local: 'held', now: T });
    expect(line(s)).toMatchObject({ status: 'on-call', words: 'On a call' });
    expect(line(s, { onHold: true }).words).toBe('On hold');
    const other = reduce(online, { type: 'server', msg: { type: 'call.state', ...call({ state: 'active', agent: 'agent1' }) }, now: T });
    expect(line(other)).toMatchObject({ status: 'on-call', detail: 'in another tab or window' });
  });

  test('after-call work: its countdown, paused while typing, or no limit (WRAP_UP_MS=0)', () => {
    const acw = (until?: number) => reduce(online, { type: 'server', msg: { type: 'agent.state', status: 'after-call-work', wacid: 'w1', since: T - 1_000, ...(until ? { until } : {}) }, now: T });
    expect(line(acw(T + 42_000))).toMatchObject({ status: 'after-call-work', secondsLeft: 42, detail: 'next call in 42 s', since: T - 1_000 });
    expect(line(acw(T + 42_000), { typing: true }).detail).toBe('paused: typing');
    expect(line(acw())).toMatchObject({ status: 'after-call-work', detail: 'no time limit: end it when you are done' });
  });

  test('away with the reason; offline when the link is down', () => {
    const s = reduce(online, { type: 'server', msg: { type: 'agent.state', status: 'away', reason: 'Lunch', since: T }, now: T });
    expect(line(s)).toMatchObject({ status: 'away', detail: 'Lunch', since: T });
    expect(line({ ...s, link: 'reconnecting' }).status).toBe('offline');
  });
});

describe('errors about a call (no old banners after the call)', () => {
  test('an error raised during a call goes when the next call rings, or when the agent is free again', () => {
    const withError = reduce(online, { type: 'error', message: 'Could not hold the call', code: 'HOLD', now: T, wacid: 'w0' });
    expect(offered(withError, T + 15_000, T + 30_000).error).toBeUndefined();
    expect(reduce(withError, { type: 'server', msg: { type: 'agent.state', status: 'available', since: T }, now: T }).error).toBeUndefined();
    // An error about no call (the microphone, the link) stays until dismissed.
    const general = reduce(online, { type: 'error', message: 'Microphone blocked', code: 'MIC', now: T });
    expect(offered(general, T + 15_000, T + 30_000).error?.code).toBe('MIC');
  });
});

describe('a missed call on the supervisor page', () => {
  test('a call that rang agent1 twice and ended unanswered (REJECTED at the window) is missed, with whom it rang', () => {
    let s: UiState = { ...initialState, link: 'online', me: { name: 'boss', roles: ['supervisor'] } };
    const st = (over: Partial<CallView>) => (s = reduce(s, { type: 'server', msg: { type: 'call.state', ...call(over) }, now: T }));
    st({ state: 'queued' });
    st({ state: 'ringing', agent: 'agent1' });
    st({ state: 'queued' });
    st({ state: 'ringing', agent: 'agent1' });
    st({ state: 'ended', result: 'REJECTED', reason: 'REJECTED', endedAt: T });
    expect(s.ended[0]).toMatchObject({ wacid: 'w1', result: 'MISSED', rang: ['agent1', 'agent1'] });
  });
});
