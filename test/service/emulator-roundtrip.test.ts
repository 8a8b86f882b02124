/**
 * The whole client surface against the Service emulator (test/emulator): one round trip
 * per resource, then the CLI commands as spawned processes against the same emulator.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AudioPeer, startEmulator, type Emulator } from '../emulator/index.ts';
import { createServiceClient, noRetry, NotFoundError, RateLimitedError, ValidationError, type ServiceClient } from '../../server/service/index.ts';
import { runBin } from './cli-run.ts';

const BIZ = '+15550100001';
const PHONE_ID = '106540352242922';
const WABA = '102290129340398';
const USER = '+14155550123';

let emu: Emulator;
let c: ServiceClient;
const events: Array<{ type: string; payload: Record<string, any> }> = [];

async function control(method: string, path: string, body?: unknown) {
  const res = await fetch(`${emu.controlUrl}${path}`, {
    method,
    headers: { 'X-API-Key': emu.apiKey, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`control ${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function waitForEvent(pred: (e: { type: string; payload: Record<string, any> }) => boolean, timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const hit = events.find(pred);
    if (hit) return hit;
    if (Date.now() > until) throw new Error(`no matching event; saw ${events.map((e) => e.type).join(', ')}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

beforeAll(async () => {
  emu = await startEmulator({ seed: 7, timeScale: 0.001, businessNumbers: [{ id: PHONE_ID, phoneNumber: BIZ, wabaId: WABA }] });
  emu.ctx.onEmit((e: Record<string, any>) => {
    const { id: _id, type, createTime: _t, apiVersion: _v, ...rest } = e;
    events.push({ type, payload: Object.values(rest)[0] as Record<string, any> });
  });
  await control('PATCH', '/messaging/knobs', { stepDelayMs: 5, reviewDelayMs: 5 });
  c = createServiceClient({ baseUrl: emu.baseUrl, apiKey: emu.apiKey });
});
afterAll(() => emu?.close());

describe('client ↔ emulator: one round trip per resource', () => {
  it('balance', async () => {
    const b = await c.balance.get();
    expect(typeof b.amount).toBe('number');
    expect(b.currency).toMatch(/^[A-Z]{3}$/);
  });

  it('sms: send, list, and reconcile by externalId', async () => {
    const s = await c.sms.send({ to: USER, text: 'code 1234', externalId: 'rt-sms-1' });
    expect(s.id).toBeTruthy();
    const page = await c.sms.list({ limit: 10 });
    expect(page.items.some((x) => x.id === s.id)).toBe(true);
    const found = await c.sms.findByExternalId('rt-sms-1');
    expect(found.map((x) => x.id)).toEqual([s.id]);
  });

  it('emails: send', async () => {
    const e = await c.emails.send({ from: 'ops@example.com', to: ['a@example.com', 'b@example.com'], subject: 'Hi', content: '<p>Hello #name#</p>', variables: [{ name: 'A' }, { name: 'B' }] });
    expect(e.id).toBeTruthy();
  });

  it('voices: send a code', async () => {
    const v = await c.voices.send({ to: USER, verificationCode: '4821', language: 'en' });
    expect(v.id).toBeTruthy();
  });

  it('messages: queued send, direct send, get, markAsRead', async () => {
    const m = await c.messages.sendText({ from: BIZ, to: USER, body: 'hello', externalId: 'rt-msg-1' });
    expect(m.status).toBe('accepted');
    const d = await c.messages.sendDirectly({ from: BIZ, to: USER, type: 'text', text: { body: 'direct' } });
    expect(d.status).toBe('accepted');
    const got = await c.messages.get(m.id);
    expect(got.id).toBe(m.id);
    const inbound = await control('POST', '/messaging/inbound', { from: USER, to: BIZ, text: 'hi there' });
    await c.messages.markAsRead(inbound.id);
  });

  it('templates: create, list with filter.status, get, delete one locale', async () => {
    const t = await c.templates.create({ wabaId: WABA, name: 'rt_welcome', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Hi {{1}}', example: { body_text: [['Ada']] } }] });
    expect(t.status).toBe('PENDING');
    const pending = await collect(c.templates.iterate({ status: 'PENDING' }));
    expect(pending.every((x) => x.status === 'PENDING')).toBe(true);
    const one = await c.templates.get({ wabaId: WABA, name: 'rt_welcome', language: 'en_US' });
    expect(one.name).toBe('rt_welcome');
    await c.templates.deleteLocale({ wabaId: WABA, name: 'rt_welcome', language: 'en_US' });
    await expect(c.templates.get({ wabaId: WABA, name: 'rt_welcome', language: 'en_US' })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('business accounts: list, get, reach estimate, automatic creative optimizations', async () => {
    const accounts = await collect(c.businessAccounts.iterate());
    expect(accounts.length).toBeGreaterThan(0);
    await c.businessAccounts.get(WABA);
    const r = await c.businessAccounts.reachEstimate(WABA, { targetCountry: 'DE', dateInterval: 'L7D' });
    expect(Array.isArray(r.estimates)).toBe(true);
    await c.businessAccounts.getAutomaticCreativeOptimizations(WABA);
    await c.businessAccounts.patchAutomaticCreativeOptimizations(WABA, {});
  });

  it('phone numbers: list, get (+ encoded as %2B), profile, settings, register, commerce settings, contact book', async () => {
    const nums = await collect(c.phoneNumbers.iterate());
    expect(nums.some((n) => n.phoneNumber === BIZ)).toBe(true);
    const ref = { wabaId: WABA, phoneNumber: BIZ };
    expect((await c.phoneNumbers.get(ref)).phoneNumber).toBe(BIZ);
    await c.phoneNumbers.profile(ref);
    const saved = await c.phoneNumbers.saveSettings(ref, { calling: { status: 'ENABLED' }, capture: { recordingEnabled: true, transcriptionEnabled: true, purpose: 'quality', announcementLanguage: 'en' } });
    expect(saved).toBeTruthy();
    expect((await c.phoneNumbers.getSettings(ref, 'calling')).calling?.status).toBe('ENABLED');
    expect(await c.phoneNumbers.settingsMatch(ref, { calling: { status: 'ENABLED' }, capture: { recordingEnabled: true, transcriptionEnabled: true, purpose: 'quality', announcementLanguage: 'en' } })).toEqual({ calling: true, capture: true });
    expect(await c.phoneNumbers.settingsMatch(ref, { calling: { status: 'DISABLED' } })).toEqual({ calling: false });
    const cap = await c.phoneNumbers.getSettings(ref, 'capture');
    expect(JSON.stringify(cap)).toContain('quality');
    await c.phoneNumbers.register(ref, { pin: '123456' });
    await c.phoneNumbers.chatCommerceSettings(ref, { isCartEnabled: true });
    const del = await c.phoneNumbers.deleteContactBookEntry(ref, 'US.abc123');
    expect(del.success).toBe(true);
  });

  it('calls: user-initiated preAccept → accept → terminate with a real SDP answer, then recording download', async () => {
    const call = await emu.calls.start({ to: BIZ, from: USER });
    const { peer, sdp } = await AudioPeer.answerer(call.sdp);
    try {
      const ref = { phoneId: call.phoneId, wacid: call.wacid };
      expect(await c.calls.preAccept({ ...ref, sdpType: 'answer', sdp }, { deadline: Date.now() + 20_000 })).toEqual({ wacid: call.wacid, success: true });
      expect(await c.calls.accept({ ...ref, sdpType: 'answer', sdp }, { deadline: Date.now() + 20_000 })).toEqual({ wacid: call.wacid, success: true });
      peer.startSending({ kind: 'tone', hz: 600 });
      await new Promise((r) => setTimeout(r, 300));
      expect((await c.calls.terminate(ref)).success).toBe(true);
    } finally {
      await peer.close();
    }
    const rec = await waitForEvent((e) => e.type === 'chat.call.recording.updated' && e.payload.wacid === call.wacid);
    expect(rec.payload.result).toBe('AVAILABLE');
    const dir = await mkdtemp(join(tmpdir(), 'sb-rt-'));
    const out = join(dir, `${rec.payload.mediaAssetId}.ogg`);
    const r = await c.calls.downloadMedia(rec.payload.mediaAssetId, { out });
    const bytes = await readFile(out);
    expect(bytes.length).toBe(r.bytes);
    expect(bytes.subarray(0, 4).toString()).toBe('OggS');
    await expect(c.calls.downloadMedia('cma_missing', { out: join(dir, 'x.ogg') })).rejects.toBeInstanceOf(NotFoundError);
  });

  it('calls: reject an inbound call', async () => {
    const call = await emu.calls.start({ to: BIZ });
    expect(await c.calls.reject({ phoneId: call.phoneId, wacid: call.wacid })).toEqual({ wacid: call.wacid, success: true });
  });

  it('calls: permission request, then a business-initiated connect returns a wacid', async () => {
    const user = '+14155550999';
    await c.messages.requestCallPermission({ from: BIZ, to: user, body: 'May we call you?' });
    await waitForEvent((e) => e.type === 'chat.inbound_message.received' && JSON.stringify(e.payload).includes('call_permission_reply'));
    const { peer, sdp } = await AudioPeer.offerer();
    try {
      const r = await c.calls.connect({ from: BIZ, to: user, sdp });
      expect(r.success).toBe(true);
      expect(r.wacid).toBeTruthy();
      await c.calls.terminate({ phoneId: PHONE_ID, wacid: r.wacid });
    } finally {
      await peer.close();
    }
  });

  it('groups: create, list, get, invite link, join requests, remove participants, settings, delete; group messages', async () => {
    // The invite-link message is a template send: it needs an approved template.
    await c.templates.create({ wabaId: WABA, name: 'group_invite', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Join us' }] });
    await waitForEvent((e) => e.type === 'chat.template.reviewed' && JSON.stringify(e.payload).includes('group_invite'));
    const created = await c.groups.create(BIZ, { subject: 'Round trip', description: 'test', joinApprovalMode: 'approval_required' });
    expect(created.status).toBe('pending');
    const life = await waitForEvent((e) => e.type === 'chat.group.lifecycle_update' && e.payload.requestId === created.requestId);
    const groupId: string = life.payload.groupId;
    const all = await collect(c.groups.iterate(BIZ, { limit: 1 }));
    expect(all.some((g) => (g.groupId ?? g.id) === groupId)).toBe(true);
    expect((await c.groups.get(BIZ, groupId)).subject).toBe('Round trip');
    await c.groups.getInviteLink(BIZ, groupId);
    await c.groups.resetInviteLink(BIZ, groupId);
    await c.groups.sendInviteLink(BIZ, { to: USER, templateName: 'group_invite', languageCode: 'en_US', groupId });
    await control('POST', `/messaging/groups/${encodeURIComponent(groupId)}/join`, { user: USER });
    const reqs = await collect(c.groups.iterateJoinRequests(BIZ, groupId));
    expect(reqs.length).toBe(1);
    const approved = await c.groups.approveJoinRequests(BIZ, groupId, [reqs[0]!.joinRequestId]);
    expect(approved.failedJoinRequests ?? []).toEqual([]);
    const gm = await c.groupMessages.send({ from: BIZ, groupId, type: 'text', text: { body: 'hello group' } });
    expect((await c.groupMessages.get(gm.id)).id).toBe(gm.id);
    await c.groups.updateSettings(BIZ, groupId, { subject: 'Renamed' });
    await c.groups.removeParticipants(BIZ, groupId, [USER, USER]);
    expect((await c.groups.delete(BIZ, groupId)).status).toBe('pending');
    await expect(c.groups.rejectJoinRequests(BIZ, groupId, [])).rejects.toBeInstanceOf(ValidationError);
  });

  it('flows: create, list, get, metadata, structure, preview, publish, deprecate; delete a draft', async () => {
    const f = await c.flows.create({ name: 'rt flow', categories: ['OTHER'], endpointUri: 'https://example.com/flow' });
    expect((await c.flows.get(f.id!)).endpointUrl).toBe('https://example.com/flow');
    expect((await collect(c.flows.iterate())).some((x) => x.id === f.id)).toBe(true);
    await c.flows.updateMetadata(f.id!, { name: 'rt flow 2' });
    await c.flows.updateStructure(f.id!, { flowJson: { version: '6.0', screens: [] } });
    expect(await c.flows.preview(f.id!)).toContain('rt flow 2');
    await c.flows.publish(f.id!);
    await c.flows.deprecate(f.id!);
    const draft = await c.flows.create({ name: 'draft', categories: ['OTHER'] });
    await c.flows.delete(draft.id!);
    await expect(c.flows.get(draft.id!)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('contacts: create, list, get by id and by phone number, update, attributes, delete', async () => {
    const ct = await c.contacts.create({ phoneNumber: '+14155550777', remarkName: 'Ada', tags: ['vip'] });
    expect((await collect(c.contacts.iterate({ limit: 100 }))).some((x) => x.id === ct.id)).toBe(true);
    expect((await c.contacts.get(ct.id)).remarkName).toBe('Ada');
    expect((await c.contacts.get('+14155550777')).id).toBe(ct.id);
    expect((await c.contacts.update(ct.id, { nickName: 'A' })).nickName).toBe('A');
    await c.contacts.attributes();
    await c.contacts.delete(ct.id);
    await expect(c.contacts.get(ct.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('unsubscribers: list (cursor), per customer, per channel', async () => {
    await control('POST', '/messaging/unsubscribers', { customer: '+14155550888', channel: 'sms' });
    const all = await collect(c.unsubscribers.iterate({ limit: 1 }));
    expect(all.some((u) => JSON.stringify(u).includes('+14155550888'))).toBe(true);
    const mine = await c.unsubscribers.forCustomer('+14155550888');
    expect(mine.length).toBe(1);
    expect((await c.unsubscribers.forChannel('+14155550888', 'sms')).source).toBeTruthy();
  });

  it('custom events and verifications', async () => {
    const ev = await c.customEvents.send({ name: 'order_paid', phoneNumber: USER, properties: { amount: 12 } });
    expect(ev.id).toBeTruthy();
    const v = await c.verifications.start({ to: USER, channel: 'sms', externalId: 'rt-ver-1' });
    expect(v.externalId).toBe('rt-ver-1');
  });

  it('webhook endpoints: create, list, get, update', async () => {
    const ep = await c.webhookEndpoints.create({ url: 'https://example.com/hook', enabledEvents: ['chat.message.updated'] });
    expect((await collect(c.webhookEndpoints.iterate())).some((x) => x.id === ep.id)).toBe(true);
    expect((await c.webhookEndpoints.get(ep.id)).id).toBe(ep.id);
    await c.webhookEndpoints.update(ep.id, { enabledEvents: ['chat.message.updated', 'chat.call.connect'] });
  });
});

describe('client ↔ emulator: rate limits', () => {
  it('a burst of 500 queued sends is shaped under the emulator\'s 200 rps per sender: no 429 even with retries off', { timeout: 60_000 }, async () => {
    const strict = createServiceClient({ baseUrl: emu.baseUrl, apiKey: emu.apiKey, retry: noRetry });
    const results = await Promise.allSettled(Array.from({ length: 500 }, (_, i) => strict.messages.sendText({ from: BIZ, to: USER, body: `burst ${i}` })));
    const rejected = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason);
    expect(rejected.filter((e) => e instanceof RateLimitedError)).toEqual([]);
    expect(rejected).toEqual([]);
  });
});

// Each CLI run is a fresh Node process with tsx: seconds apiece on a busy 2-core machine.
describe('CLI ↔ emulator', { timeout: 120_000 }, () => {
  const env = () => ({ SERVICE_BASE_URL: emu.baseUrl, SERVICE_API_KEY: emu.apiKey });

  it('balance, messages send-text / send-template / get, templates list, permissions request', async () => {
    expect((await runBin(['balance'], env())).stdout).toMatch(/^Balance: [\d.]+ [A-Z]{3}\n$/);
    const sent = await runBin(['messages', 'send-text', '--from', BIZ, '--to', USER, '--body', 'from the CLI', '--json'], env());
    expect(sent.code).toBe(0);
    const id = JSON.parse(sent.stdout).id as string;
    const got = await runBin(['messages', 'get', id], env());
    expect(got.stdout).toContain(`id: ${id}`);
    await c.templates.create({ wabaId: WABA, name: 'cli_tpl', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Hi {{1}}', example: { body_text: [['x']] } }] });
    await waitForEvent((e) => e.type === 'chat.template.reviewed' && JSON.stringify(e.payload).includes('cli_tpl'));
    const tl = await runBin(['templates', 'list', '--status', 'APPROVED', '--all'], env());
    expect(tl.code).toBe(0);
    expect(tl.stdout).toContain('cli_tpl  en_US  UTILITY  APPROVED');
    const st = await runBin(['messages', 'send-template', '--from', BIZ, '--to', USER, '--name', 'cli_tpl', '--language', 'en_US', '--param', 'Ada'], env());
    expect(st).toMatchObject({ code: 0 });
    const pr = await runBin(['permissions', 'request', '--from', BIZ, '--to', '+14155550444', '--body', 'May we call?'], env());
    expect(pr.code).toBe(0);
    expect(pr.stdout).toMatch(/^Call permission request \S+ accepted/);
  });

  it('sms send, emails send, contacts list, calls media, and errors', async () => {
    expect((await runBin(['sms', 'send', '--to', USER, '--text', 'hi'], env())).code).toBe(0);
    expect((await runBin(['emails', 'send', '--from', 'ops@example.com', '--to', 'a@example.com', '--subject', 's', '--content', 'c'], env())).stdout).toMatch(/^Email \S+ accepted/);
    await c.contacts.create({ phoneNumber: '+14155550666', remarkName: 'Cli' });
    expect((await runBin(['contacts', 'list', '--all'], env())).stdout).toContain('+14155550666  Cli');
    const asset = [...emu.capture.media.values()][0];
    expect(asset).toBeDefined();
    const dir = await mkdtemp(join(tmpdir(), 'sb-rt-cli-'));
    const m = await runBin(['calls', 'media', asset!.id, '--out', join(dir, 'r.ogg')], env());
    expect(m.code).toBe(0);
    expect(m.stderr).toContain('(100%)');
    expect((await readFile(join(dir, 'r.ogg'))).equals(asset!.bytes)).toBe(true);
    const missing = await runBin(['calls', 'media', 'cma_nope', '--out', join(dir, 'n.ogg')], env());
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^NOT_FOUND: .+ \(requestId req_/);
    const bad = await runBin(['sms', 'send', '--to', '555', '--text', 'x'], env());
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^VALIDATION_ERROR: to: /);
    const unauthorized = await runBin(['balance'], { ...env(), SERVICE_API_KEY: 'wrong-key' });
    expect(unauthorized.code).toBe(1);
    expect(unauthorized.stderr).toMatch(/^UNAUTHORIZED: /);
  });
});
