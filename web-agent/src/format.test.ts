import { afterEach, describe, expect, test } from 'vitest';
import { countdown, describeMoment, describeReason, describeRefusal, describeResult, formatCaller, formatDuration } from './format.ts';
import { inLanguage } from './i18n/testing.ts';

inLanguage('en');
afterEach(() => inLanguage('en'));

describe('moments in words', () => {
  const now = Date.parse('2026-11-24T10:00:00Z');
  test('today, tomorrow, or the date, in the given time zone', () => {
    expect(describeMoment(Date.parse('2026-11-24T14:05:00Z'), now, 'UTC')).toBe('today at 14:05');
    expect(describeMoment(Date.parse('2026-11-25T09:30:00Z'), now, 'UTC')).toBe('tomorrow at 09:30');
    expect(describeMoment(Date.parse('2026-11-29T14:05:00Z'), now, 'UTC')).toBe('on 29 Nov at 14:05');
    expect(describeMoment(Date.parse('2026-11-24T23:30:00Z'), now, 'Europe/Berlin')).toBe('tomorrow at 00:30');
  });
  test('in the user’s language and its way of writing times', () => {
    inLanguage('pt-BR');
    expect(describeMoment(Date.parse('2026-11-25T09:30:00Z'), now, 'UTC')).toBe('amanhã às 09:30');
    inLanguage('ar');
    expect(describeMoment(Date.parse('2026-11-24T14:05:00Z'), now, 'UTC')).toMatch(/^اليوم الساعة 0?2:05/);
    inLanguage('en');
  });
});

describe('a server refusal in the user’s language, from its code and parameters', () => {
  const now = Date.parse('2026-11-24T10:00:00Z');
  const ration = {
    code: 'TOO_MANY_REQUESTS',
    message: 'call permission requests to +15550123457 from +15550100001 are limited to 1 per 24 h; the next one may be sent at 2026-11-25T09:30:00.000Z',
    params: { reason: 'RATION', user: '+15550123457', from: '+15550100001', nextAt: Date.parse('2026-11-25T09:30:00Z') },
  };
  const noPermission = { code: 'NO_PERMISSION', message: '+15550123457 rejected the call permission request…', params: { reason: 'REJECTED', user: '+15550123457', from: '+15550100001' } };
  test.each([
    ['en', 'A permission request to +15550123457 was sent recently. You can ask again tomorrow at 09:30.', '+15550123457 said no to calls from +15550100001.'],
    ['pt-BR', 'Um pedido de autorização para +15550123457 foi enviado há pouco. Você pode pedir de novo amanhã às 09:30.', '+15550123457 não aceitou receber chamadas de +15550100001.'],
    ['es', 'Hace poco se envió una solicitud de permiso a +15550123457. Puedes volver a pedirlo mañana a las 09:30.', '+15550123457 no aceptó llamadas desde +15550100001.'],
    ['hi', '+15550123457 को अनुमति का अनुरोध हाल ही में भेजा गया है। आप कल 09:30 am बजे फिर से माँग सकते हैं।', '+15550123457 ने +15550100001 से कॉल लेने से मना कर दिया है।'],
    ['id', 'Permintaan izin ke +15550123457 baru saja dikirim. Anda bisa meminta lagi besok pukul 09.30.', '+15550123457 tidak mau ditelepon dari +15550100001.'],
    ['ar', 'أُرسل طلب إذن إلى +15550123457 قبل قليل. يمكنك الطلب مجددًا غدًا الساعة 09:30 ص.', 'رفض +15550123457 المكالمات من +15550100001.'],
  ] as const)('%s', (lang, rationText, rejected) => {
    inLanguage(lang);
    expect(describeRefusal(ration, now, 'UTC')).toBe(rationText);
    expect(describeRefusal(noPermission, now, 'UTC')).toBe(rejected);
    // Never the server's English, never an ISO time.
    expect(describeRefusal(ration, now, 'UTC')).not.toMatch(/limited|2026-11-25T/);
    inLanguage('en');
  });
  test('a Service refusal keeps the Service’s own words after ours; an unknown code is named', () => {
    expect(describeRefusal({ code: 'SERVICE_ERROR', message: 'x', params: { serviceReason: 'Number not on WhatsApp' } }, now)).toBe('The Service refused. (Number not on WhatsApp)');
    expect(describeRefusal({ code: 'SOMETHING_NEW', message: 'x' }, now)).toBe('The server refused (SOMETHING_NEW).');
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
    ['NO_ANSWER', 'Ended (NO_ANSWER)'],
  ])('%s reads %s', (r, text) => expect(describeResult(r)).toBe(text));
});

describe('describeReason', () => {
  test.each([
    ['USER_HANGUP', 'The caller hung up.'],
    ['MEDIA_TIMEOUT', 'No audio got through, so the call was dropped.'],
    ['SOME_NEW_CODE', 'SOME_NEW_CODE'],
    ['agent hung up', 'The agent hung up.'],
    ['The Service said something new', 'The Service said something new'],
    [undefined, ''],
  ])('%s reads %j', (r, text) => expect(describeReason(r)).toBe(text));
});

describe('Service error codes in words', () => {
  test('a bare 138xxx code in a reason (history) becomes the shared words, with the code kept', () => {
    expect(describeReason('138021')).toBe('No audio was received from the other side (138021)');
    expect(describeReason('138006')).toBe('No calling permission from this customer (138006)');
    expect(describeReason('138099')).toBe('The call service ended the call with error 138099.');
  });

  test("with CallView.errorCode the code's words in the user's language (not the server's English reason)", () => {
    expect(describeReason('No audio was received from the other side (138021: Media receive timeout)', 138021)).toBe('No audio was received from the other side (138021)');
    expect(describeReason(undefined, 138022)).toBe('Audio could not be sent to the other side (138022)');
    inLanguage('es');
    expect(describeReason(undefined, 138006)).toBe('Este cliente no dio permiso para llamarle (138006)');
    inLanguage('en');
  });
});
