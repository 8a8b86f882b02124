/**
 * Scoping agents to their queues' numbers (customers, messages, call-back tasks, dial, permission requests), over the real bridge (real emulator,
 * real history in PGlite): with QUEUES_FILE, an agent reads and acts on the customers,
 * messages and call-back tasks of the numbers they take calls for only, and dials and asks
 * permission only from those numbers; supervisors see all. Plus the WebSocket upgrade's
 * answer to an invalid Host.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallbackTask } from '../../shared/records.ts';
import { PASSWORD, agentClient, fakeConnect, login, postEvent, sleep, startBridge, until, type Bridge, type ProtocolClient } from './harness.ts';

const WABA = '200000000000001';
/** ann takes N1's calls, bob N2's. */
const N1 = { id: '100000000000001', phoneNumber: '+15550100001', wabaId: WABA };
const N2 = { id: '100000000000002', phoneNumber: '+15550100002', wabaId: WABA };
const CUSTOMER = '+15550123801';

async function api(b: Bridge, cookie: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: Record<string, any> }> {
  const r = await fetch(`${b.url}${path}`, {
    method,
    headers: { cookie, origin: b.url, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: r.status, json: (await r.json()) as Record<string, any> };
}

/** The emulator's contact reads so far (each costs the account's management quota). */
const contactReads = (b: Bridge) => b.emu.ctx.requests.filter((r) => r.method === 'GET' && r.path.startsWith('/contact/contacts/')).length;

describe('queue scoping (QUEUES_FILE): customers, messages, call-back tasks, dial and permission requests', () => {
  let b: Bridge;
  let ann: string;
  let bob: string;
  let boss: string;
  let task: CallbackTask;
  const messageId = 'inb_scope_1';
  const clients: ProtocolClient[] = [];

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-access-'));
    writeFileSync(join(dir, 'queues.json'), JSON.stringify({ [N1.id]: ['ann'], [N2.id]: ['bob'] }));
    b = await startBridge({ history: true, agents: ['ann', 'bob'], supervisors: ['boss'], emulator: { businessNumbers: [N1, N2] }, env: { QUEUES_FILE: join(dir, 'queues.json') } });
    [ann, bob, boss] = await Promise.all([login(b.url, 'ann'), login(b.url, 'bob'), login(b.url, 'boss')]);
    // The customer calls N1 while nobody is available and hangs up: a call in history and an open task, both N1's.
    const wacid = 'wacid.scope-1';
    expect(await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(wacid, { phoneId: N1.id, to: N1.phoneNumber, from: CUSTOMER }))).toBe(200);
    await sleep(300);
    expect(await postEvent(b, 'chat.call.terminate', 'callingTerminate', { wacid, phoneId: N1.id, status: 'FAILED', duration: 0 })).toBe(200);
    // And writes to N1: a message in history.
    const inbound = { id: messageId, from: CUSTOMER, to: N1.phoneNumber, type: 'text', text: { body: 'my secret order number is 42' }, createTime: new Date().toISOString() };
    expect(await postEvent(b, 'chat.inbound_message.received', 'chatInboundMessage', inbound)).toBe(200);
    task = await until('the task and the message in history', async () => {
      const tasks = (await api(b, boss, 'GET', '/api/callbacks')).json.items as CallbackTask[];
      const m = await api(b, boss, 'GET', `/api/messages/${messageId}`);
      const calls = (await api(b, boss, 'GET', `/api/customers/${encodeURIComponent(CUSTOMER)}`)).json.calls as unknown[] | undefined;
      return m.status === 200 && calls?.length ? tasks.find((t) => t.customer === CUSTOMER) : undefined;
    }, 40_000);
  }, 120_000); // opening PGlite on a busy machine takes a while
  afterAll(async () => {
    for (const c of clients) c.close();
    await b?.close();
  });

  it("an agent of another number gets 404 for the customer panel (no contact read); the number's own agent and a supervisor get it", async () => {
    const reads = contactReads(b);
    const forBob = await api(b, bob, 'GET', `/api/customers/${encodeURIComponent(CUSTOMER)}`);
    expect(forBob.status).toBe(404);
    expect(forBob.json.error).toMatchObject({ status: 404, code: 'NOT_FOUND' });
    expect(JSON.stringify(forBob.json)).not.toContain('secret order');
    // Enumeration: any number bob tries is unknown to him, and costs the Service nothing.
    for (let i = 0; i < 5; i++) expect((await api(b, bob, 'GET', `/api/customers/${encodeURIComponent(`+1555099${String(i).padStart(4, '0')}`)}`)).status).toBe(404);
    expect(contactReads(b)).toBe(reads);

    const forAnn = await api(b, ann, 'GET', `/api/customers/${encodeURIComponent(CUSTOMER)}`);
    expect(forAnn.status).toBe(200);
    expect(forAnn.json.calls.map((c: { businessNumber: string }) => c.businessNumber)).toEqual([N1.phoneNumber]);
    expect(forAnn.json.messages.map((m: { id: string }) => m.id)).toEqual([messageId]);
    expect(forAnn.json.callbacks.map((t: { id: string }) => t.id)).toEqual([task.id]);
    // Another number's permission is not ann's to read.
    const other = await api(b, ann, 'GET', `/api/customers/${encodeURIComponent(CUSTOMER)}?businessNumber=${encodeURIComponent(N2.phoneNumber)}`);
    expect(other.status).toBe(403);
    expect(other.json.error.message).toMatch(/^businessNumber: /);
    expect((await api(b, boss, 'GET', `/api/customers/${encodeURIComponent(CUSTOMER)}`)).status).toBe(200);
  });

  it("GET /api/messages/:id: another number's agent gets 404, as for an unknown id; its own agent and a supervisor get the message", async () => {
    const forBob = await api(b, bob, 'GET', `/api/messages/${messageId}`);
    expect(forBob.status).toBe(404);
    expect(JSON.stringify(forBob.json)).not.toContain('secret order');
    expect((await api(b, ann, 'GET', `/api/messages/${messageId}`)).status).toBe(200);
    expect((await api(b, boss, 'GET', `/api/messages/${messageId}`)).status).toBe(200);
  });

  it("another number's agent cannot claim or close its call-back task by id (404, as the list hides it); its own agent can", async () => {
    const claim = await api(b, bob, 'POST', `/api/callbacks/${task.id}/claim`);
    expect(claim.status).toBe(404);
    const done = await api(b, bob, 'POST', `/api/callbacks/${task.id}/done`, { outcome: 'closed by someone else' });
    expect(done.status).toBe(404);
    // Untouched by bob's tries.
    const open = ((await api(b, boss, 'GET', '/api/callbacks')).json.items as CallbackTask[]).find((t) => t.id === task.id);
    expect(open?.state).toBe('open');
    const mine = await api(b, ann, 'POST', `/api/callbacks/${task.id}/claim`);
    expect(mine.status).toBe(200);
    expect(mine.json).toMatchObject({ id: task.id, state: 'claimed', assignee: 'ann' });
  });

  it('an agent cannot dial, ask call permission or send a message from a number outside their queues (refused naming from; nothing sent)', async () => {
    const sent = () => b.emu.ctx.requests.filter((r) => r.method === 'POST' && (r.path === '/chat/calls' || r.path.startsWith('/chat/calls/') || r.path.startsWith('/chat/messages'))).length;
    const before = sent();
    const bobWs = await agentClient(b.url, 'bob', { available: false });
    clients.push(bobWs);
    const sdp = fakeConnect('x').sdp as string;
    const dial = await bobWs.request({ type: 'call.dial', from: N1.phoneNumber, to: CUSTOMER, sdp });
    expect(dial).toMatchObject({ type: 'error', code: 'FORBIDDEN' });
    expect((dial as { message: string }).message).toMatch(/^from: /);
    const ask = await api(b, bob, 'POST', '/api/permissions/request', { from: N1.phoneNumber, to: CUSTOMER });
    expect(ask.status).toBe(403);
    expect(ask.json.error.message).toMatch(/^from: /);
    const send = await api(b, bob, 'POST', '/api/messages', { from: N1.phoneNumber, to: CUSTOMER, text: 'hello from another queue' });
    expect(send.status).toBe(403);
    expect(send.json.error.message).toMatch(/^from: /);
    expect(sent()).toBe(before);
  });
});

describe('the WebSocket upgrade with an invalid Host', () => {
  let b: Bridge;
  beforeAll(async () => {
    b = await startBridge({ agents: ['agent1'] });
  }, 60_000);
  afterAll(async () => {
    await b?.close();
  });

  /** One raw upgrade request; the whole answer as text. */
  const upgrade = (host: string, cookie: string) =>
    new Promise<string>((resolve) => {
      const s = net.connect(Number(new URL(b.url).port), '127.0.0.1', () =>
        s.write(
          `GET /ws HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n` +
            `Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nOrigin: ${b.url}\r\nCookie: ${cookie}\r\nX-Request-ID: host-${host.length}\r\n\r\n`,
        ),
      );
      let out = '';
      s.on('data', (d) => {
        out += d;
        if (out.startsWith('HTTP/1.1 101 ')) s.destroy(); // upgraded: the socket stays open
      });
      s.on('close', () => resolve(out));
      s.on('error', () => resolve(out));
      setTimeout(() => s.destroy(), 3000);
    });

  it('answers 403 in the error shape (not an empty 500) for malformed and foreign Hosts', async () => {
    const cookie = await login(b.url, 'agent1');
    for (const host of ['a b', '[::1', 'x:y:z', '%', 'evil.example:99999', '127.0.0.1:abc', 'evil.example']) {
      const answer = await upgrade(host, cookie);
      const [head = '', body = ''] = answer.split('\r\n\r\n');
      expect(head.split('\r\n')[0], JSON.stringify(host)).toBe('HTTP/1.1 403 Forbidden');
      expect(head.toLowerCase()).toContain('content-type: application/json');
      expect(JSON.parse(body), JSON.stringify(host)).toEqual({ error: { status: 403, code: 'FORBIDDEN', message: expect.stringMatching(/^Host: /), requestId: `host-${host.length}` } });
    }
    // The right Host still upgrades.
    expect((await upgrade(new URL(b.url).host, cookie)).split('\r\n')[0]).toBe('HTTP/1.1 101 Switching Protocols');
  });
});

describe('login limits: a guesser elsewhere does not lock the name out for its owner', () => {
  let b: Bridge;
  const limits = { perName: 3, perAddress: 50, windowMs: 60_000, perNameSlow: 4, perNameAllAddresses: 7, slowWindowMs: 60_000 };
  beforeAll(async () => {
    b = await startBridge({ agents: ['agent1', 'agent2'], loginLimits: limits });
  }, 60_000);
  afterAll(async () => {
    await b?.close();
  });

  /** POST /api/login from a given loopback address (127.0.0.0/8 all reach the bridge). */
  const loginFrom = (from: string, name: string, password: string) =>
    new Promise<{ status: number; body: string; retryAfter: string | undefined }>((resolve, reject) => {
      const body = JSON.stringify({ name, password });
      const req = http.request(
        `${b.url}/api/login`,
        { method: 'POST', localAddress: from, headers: { 'content-type': 'application/json', origin: b.url, 'content-length': Buffer.byteLength(body) } },
        (res) => {
          let text = '';
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, retryAfter: res.headers['retry-after'] as string | undefined }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });

  it('wrong guesses from one address: that address is limited, the right password from another still logs in; many addresses together meet the slow per-name lockout', async () => {
    const checks = () => b.passwordChecks();
    const c0 = checks();
    const guesses = await Promise.all(Array.from({ length: 12 }, (_, i) => loginFrom('127.0.0.2', 'agent1', `wrong-${i}`)));
    expect(checks() - c0, 'passwords checked from 127.0.0.2').toBeLessThanOrEqual(limits.perName);
    expect(guesses.filter((g) => g.status === 429).length).toBeGreaterThanOrEqual(12 - limits.perName);
    // The owner, elsewhere, is not locked out by them.
    expect((await loginFrom('127.0.0.1', 'agent1', PASSWORD)).status).toBe(200);
    // 127.0.0.2 itself stays limited for that name (even the right password waits there), not for others.
    expect((await loginFrom('127.0.0.2', 'agent1', PASSWORD)).status).toBe(429);
    expect((await loginFrom('127.0.0.2', 'agent2', PASSWORD)).status).toBe(200);

    // Guessers on more addresses: past perNameAllAddresses wrong guesses for the name in all,
    // every address waits (the slow lockout bounds what many addresses can try).
    for (const from of ['127.0.0.3', '127.0.0.4']) for (let i = 0; i < 3; i++) await loginFrom(from, 'agent1', `wrong-${from}-${i}`);
    expect(checks() - c0).toBeLessThanOrEqual(limits.perNameAllAddresses + 2); // + the two right passwords
    const locked = await loginFrom('127.0.0.1', 'agent1', PASSWORD);
    expect(locked.status).toBe(429);
    expect(Number(locked.retryAfter)).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(locked.body).error).toMatchObject({ status: 429, code: 'RATE_LIMITED', message: expect.stringContaining('all addresses') });
    // Another name is not affected.
    expect((await loginFrom('127.0.0.1', 'agent2', PASSWORD)).status).toBe(200);
  });
});
