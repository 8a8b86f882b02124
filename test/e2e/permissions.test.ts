/**
 * Calling permission end to end (server/permissions): the bridge's REST routes send the
 * request through the real Service client to the emulator, the emulator's chat user replies
 * (knob `permissionReply`) with a signed `chat.inbound_message.received`, the workers record
 * it in a private redis-server, supervisors (and the requester) get `permission.updated`
 * over the WebSocket — across nodes — and `call.dial` is refused with `NO_PERMISSION`
 * after a rejection or an expiry, without a request to the Service.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Permission, ServerMsg } from '../../shared/protocol.ts';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.ts';
import { until, ProtocolClient, agentClient, emulatorRequest, login, postEvent, sleep, type Bridge, type BridgeOptions } from './harness.ts';
import { programSuite } from './suite.ts';
import { workersLag } from '../../server/webhooks/workers.ts';

const BUSINESS = '+15550100001';
const PHONE_ID = '100000000000001';
const WABA = '200000000000001';
/** A syntactically fine offer: these dials are refused before anything is sent, or refused by the Service. */
const FAKE_SDP = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n';

let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
}, 30_000);
afterAll(async () => {
  await redis?.close();
});
const suite = programSuite();

async function bridge(opts: BridgeOptions = {}): Promise<Bridge> {
  const b = await suite.startBridge({ agents: ['agent1'], supervisors: ['boss'], redisUrl: redis.url, ...opts });
  if (!opts.sharedEmulator) await emulatorRequest(b.emu, 'PATCH', '/messaging/knobs', { stepDelayMs: 20, reviewDelayMs: 20 });
  return b;
}

interface Answer {
  status: number;
  json: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  headers: Headers;
}

async function api(b: Bridge, cookie: string | undefined, method: string, path: string, body?: unknown, origin: string | null = b.url): Promise<Answer> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (cookie) headers.cookie = cookie;
  if (origin) headers.origin = origin;
  const r = await fetch(`${b.url}${path}`, { method, headers, ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}) });
  const text = await r.text();
  return { status: r.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {}, headers: r.headers };
}

const permissionOf = async (b: Bridge, cookie: string, user: string): Promise<Permission> => {
  const r = await api(b, cookie, 'GET', `/api/permissions?from=${encodeURIComponent(BUSINESS)}&user=${encodeURIComponent(user)}`);
  if (r.status !== 200) throw new Error(`GET /api/permissions: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json.permission as Permission;
};

const updates = (c: ProtocolClient, user: string) =>
  c.received.filter((m): m is Extract<ServerMsg, { type: 'permission.updated' }> => m.type === 'permission.updated' && m.permission.user === user).map((m) => m.permission);

/** Count the bridge's requests to one endpoint of the emulator: an endpoint fault that only counts down. */
async function countRequests(b: Bridge, endpoint: string): Promise<() => Promise<number>> {
  const start = 1_000_000;
  await emulatorRequest(b.emu, 'PATCH', '/faults', { endpoints: { [endpoint]: { kind: 'slow', value: 1, times: start } } });
  return async () => {
    const f = (await emulatorRequest(b.emu, 'GET', '/faults')) as { endpoints: Record<string, { times: number }> };
    return start - f.endpoints[endpoint]!.times;
  };
}

/** Count the bridge's `POST /chat/calls/connect` requests. */
const countConnects = (b: Bridge) => countRequests(b, 'POST /chat/calls/connect');

/** Every message send (`POST /chat/messages` and `/chat/messages/sendDirectly`). */
const MESSAGE_SENDS = 'POST /chat/messages*';

/** Ten permission requests for one user at once, spread over the given nodes. */
async function tenAtOnce(nodes: Array<{ b: Bridge; cookie: string }>, user: string): Promise<Answer[]> {
  return Promise.all(Array.from({ length: 10 }, (_, i) => api(nodes[i % nodes.length]!.b, nodes[i % nodes.length]!.cookie, 'POST', '/api/permissions/request', { from: BUSINESS, to: user })));
}

function expectOneThrough(answers: Answer[]): void {
  const statuses = answers.map((r) => r.status).sort();
  expect(statuses, JSON.stringify(answers.map((r) => r.json))).toEqual([202, ...Array<number>(9).fill(429)]);
  for (const r of answers.filter((x) => x.status === 429)) {
    expect(r.json.error).toMatchObject({ status: 429, code: 'TOO_MANY_REQUESTS' });
    expect(r.json.error.message).toMatch(/1 per 24 hours/);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(23 * 3600);
  }
}

describe('call permission (REST + webhook + WebSocket + dial check)', () => {
  it('request on one node → the user accepts → granted with its expiry; supervisors and the requesting agent are told on the other node', async () => {
    const prefix = uniquePrefix('perm');
    const env = { SESSION_SECRET: randomBytes(24).toString('base64url') };
    // Node B owns the emulator and receives the webhooks; node A holds the sockets.
    const b = await bridge({ storePrefix: prefix, env });
    const a = await bridge({ storePrefix: prefix, env, sharedEmulator: { emu: b.emu, secret: b.secret } });
    const boss = suite.track(await agentClient(a.url, 'boss', { available: false }));
    const agent = suite.track(await agentClient(a.url, 'agent1', { available: false }));
    const user = '+15550123501';
    const cookie = await login(b.url, 'agent1');

    const before = await permissionOf(a, await login(a.url, 'boss'), user);
    expect(before).toMatchObject({ from: BUSINESS, user, state: 'unknown' });

    const t0 = Date.now();
    const r = await api(b, cookie, 'POST', '/api/permissions/request', { from: BUSINESS, to: user });
    expect(r.status, JSON.stringify(r.json)).toBe(202);
    expect(r.json.messageId).toMatch(/^msg_/);
    expect(r.json.permission).toMatchObject({ from: BUSINESS, user, state: 'requested', requestedBy: 'agent1' });

    // The emulator saw the interactive request with the default text.
    const sent = (await emulatorRequest(b.emu, 'GET', `${b.emu.baseUrl}/chat/messages/${r.json.messageId as string}`)) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(sent.interactive).toMatchObject({ type: 'call_permission_request', action: { name: 'call_permission_request' } });
    expect(sent.interactive.body.text).toMatch(/May we call you\?/);

    const granted = await boss.next('permission.updated', (m) => m.permission.user === user && m.permission.state === 'granted', 20_000);
    expect(granted.permission).toMatchObject({ from: BUSINESS, user, state: 'granted', permanent: false, requestedBy: 'agent1' });
    // Default temporary grant: 7 days (the emulator's expiration_timestamp is in epoch seconds).
    expect(granted.permission.expiresAt!).toBeGreaterThan(t0 + 7 * 24 * 3600_000 - 5_000);
    expect(granted.permission.expiresAt!).toBeLessThan(Date.now() + 7 * 24 * 3600_000 + 5_000);
    expect(updates(boss, user).map((p) => p.state)).toEqual(['requested', 'granted']);
    // The requesting agent (not a supervisor) is told too.
    await agent.next('permission.updated', (m) => m.permission.user === user && m.permission.state === 'granted', 10_000);
    expect(updates(agent, user).map((p) => p.state)).toEqual(['requested', 'granted']);

    const got = await permissionOf(a, cookie, user);
    expect(got).toMatchObject({ state: 'granted', permanent: false, expiresAt: granted.permission.expiresAt, requestedBy: 'agent1' });

    // Recorded under the user's BSUID too (the reply names it as fromUserId).
    const reply = ((await emulatorRequest(b.emu, 'GET', '/events?type=chat.inbound_message.received')).items as Array<Record<string, any>>) // eslint-disable-line @typescript-eslint/no-explicit-any
      .map((e) => e.chatInboundMessage)
      .find((m) => m.from === user);
    expect(reply?.fromUserId).toBeTruthy();
    expect(await permissionOf(a, cookie, reply!.fromUserId as string)).toMatchObject({ state: 'granted', user: reply!.fromUserId });

    // The ration: a second request within 24 h is refused before it reaches the Service.
    const again = await api(b, cookie, 'POST', '/api/permissions/request', { from: BUSINESS, to: user, body: 'Still OK to call?' });
    expect(again.status).toBe(429);
    expect(again.json.error).toMatchObject({ status: 429, code: 'TOO_MANY_REQUESTS' });
    expect(again.json.error.message).toMatch(/1 per 24 hours/);
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(3600);
  }, 60_000);

  it('the user rejects → rejected; a dial gets NO_PERMISSION and the Service sees no connect; asking again at once is a 409', async () => {
    const b = await bridge();
    const boss = suite.track(await agentClient(b.url, 'boss', { available: false }));
    const cookie = await login(b.url, 'boss');
    const user = '+15550123502';
    await emulatorRequest(b.emu, 'PATCH', '/messaging/knobs', { permissionReply: 'reject' });

    const r = await api(b, cookie, 'POST', '/api/permissions/request', { from: BUSINESS, to: user, body: 'Acme support: may we call you about ticket 42?' });
    expect(r.status, JSON.stringify(r.json)).toBe(202);
    await boss.next('permission.updated', (m) => m.permission.user === user && m.permission.state === 'rejected', 20_000);
    expect(updates(boss, user).map((p) => p.state)).toEqual(['requested', 'rejected']);
    const p = await permissionOf(b, cookie, user);
    expect(p).toMatchObject({ state: 'rejected', requestedBy: 'boss' });
    expect(p.expiresAt).toBeUndefined();

    const connects = await countConnects(b);
    const refused = await boss.request({ type: 'call.dial', from: BUSINESS, to: user, sdp: FAKE_SDP });
    expect(refused).toMatchObject({ type: 'error', code: 'NO_PERMISSION' });
    expect((refused as { message: string }).message).toMatch(/rejected the call permission request/);
    expect((refused as { message: string }).message).toMatch(/\d{4}-\d\d-\d\dT/);
    expect(await connects()).toBe(0);
    expect(await b.store.listCalls()).toEqual([]);

    // A user the bridge knows nothing about: the dial goes to the Service, which decides
    // (no permission → its refusal). This also shows the counter counts.
    const unknown = await boss.request({ type: 'call.dial', from: BUSINESS, to: '+15550123599', sdp: FAKE_SDP });
    expect(unknown).toMatchObject({ type: 'error', code: 'SERVICE_ERROR' });
    expect(await connects()).toBe(1);

    const again = await api(b, cookie, 'POST', '/api/permissions/request', { from: BUSINESS, to: user });
    expect(again.status).toBe(409);
    expect(again.json.error).toMatchObject({ status: 409, code: 'CONFLICT' });
    expect(again.json.error.message).toMatch(/rejected/);
    expect(typeof again.json.error.requestId).toBe('string');
  }, 60_000);

  it('a granted permission expires: expired on read, then NO_PERMISSION without a request to the Service', async () => {
    const b = await bridge();
    const boss = suite.track(await agentClient(b.url, 'boss', { available: false }));
    const cookie = await login(b.url, 'boss');
    const user = '+15550123503';
    await emulatorRequest(b.emu, 'PATCH', '/messaging/knobs', { permissionExpirySeconds: 3 });

    expect((await api(b, cookie, 'POST', '/api/permissions/request', { from: BUSINESS, to: user })).status).toBe(202);
    const granted = await boss.next('permission.updated', (m) => m.permission.user === user && m.permission.state === 'granted', 20_000);
    expect(granted.permission.expiresAt! - Date.now()).toBeLessThan(3_500);
    const expired = await until('the grant to expire', async () => {
      const p = await permissionOf(b, cookie, user);
      return p.state === 'expired' ? p : undefined;
    });
    expect(expired.expiresAt).toBe(granted.permission.expiresAt);
    expect(Date.now()).toBeGreaterThanOrEqual(expired.expiresAt!);
    // Supervisors are told when it runs out.
    const pushed = await boss.next('permission.updated', (m) => m.permission.user === user && m.permission.state === 'expired', 10_000);
    expect(pushed.permission.expiresAt).toBe(expired.expiresAt);
    expect(updates(boss, user).map((p) => p.state)).toEqual(['requested', 'granted', 'expired']);

    const connects = await countConnects(b);
    const refused = await boss.request({ type: 'call.dial', from: BUSINESS, to: user, sdp: FAKE_SDP });
    expect(refused).toMatchObject({ type: 'error', code: 'NO_PERMISSION' });
    expect((refused as { message: string }).message).toMatch(new RegExp(`expired at ${new Date(expired.expiresAt!).toISOString().replace(/\./g, '\\.')}`));
    expect(await connects()).toBe(0);
  }, 60_000);

  it('a template with a call_permission_request component, addressed by BSUID, asks too', async () => {
    const b = await bridge();
    const boss = suite.track(await agentClient(b.url, 'boss', { available: false }));
    const cookie = await login(b.url, 'boss');
    const created = await emulatorRequest(b.emu, 'POST', `${b.emu.baseUrl}/chat/templates`, {
      wabaId: WABA,
      name: 'may_we_call',
      language: 'en_US',
      category: 'UTILITY',
      components: [{ type: 'BODY', text: 'May we call you?' }, { type: 'call_permission_request' }],
    });
    expect(created.status).toBe('PENDING');
    await until('the template to be approved', async () => {
      const ev = (await emulatorRequest(b.emu, 'GET', '/events?type=chat.template.reviewed')).items as unknown[];
      return ev.length > 0 ? true : undefined;
    });
    const user = 'US.Callback1234567';
    const r = await api(b, cookie, 'POST', '/api/permissions/request', { from: BUSINESS, recipient: user, template: { name: 'may_we_call', language: 'en_US' } });
    expect(r.status, JSON.stringify(r.json)).toBe(202);
    expect(r.json.permission).toMatchObject({ user, state: 'requested' });
    await boss.next('permission.updated', (m) => m.permission.user === user && m.permission.state === 'granted', 20_000);
    expect(await permissionOf(b, cookie, user)).toMatchObject({ user, state: 'granted' });

    // An unknown template: the Service's refusal, its code and reason.
    const bad = await api(b, cookie, 'POST', '/api/permissions/request', { from: BUSINESS, to: '+15550123504', template: { name: 'no_such_template', language: 'en_US' } });
    expect(bad.status).toBe(400);
    expect(bad.json.error.message).toMatch(/the Service refused: .*no template no_such_template/);
  }, 60_000);

  it('validation names the field; roles (401, 403) and the same-origin check; GET /api/numbers lists the business numbers', async () => {
    const b = await bridge();
    const boss = await login(b.url, 'boss');
    const agent = await login(b.url, 'agent1');
    const ops = await login(b.url, 'ops');
    const post = (cookie: string | undefined, body: unknown, origin?: string | null) => api(b, cookie, 'POST', '/api/permissions/request', body, origin === undefined ? b.url : origin);

    const cases: Array<[unknown, RegExp]> = [
      [{ to: '+15550123456' }, /^from: is required/],
      [{ from: '15550100001', to: '+15550123456' }, /^from: must be an E\.164/],
      [{ from: BUSINESS }, /^to: to \(E\.164 phone number\) or recipient \(BSUID\) is required/],
      [{ from: BUSINESS, to: '+1 555 0123' }, /^to: must be an E\.164/],
      [{ from: BUSINESS, recipient: 'not-a-bsuid' }, /^recipient: must be a BSUID/],
      [{ from: BUSINESS, to: '+15550123456', body: 'x'.repeat(1025) }, /^body: must be at most 1024 characters/],
      [{ from: BUSINESS, to: '+15550123456', body: '  ' }, /^body: must be a non-empty string/],
      [{ from: BUSINESS, to: '+15550123456', template: { name: 'x' } }, /^template\.language:/],
      [{ from: BUSINESS, to: '+15550123456', body: 'hi', template: { name: 'x', language: 'en' } }, /^template: give either body/],
      ['not json', /^body: must be JSON/],
    ];
    for (const [body, rule] of cases) {
      const r = await post(agent, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.json.error).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
      expect(r.json.error.message).toMatch(rule);
    }
    // A business number that is not this key's: the Service's 400 with its reason.
    const notOurs = await post(boss, { from: '+15559999999', to: '+15550123456' });
    expect(notOurs.status).toBe(400);
    expect(notOurs.json.error.message).toMatch(/the Service refused: .*from/);

    expect((await post(undefined, { from: BUSINESS, to: '+15550123456' })).status).toBe(401);
    const forbidden = await post(ops, { from: BUSINESS, to: '+15550123456' });
    expect(forbidden.status).toBe(403);
    expect(forbidden.json.error).toMatchObject({ status: 403, code: 'FORBIDDEN' });
    const crossOrigin = await post(boss, { from: BUSINESS, to: '+15550123456' }, 'https://evil.example');
    expect(crossOrigin.status).toBe(403);
    expect(crossOrigin.json.error.message).toMatch(/cross-origin/);

    const q = (cookie: string | undefined, query: string) => api(b, cookie, 'GET', `/api/permissions${query}`);
    expect((await q(boss, `?user=%2B15550123456`)).json.error.message).toMatch(/^from: is required/);
    expect((await q(boss, `?from=%2B15550100001`)).json.error.message).toMatch(/^user: is required/);
    const badUser = await q(boss, `?from=%2B15550100001&user=bob`);
    expect(badUser.status).toBe(400);
    expect(badUser.json.error.message).toMatch(/^user: must be an E\.164 phone number or a BSUID/);
    expect((await q(undefined, `?from=%2B15550100001&user=%2B15550123456`)).status).toBe(401);
    expect((await q(ops, `?from=%2B15550100001&user=%2B15550123456`)).status).toBe(403);
    expect((await q(agent, `?from=%2B15550100001&user=%2B15550123456`)).json.permission).toMatchObject({ state: 'unknown' });

    const numbers = await api(b, agent, 'GET', '/api/numbers');
    expect(numbers.status).toBe(200);
    expect(numbers.json.numbers).toContainEqual(expect.objectContaining({ phoneNumber: BUSINESS, phoneId: PHONE_ID }));
    expect((await api(b, ops, 'GET', '/api/numbers')).status).toBe(403);
    expect((await api(b, undefined, 'GET', '/api/numbers')).status).toBe(401);
    // Cached: a Service failure within the minute does not show.
    await emulatorRequest(b.emu, 'PATCH', '/faults', { endpoints: { 'GET /chat/phoneNumbers': { kind: '5xx', value: 500 } } });
    expect((await api(b, boss, 'GET', '/api/numbers')).status).toBe(200);
  }, 60_000);

  it('a request the Service took is answered 202 even when its record cannot be stored (no error that would invite a second request)', async () => {
    const own = await startRedis();
    try {
      const b = await bridge({ redisUrl: own.url });
      const boss = await login(b.url, 'boss');
      const user = `+1555${String(Date.now()).slice(-7)}`;
      // The Service takes its time; Redis goes away meanwhile.
      await emulatorRequest(b.emu, 'PATCH', '/faults', { endpoints: { 'POST /chat/messages': { kind: 'slow', value: 1500, times: 1 } } });
      const pending = api(b, boss, 'POST', '/api/permissions/request', { from: BUSINESS, to: user });
      await sleep(300);
      await own.stop();
      const r = await pending;
      expect(r.status).toBe(202);
      expect(r.json.permission).toMatchObject({ from: BUSINESS, user, state: 'requested', requestedBy: 'boss' });
      expect(typeof r.json.messageId).toBe('string');
      await own.start();
    } finally {
      await own.close();
    }
  }, 60_000);

  it('10 parallel requests for one user: exactly one 202 and one message at the Service; the other 9 are 429 with Retry-After', async () => {
    const b = await bridge();
    const sends = await countRequests(b, MESSAGE_SENDS);
    expectOneThrough(await tenAtOnce([{ b, cookie: await login(b.url, 'boss') }], '+15550123601'));
    expect(await sends()).toBe(1);
  }, 60_000);

  it('10 parallel requests for one user over two nodes on one Redis: exactly one 202 and one message at the Service', async () => {
    const prefix = uniquePrefix('ration');
    const env = { SESSION_SECRET: randomBytes(24).toString('base64url') };
    const b = await bridge({ storePrefix: prefix, env });
    const a = await bridge({ storePrefix: prefix, env, sharedEmulator: { emu: b.emu, secret: b.secret } });
    const sends = await countRequests(b, MESSAGE_SENDS);
    expectOneThrough(await tenAtOnce([{ b: a, cookie: await login(a.url, 'boss') }, { b, cookie: await login(b.url, 'agent1') }], '+15550123602'));
    expect(await sends()).toBe(1);
  }, 60_000);

  it('a request the Service refused (4xx) gives its ration slot back; one that failed with a 5xx (maybe sent) keeps it', async () => {
    const b = await bridge();
    const boss = await login(b.url, 'boss');
    // 4xx: an unknown template is refused, so nothing reached the user: the next request may go.
    const user = '+15550123603';
    const refused = await api(b, boss, 'POST', '/api/permissions/request', { from: BUSINESS, to: user, template: { name: 'no_such_template', language: 'en_US' } });
    expect(refused.status).toBe(400);
    expect((await api(b, boss, 'POST', '/api/permissions/request', { from: BUSINESS, to: user })).status).toBe(202);

    // 5xx: the Service may have sent it before failing: the slot stays taken, no second request.
    const other = '+15550123604';
    await emulatorRequest(b.emu, 'PATCH', '/faults', { endpoints: { [MESSAGE_SENDS]: { kind: '5xx', value: 500, times: 1 } } });
    const failed = await api(b, boss, 'POST', '/api/permissions/request', { from: BUSINESS, to: other });
    expect(failed.status).toBe(502);
    const sends = await countRequests(b, MESSAGE_SENDS);
    const again = await api(b, boss, 'POST', '/api/permissions/request', { from: BUSINESS, to: other });
    expect(again.status, JSON.stringify(again.json)).toBe(429);
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThan(23 * 3600);
    expect(await sends()).toBe(0);
  }, 60_000);

  it('GET /api/numbers answers 502 in the error shape when the Service fails', async () => {
    const b = await bridge();
    const boss = await login(b.url, 'boss');
    await emulatorRequest(b.emu, 'PATCH', '/faults', { endpoints: { 'GET /chat/phoneNumbers': { kind: '5xx', value: 500 } } });
    const r = await api(b, boss, 'GET', '/api/numbers');
    expect(r.status).toBe(502);
    expect(r.json.error).toMatchObject({ status: 502, code: 'SERVICE_ERROR' });
    expect(typeof r.json.error.requestId).toBe('string');
  }, 60_000);

  it('a repeated reply is processed once; an older reply does not overwrite a newer one', async () => {
    const b = await bridge();
    const boss = suite.track(await agentClient(b.url, 'boss', { available: false }));
    const cookie = await login(b.url, 'boss');
    const user = '+15550123505';
    const inbound = (id: string, response: 'accept' | 'reject', createTime: string) => ({
      id,
      from: user,
      to: BUSINESS,
      type: 'interactive',
      interactive: {
        type: 'call_permission_reply',
        call_permission_reply: { response, is_permanent: response === 'accept', response_source: 'user_action' },
      },
      createTime,
    });
    const t = (s: number) => new Date(Date.now() + s * 1000).toISOString();
    const newer = inbound('inb_newer', 'accept', t(0));
    // The Service repeats an event (new delivery, new event id, same message): once.
    expect(await postEvent(b, 'chat.inbound_message.received', 'chatInboundMessage', newer)).toBe(200);
    expect(await postEvent(b, 'chat.inbound_message.received', 'chatInboundMessage', newer)).toBe(200);
    await boss.next('permission.updated', (m) => m.permission.user === user && m.permission.state === 'granted', 20_000);
    // An older reply (a reject from before) arrives late, then a marker reply on another user
    // shows the workers have passed it.
    expect(await postEvent(b, 'chat.inbound_message.received', 'chatInboundMessage', inbound('inb_older', 'reject', t(-60)))).toBe(200);
    const marker = { ...inbound('inb_marker', 'accept', t(0)), from: '+15550123506' };
    expect(await postEvent(b, 'chat.inbound_message.received', 'chatInboundMessage', marker)).toBe(200);
    await boss.next('permission.updated', (m) => m.permission.user === '+15550123506', 20_000);
    await until('every event processed', async () => ((await workersLag(b.store)) === 0 ? true : undefined));
    expect(updates(boss, user).map((p) => p.state)).toEqual(['granted']);
    expect(await permissionOf(b, cookie, user)).toMatchObject({ state: 'granted', permanent: true });

    // A newer rejection wins.
    expect(await postEvent(b, 'chat.inbound_message.received', 'chatInboundMessage', inbound('inb_newest', 'reject', t(5)))).toBe(200);
    await boss.next('permission.updated', (m) => m.permission.user === user && m.permission.state === 'rejected', 20_000);
    expect(await permissionOf(b, cookie, user)).toMatchObject({ state: 'rejected' });
    // Ordinary inbound text messages are ignored by the permission handler.
    expect(await postEvent(b, 'chat.inbound_message.received', 'chatInboundMessage', { id: 'inb_text', from: user, to: BUSINESS, type: 'text', text: { body: 'hi' } })).toBe(200);
    await until('every event processed', async () => ((await workersLag(b.store)) === 0 ? true : undefined));
    expect(await permissionOf(b, cookie, user)).toMatchObject({ state: 'rejected' });
  }, 60_000);
});
