import { describe, expect, test } from 'vitest';
import type { CallRecord } from '../../../shared/records.ts';
import { callBackVerdict } from './customer.ts';
import { callList, canSaveWrap, initialDesk, logOutcome, reduceDesk, shortcutFor, wrapTitle, type DeskEvent, type DeskState } from './state.ts';
import { inLanguage } from '../i18n/testing.ts';

// The pages' words in English (the catalogue the server serves).
inLanguage('en');

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
    expect(reduceDesk(s, { type: 'wrap.edit', disposition: 'Other' }).wrap!.disposition).toBe('Resolved'); // locked while saving
    // the one button ends the wrap-up; saved, nothing of the call stays on screen.
    s = reduceDesk(s, { type: 'wrap.saved' });
    expect(s.wrap).toBeUndefined();
  });

  test('the countdown ending with no disposition saved shows "Not set" was recorded; the notes stay, and a disposition may still replace it', () => {
    let s = run({ type: 'wrap.start', wacid: 'w1', caller: '+4477' }, { type: 'agent.state', status: 'after-call-work' }, { type: 'wrap.edit', notes: 'Call me later' }, { type: 'agent.state', status: 'available' });
    expect(s.wrap).toMatchObject({ status: 'not-set', notes: 'Call me later' });
    s = reduceDesk(s, { type: 'wrap.edit', disposition: 'Resolved' });
    expect(canSaveWrap(s.wrap!)).toBe(true);
    expect(reduceDesk(s, { type: 'wrap.saving' }).wrap!.status).toBe('saving');
  });

  test("a new call ringing or held here takes the last call's wrap-up off the screen (unless it is being saved)", () => {
    const s = run({ type: 'wrap.start', wacid: 'w1', caller: '+4477' }, { type: 'wrap.edit', notes: 'x' }, { type: 'agent.state', status: 'available' });
    expect(reduceDesk(s, { type: 'call.started', wacid: 'w2' }).wrap).toBeUndefined();
    expect(reduceDesk(s, { type: 'call.started', wacid: 'w1' }).wrap).toBeDefined();
    const saving = run({ type: 'wrap.start', wacid: 'w1', caller: '+4477' }, { type: 'wrap.edit', disposition: 'Other' }, { type: 'wrap.saving' });
    expect(reduceDesk(saving, { type: 'call.started', wacid: 'w2' }).wrap?.status).toBe('saving');
  });

  test("after a reload the server's draft comes back (disposition, notes, caller); what this tab typed since wins", () => {
    let s = run({ type: 'agent.state', status: 'after-call-work', wacid: 'w9' });
    expect(wrapTitle(s.wrap!, (x) => x)).toBe('After-call work'); // never "After-call work ·" with nothing after it
    s = reduceDesk(s, { type: 'wrap.restore', wacid: 'w9', caller: '+4477', disposition: 'Resolved', notes: 'Refund sent' });
    expect(s.wrap).toMatchObject({ wacid: 'w9', caller: '+4477', disposition: 'Resolved', notes: 'Refund sent', status: 'editing' });
    expect(wrapTitle(s.wrap!, (x) => x)).toBe('After-call work · +4477');
    const typed = reduceDesk(run({ type: 'wrap.start', wacid: 'w9', caller: '+4477' }, { type: 'wrap.edit', notes: 'newer' }), { type: 'wrap.restore', wacid: 'w9', notes: 'older' });
    expect(typed.wrap!.notes).toBe('newer');
    // A disposition the server no longer offers is not chosen for the agent.
    expect(reduceDesk(run(), { type: 'wrap.restore', wacid: 'w1', disposition: 'Gone' }).wrap!.disposition).toBe('');
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
    expect(callBackVerdict({ state: 'granted', callAllowed: false, text: 'Daily limit reached.' })).toEqual({ allowed: false, why: 'Calling is not allowed right now.' });
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
    expect(logOutcome(rec({ direction: 'outbound', outcome: 'no-answer' }))).toBe('Call back · Not answered');
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

describe('the one call list', () => {
  test("history's calls with this session's calls not yet written there on top; a call is never listed twice", () => {
    const log = [rec({ wacid: 'w1', disposition: 'Resolved', talkMs: 65_000, notes: 'Refund' })];
    const session = [
      { wacid: 'w3', from: '+4488', to: '+1555', direction: 'USER_INITIATED', result: 'DECLINED', endedAt: 3 },
      { wacid: 'w1', from: '+4477', to: '+1555', direction: 'USER_INITIATED', result: 'COMPLETED', duration: 65, endedAt: 2 },
    ];
    const rows = callList(log, session, (r) => r, (s) => `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`);
    expect(rows.map((r) => [r.wacid, r.outcome, r.text])).toEqual([
      ['w3', 'declined', 'Declined'],
      ['w1', 'answered', 'Answered · Resolved · 1:05'],
    ]);
    expect(rows[1]!.notes).toBe('Refund');
  });

  test('an ordinary hang-up is not spelled out; other end reasons are', () => {
    const f = (s: number) => `0:${String(s).padStart(2, '0')}`;
    const rows = callList([rec({ wacid: 'a', endReason: 'BUSINESS_HANGUP' }), rec({ wacid: 'b', endReason: 'agent page lost' })], [], (r) => r, f, (r) => (r ?? '').toUpperCase());
    expect(rows.map((r) => r.text)).toEqual(['Answered', 'Answered · AGENT PAGE LOST']);
  });
});
