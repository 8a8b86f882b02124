/**
 * The bridge's real Service client (server/service) against the real emulator on a port:
 * every messaging-surface resource the client has, once, so a shape the emulator answers
 * that the client's schemas refuse (or a path it does not serve) fails here.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createServiceClient, type ServiceClient } from '../../../server/service/index.ts';
import { startEmulator, type Emulator } from '../index.ts';

const KEY = 'compat-key-1';
const BIZ = '+15550100001';
const WABA = '300000000000001';
const ref = { wabaId: WABA, phoneNumber: BIZ };

let emu: Emulator;
let client: ServiceClient;
beforeEach(async () => {
  emu = await startEmulator({ apiKeys: [KEY], timeScale: 0.001, businessNumbers: [{ id: '400000000000001', phoneNumber: BIZ, wabaId: WABA }] });
  client = createServiceClient({ baseUrl: emu.baseUrl, apiKey: KEY });
});
afterEach(async () => emu.close());

const until = async (cond: () => Promise<boolean>, ms = 3000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 10));
  }
};
const collect = async <T>(it: AsyncGenerator<T>) => {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
};

describe('the bridge Service client against the emulator', () => {
  it('balance, SMS, email, voice, verification, custom event', async () => {
    expect((await client.balance.get()).currency).toBe('USD');
    const sms = await client.sms.send({ to: '+14155550100', text: 'hi', externalId: 's1' });
    expect(sms.externalId).toBe('s1');
    expect((await collect(client.sms.iterate({ limit: 1 }))).map((s) => s.id)).toEqual([sms.id]);
    const email = await client.emails.send({ from: 'Ops <ops@example.com>', to: ['a@example.org', 'b@example.org'], subject: 's', content: 'c' });
    expect(email.totalRecipients).toBe(2);
    expect((await client.voices.send({ to: '+14155550100', verificationCode: '1234' })).id).toBeTruthy();
    expect((await client.verifications.start({ to: '+14155550100', externalId: 'v1' })).status).toBe('pending');
    expect((await client.customEvents.send({ name: 'signup', phoneNumber: '+14155550100' })).id).toBeTruthy();
  });

  it('templates and chat messages: create, wait for approval, send, get, list, delete', async () => {
    const t = await client.templates.create({ wabaId: WABA, name: 'hello', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Hi {{1}}' }] });
    expect(t.status).toBe('PENDING');
    await until(async () => (await client.templates.get({ wabaId: WABA, name: 'hello', language: 'en_US' })).status === 'APPROVED');
    expect((await collect(client.templates.iterate({ status: 'APPROVED' }))).map((x) => x.name)).toEqual(['hello']);
    const m = await client.messages.send({ from: BIZ, to: '+14155550100', type: 'template', template: { name: 'hello', language: { code: 'en_US' } }, filterUnsubscribed: true });
    expect(m.status).toBe('accepted');
    await until(async () => (await client.messages.get(m.id)).status === 'read');
    const d = await client.messages.sendDirectly({ from: BIZ, to: '+14155550100', type: 'text', text: { body: 'x' } });
    expect(d.status).toBe('accepted');
    await client.templates.deleteLocale({ wabaId: WABA, name: 'hello', language: 'en_US' });
    await client.templates.create({ wabaId: WABA, name: 'bye', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'x' }] });
    await client.templates.deleteByName({ wabaId: WABA, name: 'bye' });
    expect((await client.templates.list()).length).toBe(0);
  });

  it('business accounts and phone numbers', async () => {
    expect((await collect(client.businessAccounts.iterate())).length).toBe(1);
    expect((await client.businessAccounts.get(WABA)).businessName).toBeTruthy();
    expect((await client.businessAccounts.reachEstimate(WABA, { targetCountry: 'BR' })).estimates.length).toBeGreaterThan(0);
    expect(await client.businessAccounts.getAutomaticCreativeOptimizations(WABA)).toHaveProperty('enabled');
    expect(await client.businessAccounts.patchAutomaticCreativeOptimizations(WABA, { enabled: true })).toMatchObject({ enabled: true });
    expect((await collect(client.phoneNumbers.iterate())).map((n) => n.phoneNumber)).toEqual([BIZ]);
    expect((await client.phoneNumbers.get(ref)).phoneNumber).toBe(BIZ);
    expect(await client.phoneNumbers.profile(ref)).toHaveProperty('verifiedName');
    expect(await client.phoneNumbers.register(ref, { pin: '123456' })).toMatchObject({ success: true });
    expect(await client.phoneNumbers.chatCommerceSettings(ref, { isCartEnabled: true })).toMatchObject({ isCartEnabled: true });
    expect(await client.phoneNumbers.deleteContactBookEntry(ref, 'US.Nobody123')).toEqual({ success: true, deleted: false });
  });

  it('groups, join requests, participants, settings, invite link and group messages', async () => {
    const pending = await client.groups.create(BIZ, { subject: 'Ops', joinApprovalMode: 'approval_required' });
    expect(pending.status).toBe('pending');
    await until(async () => (await client.groups.list(BIZ)).length === 1);
    const [group] = await collect(client.groups.iterate(BIZ, { limit: 1 }));
    const groupId = group!.groupId!;
    expect((await client.groups.get(BIZ, groupId)).subject).toBe('Ops');
    const join = await fetch(`${emu.controlUrl}/messaging/groups/${groupId}/join`, { method: 'POST', headers: { 'X-API-Key': KEY, 'Content-Type': 'application/json' }, body: JSON.stringify({ user: '+14155550111' }) });
    expect(join.status).toBe(200);
    const requests = await collect(client.groups.iterateJoinRequests(BIZ, groupId));
    expect(requests).toHaveLength(1);
    const approved = await client.groups.approveJoinRequests(BIZ, groupId, [requests[0]!.joinRequestId]);
    expect(approved.failedJoinRequests).toEqual([]);
    expect((await client.groups.updateSettings(BIZ, groupId, { description: 'new' })).status).toBe('pending');
    expect((await client.groups.removeParticipants(BIZ, groupId, ['+14155550199'])).status).toBe('pending');
    const gm = await client.groupMessages.send({ from: BIZ, groupId, type: 'text', text: { body: 'hi all' } });
    expect(gm.recipients).toHaveLength(1);
    await until(async () => (await client.groupMessages.get(gm.id)).status === 'sent');
    await client.templates.create({ wabaId: WABA, name: 'invite', language: 'en', category: 'UTILITY', components: [{ type: 'BODY', text: 'join' }] });
    await until(async () => (await client.templates.get({ wabaId: WABA, name: 'invite', language: 'en' })).status === 'APPROVED');
    expect(await client.groups.sendInviteLink(BIZ, { to: '+14155550122', templateName: 'invite', languageCode: 'en', groupId })).toMatchObject({ status: 'accepted' });
    expect((await client.groups.delete(BIZ, groupId)).status).toBe('pending');
  });

  it('flows, contacts and unsubscribers', async () => {
    const f = await client.flows.create({ name: 'Signup', categories: ['SIGN_UP'], endpointUri: 'https://flows.example.com/e' });
    expect((await client.flows.get(f.id!)).endpointUrl).toBe('https://flows.example.com/e');
    await client.flows.updateMetadata(f.id!, { name: 'Signup 2' });
    await client.flows.updateStructure(f.id!, { flowJson: { version: '6.0', screens: [] } });
    expect(await client.flows.publish(f.id!)).toMatchObject({ status: 'PUBLISHED' });
    expect(await client.flows.deprecate(f.id!)).toMatchObject({ status: 'DEPRECATED' });
    expect(await client.flows.preview(f.id!)).toMatch(/<html>/);
    expect((await collect(client.flows.iterate())).length).toBe(1);

    const c = await client.contacts.create({ phoneNumber: '+447700900123', remarkName: 'Ann', customAttributes: { tier: 'gold' } });
    expect((await client.contacts.get('+447700900123')).id).toBe(c.id);
    expect((await client.contacts.update(c.id, { nickName: 'A' })).nickName).toBe('A');
    expect(await client.contacts.attributes()).toBeTruthy();
    expect((await collect(client.contacts.iterate({ limit: 1 }))).length).toBe(1);
    await client.contacts.delete(c.id);

    const ctl = (body: unknown) => fetch(`${emu.controlUrl}/messaging/unsubscribers`, { method: 'POST', headers: { 'X-API-Key': KEY, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    await ctl({ customer: '+447700900123', channel: 'chat' });
    await ctl({ customer: '+447700900123', channel: 'sms' });
    expect((await collect(client.unsubscribers.iterate({ limit: 1 }))).length).toBe(2);
    expect((await client.unsubscribers.forCustomer('+447700900123')).map((u) => u.channel)).toEqual(['chat', 'sms']);
    expect((await client.unsubscribers.forChannel('+447700900123', 'sms')).source).toBeTruthy();
  });
});
