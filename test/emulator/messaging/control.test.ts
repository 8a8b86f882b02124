import { Hono } from 'hono';
import { afterEach, describe, expect, it } from 'vitest';
import { createContext } from '../context.ts';
import { requestId, type Env } from '../http.ts';
import { createMessaging } from './index.ts';
import { BIZ, WABA, approvedTemplate, makeApp, type Harness } from './harness.ts';

let h: Harness;
afterEach(async () => h?.close());

describe('messaging control API', () => {
  it('knobs: GET shows them, PATCH merges, an unknown knob or a bad value is refused naming it', async () => {
    h = await makeApp();
    const patched = await h.call('PATCH', '/_emulator/messaging/knobs', { permissionReply: 'reject' });
    expect(patched.body).toMatchObject({ permissionReply: 'reject', messageOutcome: 'read' });
    expect((await h.call('GET', '/_emulator/messaging/knobs')).body.permissionReply).toBe('reject');
    expect((await h.call('PATCH', '/_emulator/messaging/knobs', { nope: 1 })).body.error.message).toBe('body: unknown field nope');
    expect((await h.call('PATCH', '/_emulator/messaging/knobs', { messageOutcome: 'lost' })).body.error.message).toMatch(/^messageOutcome: must be one of read, delivered, sent, failed, accepted/);
  });

  it('the control API takes the same X-API-Key', async () => {
    h = await makeApp();
    const res = await h.app.request('/_emulator/messaging/knobs');
    expect(res.status).toBe(401);
  });

  it('a template status set through control blocks and unblocks sends, with a reviewed event each time', async () => {
    h = await makeApp();
    await approvedTemplate(h, { name: 't1' });
    const send = () => h.call('POST', '/chat/messages', { from: BIZ, to: '+14155550100', type: 'template', template: { name: 't1', language: { code: 'en_US' } } });
    await h.call('POST', `/_emulator/messaging/templates/${WABA}/t1/en_US/status`, { status: 'PAUSED' });
    expect((await send()).status).toBe(400);
    await h.call('POST', `/_emulator/messaging/templates/${WABA}/t1/en_US/status`, { status: 'APPROVED' });
    expect((await send()).status).toBe(200);
    expect(h.events.filter((e) => e.type === 'chat.template.reviewed').map((e) => e.payload.status)).toEqual(['APPROVED', 'PAUSED', 'APPROVED']);
    expect((await h.call('POST', `/_emulator/messaging/templates/${WABA}/t1/en_US/status`, { status: 'LIVE' })).status).toBe(400);
  });

  it('balance can be set for low-balance scenarios', async () => {
    h = await makeApp();
    await h.call('PUT', '/_emulator/messaging/balance', { amount: 0.5, currency: 'EUR' });
    expect((await h.call('GET', '/balance')).body).toEqual({ amount: 0.5, currency: 'EUR' });
  });

  it('messaging close() cancels its pending steps while the emulator context stays open; safe twice', async () => {
    const ctx = createContext({ apiKeys: ['k'], timeScale: 1 });
    const m = createMessaging(ctx, { knobs: { stepDelayMs: 300 } });
    const app = new Hono<Env>().use('*', requestId).route('/v2', m.routes);
    const res = await app.request('/v2/chat/messages', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ from: '+15550100001', to: '+14155550100', type: 'text', text: { body: 'hi' } }) });
    expect(res.status).toBe(200);
    m.close();
    m.close();
    await new Promise((r) => setTimeout(r, 400));
    expect(ctx.closed).toBe(false);
    expect(ctx.events.filter((e) => e.type === 'chat.message.updated')).toHaveLength(0);
    await ctx.close();
  });
});

describe('core knobs reach the messaging routes', () => {
  it('an endpoint fault on POST /chat/messages answers 429 with Retry-After, then the send goes through', async () => {
    h = await makeApp();
    h.ctx.faults.endpoints = { 'POST /chat/messages': { kind: '429', value: 2, times: 1 } };
    const body = { from: BIZ, to: '+14155550100', type: 'text', text: { body: 'hi' } };
    const first = await h.call('POST', '/chat/messages', body);
    expect(first.status).toBe(429);
    expect(first.headers.get('Retry-After')).toBe('2');
    expect((await h.call('POST', '/chat/messages', body)).status).toBe(200);
  });

  it('the per-sender queued-send rate limit applies to POST /chat/messages', async () => {
    h = await makeApp({ messageOutcome: 'accepted' });
    h.ctx.rateLimits.chatMessagesRps = 2;
    const body = { from: BIZ, to: '+14155550100', type: 'text', text: { body: 'hi' } };
    // Sent together, and 6 > 2 + 2: limited even if a window boundary falls mid-burst,
    // however busy the machine is.
    const statuses = await Promise.all(Array.from({ length: 6 }, async () => (await h.call('POST', '/chat/messages', body)).status));
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(2);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((s) => s === 200 || s === 429)).toBe(true);
  });
});
