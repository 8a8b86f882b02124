/**
 * createApp: request ids, the one error mapping, health, readiness and metrics.
 */
import { describe, expect, it } from 'vitest';
import { HttpBadRequest, HttpConflict } from '../../server/app.ts';
import { MemoryStore } from '../../server/store/memory.ts';
import { event, signed, testApp, testConfig } from './helpers.ts';

describe('createApp', () => {
  it('every response carries a request id, also errors and webhook answers; the error body repeats it', async () => {
    const { app } = testApp(new MemoryStore());
    const body = JSON.stringify(event());
    for (const res of [
      await app.request('/healthz'),
      await app.request('/nope'),
      await app.request('/webhooks/service', { method: 'POST', body, headers: signed(body) }),
      await app.request('/webhooks/service', { method: 'POST', body: '{}' }),
    ]) {
      expect(res.headers.get('x-request-id')).toMatch(/^req_[0-9a-f-]{36}$/);
      if (res.status >= 400) expect(((await res.json()) as { error: { requestId: string } }).error.requestId).toBe(res.headers.get('x-request-id'));
    }
  });

  it('a well-formed incoming X-Request-ID is kept, anything else replaced', async () => {
    const { app } = testApp(new MemoryStore());
    expect((await app.request('/healthz', { headers: { 'X-Request-ID': 'lb-1234.abc' } })).headers.get('x-request-id')).toBe('lb-1234.abc');
    const bad = await app.request('/healthz', { headers: { 'X-Request-ID': 'x'.repeat(65) } });
    expect(bad.headers.get('x-request-id')).toMatch(/^req_/);
  });

  it('every log line of a request carries its request id', async () => {
    const { app, logs } = testApp(new MemoryStore());
    const res = await app.request('/webhooks/service', { method: 'POST', body: '{}', headers: { 'X-Request-ID': 'trace-me-1' } });
    expect(res.status).toBe(401);
    const lines = logs.records().filter((r) => r.msg === 'webhook signature refused');
    expect(lines).toHaveLength(1);
    expect(lines[0]!.requestId).toBe('trace-me-1');
  });

  it('errors thrown by mounted routes map to the error shape in one place; unknown errors become 500 without internals', async () => {
    const { app } = testApp(new MemoryStore(), {
      mount: [
        (a) => {
          a.get('/api/bad', () => {
            throw new HttpBadRequest('name: must not be empty');
          });
          a.get('/api/conflict', () => {
            throw new HttpConflict('call already taken');
          });
          a.get('/api/boom', () => {
            throw new Error('secret internal detail');
          });
        },
      ],
    });
    const bad = await app.request('/api/bad');
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: { status: 400, code: 'BAD_REQUEST', message: 'name: must not be empty', requestId: bad.headers.get('x-request-id') } });
    expect(((await (await app.request('/api/conflict')).json()) as { error: unknown }).error).toMatchObject({ status: 409, code: 'CONFLICT' });
    const boom = await app.request('/api/boom');
    expect(boom.status).toBe(500);
    const text = await boom.text();
    expect(text).not.toContain('secret internal detail');
    expect(JSON.parse(text)).toMatchObject({ error: { status: 500, code: 'INTERNAL' } });
    const nf = await app.request('/api/missing');
    expect(nf.status).toBe(404);
    expect(((await nf.json()) as { error: unknown }).error).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('/healthz is 200; /readyz is 200 with a working store and 503 with the reason when a check fails', async () => {
    const store = new MemoryStore();
    const { app } = testApp(store, {
      readiness: [
        {
          name: 'service',
          check: async () => {
            throw new Error('unreachable (connect ECONNREFUSED)');
          },
        },
      ],
    });
    expect((await app.request('/healthz')).status).toBe(200);
    const r = await app.request('/readyz');
    expect(r.status).toBe(503);
    expect(await r.json()).toMatchObject({ status: 'not ready', reason: 'service: unreachable (connect ECONNREFUSED)', checks: { store: 'ok' } });

    const ok = testApp(new MemoryStore()).app;
    expect((await ok.request('/readyz')).status).toBe(200);

    await store.close();
    const down = await app.request('/readyz');
    expect(((await down.json()) as { reason: string }).reason).toMatch(/store: store is closed/);
  });

  it('/readyz answers 503 once shutdown began', async () => {
    let stopping = false;
    const { app } = testApp(new MemoryStore(), { isShuttingDown: () => stopping });
    expect((await app.request('/readyz')).status).toBe(200);
    stopping = true;
    const r = await app.request('/readyz');
    expect(r.status).toBe(503);
    expect(((await r.json()) as { reason: string }).reason).toContain('process: shutting down');
  });

  it('/metrics exposes requests, webhook events by type and outcome, dead letters and stream lag in Prometheus text', async () => {
    const store = new MemoryStore();
    const { app } = testApp(store);
    const e = event('chat.call.connect');
    const body = JSON.stringify(e);
    await app.request('/webhooks/service', { method: 'POST', body, headers: signed(body) });
    await app.request('/webhooks/service', { method: 'POST', body, headers: signed(body) });
    await app.request('/webhooks/service', { method: 'POST', body, headers: { 'Service-Signature': 'nope' } });
    const res = await app.request('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(text).toContain('# TYPE switchboard_http_requests_total counter');
    expect(text).toContain('switchboard_http_requests_total{method="POST",route="/webhooks/service",status="200"} 2');
    // Refused deliveries are counted with their status too (the webhook route counts its own requests).
    expect(text).toContain('switchboard_http_requests_total{method="POST",route="/webhooks/service",status="401"} 1');
    expect(text).toContain('switchboard_webhook_events_total{type="chat.call.connect",outcome="accepted"} 1');
    expect(text).toContain('switchboard_webhook_events_total{type="chat.call.connect",outcome="duplicate"} 1');
    expect(text).toContain('switchboard_webhook_requests_total{outcome="unauthorized"} 1');
    expect(text).toContain('# TYPE switchboard_webhook_dead_lettered_total counter');
    expect(text).toContain('# TYPE switchboard_webhook_stream_lag gauge');
    expect(text).toMatch(/^switchboard_webhook_stream_lag 1$/m);
  });

  it('/metrics shows the event loop\'s delay since the previous scrape: p50, p99 and max (a blocked loop shows)', async () => {
    const { app } = testApp(new MemoryStore());
    await app.request('/metrics'); // starts a fresh window
    // Block the loop for 300 ms, as a synchronous database statement would.
    await new Promise((r) => setTimeout(r, 30));
    const until = performance.now() + 300;
    while (performance.now() < until);
    await new Promise((r) => setTimeout(r, 30));
    const text = await (await app.request('/metrics')).text();
    expect(text).toContain('# TYPE switchboard_event_loop_delay_seconds summary');
    const q = (quantile: string) => Number(new RegExp(`^switchboard_event_loop_delay_seconds\\{quantile="${quantile}"\\} (\\S+)$`, 'm').exec(text)?.[1]);
    expect(q('1')).toBeGreaterThanOrEqual(0.25);
    expect(q('0.5')).toBeLessThan(q('1'));
    expect(q('0.99')).toBeLessThanOrEqual(q('1'));
    expect(text).toMatch(/^switchboard_event_loop_delay_seconds_count \d+$/m);
    // The next window no longer has the block in it.
    await new Promise((r) => setTimeout(r, 50));
    const after = await (await app.request('/metrics')).text();
    expect(Number(/^switchboard_event_loop_delay_seconds\{quantile="1"\} (\S+)$/m.exec(after)?.[1])).toBeLessThan(0.25);
  });

  it('/metrics labels stay bounded: every unknown event type counts under type="unknown", an unknown method under OTHER', async () => {
    const { app } = testApp(new MemoryStore());
    for (let i = 0; i < 20; i++) {
      const body = JSON.stringify(event(`made.up.type${i}`));
      expect((await app.request('/webhooks/service', { method: 'POST', body, headers: signed(body) })).status).toBe(200);
    }
    await app.request('/healthz', { method: 'PROPFIND' });
    const text = await (await app.request('/metrics')).text();
    expect(text).not.toContain('made.up.type');
    expect(text).toContain('switchboard_webhook_events_total{type="unknown",outcome="accepted"} 20');
    expect(text).toMatch(/switchboard_http_requests_total\{method="OTHER",/);
    expect(text).not.toContain('PROPFIND');
  });

  it('with METRICS_TOKEN set, /metrics needs its bearer (401 in the error shape otherwise); API answers carry nosniff', async () => {
    const token = 'metrics-token-for-tests-0000';
    const { app } = testApp(new MemoryStore(), { config: testConfig({ METRICS_TOKEN: token }) });
    const none = await app.request('/metrics');
    expect(none.status).toBe(401);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED');
    expect(none.headers.get('x-content-type-options')).toBe('nosniff');
    expect((await app.request('/metrics', { headers: { authorization: `Bearer ${token}x` } })).status).toBe(401);
    const ok = await app.request('/metrics', { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('switchboard_up 1');
  });
});
