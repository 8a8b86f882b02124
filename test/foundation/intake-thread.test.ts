/**
 * `WEBHOOK_PORT`: webhooks received on a thread and port of their own (server/webhooks/intake.ts).
 * A whole node (demo mode, memory store): a delivery to the intake port is verified there,
 * appended by the node and processed by its workers, counted in the node's `/metrics`; the
 * node's own port no longer takes webhooks. The intake alone, on a real thread: a store that
 * fails or does not answer is a 503 (the Service delivers again), never a lost 200.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config/config.ts';
import { startSwitchboard } from '../../server/main.ts';
import { silentLogger } from '../../server/log/logger.ts';
import { Metrics, foundationMetrics } from '../../server/ops/metrics.ts';
import { startIntake } from '../../server/webhooks/intake.ts';
import { tempDataDir } from '../support/data-dir.ts';
import { until } from '../support/wait.ts';
import { SECRET_A, event, signed } from './helpers.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

const deliver = (url: string, body: string, headers: Record<string, string>) => fetch(url, { method: 'POST', headers, body });

/** A counter's value in a `/metrics` text (0 when absent). */
function counter(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && labels.split(',').every((kv) => l.includes(kv)));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

describe('WEBHOOK_PORT: the intake thread', () => {
  it('a node takes webhooks on its own port, on the thread: verified, stored once, processed, counted; its main port takes none', async () => {
    const running = await startSwitchboard(loadConfig({ PORT: '0', WEBHOOK_PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: tempDataDir(), SERVICE_WEBHOOK_SECRETS: SECRET_A }), {
      log: silentLogger(),
      drainMs: 1000,
      history: null,
    });
    cleanups.push(() => running.close());
    const hook = new URL(running.webhookUrl);
    expect(hook.port).not.toBe(new URL(running.url).port);
    expect(hook.pathname).toBe('/webhooks/service');

    // An event type the node does not handle: accepted, then processed as ignored by the workers.
    const body = JSON.stringify(event('chat.intake.test', `evt_intake_${Date.now()}`, { intakeTest: { n: 1 } }));
    const first = await deliver(running.webhookUrl, body, signed(body));
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ received: true, duplicate: false });
    expect(first.headers.get('x-request-id')).toMatch(/\S/);
    const again = await deliver(running.webhookUrl, body, signed(body));
    expect(await again.json()).toEqual({ received: true, duplicate: true });

    const bad = await deliver(running.webhookUrl, body, signed(body, 'whsec_not_the_secret_000000'));
    expect(bad.status).toBe(401);
    expect(await bad.json()).toMatchObject({ error: { code: 'UNAUTHORIZED', message: expect.stringContaining('Service-Signature') } });

    // The node's own port: no webhook route any more.
    const main = await deliver(`${running.url}/webhooks/service`, body, signed(body));
    expect(main.status).toBe(404);
    // The intake port: nothing but the webhook route.
    expect((await fetch(`${hook.origin}/healthz`)).status).toBe(404);

    // The thread's counts reach the node's /metrics (sent every second); the workers processed the event.
    let text = '';
    await until('the intake counts in /metrics', async () => {
      text = await (await fetch(`${running.url}/metrics`)).text();
      return counter(text, 'switchboard_webhook_requests_total', 'outcome="unauthorized"') === 1 && counter(text, 'switchboard_webhook_events_total', 'outcome="ignored"') === 1;
    }, 5000);
    expect(counter(text, 'switchboard_webhook_requests_total', 'outcome="accepted"')).toBe(1);
    expect(counter(text, 'switchboard_webhook_requests_total', 'outcome="duplicate"')).toBe(1);
    expect(counter(text, 'switchboard_http_requests_total', 'route="/webhooks/service",status="200"')).toBe(2);
    const ready = (await (await fetch(`${running.url}/readyz`)).json()) as { checks: Record<string, string> };
    expect(Object.keys(ready.checks)).toContain('webhook intake');
    expect(ready.checks['webhook intake']).toBe('ok');
  }, 60_000);

  const thread = async (acceptEvent: () => Promise<'accepted' | 'duplicate'>) => {
    const intake = await startIntake({
      settings: { port: 0, host: '127.0.0.1', secrets: [SECRET_A], dedupeTtlMs: 60_000, logLevel: 'silent', redact: [], timeouts: { requestMs: 5000, headersMs: 2000, checkMs: 500 }, appendTimeoutMs: 300 },
      store: { acceptEvent },
      metrics: foundationMetrics(new Metrics({ processMetrics: false })),
      log: silentLogger(),
    });
    cleanups.push(() => intake.close(1000));
    return { intake, url: `http://127.0.0.1:${intake.port}/webhooks/service` };
  };

  it('a store that refuses the append: 503 UNAVAILABLE from the thread, the Service delivers again', async () => {
    const { url } = await thread(() => Promise.reject(new Error('store down')));
    const body = JSON.stringify(event());
    const r = await deliver(url, body, signed(body));
    expect(r.status).toBe(503);
    expect(await r.json()).toMatchObject({ error: { code: 'UNAVAILABLE' } });
  });

  it('a node that does not answer the append within its bound: 503, not a 200 for an event nobody stored', async () => {
    const { url } = await thread(() => new Promise(() => undefined));
    const body = JSON.stringify(event());
    const t0 = Date.now();
    const r = await deliver(url, body, signed(body));
    expect(r.status).toBe(503);
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('a thread that dies is started again on the same port; the node is not ready meanwhile', async () => {
    const { intake, url } = await thread(async () => 'accepted');
    const body = JSON.stringify(event());
    expect((await deliver(url, body, signed(body))).status).toBe(200);
    await intake.thread!.terminate();
    await expect(intake.readiness.check()).rejects.toThrow(/not listening/);
    await until('the thread listens again', async () => (await intake.readiness.check().then(() => true, () => false)), 5000, 50);
    const again = JSON.stringify(event());
    expect((await deliver(url, again, signed(again))).status).toBe(200);
  });

  it('close: deliveries in flight are answered, then the port takes no more', async () => {
    let release: (r: 'accepted') => void = () => undefined;
    const { intake, url } = await thread(() => new Promise((r) => (release = r)));
    const body = JSON.stringify(event());
    const inFlight = deliver(url, body, { ...signed(body), connection: 'close' });
    await new Promise((r) => setTimeout(r, 100));
    const closed = intake.close(2000);
    release('accepted');
    expect((await inFlight).status).toBe(200);
    await closed;
    await expect(deliver(url, body, signed(body))).rejects.toThrow();
  });
});
