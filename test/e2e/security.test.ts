/**
 * Login, roles, Origin and ownership, through the real bridge on a real port (agents are
 * ws programs; connect events are signed webhooks posted to the real receiver).
 */
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_FRAME_BYTES } from '../../shared/protocol.ts';
import { PASSWORD, ProtocolClient, agentClient, fakeConnect, login, postEvent, startBridge, type Bridge } from './harness.ts';

let b: Bridge;
beforeAll(async () => {
  b = await startBridge({ agents: ['agent1', 'agent2'] });
});
afterAll(async () => {
  await b?.close();
});

const upgradeStatus = (url: string, headers: Record<string, string>, origin?: string) =>
  new Promise<number>((resolve) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + '/ws', { headers, ...(origin ? { origin } : {}) });
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.once('open', () => {
      ws.close();
      resolve(101);
    });
    ws.once('error', () => resolve(-1));
  });

describe('sessions and roles', () => {
  it('without a session every /api route answers 401 in the Service error shape', async () => {
    for (const [method, path] of [
      ['GET', '/api/me'],
      ['GET', '/api/calls'],
      ['POST', '/api/demo/call'],
    ] as const) {
      const r = await fetch(`${b.url}${path}`, { method, headers: { origin: b.url } });
      expect(r.status, `${method} ${path}`).toBe(401);
      const body = (await r.json()) as { error: Record<string, unknown> };
      expect(body.error).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
      expect(body.error.requestId).toBeTypeOf('string');
    }
  });

  it('without a session the WebSocket upgrade is refused with 401', async () => {
    expect(await upgradeStatus(b.url, {}, b.url)).toBe(401);
    expect(await upgradeStatus(b.url, { cookie: 'sb_session=forged.value' }, b.url)).toBe(401);
  });

  it('a refused WebSocket upgrade answers in the error shape with the request id, like every other refusal', async () => {
    for (const [headers, status, code] of [
      [{ origin: b.url }, 401, 'UNAUTHORIZED'],
      [{ origin: 'http://evil.example', cookie: await login(b.url, 'agent1') }, 403, 'FORBIDDEN'],
    ] as const) {
      const r = await fetch(`${b.url}/ws`, { headers: { ...headers, 'x-request-id': `lb-upgrade-${status}` } });
      expect(r.status).toBe(status);
      expect(r.headers.get('x-request-id')).toBe(`lb-upgrade-${status}`);
      expect(await r.json()).toEqual({ error: { status, code, message: expect.any(String), requestId: `lb-upgrade-${status}` } });
    }
  });

  it('a wrong password and an unknown name get the same 401', async () => {
    const post = (name: string, password: string) =>
      fetch(`${b.url}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json', origin: b.url }, body: JSON.stringify({ name, password }) });
    const wrong = await post('agent1', 'nope');
    const unknown = await post('nobody', 'nope');
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(((await wrong.json()) as { error: { message: string } }).error.message).toBe(((await unknown.json()) as { error: { message: string } }).error.message);
  });

  it('login sets an HttpOnly SameSite=Strict cookie; /api/me names the user; logout ends the session everywhere', async () => {
    const r = await fetch(`${b.url}/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: b.url },
      body: JSON.stringify({ name: 'agent2', password: PASSWORD }),
    });
    const set = r.headers.get('set-cookie')!;
    expect(set).toMatch(/HttpOnly/);
    expect(set).toMatch(/SameSite=Strict/);
    expect(set).not.toContain(PASSWORD);
    const cookie = set.split(';')[0]!;
    const me = await fetch(`${b.url}/api/me`, { headers: { cookie } });
    expect(await me.json()).toMatchObject({ name: 'agent2', roles: ['agent'] });
    const out = await fetch(`${b.url}/api/logout`, { method: 'POST', headers: { cookie, origin: b.url } });
    expect(out.status).toBe(204);
    // The same cookie, replayed after logout, no longer works.
    expect((await fetch(`${b.url}/api/me`, { headers: { cookie } })).status).toBe(401);
    expect(await upgradeStatus(b.url, { cookie }, b.url)).toBe(401);
  });

  it('pages: without a session the browser is sent to the login page; with the wrong role, a 403 page that links to its own home', async () => {
    const anon = await fetch(`${b.url}/`, { redirect: 'manual' });
    expect(anon.status).toBe(302);
    expect(anon.headers.get('location')).toBe('/login?next=%2F');
    const ops = await login(b.url, 'ops');
    const wrong = await fetch(`${b.url}/`, { headers: { cookie: ops }, redirect: 'manual' });
    // A silent redirect left people lost; the page now says whose page it is.
    expect(wrong.status).toBe(403);
    expect(await wrong.text()).toContain('href="/archive"');
    const sup = await fetch(`${b.url}/supervisor`, { headers: { cookie: await login(b.url, 'agent1') }, redirect: 'manual' });
    expect(sup.status).toBe(403);
    expect(await sup.text()).toContain('href="/"');
  });

  it('a user without the role gets 403 (ops cannot list calls)', async () => {
    const cookie = await login(b.url, 'ops');
    const r = await fetch(`${b.url}/api/calls`, { headers: { cookie } });
    expect(r.status).toBe(403);
  });
});

describe('Origin', () => {
  it('a foreign Origin is refused on the WebSocket upgrade, and a missing one too', async () => {
    const cookie = await login(b.url, 'agent1');
    expect(await upgradeStatus(b.url, { cookie }, 'http://evil.example')).toBe(403);
    expect(await upgradeStatus(b.url, { cookie }, 'http://127.0.0.1:1')).toBe(403);
    expect(await upgradeStatus(b.url, { cookie })).toBe(403);
    expect(await upgradeStatus(b.url, { cookie }, b.url)).toBe(101);
  });

  it('a foreign Origin is refused on state-changing requests (login, logout, demo call)', async () => {
    const cookie = await login(b.url, 'agent1');
    const login2 = await fetch(`${b.url}/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: 'http://evil.example' },
      body: JSON.stringify({ name: 'agent1', password: PASSWORD }),
    });
    expect(login2.status).toBe(403);
    const out = await fetch(`${b.url}/api/logout`, { method: 'POST', headers: { cookie, origin: 'http://evil.example' } });
    expect(out.status).toBe(403);
    // The session survived the refused logout.
    expect((await fetch(`${b.url}/api/me`, { headers: { cookie } })).status).toBe(200);
    const demo = await fetch(`${b.url}/api/demo/call`, { method: 'POST', headers: { cookie, origin: 'http://evil.example' } });
    expect(demo.status).toBe(403);
  });
});

describe('ownership and frames', () => {
  it('an agent answering a call offered to someone else is refused FORBIDDEN, and the call keeps ringing for its agent', async () => {
    const a1 = await agentClient(b.url, 'agent1');
    const a2 = await agentClient(b.url, 'agent2', { available: false });
    const wacid = `w-own-${Date.now()}`;
    expect(await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(wacid))).toBe(200);
    const offer = await a1.next('call.offered', (m) => m.wacid === wacid);
    expect(offer.sdp).toContain('v=0');
    const r = await a2.request({ type: 'call.answer', wacid, sdp: 'v=0\r\nstolen\r\n' });
    expect(r).toMatchObject({ type: 'error', code: 'FORBIDDEN' });
    const rec = await b.store.getCall(wacid);
    expect(rec).toMatchObject({ state: 'ringing', agent: 'agent1' });
    // and nobody else may hang it up either
    expect(await a2.request({ type: 'call.hangup', wacid })).toMatchObject({ type: 'error', code: 'FORBIDDEN' });
    expect(await a2.request({ type: 'call.answer', wacid: 'no-such-call', sdp: 'v=0\r\n' })).toMatchObject({ type: 'error', code: 'NOT_FOUND' });
    a1.close();
    a2.close();
  });

  it('a frame over 64 KiB is refused with TOO_LARGE; invalid frames name the field', async () => {
    const c = new ProtocolClient(b.url, await login(b.url, 'agent2'));
    await c.opened;
    await c.next('welcome');
    c.ws.send(JSON.stringify({ type: 'call.answer', id: 'big', wacid: 'w', sdp: 'a'.repeat(MAX_FRAME_BYTES) }));
    expect(await c.next('error', (m) => m.code === 'TOO_LARGE')).toMatchObject({ code: 'TOO_LARGE' });
    expect(await c.request({ type: 'presence.set', status: 'busy' } as never)).toMatchObject({ type: 'error', code: 'BAD_REQUEST', message: expect.stringContaining('status') });
    // Binary frames are refused; a pong is taken without a word only when it is a pong.
    c.ws.send(Buffer.from('{"type":"pong","t":1}'));
    expect(await c.next('error', (m) => m.code === 'BAD_REQUEST' && m.message === 'text frames only')).toBeDefined();
    c.ws.send('{"type":"pong","t":"soon"}');
    expect(await c.next('error', (m) => m.code === 'BAD_REQUEST' && /\bt\b/.test(m.message))).toBeDefined();
    c.ws.send('{"type":"pong","t":12.5}');
    c.ws.send('{"type":"pong","t":12,"extra":true}');
    // Both pongs are taken silently: the next answer is the next request's.
    expect(await c.request({ type: 'presence.set', status: 'away' })).toMatchObject({ type: 'ack' });
    c.close();
  });
});
