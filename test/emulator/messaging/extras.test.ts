import { afterEach, describe, expect, it } from 'vitest';
import { BIZ, BIZ2, WABA, makeApp, type Harness } from './harness.ts';

let h: Harness;
afterEach(async () => h?.close());
const U = (n: string) => `/chat/phoneNumbers/${WABA}/${encodeURIComponent(n)}/businessUsername`;

describe('business username', () => {
  it('a new username is reserved first, then active, each announced by chat.phone_number.business_username_updated', async () => {
    h = await makeApp();
    const res = await h.call('POST', U(BIZ), { username: 'acme.support' });
    expect(res.body).toMatchObject({ businessUsernameStatus: 'reserved', requestedBusinessUsername: 'acme.support' });
    const evs = await h.waitFor((e) => e.type === 'chat.phone_number.business_username_updated', 2);
    expect(evs[0]!.payloadName).toBe('chatPhoneNumber');
    expect(evs.map((e) => e.payload.businessUsernameStatus)).toEqual(['reserved', 'active']);
    expect(evs[1]!.payload).toMatchObject({ businessUsername: 'acme.support', phoneNumber: BIZ, wabaId: WABA, businessUsernameUpdatedAt: expect.any(String) });
    expect(evs[1]!.payload.requestedBusinessUsername).toBeUndefined();
    expect((await h.call('GET', U(BIZ))).body).toMatchObject({ businessUsername: 'acme.support', businessUsernameStatus: 'active' });
  });

  it.each([['ab', 'username: must be 3 to 35 characters'], ['a'.repeat(36), 'username: must be 3 to 35 characters'], ['Acme!', 'username: may hold only lowercase letters, digits, periods and underscores']])(
    'username %j is refused',
    async (username, message) => {
      h = await makeApp();
      expect((await h.call('POST', U(BIZ), { username })).body.error.message).toBe(message);
    },
  );

  it('a username is not shared between phone numbers (409), and is free again once deleted', async () => {
    h = await makeApp();
    await h.call('POST', U(BIZ), { username: 'acme' });
    const clash = await h.call('POST', U(BIZ2), { username: 'acme' });
    expect(clash.status).toBe(409);
    expect((await h.call('DELETE', U(BIZ))).body).toEqual({ success: true });
    expect((await h.call('POST', U(BIZ2), { username: 'acme' })).status).toBe(200);
    expect((await h.call('DELETE', U(BIZ))).status).toBe(404);
  });

  it('suggestions leave out names in use', async () => {
    h = await makeApp();
    const first = (await h.call('GET', `${U(BIZ)}/suggestions`)).body.items;
    await h.call('POST', U(BIZ2), { username: first[0] });
    expect((await h.call('GET', `${U(BIZ)}/suggestions`)).body.items).not.toContain(first[0]);
  });
});

describe('echo messages, inbound SMS and number changes (control API)', () => {
  it('an echo is created sent with content; its updates carry no content or type', async () => {
    h = await makeApp();
    const echo = await h.call('POST', '/_emulator/messaging/echo', { from: BIZ, to: '+14155550100', text: 'sent from the phone' });
    const evs = await h.waitFor((e) => e.type.startsWith('chat.echo_message.'), 3);
    expect(evs[0]).toMatchObject({ type: 'chat.echo_message.created', payload: { id: echo.body.id, status: 'sent', type: 'text', text: { body: 'sent from the phone' } } });
    expect(evs.slice(1).map((e) => [e.type, e.payload.status, e.payload.id])).toEqual([
      ['chat.echo_message.updated', 'delivered', echo.body.id],
      ['chat.echo_message.updated', 'read', echo.body.id],
    ]);
    expect(evs.slice(1).every((e) => e.payload.text === undefined && e.payload.type === undefined)).toBe(true);
  });

  it('a failed echo is a separate message with provider code 131000', async () => {
    h = await makeApp();
    const echo = await h.call('POST', '/_emulator/messaging/echo', { from: BIZ, to: '+14155550100', text: 'x', outcome: 'failed' });
    const [failed] = await h.waitFor((e) => e.type === 'chat.echo_message.updated' && e.payload.status === 'failed');
    expect(failed!.payload.errorCode).toBe('131000');
    expect(failed!.payload.id).not.toBe(echo.body.id);
  });

  it('an inbound SMS is reported as sms.inbound.received', async () => {
    h = await makeApp();
    await h.call('POST', '/_emulator/messaging/sms/inbound', { from: '+14155550100', text: 'STOP' });
    const [ev] = await h.waitFor((e) => e.type === 'sms.inbound.received');
    expect(ev!.payload).toMatchObject({ from: '+14155550100', text: 'STOP' });
  });

  it('a number change arrives as a system inbound message with old and new BSUIDs (which differ)', async () => {
    h = await makeApp();
    await h.call('POST', '/_emulator/messaging/users/changeNumber', { business: BIZ, oldNumber: '+14155550100', newNumber: '+14155550199' });
    const [ev] = await h.waitFor((e) => e.type === 'chat.inbound_message.received');
    expect(ev!.payload.system).toMatchObject({ type: 'user_changed_number', old_user_id: expect.stringMatching(/^US\./), new_user_id: expect.stringMatching(/^US\./) });
    expect(ev!.payload.system.old_user_id).not.toBe(ev!.payload.system.new_user_id);
  });
});

describe('display name and voice records', () => {
  it('a display name update is under review (newName, PENDING_REVIEW), then becomes the verified name', async () => {
    h = await makeApp({ reviewDelayMs: 50 });
    const path = `/chat/phoneNumbers/${WABA}/${encodeURIComponent(BIZ)}`;
    const res = await h.call('POST', `${path}/displayName`, { newName: 'Acme Calls' });
    expect(res.body).toMatchObject({ newName: 'Acme Calls', nameStatus: 'PENDING_REVIEW' });
    expect((await h.call('GET', `${path}/profile`)).body).toMatchObject({ newName: 'Acme Calls', nameStatus: 'PENDING_REVIEW' });
    await new Promise((r) => setTimeout(r, 150));
    const after = (await h.call('GET', path)).body;
    expect(after).toMatchObject({ verifiedName: 'Acme Calls', nameStatus: 'APPROVED' });
    expect(after.newName).toBeUndefined();
    expect((await h.call('POST', `${path}/displayName`, { newName: 'AB' })).body.error.message).toBe('newName: must be 3 to 512 characters');
  });

  it('voice records list the sends without their codes', async () => {
    h = await makeApp();
    await h.call('POST', '/voices', { to: '+14155550100', verificationCode: '4821', externalId: 'v-1' });
    const res = await h.call('GET', '/voices');
    expect(res.body.items).toEqual([{ id: expect.any(String), to: '+14155550100', externalId: 'v-1', createTime: expect.any(String) }]);
    expect(JSON.stringify(res.body)).not.toContain('4821');
  });
});
