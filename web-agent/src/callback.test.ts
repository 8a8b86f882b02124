import { describe, expect, test } from 'vitest';
import type { CallView, Permission } from '../../shared/protocol.ts';
import {
  ago,
  callStatus,
  describePermission,
  initialCallback,
  panelView,
  parseCallee,
  reduceCallback,
  type CallbackEvent,
  type CallbackState,
} from './callback.ts';
import { inLanguage } from './i18n/testing.ts';

// The pages' words in English (the catalogue the server serves).
inLanguage('en');

const FROM = '+15550100001';
const USER = '+15550123456';
const T0 = Date.UTC(2025, 10, 22, 12, 0, 0); // 22 Nov 2025, 12:00 UTC

const perm = (over: Partial<Permission> = {}): Permission => ({ from: FROM, user: USER, state: 'unknown', updatedAt: T0, ...over });
const run = (events: CallbackEvent[], from: CallbackState = initialCallback) => events.reduce(reduceCallback, from);
const view = (over: Partial<CallView> = {}): CallView => ({
  wacid: 'wacid.1',
  phoneId: '100',
  from: FROM,
  to: USER,
  direction: 'BUSINESS_INITIATED',
  state: 'dialing',
  ...over,
});

describe('parseCallee: who to call', () => {
  test.each([
    ['+15550123456', '+15550123456'],
    ['  +1 555 012-3456 ', '+15550123456'],
    ['+44 (20) 7946.0958', '+442079460958'],
    ['+1234567', '+1234567'],
    ['+123456789012345', '+123456789012345'],
  ])('%j is the phone number %s (sent as `to`)', (input, value) => {
    expect(parseCallee(input)).toEqual({ ok: true, callee: { kind: 'to', value } });
  });

  test.each(['US.13491208655302741918', 'BR.ENT.9f3A2b', 'DE.a'])('%s is a BSUID (sent as `recipient`, kept as typed)', (input) => {
    expect(parseCallee(` ${input} `)).toEqual({ ok: true, callee: { kind: 'recipient', value: input } });
  });

  test.each([
    ['', /Type the user’s phone number/],
    ['15550123456', /Start the number with \+ and the country code/],
    ['0015550123456', /\+ instead of 00: \+15550123456/],
    ['+1555', /too short \(4 digits\)/],
    ['+1234567890123456', /too long \(16 digits; at most 15\)/],
    ['+0123456789', /never starts with 0/],
    ['+1555abc1234', /only digits after the \+/],
    ['us.1234', /not valid: two capital letters/],
    ['US.12-34', /not valid/],
  ])('%j is refused with a clear message', (input, message) => {
    const r = parseCallee(input);
    expect(r.ok).toBe(false);
    expect(r.ok ? '' : r.message).toMatch(message);
  });
});

describe('describePermission: the state in plain words', () => {
  test('no record yet reads "checking"', () => {
    expect(describePermission(undefined, T0)).toMatchObject({ state: 'checking', text: expect.stringMatching(/Checking/), blocksCall: false });
  });
  test('unknown: ask first, but calling is not blocked (the Service may hold one)', () => {
    expect(describePermission(perm(), T0)).toMatchObject({ state: 'unknown', tone: 'neutral', blocksCall: false, text: expect.stringMatching(/No permission on record: ask the user first/) });
  });
  test('requested: how long ago, and by whom, waiting for the reply', () => {
    const w = describePermission(perm({ state: 'requested', updatedAt: T0 - 2 * 60_000, requestedBy: 'boss' }), T0);
    expect(w).toMatchObject({ state: 'requested', tone: 'waiting', blocksCall: false });
    expect(w.text).toBe('Asked by boss 2 minutes ago — waiting for the user’s reply.');
    expect(describePermission(perm({ state: 'requested', updatedAt: T0 - 5_000 }), T0).text).toBe('Asked just now — waiting for the user’s reply.');
  });
  test('granted with an end date: "granted until 29 Nov, 14:05"', () => {
    const expiresAt = Date.UTC(2025, 10, 29, 14, 5);
    const w = describePermission(perm({ state: 'granted', expiresAt }), T0, 'UTC');
    expect(w).toMatchObject({ state: 'granted', tone: 'ok', blocksCall: false });
    expect(w.text).toBe('Permission granted until 29 Nov, 14:05.');
  });
  test('granted permanently', () => {
    expect(describePermission(perm({ state: 'granted', permanent: true }), T0).text).toBe('Permission granted, with no end date.');
  });
  test('granted but past its end reads expired and blocks the call', () => {
    const w = describePermission(perm({ state: 'granted', expiresAt: T0 - 1 }), T0);
    expect(w).toMatchObject({ state: 'expired', tone: 'stop', blocksCall: true, text: 'Expired — ask again.' });
  });
  test('rejected: do not call, with the reason for the disabled button', () => {
    expect(describePermission(perm({ state: 'rejected' }), T0)).toMatchObject({
      state: 'rejected',
      tone: 'stop',
      blocksCall: true,
      text: 'The user declined calls — do not call.',
      blockReason: 'The user declined calls from this number.',
    });
  });
  test('expired: ask again', () => {
    expect(describePermission(perm({ state: 'expired' }), T0)).toMatchObject({ blocksCall: true, text: 'Expired — ask again.', blockReason: expect.stringMatching(/expired: ask again/) });
  });
  test.each([
    [10_000, 'just now'],
    [90_000, '2 minutes ago'],
    [59 * 60_000, '59 minutes ago'],
    [3 * 3600_000 + 5, '3 hours ago'],
    [30 * 3600_000, 'yesterday'],
    [3 * 86400_000, '3 days ago'],
    [-5_000, 'just now'],
  ])('ago(%i) reads %s', (ms, text) => expect(ago(ms)).toBe(text));
});

describe('panel state: numbers, user, permission', () => {
  const ready = run([{ type: 'numbers', list: [{ phoneNumber: FROM, name: 'Sales' }, { phoneNumber: '+15550100002' }] }, { type: 'input', text: USER }]);

  test('the first business number is chosen when the list arrives, and a choice survives a reload of the list', () => {
    expect(ready.from).toBe(FROM);
    const chosen = reduceCallback(ready, { type: 'selectFrom', from: '+15550100002' });
    expect(reduceCallback(chosen, { type: 'numbers', list: [{ phoneNumber: FROM }, { phoneNumber: '+15550100002' }] }).from).toBe('+15550100002');
  });

  test('a half-typed number is not an error while typing, but is once the field is left', () => {
    const typing = run([{ type: 'input', text: '+1555' }], ready);
    expect(panelView(typing, true, T0).inputError).toBeUndefined();
    expect(panelView(reduceCallback(typing, { type: 'touch' }), true, T0).inputError).toMatch(/too short/);
    // A number without + is wrong as soon as it is long enough to be one.
    expect(panelView(run([{ type: 'input', text: '15550123456' }], ready), true, T0).inputError).toMatch(/Start the number with \+/);
  });

  test('the permission of the pair on screen is shown; a live update replaces it; an older fetch does not undo it', () => {
    let s = reduceCallback(ready, { type: 'permissionLoading', key: `${FROM}|${USER}` });
    expect(panelView(s, true, T0).permission.text).toMatch(/Checking/);
    s = reduceCallback(s, { type: 'permission', permission: perm({ state: 'requested', updatedAt: T0 }) });
    expect(s.permissionLoading).toBeUndefined();
    expect(panelView(s, true, T0).permission.state).toBe('requested');
    s = reduceCallback(s, { type: 'permission', permission: perm({ state: 'granted', updatedAt: T0 + 1000, expiresAt: T0 + 7 * 86400_000 }) });
    s = reduceCallback(s, { type: 'permission', permission: perm({ state: 'requested', updatedAt: T0 }) });
    expect(panelView(s, true, T0 + 2000).permission.state).toBe('granted');
  });

  test("another pair's update does not change what is shown", () => {
    const s = reduceCallback(ready, { type: 'permission', permission: perm({ user: '+15550999999', state: 'rejected' }) });
    expect(panelView(s, true, T0).permission.text).toMatch(/Checking/);
    expect(panelView(s, true, T0).canCall).toBe(true);
  });

  test('Call is disabled, with the reason, while the permission is rejected or expired', () => {
    for (const state of ['rejected', 'expired'] as const) {
      const v = panelView(reduceCallback(ready, { type: 'permission', permission: perm({ state }) }), true, T0);
      expect(v.canCall).toBe(false);
      expect(v.callBlockedReason).toMatch(state === 'rejected' ? /declined calls/ : /expired/);
      expect(v.canAsk).toBe(true); // asking again is the way forward
    }
  });

  test('Ask is off while the permission is granted (a new request would only spend the ration)', () => {
    const granted = reduceCallback(ready, { type: 'permission', permission: perm({ state: 'granted', expiresAt: T0 + 86400_000 }) });
    expect(panelView(granted, true, T0).canAsk).toBe(false);
    // Once the grant has run out it reads expired, and asking is the way forward again.
    expect(panelView(granted, true, T0 + 2 * 86400_000).canAsk).toBe(true);
  });

  test('Call is disabled without a valid user, without a number, and while offline', () => {
    expect(panelView(run([{ type: 'input', text: '+1' }], ready), true, T0)).toMatchObject({ canCall: false, canAsk: false, callBlockedReason: expect.stringMatching(/valid phone number/) });
    expect(panelView(reduceCallback(ready, { type: 'selectFrom', from: '' }), true, T0)).toMatchObject({ canCall: false, callBlockedReason: expect.stringMatching(/number to call from/) });
    expect(panelView(ready, false, T0)).toMatchObject({ canCall: false, callBlockedReason: expect.stringMatching(/connection/) });
    expect(panelView(ready, true, T0).canCall).toBe(true);
  });

  test('asking: the button is busy, the answer stores the new permission, a refusal shows the server\'s message', () => {
    const asking = reduceCallback(ready, { type: 'askStarted' });
    expect(panelView(asking, true, T0).canAsk).toBe(false);
    const done = reduceCallback(asking, { type: 'askDone', permission: perm({ state: 'requested', requestedBy: 'boss' }) });
    expect(done.asking).toBe(false);
    expect(panelView(done, true, T0).permission.text).toMatch(/^Asked by boss just now/);
    const granted = reduceCallback(done, { type: 'permission', permission: perm({ state: 'granted', updatedAt: T0 + 1 }) });
    expect(granted.askNote).toBeUndefined(); // the reply replaces "request sent"
    expect(reduceCallback(done, { type: 'permission', permission: perm({ user: '+15550999999', state: 'granted' }) }).askNote).toMatch(/Request sent/);
    const failed = reduceCallback(asking, { type: 'askFailed', code: 'RATE_LIMITED', message: 'only 1 request per 24 h' });
    expect(failed.error).toEqual({ code: 'RATE_LIMITED', message: 'Could not ask for permission: only 1 request per 24 h' });
  });
});

describe('panel state: one callback', () => {
  const ready = run([{ type: 'numbers', list: [{ phoneNumber: FROM }] }, { type: 'input', text: USER }]);
  const callee = { kind: 'to' as const, value: USER };
  const dialing = run([{ type: 'dialStarted', from: FROM, callee }, { type: 'dialSent' }], ready);
  const ringing = run([{ type: 'dialAcked', wacid: 'wacid.1' }, { type: 'callState', view: view({ state: 'connected' }), now: T0 }], dialing);
  const active = reduceCallback(ringing, { type: 'callState', view: view({ state: 'active', startedAt: T0 + 5_000 }), now: T0 + 5_000 });

  test('preparing → dialing → ringing (dialing/connected) → active with a timer', () => {
    expect(dialing.call?.phase).toBe('dialing');
    expect(panelView(dialing, true, T0)).toMatchObject({ canCall: false, callBlockedReason: 'A callback is in progress.' });
    expect(ringing.call).toMatchObject({ phase: 'ringing', wacid: 'wacid.1', serverState: 'connected' });
    expect(callStatus(ringing.call!, T0).text).toBe('Ringing…');
    expect(active.call).toMatchObject({ phase: 'active', activeAt: T0 + 5_000 });
    expect(callStatus(active.call!, T0 + 5_000 + 65_000)).toMatchObject({ state: 'active', timer: '1:05' });
  });

  test("another call's state changes nothing", () => {
    expect(reduceCallback(ringing, { type: 'callState', view: view({ wacid: 'other', state: 'ended' }), now: T0 })).toBe(ringing);
  });

  test('ended: result, duration (from the server, else from the times seen) and reason; Call is enabled again', () => {
    const ended = reduceCallback(active, { type: 'callState', view: view({ state: 'ended', result: 'COMPLETED', duration: 42, reason: 'BUSINESS_HANGUP' }), now: T0 + 50_000 });
    expect(ended.call).toMatchObject({ phase: 'ended', ended: { result: 'COMPLETED', duration: 42, reason: 'BUSINESS_HANGUP' } });
    expect(callStatus(ended.call!, T0).text).toBe('Call ended: Completed · 0:42 · Hung up on our side.');
    expect(panelView(ended, true, T0).canCall).toBe(true);
    const noDuration = reduceCallback(active, { type: 'callState', view: view({ state: 'ended' }), now: T0 + 17_000 });
    expect(noDuration.call?.ended).toEqual({ result: 'COMPLETED', duration: 12 });
  });

  test('a refused dial is failed with the reason in words; NO_PERMISSION and SERVICE_ERROR keep the server\'s message', () => {
    const noPerm = reduceCallback(dialing, { type: 'dialFailed', code: 'NO_PERMISSION', message: 'the user rejected calls' });
    expect(noPerm.call?.phase).toBe('failed');
    expect(noPerm.error).toEqual({ code: 'NO_PERMISSION', message: 'Not called: the user rejected calls' });
    const svc = reduceCallback(dialing, { type: 'dialFailed', code: 'SERVICE_ERROR', message: 'No call permission (138006)' });
    expect(svc.error?.message).toBe('The Service refused the call: No call permission (138006)');
    const unknown = reduceCallback(dialing, { type: 'dialFailed', code: 'OUTCOME_UNKNOWN', message: 'timed out' });
    expect(unknown.error?.message).toMatch(/may or may not ring.*check the live calls/);
    expect(panelView(svc, true, T0).canCall).toBe(true);
    // The message a dial refusal carries is already in the user's words (connection.ts RequestError).
    const limit = reduceCallback(dialing, { type: 'dialFailed', code: 'CALL_LIMIT', message: '+15550123457 has already been called 5 times in the last 24 hours from +15550100001.' });
    expect(limit.error?.message).toBe('Not called: +15550123457 has already been called 5 times in the last 24 hours from +15550100001.');
  });

  test('hang up while the dial is unacknowledged waits for the ack, then is sent (phase ending)', () => {
    const cancel = reduceCallback(dialing, { type: 'hangup' });
    expect(cancel.call).toMatchObject({ phase: 'dialing', cancelRequested: true });
    expect(reduceCallback(cancel, { type: 'dialAcked', wacid: 'wacid.1' }).call).toMatchObject({ phase: 'ending', wacid: 'wacid.1' });
  });

  test('hang up while the offer is still being made ends it at once: nothing was sent', () => {
    const preparing = reduceCallback(ready, { type: 'dialStarted', from: FROM, callee });
    expect(reduceCallback(preparing, { type: 'hangup' }).call).toMatchObject({ phase: 'ended', ended: { result: 'NOT_PLACED' } });
  });

  test('hang up of an active call: ending until the server says ended; a late active state does not undo it', () => {
    const ending = reduceCallback(active, { type: 'hangup' });
    expect(ending.call?.phase).toBe('ending');
    expect(reduceCallback(ending, { type: 'callState', view: view({ state: 'active', startedAt: T0 }), now: T0 }).call?.phase).toBe('ending');
    expect(reduceCallback(ending, { type: 'callState', view: view({ state: 'ended', result: 'COMPLETED' }), now: T0 + 9_000 }).call?.phase).toBe('ended');
  });

  test('a second dial while one is in progress is ignored', () => {
    expect(reduceCallback(ringing, { type: 'dialStarted', from: FROM, callee: { kind: 'to', value: '+15550000000' } })).toBe(ringing);
  });

  test('a welcome that no longer lists the call ends it; one that lists it changes nothing', () => {
    expect(reduceCallback(active, { type: 'welcome', wacids: ['wacid.1'], now: T0 })).toBe(active);
    const gone = reduceCallback(active, { type: 'welcome', wacids: [], now: T0 + 8_000 });
    expect(gone.call).toMatchObject({ phase: 'ended', ended: { result: 'COMPLETED', duration: 3, reason: 'The server no longer lists this call.' } });
  });

  test('mute is recorded and shown in the status line', () => {
    const muted = reduceCallback(active, { type: 'muted', muted: true });
    expect(callStatus(muted.call!, T0 + 5_000).text).toBe('In call (you are muted).');
  });

  test('a media failure before the ack fails the call; after the ack it only reports', () => {
    const preparing = reduceCallback(ready, { type: 'dialStarted', from: FROM, callee });
    const gather = reduceCallback(preparing, { type: 'mediaFailed', code: 'GATHER_TIMEOUT', message: 'ICE gathering did not finish' });
    expect(gather.call?.phase).toBe('failed');
    expect(gather.error?.code).toBe('GATHER_TIMEOUT');
    const ice = reduceCallback(active, { type: 'mediaFailed', code: 'ICE_FAILED', message: 'no path' });
    expect(ice.call?.phase).toBe('active');
    expect(ice.error?.code).toBe('ICE_FAILED');
  });

  test('a microphone or speaker change that fails is reported and never ends the call, not even before the ack', () => {
    const dialing = run([{ type: 'dialStarted', from: FROM, callee }, { type: 'dialSent' }], ready);
    const failed = reduceCallback(dialing, { type: 'deviceFailed', code: 'MIC_SWITCH', message: 'Could not switch the microphone' });
    expect(failed.call?.phase).toBe('dialing');
    expect(failed.error).toEqual({ code: 'MIC_SWITCH', message: 'Could not switch the microphone' });
    expect(reduceCallback(active, { type: 'deviceFailed', code: 'SPEAKER', message: 'x' }).call?.phase).toBe('active');
  });
});
