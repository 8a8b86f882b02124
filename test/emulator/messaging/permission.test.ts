import { afterEach, describe, expect, it } from 'vitest';
import { PERMISSION_LIMIT_CODE } from './index.ts';
import { BIZ, BIZ2, approvedTemplate, makeApp, type Harness } from './harness.ts';

const USER = '+5511987654321';
const HOUR = 3600_000;
const DAY = 24 * HOUR;
const request = (extra: Record<string, unknown> = {}) => ({
  from: BIZ,
  to: USER,
  type: 'interactive',
  interactive: { type: 'call_permission_request', action: { name: 'call_permission_request' }, body: { text: 'May we call you?' } },
  ...extra,
});
const isReply = (e: { type: string; payload: Record<string, any> }) =>
  e.type === 'chat.inbound_message.received' && e.payload.interactive?.type === 'call_permission_reply';

let h: Harness;
afterEach(async () => h?.close());

describe('call permission reply', () => {
  it('an interactive request makes the user accept for 7 days and records the grant for the core', async () => {
    h = await makeApp();
    const sent = await h.call('POST', '/chat/messages/sendDirectly', request());
    expect(sent.status).toBe(200);
    const [reply] = await h.waitFor(isReply);
    expect(reply!.payloadName).toBe('chatInboundMessage');
    const r = reply!.payload.interactive.call_permission_reply;
    expect(r).toMatchObject({ response: 'accept', is_permanent: false, response_source: 'user_action' });
    const nowS = Math.floor(h.ctx.clock.now() / 1000);
    expect(r.expiration_timestamp).toBeGreaterThanOrEqual(nowS + 7 * 24 * 3600 - 5);
    expect(r.expiration_timestamp).toBeLessThanOrEqual(nowS + 7 * 24 * 3600);
    expect(reply!.payload).toMatchObject({ from: USER, to: BIZ, context: { id: sent.body.id } });
    // The reply comes after the user saw the request.
    const order = h.events.filter((e) => e.payload.id === sent.body.id || isReply(e)).map((e) => e.payload.status ?? 'reply');
    expect(order).toEqual(['sent', 'delivered', 'read', 'reply']);
    expect(h.ctx.permissions.get(`${BIZ}|${USER}`)).toEqual({ business: BIZ, user: USER, response: 'accept', isPermanent: false, expirationTimestamp: r.expiration_timestamp });
  });

  it('knob reject: the reply is reject and the grant records the rejection', async () => {
    h = await makeApp({ permissionReply: 'reject' });
    await h.call('POST', '/chat/messages', request());
    const [reply] = await h.waitFor(isReply);
    expect(reply!.payload.interactive.call_permission_reply).toMatchObject({ response: 'reject' });
    expect(reply!.payload.interactive.call_permission_reply.expiration_timestamp).toBeUndefined();
    expect(h.ctx.permissions.get(`${BIZ}|${USER}`)?.response).toBe('reject');
  });

  it('knob permanent: accepted permanently, without an expiration', async () => {
    h = await makeApp({ permissionPermanent: true });
    await h.call('POST', '/chat/messages', request());
    const [reply] = await h.waitFor(isReply);
    expect(reply!.payload.interactive.call_permission_reply).toMatchObject({ response: 'accept', is_permanent: true });
    expect(reply!.payload.interactive.call_permission_reply.expiration_timestamp).toBeUndefined();
    expect(h.ctx.permissions.get(`${BIZ}|${USER}`)).toMatchObject({ isPermanent: true });
  });

  it('knob expiry: the expiration follows permissionExpirySeconds', async () => {
    h = await makeApp({ permissionExpirySeconds: 60 });
    await h.call('POST', '/chat/messages', request());
    const [reply] = await h.waitFor(isReply);
    const exp = reply!.payload.interactive.call_permission_reply.expiration_timestamp;
    expect(exp - Math.floor(h.ctx.clock.now() / 1000)).toBeLessThanOrEqual(60);
    expect(exp - Math.floor(h.ctx.clock.now() / 1000)).toBeGreaterThan(55);
  });

  it('knob none: the user never answers and no grant is recorded', async () => {
    h = await makeApp({ permissionReply: 'none' });
    const sent = await h.call('POST', '/chat/messages', request());
    await h.waitFor((e) => e.payload.id === sent.body.id && e.payload.status === 'read');
    await new Promise((r) => setTimeout(r, 30));
    expect(h.events.some(isReply)).toBe(false);
    expect(h.ctx.permissions.has(`${BIZ}|${USER}`)).toBe(false);
  });

  it('a request that is never delivered gets no reply', async () => {
    h = await makeApp({ messageOutcome: 'failed' });
    const sent = await h.call('POST', '/chat/messages', request());
    await h.waitFor((e) => e.payload.id === sent.body.id && e.payload.status === 'failed');
    await new Promise((r) => setTimeout(r, 30));
    expect(h.events.some(isReply)).toBe(false);
  });

  it('an APPROVED template with a call_permission_request component asks too', async () => {
    h = await makeApp();
    await approvedTemplate(h, { name: 'may_we_call', components: [{ type: 'BODY', text: 'Can we call?' }, { type: 'call_permission_request' }] });
    const res = await h.call('POST', '/chat/messages', { from: BIZ, to: USER, type: 'template', template: { name: 'may_we_call', language: { code: 'en_US' } } });
    expect(res.status).toBe(200);
    await h.waitFor(isReply);
    expect(h.ctx.permissions.get(`${BIZ}|${USER}`)?.response).toBe('accept');
  });

  it('a BSUID-addressed request records the grant under the BSUID', async () => {
    h = await makeApp();
    await h.call('POST', '/chat/messages', request({ to: undefined, recipient: 'BR.UserAbc123' }));
    const [reply] = await h.waitFor(isReply);
    expect(reply!.payload.from).toBeUndefined();
    expect(reply!.payload.fromUserId).toBe('BR.UserAbc123');
    expect(h.ctx.permissions.get(`${BIZ}|BR.UserAbc123`)?.response).toBe('accept');
  });

  it.each([
    [{ action: { name: 'send' } }, 'interactive.action.name: must be call_permission_request'],
    [{ action: { name: 'call_permission_request' }, body: undefined }, 'interactive.body.text: is required for a call_permission_request'],
  ])('a malformed permission request is refused (%j)', async (patch, message) => {
    h = await makeApp();
    const res = await h.call('POST', '/chat/messages', request({ interactive: { ...request().interactive, ...patch } }));
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe(message);
  });
});

describe('call permission request limits (per business number and user, adjustable clock)', () => {
  const refused = (res: { status: number; body: any }) => {
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('BAD_REQUEST');
    expect(res.body.error.chatApiError.code).toBe(PERMISSION_LIMIT_CODE);
    return res.body.error.message as string;
  };

  it('a second request within 24 hours is refused; after 24 hours it is allowed', async () => {
    h = await makeApp({ messageOutcome: 'accepted' });
    expect((await h.call('POST', '/chat/messages', request())).status).toBe(200);
    h.ctx.clock.advance(23 * HOUR);
    expect(refused(await h.call('POST', '/chat/messages/sendDirectly', request()))).toMatch(/1 per 24 hours/);
    h.ctx.clock.advance(HOUR + 1000);
    expect((await h.call('POST', '/chat/messages', request())).status).toBe(200);
  });

  it('a third request within 7 days is refused even 24 hours apart; allowed once the first is 7 days old', async () => {
    h = await makeApp({ messageOutcome: 'accepted' });
    expect((await h.call('POST', '/chat/messages', request())).status).toBe(200);
    h.ctx.clock.advance(DAY + 1000);
    expect((await h.call('POST', '/chat/messages', request())).status).toBe(200);
    h.ctx.clock.advance(DAY + 1000);
    expect(refused(await h.call('POST', '/chat/messages', request()))).toMatch(/2 per 7 days/);
    h.ctx.clock.advance(5 * DAY);
    expect((await h.call('POST', '/chat/messages', request())).status).toBe(200);
  });

  it('the limit is per pair: another user or another business number is not affected', async () => {
    h = await makeApp({ messageOutcome: 'accepted' });
    expect((await h.call('POST', '/chat/messages', request())).status).toBe(200);
    expect((await h.call('POST', '/chat/messages', request({ to: '+5511900000000' }))).status).toBe(200);
    expect((await h.call('POST', '/chat/messages', request({ from: BIZ2 }))).status).toBe(200);
    refused(await h.call('POST', '/chat/messages', request()));
  });

  it('templates with the permission component count against the same ration', async () => {
    h = await makeApp({ messageOutcome: 'accepted' });
    await approvedTemplate(h, { name: 'may_we_call', components: [{ type: 'call_permission_request' }] });
    expect((await h.call('POST', '/chat/messages', request())).status).toBe(200);
    refused(await h.call('POST', '/chat/messages', { from: BIZ, to: USER, type: 'template', template: { name: 'may_we_call', language: { code: 'en_US' } } }));
    // An ordinary message is never rationed.
    expect((await h.call('POST', '/chat/messages', { from: BIZ, to: USER, type: 'text', text: { body: 'hi' } })).status).toBe(200);
  });

  it('the clock is the emulator\'s: advancing it through the control API counts', async () => {
    h = await makeApp({ messageOutcome: 'accepted' });
    await h.call('POST', '/chat/messages', request());
    expect((await h.call('POST', '/_emulator/clock/advance', { ms: DAY })).status).toBe(200);
    expect((await h.call('POST', '/chat/messages', request())).status).toBe(200);
  });

});
