import { afterEach, describe, expect, it } from 'vitest';
import { BIZ, OTHER_BIZ, OTHER_KEY, WABA, approvedTemplate, makeApp, sleep, type Harness } from './harness.ts';

const USER = '+447700900123';
const BSUID = 'GB.ABC123def456';
const text = (extra: Record<string, unknown> = {}) => ({ from: BIZ, to: USER, type: 'text', text: { body: 'hi' }, ...extra });

let h: Harness;
afterEach(async () => h?.close());

describe('chat message validation', () => {
  it.each([
    ['from missing', { from: undefined }, 'from: is required'],
    ['from not E.164', { from: '15550100001' }, 'from: must be an E.164'],
    ['from not a business number of the account', { from: '+15559999999' }, 'from: +15559999999 is not a business phone number'],
    ['from a number of another tenant', { from: OTHER_BIZ }, 'from: +15550100009 is not a business phone number'],
    ['to not E.164', { to: '0044 7700' }, 'to: must be an E.164'],
    ['neither to nor recipient', { to: undefined }, 'to: is required when recipient is absent'],
    ['type unknown', { type: 'fax' }, 'type: must be one of'],
    ['content of the type missing', { type: 'image' }, 'image: is required for type image'],
    ['text.body empty', { text: { body: '' } }, 'text.body: must not be empty'],
  ])('%s is refused with 400 naming the field', async (_name, patch, message) => {
    h = await makeApp();
    const res = await h.call('POST', '/chat/messages', text(patch));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('BAD_REQUEST');
    expect(res.body.error.message).toContain(message);
    expect(res.body.error.requestId).toBe(res.headers.get('Service-Request-ID'));
  });

  it.each(['GB', 'gb.ABC', 'G.ABC', 'GB.', `GB.${'a'.repeat(129)}`, 'GB.ab_c'])('recipient %s that is not a BSUID is refused', async (recipient) => {
    h = await makeApp();
    const res = await h.call('POST', '/chat/messages', text({ to: undefined, recipient }));
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/^recipient: must be a BSUID/);
  });

  it('a BSUID recipient (and a parent BSUID) is accepted when to is absent', async () => {
    h = await makeApp();
    for (const recipient of [BSUID, 'GB.ENT.XYZ789', `GB.${'a'.repeat(128)}`]) {
      const res = await h.call('POST', '/chat/messages', text({ to: undefined, recipient }));
      expect(res.status).toBe(200);
      expect(res.body.recipient).toBe(recipient);
      expect(res.body.to).toBeUndefined();
    }
  });

  it('to wins over recipient when both are given (recipient is not even validated)', async () => {
    h = await makeApp();
    const res = await h.call('POST', '/chat/messages', text({ recipient: 'not-a-bsuid' }));
    expect(res.status).toBe(200);
    expect(res.body.to).toBe(USER);
    expect(res.body.recipient).toBeUndefined();
  });

  it('a body that is not JSON is refused naming the body', async () => {
    h = await makeApp();
    const res = await h.call('POST', '/chat/messages/sendDirectly', '{nope');
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe('body: must be a JSON object');
  });

  it('sendDirectly refuses the queued-only suppression filters', async () => {
    h = await makeApp();
    for (const f of ['filterUnsubscribed', 'filterBlocked']) {
      const res = await h.call('POST', '/chat/messages/sendDirectly', text({ [f]: true }));
      expect(res.status).toBe(400);
      expect(res.body.error.message).toMatch(new RegExp(`^${f}: only accepted by POST /chat/messages`));
    }
  });
});

describe('chat message lifecycle', () => {
  it('a send answers accepted with an estimated price, then sent → delivered → read events with timestamps', async () => {
    h = await makeApp();
    const res = await h.call('POST', '/chat/messages/sendDirectly', text({ externalId: 'ext-1' }));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'accepted', from: BIZ, to: USER, wabaId: WABA, type: 'text', externalId: 'ext-1', currency: 'USD' });
    expect(typeof res.body.totalPrice).toBe('number');
    expect(res.body.recipientUserId).toMatch(/^GB\.[A-Z0-9]+$/);
    const evs = await h.waitFor((e) => e.type === 'chat.message.updated' && e.payload.id === res.body.id, 3);
    expect(evs.map((e) => e.payload.status)).toEqual(['sent', 'delivered', 'read']);
    expect(evs.every((e) => e.payloadName === 'chatMessage')).toBe(true);
    expect(evs[0]!.payload.customerProfile).toEqual({ name: 'Simulated User' }); // no username on sent
    expect(evs[2]!.payload.customerProfile.username).toBeDefined();
    expect(evs[2]!.payload.text).toBeUndefined(); // status updates carry no content
    const got = await h.call('GET', `/chat/messages/${res.body.id}`);
    expect(got.body).toMatchObject({ status: 'read', text: { body: 'hi' } });
    for (const f of ['sendTime', 'deliverTime', 'readTime']) expect(Date.parse(got.body[f])).not.toBeNaN();
  });

  it('knob failed: sent then failed with errorCode and errorMessage, no charge, no customerProfile', async () => {
    h = await makeApp({ messageOutcome: 'failed', failErrorCode: '131049' });
    const res = await h.call('POST', '/chat/messages', text());
    const evs = await h.waitFor((e) => e.payload.id === res.body.id, 2);
    expect(evs.map((e) => e.payload.status)).toEqual(['sent', 'failed']);
    expect(evs[1]!.payload).toMatchObject({ errorCode: '131049', errorMessage: 'Message undeliverable', totalPrice: 0 });
    expect(evs[1]!.payload.customerProfile).toBeUndefined();
    expect((await h.call('GET', `/chat/messages/${res.body.id}`)).body.status).toBe('failed');
  });

  it('per-recipient outcome knob fails only that recipient', async () => {
    h = await makeApp({ outcomeByRecipient: { [USER]: 'failed' } });
    const a = await h.call('POST', '/chat/messages', text());
    const b = await h.call('POST', '/chat/messages', text({ to: '+447700900999' }));
    await h.waitFor((e) => e.payload.id === b.body.id && e.payload.status === 'read');
    await h.waitFor((e) => e.payload.id === a.body.id && e.payload.status === 'failed');
  });

  it('knob duplicates: every status event is emitted twice with distinct event ids', async () => {
    h = await makeApp({ duplicateStatusEvents: true });
    const res = await h.call('POST', '/chat/messages', text());
    const evs = await h.waitFor((e) => e.payload.id === res.body.id, 6);
    expect(evs.map((e) => e.payload.status)).toEqual(['sent', 'sent', 'delivered', 'delivered', 'read', 'read']);
    expect(new Set(evs.map((e) => e.id)).size).toBe(6);
  });

  it('a late lower-ranked status is emitted and kept in history but never lowers the retrieved view', async () => {
    h = await makeApp({ lateLowerStatus: true });
    const res = await h.call('POST', '/chat/messages', text());
    const evs = await h.waitFor((e) => e.payload.id === res.body.id, 4);
    expect(evs.map((e) => e.payload.status)).toEqual(['sent', 'delivered', 'read', 'sent']);
    const got = await h.call('GET', `/chat/messages/${res.body.id}`);
    expect(got.body.status).toBe('read');
    const hist = await h.call('GET', `/_emulator/messaging/messages/${res.body.id}/history`);
    expect(hist.body.history).toEqual(['accepted', 'sent', 'delivered', 'read', 'sent']);
  });

  it('read without delivered (knob skipDelivered) still ends read, and the price is final', async () => {
    h = await makeApp({ skipDelivered: true });
    const res = await h.call('POST', '/chat/messages', text());
    const evs = await h.waitFor((e) => e.payload.id === res.body.id, 2);
    expect(evs.map((e) => e.payload.status)).toEqual(['sent', 'read']);
  });

  it('GET of another tenant\'s message is 404, as is an unknown id', async () => {
    h = await makeApp({ messageOutcome: 'accepted' });
    const res = await h.call('POST', '/chat/messages', text());
    expect((await h.call('GET', `/chat/messages/${res.body.id}`, undefined, OTHER_KEY)).status).toBe(404);
    expect((await h.call('GET', '/chat/messages/msg_nope')).status).toBe(404);
  });

  it('status events belong to the tenant (API key) that sent the message', async () => {
    h = await makeApp();
    const res = await h.call('POST', '/chat/messages', text({ from: OTHER_BIZ }), OTHER_KEY);
    const evs = await h.waitFor((e) => e.payload.id === res.body.id, 3);
    expect(evs.every((e) => e.owner === OTHER_KEY)).toBe(true);
  });
});

describe('suppression on queued sends', () => {
  it('filterUnsubscribed skips a chat-channel unsubscriber; without the filter the send goes out', async () => {
    h = await makeApp();
    expect((await h.call('POST', '/_emulator/messaging/unsubscribers', { customer: USER, channel: 'chat' })).status).toBe(200);
    const skipped = await h.call('POST', '/chat/messages', text({ filterUnsubscribed: true }));
    expect(skipped.status).toBe(200);
    expect(skipped.body).toMatchObject({ status: 'failed', errorCode: 'SUPPRESSED_UNSUBSCRIBED', totalPrice: 0 });
    const sent = await h.call('POST', '/chat/messages', text({ filterUnsubscribed: false }));
    expect(sent.body.status).toBe('accepted');
  });

  it('filterUnsubscribed ignores opt-outs of other channels', async () => {
    h = await makeApp();
    await h.call('POST', '/_emulator/messaging/unsubscribers', { customer: USER, channel: 'sms' });
    const res = await h.call('POST', '/chat/messages', text({ filterUnsubscribed: true }));
    expect(res.body.status).toBe('accepted');
  });

  it('filterBlocked skips a blocked contact; an unblocked one is sent', async () => {
    h = await makeApp();
    await h.call('POST', '/contact/contacts', { phoneNumber: USER, blocked: true });
    const skipped = await h.call('POST', '/chat/messages', text({ filterBlocked: true }));
    expect(skipped.body).toMatchObject({ status: 'failed', errorCode: 'SUPPRESSED_BLOCKED' });
    await h.call('PATCH', `/contact/contacts/${encodeURIComponent(USER)}`, { blocked: false });
    const sent = await h.call('POST', '/chat/messages', text({ filterBlocked: true }));
    expect(sent.body.status).toBe('accepted');
  });
});

describe('templates gate sends', () => {
  it('a PENDING template cannot be sent; once APPROVED it can', async () => {
    // Long enough that a loaded CI machine still sends before the review lands.
    h = await makeApp({ reviewDelayMs: 500 });
    await h.call('POST', '/chat/templates', { wabaId: WABA, name: 'order_update', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'x' }] });
    const send = () => h.call('POST', '/chat/messages', text({ type: 'template', text: undefined, template: { name: 'order_update', language: { code: 'en_US' } } }));
    const early = await send();
    expect(early.status).toBe(400);
    expect(early.body.error.message).toBe('template: status is PENDING; only APPROVED templates can be sent');
    await h.waitFor((e) => e.type === 'chat.template.reviewed');
    const later = await send();
    expect(later.status).toBe(200);
    expect(later.body).toMatchObject({ status: 'accepted', pricingCategory: 'utility' });
  });

  it.each(['REJECTED', 'PAUSED', 'DISABLED', 'ARCHIVED', 'IN_APPEAL'])('template status %s blocks sends', async (status) => {
    h = await makeApp();
    await approvedTemplate(h, { name: 'gate' });
    await h.call('POST', `/_emulator/messaging/templates/${WABA}/gate/en_US/status`, { status });
    const res = await h.call('POST', '/chat/messages', text({ type: 'template', template: { name: 'gate', language: { code: 'en_US' } } }));
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe(`template: status is ${status}; only APPROVED templates can be sent`);
  });

  it('the template language is exact: another locale of the name is not found', async () => {
    h = await makeApp();
    await approvedTemplate(h, { name: 'gate' });
    const res = await h.call('POST', '/chat/messages', text({ type: 'template', template: { name: 'gate', language: { code: 'en_us' } } }));
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/^template\.name: no template gate in language en_us/);
  });

  it('an authentication template needs a phone number: BSUID alone refused, with to accepted', async () => {
    h = await makeApp();
    await approvedTemplate(h, {
      name: 'otp', category: 'AUTHENTICATION',
      components: [{ type: 'BODY', text: 'code {{1}}' }, { type: 'BUTTONS', buttons: [{ type: 'OTP', otp_type: 'ONE_TAP' }] }],
    });
    const tpl = { type: 'template', template: { name: 'otp', language: { code: 'en_US' } } };
    const bad = await h.call('POST', '/chat/messages', text({ ...tpl, to: undefined, recipient: BSUID }));
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/^to: one-tap, zero-tap and copy-code authentication templates need a phone number/);
    expect((await h.call('POST', '/chat/messages', text(tpl))).status).toBe(200);
  });
});

describe('Max Price (bidSpec) on a message', () => {
  const bidTemplate = { name: 'promo', category: 'MARKETING', bidSpec: { maxBid: '0.05', countryPriceAdjustments: [{ countryCode: 'GB', multiplier: '2' }] } };
  const send = (h2: Harness, m: unknown, name = 'promo') =>
    h2.call('POST', '/chat/messages', text({ type: 'template', template: { name, language: { code: 'en_US' } }, bidSpec: { per_message_bid_multiplier: m } }));

  it.each([['0', 'must be greater than 0'], ['1.2345', 'must have at most 3 decimals'], ['-1', 'must be a decimal string'], [1.5, 'must be a string']])(
    'per_message_bid_multiplier %s is refused',
    async (m, rule) => {
      h = await makeApp();
      await approvedTemplate(h, bidTemplate);
      const res = await send(h, m);
      expect(res.status).toBe(400);
      expect(res.body.error.message.startsWith(`bidSpec.per_message_bid_multiplier: ${rule}`)).toBe(true);
    },
  );

  it('a valid multiplier gives the Max Price ceiling as estimate and a final charge at or below it', async () => {
    h = await makeApp();
    await approvedTemplate(h, bidTemplate);
    const res = await send(h, '1.5');
    expect(res.status).toBe(200);
    // 0.05 maxBid × 2 (GB) × 1.5
    expect(res.body).toMatchObject({ totalPrice: 0.15, bidPricingFlag: true, pricingCategory: 'marketing_lite_bidding' });
    const [delivered] = await h.waitFor((e) => e.payload.id === res.body.id && e.payload.status === 'delivered');
    expect(delivered!.payload.totalPrice).toBeGreaterThan(0);
    expect(delivered!.payload.totalPrice).toBeLessThanOrEqual(0.15);
  });

  it('bidSpec on a template created without bidSpec is refused', async () => {
    h = await makeApp();
    await approvedTemplate(h, { name: 'plain', category: 'MARKETING' });
    const res = await send(h, '1.5', 'plain');
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe('bidSpec: applies only to a marketing template created with bidSpec');
  });
});

describe('inbound messages', () => {
  it('markAsRead marks an inbound message once; unknown ids are 404', async () => {
    h = await makeApp();
    const inbound = await h.call('POST', '/_emulator/messaging/inbound', { from: USER, to: BIZ, text: 'hello' });
    expect(h.events.at(-1)).toMatchObject({ type: 'chat.inbound_message.received', payloadName: 'chatInboundMessage' });
    const first = await h.call('POST', `/chat/inboundMessages/${inbound.body.id}/markAsRead`);
    expect(first.body).toMatchObject({ success: true, status: 'read' });
    await sleep(5);
    const again = await h.call('POST', `/chat/inboundMessages/${inbound.body.id}/markAsRead`);
    expect(again.body.readTime).toBe(first.body.readTime);
    expect((await h.call('POST', '/chat/inboundMessages/inb_nope/markAsRead')).status).toBe(404);
  });
});
