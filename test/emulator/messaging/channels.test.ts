import { afterEach, describe, expect, it } from 'vitest';
import { BIZ, WABA, makeApp, type Harness } from './harness.ts';

let h: Harness;
afterEach(async () => h?.close());

const email = (extra: Record<string, unknown> = {}) => ({
  from: 'Support <support@example.com>',
  to: 'a@example.org, b@example.org',
  subject: 'Hello',
  content: '<p>Hi #name#</p>',
  ...extra,
});
const addresses = (n: number) => Array.from({ length: n }, (_, i) => `u${i}@example.org`).join(',');

describe('balance', () => {
  it('GET /balance answers amount and currency, and a delivered priced message lowers it', async () => {
    h = await makeApp();
    const before = (await h.call('GET', '/balance')).body;
    expect(before).toEqual({ amount: expect.any(Number), currency: 'USD' });
    await h.call('POST', '/chat/templates', { wabaId: WABA, name: 'promo', language: 'en', category: 'MARKETING', components: [{ type: 'BODY', text: 'x' }] });
    await h.waitFor((e) => e.type === 'chat.template.reviewed');
    const sent = await h.call('POST', '/chat/messages', { from: BIZ, to: '+14155550100', type: 'template', template: { name: 'promo', language: { code: 'en' } } });
    const [delivered] = await h.waitFor((e) => e.payload.id === sent.body.id && e.payload.status === 'delivered');
    const after = (await h.call('GET', '/balance')).body;
    expect(after.amount).toBeCloseTo(before.amount - delivered!.payload.totalPrice, 6);
    expect(delivered!.payload.totalPrice).toBeGreaterThan(0);
  });
});

describe('SMS', () => {
  it.each([
    ['to missing', { to: undefined }, 'to: is required'],
    ['to not E.164', { to: '4155550100' }, 'to: must be an E.164'],
    ['text missing', { text: undefined }, 'text: is required'],
    ['mainland China without signature', { to: '+8613800138000' }, 'signature: an approved signature is required for mainland China destinations'],
  ])('%s is refused', async (_n, patch, message) => {
    h = await makeApp();
    const res = await h.call('POST', '/sms', { to: '+14155550100', text: 'code 1234', ...patch });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(new RegExp(`^${message.replace(/[.+]/g, '\\$&')}`));
  });

  it('a send answers the SMS object with id and externalId, then sms.message.updated sent → delivered', async () => {
    h = await makeApp();
    const res = await h.call('POST', '/sms', { to: '+14155550100', text: 'hi', externalId: 'x-1' });
    expect(res.body).toMatchObject({ id: expect.any(String), externalId: 'x-1', status: 'accepted' });
    const evs = await h.waitFor((e) => e.type === 'sms.message.updated', 2);
    expect(evs.map((e) => [e.payloadName, e.payload.status])).toEqual([['smsMessage', 'sent'], ['smsMessage', 'delivered']]);
    expect(evs[0]!.payload).toMatchObject({ id: res.body.id, externalId: 'x-1' });
  });

  it('knob smsOutcome undelivered ends the SMS undelivered with an errorCode', async () => {
    h = await makeApp({ smsOutcome: 'undelivered' });
    await h.call('POST', '/sms', { to: '+14155550100', text: 'hi' });
    const evs = await h.waitFor((e) => e.type === 'sms.message.updated', 2);
    expect(evs[1]!.payload).toMatchObject({ status: 'undelivered', errorCode: expect.any(String) });
  });

  it('China with a signature is accepted; GET /sms lists in creation order and filters by externalId', async () => {
    h = await makeApp();
    await h.call('POST', '/sms', { to: '+8613800138000', text: 'a', signature: '【Switchboard】', externalId: 'one' });
    await h.call('POST', '/sms', { to: '+14155550100', text: 'b', externalId: 'two' });
    const all = await h.call('GET', '/sms');
    expect(all.body.items.map((s: { externalId: string }) => s.externalId)).toEqual(['one', 'two']);
    expect((await h.call('GET', '/sms?externalId=two')).body.items).toHaveLength(1);
  });
});

describe('email', () => {
  it.each([
    ['101 to addresses', { to: addresses(101) }, 'to: at most 100 addresses'],
    ['a bad to address', { to: 'a@example.org, nope' }, 'to: "nope" is not an email address'],
    ['a bad cc address', { cc: 'x' }, 'cc: "x" is not an email address'],
    ['subject of 256 characters', { subject: 's'.repeat(256) }, 'subject: at most 255 characters'],
    ['subject missing', { subject: undefined }, 'subject: is required'],
    ['content over 150 KB', { content: 'x'.repeat(150 * 1024 + 1) }, 'content: at most 150 KB'],
    ['summary of 71 characters', { summary: 's'.repeat(71) }, 'summary: at most 70 characters'],
    ['contentType text/markdown', { contentType: 'text/markdown' }, 'contentType: must be one of text/html, text/plain'],
    ['variables not one per to address', { variables: [{ name: 'A' }] }, 'variables: must have one object per address in to (2), got 1'],
    ['from on a domain not activated', { from: 'me@elsewhere.net' }, 'from: domain elsewhere.net is not activated'],
    ['from not an address', { from: 'Support' }, 'from: must be an address'],
  ])('%s is refused', async (_n, patch, message) => {
    h = await makeApp();
    const res = await h.call('POST', '/emails', email(patch));
    expect(res.status).toBe(400);
    expect(res.body.error.message.startsWith(message)).toBe(true);
  });

  it('limits are inclusive: 100 addresses, 255-char subject, 150 KB content, 70-char summary are accepted', async () => {
    h = await makeApp();
    const res = await h.call('POST', '/emails', email({ to: addresses(100), subject: 's'.repeat(255), content: 'x'.repeat(150 * 1024), summary: 's'.repeat(70), contentType: 'text/plain' }));
    expect(res.status).toBe(200);
    expect(res.body.totalRecipients).toBe(100);
  });

  it('answers the email object and reports email.delivery.updated per recipient address (to, cc, bcc)', async () => {
    h = await makeApp();
    const res = await h.call('POST', '/emails', email({ cc: 'c@example.org', bcc: 'd@example.org', variables: [{ name: 'A' }, { name: 'B' }], externalId: 'e-1' }));
    expect(res.body).toMatchObject({
      from: { address: 'support@example.com', name: 'Support' },
      to: [{ address: 'a@example.org' }, { address: 'b@example.org' }],
      cc: [{ address: 'c@example.org' }],
      bcc: [{ address: 'd@example.org' }],
      totalRecipients: 4,
      currency: 'USD',
      externalId: 'e-1',
    });
    const evs = await h.waitFor((e) => e.type === 'email.delivery.updated', 8);
    const delivered = evs.filter((e) => e.payload.status === 'delivered').map((e) => e.payload.recipientAddress).sort();
    expect(delivered).toEqual(['a@example.org', 'b@example.org', 'c@example.org', 'd@example.org']);
    expect(evs.every((e) => e.payload.emailId === res.body.id)).toBe(true);
  });
});

describe('voice verification code', () => {
  it.each(['123', '1234567', '12a4', ''])('verificationCode %j is refused', async (code) => {
    h = await makeApp();
    const res = await h.call('POST', '/voices', { to: '+14155550100', verificationCode: code });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe('verificationCode: must be 4 to 6 digits');
  });

  it('to must be E.164', async () => {
    h = await makeApp();
    const res = await h.call('POST', '/voices', { to: '555', verificationCode: '1234' });
    expect(res.body.error.message).toMatch(/^to: must be an E\.164/);
  });

  it.each(['1234', '123456'])('verificationCode %s is accepted and the answer is only {id} (the code is never echoed)', async (code) => {
    h = await makeApp();
    const res = await h.call('POST', '/voices', { to: '+14155550100', verificationCode: code, language: 'en' });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['id']);
  });
});
