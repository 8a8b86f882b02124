/**
 * The messaging surface through the real emulator: a real port, real HTTP, and a real
 * webhook receiver whose deliveries are verified with an independent HMAC computation.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type Emulator } from '../index.ts';
import { startReceiver, type ReceivedDelivery, type TestReceiver } from '../receiver.ts';

const KEY = 'int-key-1';
const SECRET = 'whsec_integration_secret';
const BIZ = '+15550100001';
const WABA = '300000000000001';
const USER = '+5511987654321';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function setup(seed = 7): Promise<{ emu: Emulator; rx: TestReceiver; api: (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }> }> {
  const rx = await startReceiver();
  cleanups.push(() => rx.close());
  const emu = await startEmulator({
    apiKeys: [KEY],
    seed,
    timeScale: 0.001,
    webhookEndpoints: [{ url: rx.url, secret: SECRET }],
    businessNumbers: [{ id: '400000000000001', phoneNumber: BIZ, wabaId: WABA }],
    callee: { action: 'noAnswer' },
  });
  cleanups.push(() => emu.close());
  const api = async (method: string, path: string, body?: unknown) => {
    const url = path.startsWith('/_emulator') ? `${emu.controlUrl}${path.slice('/_emulator'.length)}` : `${emu.baseUrl}${path}`;
    const res = await fetch(url, {
      method,
      headers: { 'X-API-Key': KEY, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: res.status, body: await res.json() };
  };
  return { emu, rx, api };
}

/** HMAC-SHA256(secret, `${t}.${raw body}`), lowercase hex, as calling-facts.md documents; computed here, not by the emulator's code. */
function signed(d: ReceivedDelivery): boolean {
  const m = /^t=(\d+),s=([0-9a-f]{64})$/.exec(String(d.headers['service-signature'] ?? ''));
  if (!m) return false;
  const expected = createHmac('sha256', SECRET).update(`${m[1]}.${d.rawBody}`).digest();
  return timingSafeEqual(expected, Buffer.from(m[2]!, 'hex'));
}
const payload = (d: ReceivedDelivery, name: string) => d.event[name] as Record<string, any>;

const permissionRequest = {
  from: BIZ,
  to: USER,
  type: 'interactive',
  interactive: { type: 'call_permission_request', action: { name: 'call_permission_request' }, body: { text: 'May we call?' } },
};
const fakeOffer = ['v=0', 'o=- 1 2 IN IP4 127.0.0.1', 's=-', 't=0 0', 'm=audio 9 UDP/TLS/RTP/SAVPF 111', 'c=IN IP4 0.0.0.0',
  'a=rtpmap:111 opus/48000/2', `a=fingerprint:sha-256 ${Array.from({ length: 32 }, () => 'AB').join(':')}`, 'a=setup:actpass', ''].join('\r\n');

describe('messaging through the real emulator and a signed receiver', () => {
  it('a permission request: signed status events, a signed permission reply, and the business-initiated connect stops answering 138006', async () => {
    const { rx, api } = await setup();
    const before = await api('POST', '/chat/calls/connect', { from: BIZ, to: USER, sdpType: 'offer', sdp: fakeOffer });
    expect(before.body.error.chatApiError.code).toBe(138006);

    const sent = await api('POST', '/chat/messages', permissionRequest);
    expect(sent.status).toBe(200);
    expect(sent.body.status).toBe('accepted');
    await rx.waitFor((r) => r.some((d) => d.event.type === 'chat.inbound_message.received'));
    const mine = rx.received.filter((d) => d.event.type === 'chat.message.updated' && payload(d, 'chatMessage').id === sent.body.id);
    expect(mine.map((d) => payload(d, 'chatMessage').status)).toEqual(['sent', 'delivered', 'read']);
    const reply = rx.received.find((d) => d.event.type === 'chat.inbound_message.received')!;
    expect(payload(reply, 'chatInboundMessage').interactive.call_permission_reply).toMatchObject({ response: 'accept', is_permanent: false, response_source: 'user_action' });
    expect([...mine, reply].every(signed)).toBe(true);
    expect([...mine, reply].every((d) => d.event.apiVersion === 'v2')).toBe(true);

    const after = await api('POST', '/chat/calls/connect', { from: BIZ, to: USER, sdpType: 'offer', sdp: fakeOffer });
    expect(after.body.error?.chatApiError?.code).not.toBe(138006);
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({ wacid: expect.any(String), success: true });
  });

  it('a temporary grant expires on the emulator clock: after 7 days the connect is refused with 138006 again; a rejection is refused too', async () => {
    const { rx, api } = await setup();
    await api('POST', '/chat/messages', permissionRequest);
    await rx.waitFor((r) => r.some((d) => d.event.type === 'chat.inbound_message.received'));
    await api('POST', '/_emulator/clock/advance', { ms: 7 * 24 * 3600_000 + 1000 });
    const expired = await api('POST', '/chat/calls/connect', { from: BIZ, to: USER, sdpType: 'offer', sdp: fakeOffer });
    expect(expired.body.error.chatApiError.code).toBe(138006);

    await api('PATCH', '/_emulator/messaging/knobs', { permissionReply: 'reject' });
    const other = '+5511900000001';
    await api('POST', '/chat/messages', { ...permissionRequest, to: other });
    await rx.waitFor((r) => r.filter((d) => d.event.type === 'chat.inbound_message.received').length === 2);
    const rejected = await api('POST', '/chat/calls/connect', { from: BIZ, to: other, sdpType: 'offer', sdp: fakeOffer });
    expect(rejected.body.error.chatApiError.code).toBe(138006);
  });

  it('the permission request ration holds over HTTP, and the control clock lifts it', async () => {
    const { api } = await setup();
    await api('PATCH', '/_emulator/messaging/knobs', { messageOutcome: 'accepted' });
    expect((await api('POST', '/chat/messages/sendDirectly', permissionRequest)).status).toBe(200);
    const refused = await api('POST', '/chat/messages/sendDirectly', permissionRequest);
    expect(refused.status).toBe(400);
    expect(refused.body.error.chatApiError.code).toBe(138009);
    await api('POST', '/_emulator/clock/advance', { ms: 24 * 3600_000 });
    expect((await api('POST', '/chat/messages/sendDirectly', permissionRequest)).status).toBe(200);
  });

  it('template review and group creation arrive as signed events matched by officialTemplateId and requestId', async () => {
    const { rx, api } = await setup();
    const tpl = await api('POST', '/chat/templates', { wabaId: WABA, name: 'hello', language: 'en', category: 'UTILITY', components: [{ type: 'BODY', text: 'hi' }] });
    expect(tpl.body.status).toBe('PENDING');
    const group = await api('POST', `/chat/${encodeURIComponent(BIZ)}/groups`, { subject: 'Ops' });
    expect(group.body.status).toBe('pending');
    await rx.waitFor((r) => r.some((d) => d.event.type === 'chat.template.reviewed') && r.some((d) => d.event.type === 'chat.group.lifecycle_update'));
    const reviewed = rx.received.find((d) => d.event.type === 'chat.template.reviewed')!;
    const lifecycle = rx.received.find((d) => d.event.type === 'chat.group.lifecycle_update')!;
    expect(signed(reviewed) && signed(lifecycle)).toBe(true);
    expect(payload(reviewed, 'chatTemplate')).toMatchObject({ officialTemplateId: tpl.body.officialTemplateId, status: 'APPROVED' });
    expect(payload(lifecycle, 'chatGroup')).toMatchObject({ requestId: group.body.requestId, status: 'created', type: 'group_create' });
  });

  /** One run: a Max Price template, then three sends; returns what each message went through. */
  async function run(sequential: boolean) {
    const { rx, api } = await setup(42);
    await api('PATCH', '/_emulator/messaging/knobs', { duplicateStatusEvents: true, lateLowerStatus: true });
    await api('POST', '/chat/templates', { wabaId: WABA, name: 'promo', language: 'en', category: 'MARKETING', components: [{ type: 'BODY', text: 'x' }], bidSpec: { maxBid: '0.05' } });
    await rx.waitFor((r) => r.some((d) => d.event.type === 'chat.template.reviewed'));
    const updates = () => rx.received.filter((d) => d.event.type === 'chat.message.updated');
    for (const [i, to] of ['+14155550101', '+14155550102', '+14155550103'].entries()) {
      await api('POST', '/chat/messages', { from: BIZ, to, type: 'template', template: { name: 'promo', language: { code: 'en' } } });
      if (sequential) await rx.waitFor(() => updates().length === (i + 1) * 8);
    }
    await rx.waitFor(() => updates().length === 3 * 8);
    const byMessage: Record<string, string[]> = {};
    for (const d of updates()) {
      const m = payload(d, 'chatMessage');
      (byMessage[m.id] ??= []).push(`${m.status}:${m.totalPrice}`);
    }
    // Deliveries are concurrent HTTP requests: compare as sets keyed by the stable event id.
    const triples = updates().map((d) => `${d.event.id}:${payload(d, 'chatMessage').id}:${payload(d, 'chatMessage').status}`).sort();
    return { byMessage, triples };
  }

  it('same seed, same requests: each message gets the same id, status sequence and final price, even when their timers interleave', async () => {
    const a = await run(false);
    const b = await run(false);
    expect(Object.keys(a.byMessage)).toHaveLength(3);
    expect(b.byMessage).toEqual(a.byMessage);
    for (const seq of Object.values(a.byMessage)) {
      expect(seq.map((x) => x.split(':')[0])).toEqual(['sent', 'sent', 'delivered', 'delivered', 'read', 'read', 'sent', 'sent']);
    }
  });

  it('same seed, same requests one at a time: every event (id included) is the same', async () => {
    const a = await run(true);
    const b = await run(true);
    expect(a.triples).toHaveLength(24);
    expect(b.triples).toEqual(a.triples);
  });
});
