import { describe, expect, test } from 'vitest';
import type { CallRecord } from '../../../shared/records.ts';
import { callBackVerdict } from './customer.ts';
import { canSaveWrap, initialDesk, logOutcome, reduceDesk, shortcutFor, type DeskEvent, type DeskState } from './state.ts';

const run = (...evs: DeskEvent[]): DeskState => evs.reduce(reduceDesk, initialDesk);
const customer = (id: string) => ({ id, permission: { state: 'granted' }, calls: [], messages: [], callbacks: [] });
const rec = (p: Partial<CallRecord>): CallRecord => ({ wacid: 'w', phoneId: 'p', businessNumber: '+1555', customer: { phoneNumber: '+4477' }, direction: 'inbound', outcome: 'answered', receivedAt: '2026-11-24T10:00:00.000Z', media: [], ...p });

describe('after-call work', () => {
  test('a disposition is required before saving; notes are optional', () => {
    let s = run({ type: 'wrap.start', wacid: 'w1', caller: '+4477' });
    expect(canSaveWrap(s.wrap!)).toBe(false);
    expect(reduceDesk(s, { type: 'wrap.saving' }).wrap!.status).toBe('editing'); // refused without a disposition
    s = reduceDesk(s, { type: 'wrap.edit', disposition: 'Resolved' });
    expect(canSaveWrap(s.wrap!)).toBe(true);
    s = reduceDesk(s, { type: 'wrap.saving' });
    expect(s.wrap!.status).toBe('saving');
    s = reduceDesk(s, { type: 'wrap.saved' });
    expect(reduceDesk(s, { type: 'wrap.edit', disposition: 'Other' }).wrap!.disposition).toBe('Resolved'); // saved is final
    expect(reduceDesk(s, { type: 'agent.state', status: 'available' }).wrap).toBeUndefined();
  });

  test('the countdown ending with no disposition saved shows "Not set" was recorded', () => {
    const s = run({ type: 'wrap.start', wacid: 'w1', caller: '+4477' }, { type: 'agent.state', status: 'after-call-work' }, { type: 'agent.state', status: 'available' });
    expect(s.wrap!.status).toBe('not-set');
  });

  test("the server's after-call work opens the form for its call (after a reload); More time shows once used", () => {
    let s = run({ type: 'agent.state', status: 'after-call-work', wacid: 'w9', caller: '+4477' });
    expect(s.wrap).toMatchObject({ wacid: 'w9', caller: '+4477', status: 'editing', extended: false });
    s = reduceDesk(s, { type: 'agent.state', status: 'after-call-work', wacid: 'w9', extended: true });
    expect(s.wrap!.extended).toBe(true);
  });

  test('a failed save can be retried', () => {
    const s = run({ type: 'wrap.start', wacid: 'w1', caller: '+4477' }, { type: 'wrap.edit', disposition: 'Other' }, { type: 'wrap.saving' }, { type: 'wrap.failed', error: 'offline' });
    expect(s.wrap!.status).toBe('failed');
    expect(reduceDesk(s, { type: 'wrap.saving' }).wrap).toMatchObject({ status: 'saving' });
  });
});

describe('customer panel', () => {
  test('loading, then filled; a late answer for another customer is dropped', () => {
    let s = run({ type: 'customer.load', id: '+4477' });
    expect(s.customer).toEqual({ id: '+4477', status: 'loading' });
    expect(reduceDesk(s, { type: 'customer.loaded', data: customer('+99') }).customer!.id).toBe('+4477');
    s = reduceDesk(s, { type: 'customer.loaded', data: customer('+4477') });
    expect(s.customer!.status).toBe('ready');
    expect(reduceDesk(s, { type: 'customer.load', id: '+4477' })).toBe(s); // ring → call keeps the panel
  });

  test('"Call back" says why not when the permission does not allow it', () => {
    expect(callBackVerdict({ state: 'granted' }).allowed).toBe(true);
    expect(callBackVerdict({ state: 'rejected' })).toEqual({ allowed: false, why: 'The customer declined calls: do not call.' });
    expect(callBackVerdict({ state: 'granted', callAllowed: false, text: 'Daily limit reached.' })).toEqual({ allowed: false, why: 'Daily limit reached.' });
  });
});

describe('lists, log words and shortcuts', () => {
  test('the server lists replace the defaults; the away reason stays one of them', () => {
    const s = run({ type: 'lists', dispositions: ['Sale', ' '], awayReasons: ['Coffee'] });
    expect(s.dispositions).toEqual(['Sale']);
    expect(s.awayReason).toBe('Coffee');
    expect(reduceDesk(s, { type: 'awayReason', reason: 'Nap' }).awayReason).toBe('Coffee');
  });

  test('outcomes in words', () => {
    expect(logOutcome(rec({ outcome: 'missed', endReason: 'declined' }))).toBe('Declined');
    expect(logOutcome(rec({ outcome: 'missed', endReason: 'ring timeout' }))).toBe('Rung out');
    expect(logOutcome(rec({ direction: 'outbound', outcome: 'no-answer' }))).toBe('Call back · not answered');
    expect(logOutcome(rec({}))).toBe('Answered');
    // Accepted, dropped by the Service because no audio ever flowed (138023): not "Answered".
    expect(logOutcome(rec({ outcome: 'no-audio' }))).toBe('No audio');
  });

  test('Alt + letter maps to an action; plain letters (typing notes) never do', () => {
    const k = (code: string, altKey = true) => shortcutFor({ code, altKey, ctrlKey: false, metaKey: false });
    expect(k('KeyA')).toBe('answer');
    expect(k('KeyH')).toBe('hold');
    expect(k('KeyX')).toBe('hangup');
    expect(k('KeyA', false)).toBeUndefined();
    expect(k('KeyQ')).toBeUndefined();
  });
});
