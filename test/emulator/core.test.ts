import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createEmulator, startEmulator, type Emulator } from './index.ts';
import { startReceiver, type TestReceiver } from './receiver.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
async function emulator(opts: Parameters<typeof startEmulator>[0] = {}): Promise<Emulator> {
  const e = await startEmulator({ timeScale: 0.001, ...opts });
  cleanups.push(() => e.close());
  return e;
}
async function waitFor(cond: () => Promise<boolean>, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
async function receiver(): Promise<TestReceiver> {
  const r = await startReceiver();
  cleanups.push(() => r.close());
  return r;
}

/** Independent check of the documented signature: HMAC-SHA256(secret, `${t}.${raw}`), lowercase hex. */
function verify(secret: string, header: string | undefined, raw: string): boolean {
  const m = /^t=(\d+),s=([0-9a-f]{64})$/.exec(header ?? '');
  if (!m) return false;
  const expected = createHmac('sha256', secret).update(`${m[1]}.${raw}`).digest();
  return timingSafeEqual(expected, Buffer.from(m[2]!, 'hex'));
}

describe('auth and error shape', () => {
  it('a request without X-API-Key gets 401 UNAUTHORIZED in the part 7 shape with Service-Request-ID', async () => {
    const { app } = createEmulator({ apiKeys: ['k1'] });
    const res = await app.request('/v2/webhookEndpoints');
    expect(res.status).toBe(401);
    const rid = res.headers.get('Service-Request-ID');
    expect(rid).toBeTruthy();
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ status: 401, code: 'UNAUTHORIZED', requestId: rid });
  });

  it('a Bearer-prefixed key is refused and the key is not echoed', async () => {
    const { app } = createEmulator({ apiKeys: ['secret-key-1'] });
    const res = await app.request('/v2/webhookEndpoints', { headers: { 'X-API-Key': 'Bearer secret-key-1' } });
    expect(res.status).toBe(401);
    expect(await res.text()).not.toContain('secret-key-1');
  });

  it('the control API takes the same key', async () => {
    const { app } = createEmulator({ apiKeys: ['k1'] });
    expect((await app.request('/_emulator/faults')).status).toBe(401);
    expect((await app.request('/_emulator/faults', { headers: { 'X-API-Key': 'k1' } })).status).toBe(200);
  });
});

describe('validation', () => {
  it('creating a webhook endpoint without url is a 400 BAD_REQUEST naming the field', async () => {
    const { app } = createEmulator({ apiKeys: ['k1'] });
    const res = await app.request('/v2/webhookEndpoints', { method: 'POST', headers: { 'X-API-Key': 'k1', 'Content-Type': 'application/json' }, body: JSON.stringify({ enabledEvents: ['chat.call.connect'] }) });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: string; message: string; requestId: string } };
    expect(body.error.code).toBe('BAD_REQUEST');
    expect(body.error.message).toMatch(/^url:/);
    expect(body.error.requestId).toBe(res.headers.get('Service-Request-ID'));
  });

  it('the endpoint secret is never returned by GET', async () => {
    const { app } = createEmulator({ apiKeys: ['k1'] });
    const h = { 'X-API-Key': 'k1', 'Content-Type': 'application/json' };
    const created = (await (await app.request('/v2/webhookEndpoints', { method: 'POST', headers: h, body: JSON.stringify({ url: 'http://127.0.0.1:1/x', secret: 'topsecret-123' }) })).json()) as { id: string };
    const text = await (await app.request(`/v2/webhookEndpoints/${created.id}`, { headers: h })).text();
    expect(text).toContain(created.id);
    expect(text).not.toContain('topsecret-123');
  });
});

describe('rate limits (part 8)', () => {
  it('the management quota answers 429 with Retry-After and RateLimit-* headers once used up', async () => {
    const { app } = createEmulator({ apiKeys: ['k1'], rateLimits: { managementRps: 5 } });
    const h = { 'X-API-Key': 'k1' };
    const results = await Promise.all(Array.from({ length: 8 }, () => app.request('/v2/webhookEndpoints', { headers: h })));
    const statuses = results.map((r) => r.status);
    // The window may roll over mid-burst: at least 5 pass and at least one is limited.
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(5);
    const limited = results.find((r) => r.status === 429)!;
    expect(limited).toBeDefined();
    expect(Number(limited.headers.get('Retry-After'))).toBeGreaterThanOrEqual(1);
    expect(limited.headers.get('RateLimit-Limit')).toBe('5');
    expect(limited.headers.get('RateLimit-Remaining')).toBe('0');
    expect(limited.headers.get('RateLimit-Policy')).toContain('5;w=1');
    expect(limited.headers.get('RateLimit-Reset')).toMatch(/^\d+$/);
    const body = (await limited.json()) as { error: { status: number; code: string; requestId: string } };
    expect(body.error).toMatchObject({ status: 429, code: 'TOO_MANY_REQUESTS' });
    expect(body.error.requestId).toBeTruthy();
  });

  it('the hourly management quota holds across seconds and resets when the clock passes the hour', async () => {
    const { app, ctx } = createEmulator({ apiKeys: ['k1'], rateLimits: { managementPerHour: 3 } });
    const h = { 'X-API-Key': 'k1' };
    for (let i = 0; i < 3; i++) {
      expect((await app.request('/v2/webhookEndpoints', { headers: h })).status).toBe(200);
      ctx.clock.advance(1000);
    }
    expect((await app.request('/v2/webhookEndpoints', { headers: h })).status).toBe(429);
    ctx.clock.advance(3600_000);
    expect((await app.request('/v2/webhookEndpoints', { headers: h })).status).toBe(200);
  });

  it('chat message sends are limited per sender: another business number has its own quota', async () => {
    const { app } = createEmulator({ apiKeys: ['k1'], rateLimits: { sendDirectlyRps: 2 } });
    const send = (from: string) =>
      app.request('/v2/chat/messages/sendDirectly', { method: 'POST', headers: { 'X-API-Key': 'k1', 'Content-Type': 'application/json' }, body: JSON.stringify({ from, to: '+15550200001', type: 'text', text: { body: 'hi' } }) });
    const a = await Promise.all(Array.from({ length: 6 }, () => send('+15550100001'))); // 6 > 2 + 2 across a boundary
    const b = await send('+15550100002');
    expect(a.some((r) => r.status === 429)).toBe(true);
    expect(b.status).not.toBe(429);
    expect(b.headers.get('RateLimit-Policy')).toContain('scope=sender');
  });
});

describe('rate limit scopes', () => {
  it('POST /emails counts per account: two senders share one quota', async () => {
    const { app } = createEmulator({ apiKeys: ['k1'], rateLimits: { accountRps: 2 } });
    const send = (from: string) => app.request('/v2/emails', { method: 'POST', headers: { 'X-API-Key': 'k1', 'Content-Type': 'application/json' }, body: JSON.stringify({ from }) });
    const results = await Promise.all(['a', 'b', 'c', 'd', 'e', 'f'].map((x) => send(`${x}@x.test`))); // 6 > 2 even if a second boundary falls mid-burst
    expect(results.some((r) => r.status === 429)).toBe(true);
    const limited = results.find((r) => r.status === 429)!;
    expect(limited.headers.get('RateLimit-Policy')).toBe('2;w=1;scope=account');
  });
});

describe('endpoint fault knobs', () => {
  it('an injected 5xx on one endpoint answers in the error shape and leaves others alone', async () => {
    const { app, ctx } = createEmulator({ apiKeys: ['k1'] });
    ctx.faults.endpoints = { 'GET /webhookEndpoints/{id}': { kind: '5xx', value: 502, times: 1 } };
    const h = { 'X-API-Key': 'k1' };
    const first = await app.request('/v2/webhookEndpoints/x', { headers: h });
    expect(first.status).toBe(502);
    expect(((await first.json()) as { error: { code: string } }).error.code).toBe('INTERNAL_ERROR');
    expect((await app.request('/v2/webhookEndpoints/x', { headers: h })).status).toBe(404);
    expect((await app.request('/v2/webhookEndpoints', { headers: h })).status).toBe(200);
  });

  it('an injected 429 carries Retry-After', async () => {
    const { app, ctx } = createEmulator({ apiKeys: ['k1'], faults: { endpoints: { 'GET /webhookEndpoints': { kind: '429', value: 7 } } } });
    const res = await app.request('/v2/webhookEndpoints', { headers: { 'X-API-Key': 'k1' } });
    expect(res.status).toBe(429);
    expect(res.headers.get('Retry-After')).toBe('7');
    expect(ctx.faults.endpoints['GET /webhookEndpoints']).toBeDefined();
  });
});

describe('endpoint fault knobs over HTTP', () => {
  it('a hanging endpoint never answers (the client must time out), and afterProcessing still carries the request out', async () => {
    const emu = await emulator();
    const rx = await receiver();
    emu.ctx.faults.endpoints = { 'POST /webhookEndpoints': { kind: 'hang', afterProcessing: true, times: 1 } };
    const req = fetch(`${emu.baseUrl}/webhookEndpoints`, { method: 'POST', headers: { 'X-API-Key': emu.apiKey, 'Content-Type': 'application/json' }, body: JSON.stringify({ url: rx.url }), signal: AbortSignal.timeout(300) });
    await expect(req).rejects.toThrow();
    // the endpoint was created although no answer came: reconcile before retrying
    const list = (await (await fetch(`${emu.baseUrl}/webhookEndpoints`, { headers: { 'X-API-Key': emu.apiKey } })).json()) as { items: Array<{ url: string }> };
    expect(list.items.map((e) => e.url)).toContain(rx.url);
  });

  it('mediaDownloadHang: headers → no answer; body → 200, half the bytes, then nothing; each held until the client gives up', async () => {
    const emu = await emulator();
    const bytes = Buffer.alloc(4000, 7);
    emu.capture.media.set('cma_hang', { id: 'cma_hang', wacid: 'wacid.h', phoneId: '100000000000001', kind: 'recording', owner: emu.apiKey, createdAt: emu.ctx.clock.now(), contentType: 'audio/ogg', fileName: 'cma_hang.ogg', bytes });
    const hanging = async () => ((await (await fetch(`${emu.controlUrl}/media/hanging`, { headers: { 'X-API-Key': emu.apiKey } })).json()) as { hanging: number }).hanging;
    const patch = (body: unknown) => fetch(`${emu.controlUrl}/faults`, { method: 'PATCH', headers: { 'X-API-Key': emu.apiKey, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    expect((await patch({ mediaDownloadHang: 'sometimes' })).status).toBe(400);
    expect((await patch({ mediaDownloadHang: 'headers' })).status).toBe(200);

    const ctl = new AbortController();
    const req = fetch(`${emu.baseUrl}/chat/calls/media/cma_hang`, { headers: { 'X-API-Key': emu.apiKey }, signal: ctl.signal });
    await waitFor(async () => (await hanging()) === 1);
    ctl.abort();
    await expect(req).rejects.toThrow();
    await waitFor(async () => (await hanging()) === 0);

    expect((await patch({ mediaDownloadHang: 'body' })).status).toBe(200);
    const ctl2 = new AbortController();
    const res = await fetch(`${emu.baseUrl}/chat/calls/media/cma_hang`, { headers: { 'X-API-Key': emu.apiKey }, signal: ctl2.signal });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-length')).toBe('4000');
    const reader = res.body!.getReader();
    let got = 0;
    while (got < 2000) got += (await reader.read()).value?.length ?? 0;
    expect(got).toBe(2000);
    const more = reader.read();
    const nothing = await Promise.race([more.then(() => 'more'), new Promise((r) => setTimeout(() => r('stalled'), 300))]);
    expect(nothing).toBe('stalled');
    expect(await hanging()).toBe(1);
    ctl2.abort();
    await more.catch(() => undefined);
    await waitFor(async () => (await hanging()) === 0);

    expect((await patch({ mediaDownloadHang: 'none' })).status).toBe(200);
    const whole = await fetch(`${emu.baseUrl}/chat/calls/media/cma_hang`, { headers: { 'X-API-Key': emu.apiKey } });
    expect(Buffer.from(await whole.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('a slow endpoint answers after the configured delay', async () => {
    const emu = await emulator({ faults: { endpoints: { 'GET /webhookEndpoints': { kind: 'slow', value: 250 } } } });
    const t0 = Date.now();
    const res = await fetch(`${emu.baseUrl}/webhookEndpoints`, { headers: { 'X-API-Key': emu.apiKey } });
    expect(res.status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(240);
  });

  it('faults are set at run time through the control API and validated', async () => {
    const emu = await emulator();
    const patch = (body: unknown) => fetch(`${emu.controlUrl}/faults`, { method: 'PATCH', headers: { 'X-API-Key': emu.apiKey, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    expect((await patch({ duplicateRate: 2 })).status).toBe(400);
    expect((await patch({ endpoints: { 'GET /balance': { kind: 'teapot' } } })).status).toBe(400);
    expect((await patch({ endpoints: { '* /webhookEndpoints': { kind: '5xx', value: 500 } } })).status).toBe(200);
    expect((await fetch(`${emu.baseUrl}/webhookEndpoints`, { headers: { 'X-API-Key': emu.apiKey } })).status).toBe(500);
  });
});

describe('webhook delivery', () => {
  it('deliveries are signed t=<unix s>,s=<hex HMAC-SHA256(secret, t.rawBody)> with the endpoint secret', async () => {
    const rx = await receiver();
    const emu = await emulator({ webhookEndpoints: [{ url: rx.url, secret: 'whsec_test_123456' }] });
    emu.ctx.emit('chat.call.connect', 'callingConnect', { wacid: 'w1' });
    const [d] = await rx.waitFor((r) => r.length >= 1);
    expect(verify('whsec_test_123456', d!.headers['service-signature'] as string, d!.rawBody)).toBe(true);
    expect(verify('another-secret', d!.headers['service-signature'] as string, d!.rawBody)).toBe(false);
    const t = Number(/^t=(\d+)/.exec(d!.headers['service-signature'] as string)![1]);
    expect(Math.abs(t - Date.now() / 1000)).toBeLessThan(5);
    expect(d!.event).toMatchObject({ type: 'chat.call.connect', apiVersion: 'v2', callingConnect: { wacid: 'w1' } });
    expect(d!.event.createTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('endpoints created without a secret are signed with the emulator webhook secret', async () => {
    const rx = await receiver();
    const emu = await emulator();
    const res = await fetch(`${emu.baseUrl}/webhookEndpoints`, { method: 'POST', headers: { 'X-API-Key': emu.apiKey, 'Content-Type': 'application/json' }, body: JSON.stringify({ url: rx.url, enabledEvents: ['chat.call.terminate'] }) });
    expect(res.status).toBe(200);
    emu.ctx.emit('chat.call.connect', 'callingConnect', { wacid: 'w1' }); // not subscribed
    emu.ctx.emit('chat.call.terminate', 'callingTerminate', { wacid: 'w1' });
    const [d] = await rx.waitFor((r) => r.length >= 1);
    await emu.webhooks.idle();
    expect(rx.received.map((x) => x.event.type)).toEqual(['chat.call.terminate']);
    expect(verify(emu.webhookSecret, d!.headers['service-signature'] as string, d!.rawBody)).toBe(true);
  });

  it('a receiver answering 500 twice gets the event a third time with the same id', async () => {
    const rx = await receiver();
    rx.respond = (_d, i) => (i < 2 ? 500 : 200);
    const emu = await emulator({ webhookEndpoints: [{ url: rx.url, secret: 'whsec_test_123456' }], timeScale: 0.001 });
    emu.ctx.emit('chat.call.terminate', 'callingTerminate', { wacid: 'w2' });
    const got = await rx.waitFor((r) => r.length >= 3);
    expect(got.map((d) => d.event.id)).toEqual([got[0]!.event.id, got[0]!.event.id, got[0]!.event.id]);
    expect(got.every((d) => verify('whsec_test_123456', d.headers['service-signature'] as string, d.rawBody))).toBe(true);
    // the retry delays follow the schedule (10 s, then 30 s) scaled by timeScale
    const gap1 = got[1]!.receivedAt - got[0]!.receivedAt;
    const gap2 = got[2]!.receivedAt - got[1]!.receivedAt;
    expect(gap1).toBeGreaterThanOrEqual(9);
    expect(gap2).toBeGreaterThanOrEqual(29);
    await new Promise((r) => setTimeout(r, 100));
    expect(rx.received.length).toBe(3); // acknowledged: no more attempts
  });

  it('dropFirstAttempt delivers each event only through its first retry', async () => {
    const rx = await receiver();
    const emu = await emulator({ webhookEndpoints: [{ url: rx.url }], faults: { dropFirstAttempt: true }, timeScale: 0.01 });
    emu.ctx.emit('chat.call.terminate', 'callingTerminate', { wacid: 'w3' });
    const t0 = Date.now();
    await rx.waitFor((r) => r.length >= 1);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90); // 10 s × 0.01
    expect(emu.webhooks.log[0]).toMatchObject({ outcome: 'dropped', attempt: 1 });
  });

  it('a receiver that never answers in time counts as a failure and is retried', async () => {
    const rx = await receiver();
    const emu = await emulator({ webhookEndpoints: [{ url: 'http://127.0.0.1:9/unreachable' }, { url: rx.url }], deliveryTimeoutMs: 200 });
    emu.ctx.emit('chat.call.terminate', 'callingTerminate', { wacid: 'w4' });
    await rx.waitFor((r) => r.length >= 1);
    await new Promise((r) => setTimeout(r, 150));
    expect(emu.webhooks.log.filter((d) => d.outcome === 'failed').length).toBeGreaterThanOrEqual(2);
  });

  it('duplicateRate 1 sends every event twice with the same id and body', async () => {
    const rx = await receiver();
    const emu = await emulator({ webhookEndpoints: [{ url: rx.url }], faults: { duplicateRate: 1 } });
    emu.ctx.emit('chat.call.terminate', 'callingTerminate', { wacid: 'w5' });
    const got = await rx.waitFor((r) => r.length >= 2);
    expect(got[0]!.rawBody).toBe(got[1]!.rawBody);
    await emu.webhooks.idle(); // the log entry is written once the receiver's answer is read
    expect(emu.webhooks.log.map((d) => d.copy).sort()).toEqual([1, 2]);
  });

  it('events go only to endpoints of the tenant (API key) they belong to', async () => {
    const rxA = await receiver();
    const rxB = await receiver();
    const emu = await emulator({ apiKeys: ['tenant-a-key', 'tenant-b-key'] });
    for (const [key, rx] of [['tenant-a-key', rxA], ['tenant-b-key', rxB]] as const)
      await fetch(`${emu.baseUrl}/webhookEndpoints`, { method: 'POST', headers: { 'X-API-Key': key, 'Content-Type': 'application/json' }, body: JSON.stringify({ url: rx.url }) });
    emu.ctx.emit('chat.call.terminate', 'callingTerminate', { wacid: 'for-b' }, 'tenant-b-key');
    await rxB.waitFor((r) => r.length >= 1);
    await emu.webhooks.idle();
    expect(rxA.received).toHaveLength(0);
  });

  it('deliveryDelayMs delays each delivery by that much from its emit, not cumulatively', async () => {
    const rx = await receiver();
    const emu = await emulator({ webhookEndpoints: [{ url: rx.url }], faults: { deliveryDelayMs: 300 } });
    const t0 = Date.now();
    for (let i = 0; i < 5; i++) emu.ctx.emit('chat.call.terminate', 'callingTerminate', { wacid: `d${i}` });
    const got = await rx.waitFor((r) => r.length >= 5);
    expect(got[0]!.receivedAt - t0).toBeGreaterThanOrEqual(290);
    expect(got[4]!.receivedAt - t0).toBeLessThan(1200); // 5 × 300 ms would be 1.5 s
    expect(got.map((d) => (d.event as any).callingTerminate.wacid)).toEqual(['d0', 'd1', 'd2', 'd3', 'd4']);
  });

  it('with deliveryConcurrency 4 a receiver that answers slowly gets four deliveries at once', async () => {
    const emu = await emulator({ deliveryConcurrency: 4 });
    let inFlight = 0;
    let peak = 0;
    const slow = await import('node:http').then(({ createServer }) => {
      const s = createServer((_req, res) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        setTimeout(() => {
          inFlight--;
          res.end();
        }, 150);
      });
      return new Promise<typeof s>((r) => s.listen(0, '127.0.0.1', () => r(s)));
    });
    cleanups.push(() => new Promise<void>((r) => { slow.close(() => r()); slow.closeAllConnections(); }));
    emu.webhooks.addEndpoint({ url: `http://127.0.0.1:${(slow.address() as { port: number }).port}/` });
    for (let i = 0; i < 8; i++) emu.ctx.emit('chat.call.terminate', 'callingTerminate', { wacid: `c${i}` });
    await emu.webhooks.idle();
    expect(peak).toBe(4);
  });

  it('startEmulator starts in well under a second (demo mode starts it lazily)', async () => {
    const t0 = performance.now();
    const emu = await startEmulator({ prewarm: false });
    const ms = performance.now() - t0;
    await emu.close();
    expect(ms).toBeLessThan(500);
  });

  it('close() stops simulated callers: their peers close and no terminate is sent afterwards', async () => {
    const rx = await receiver();
    const emu = await startEmulator({ webhookEndpoints: [{ url: rx.url }] });
    const call = await emu.calls.start();
    await rx.waitFor((r) => r.length >= 1);
    await emu.close();
    expect(emu.calls.get(call.wacid)?.state).toBe('ended');
    expect(emu.calls.get(call.wacid)?.media?.connectionState).toBe('closed');
    await new Promise((r) => setTimeout(r, 100));
    expect(rx.received.map((d) => d.event.type)).toEqual(['chat.call.connect']);
  });

  it('close() is safe to call twice and stops deliveries', async () => {
    const emu = await startEmulator();
    await emu.close();
    await emu.close();
    emu.ctx.emit('x', 'y', {});
    expect(emu.ctx.events.length).toBe(0);
  });
});
