import { describe, expect, test } from 'vitest';
import { countdown, describeMoment, describeReason, describeResult, formatCaller, formatDuration, humanizeRefusal } from './format.ts';

describe('moments in words', () => {
  const now = Date.parse('2026-11-24T10:00:00Z');
  test('today, tomorrow, or the date, in the given time zone', () => {
    expect(describeMoment(Date.parse('2026-11-24T14:05:00Z'), now, 'UTC')).toBe('today at 14:05');
    expect(describeMoment(Date.parse('2026-11-25T09:30:00Z'), now, 'UTC')).toBe('tomorrow at 09:30');
    expect(describeMoment(Date.parse('2026-11-29T14:05:00Z'), now, 'UTC')).toBe('on 29 Nov at 14:05');
    expect(describeMoment(Date.parse('2026-11-24T23:30:00Z'), now, 'Europe/Berlin')).toBe('tomorrow at 00:30');
  });
  test("the ration refusal loses its ISO timestamp and says when to ask again", () => {
    const msg = 'call permission requests to +15550123457 from +15550100001 are limited to 1 per 24 h; the next one may be sent at 2026-11-25T09:30:00.000Z';
    expect(humanizeRefusal(msg, now, 'UTC')).toBe('call permission requests to +15550123457 from +15550100001 are limited to 1 per 24 h. You can ask again tomorrow at 09:30');
  });
});

describe('formatDuration', () => {
  test.each([
    [0, '0:00'],
    [9.9, '0:09'],
    [59, '0:59'],
    [60, '1:00'],
    [754, '12:34'],
    [3600, '1:00:00'],
    [3725, '1:02:05'],
    [-5, '0:00'],
    [Number.NaN, '0:00'],
  ])('%s s reads %s', (s, text) => expect(formatDuration(s)).toBe(text));
});

describe('countdown', () => {
  const deadline = 1_000_000;
  test('rounds up, so the last second shows 0:01 until time is really out', () => {
    expect(countdown(deadline, deadline - 1).text).toBe('0:01');
    expect(countdown(deadline, deadline - 1).expired).toBe(false);
    expect(countdown(deadline, deadline).text).toBe('0:00');
    expect(countdown(deadline, deadline).expired).toBe(true);
  });
  test('a deadline already past reads 0:00 and expired, never negative', () => {
    const c = countdown(deadline, deadline + 5000);
    expect(c).toMatchObject({ text: '0:00', seconds: 0, expired: true, fraction: 0 });
  });
  test('under 10 s left is urgent, 10 s is not', () => {
    expect(countdown(deadline, deadline - 10_000).urgent).toBe(false);
    expect(countdown(deadline, deadline - 9_999).urgent).toBe(true);
  });
  test('the bar is the fraction of the ring window left since the offer arrived', () => {
    expect(countdown(deadline, deadline - 5000, deadline - 20_000).fraction).toBe(0.25);
    expect(countdown(deadline, deadline - 25_000, deadline - 20_000).fraction).toBe(1); // clock skew: never over 100 %
  });
  test('27.2 s left reads 0:28 with 28 whole seconds', () => {
    expect(countdown(deadline, deadline - 27_200)).toMatchObject({ text: '0:28', seconds: 28 });
  });
});

describe('formatCaller', () => {
  test('an E.164 number without its plus gets one', () => expect(formatCaller('15551234567')).toBe('+15551234567'));
  test('an E.164 number keeps its plus', () => expect(formatCaller('+4930123456')).toBe('+4930123456'));
  test('a BSUID is shown as given, not turned into a number', () => {
    expect(formatCaller('US.13491208655302741918')).toBe('US.13491208655302741918');
  });
});

describe('describeResult', () => {
  test.each([
    ['COMPLETED', 'Completed'],
    ['MISSED', 'Missed'],
    ['CANCELED', 'Caller hung up'],
    [undefined, 'Ended'],
    ['NO_ANSWER', 'No answer'],
  ])('%s reads %s', (r, text) => expect(describeResult(r)).toBe(text));
});

describe('describeReason', () => {
  test.each([
    ['USER_HANGUP', 'The caller hung up.'],
    ['MEDIA_TIMEOUT', 'No audio got through, so the call was dropped.'],
    ['SOME_NEW_CODE', 'Some new code.'],
    ['agent hung up', 'agent hung up'],
    [undefined, ''],
  ])('%s reads %j', (r, text) => expect(describeReason(r)).toBe(text));
});

describe('Service error codes in words', () => {
  test('a bare 138xxx code in a reason (history) becomes the shared words, with the code kept', () => {
    expect(describeReason('138021')).toBe('No audio was received from the other side (138021)');
    expect(describeReason('error 138006')).toBe('No calling permission from this customer (138006)');
    expect(describeReason('138099')).toBe('The Service ended the call with error 138099.');
  });

  test("with CallView.errorCode the server's worded reason is shown; without a reason, the code's words", () => {
    expect(describeReason('No audio was received from the other side (138021: Media receive timeout)', 138021)).toBe('No audio was received from the other side (138021: Media receive timeout)');
    expect(describeReason(undefined, 138022)).toBe('Audio could not be sent to the other side (138022)');
  });
});
