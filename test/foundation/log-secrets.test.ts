/**
 * Secrets never reach the logs: a full round with the Service emulator (a call's signed
 * connect webhook in, our Service client's reject out with X-API-Key, the terminate
 * webhook in, plus a forged delivery), everything logged at trace level, and the output
 * searched for the API key, the webhook secrets and the session secret.
 *
 * The logger here has NO secret-scrubbing list: this proves the code and the path
 * redaction keep secrets out on their own (the scrubber in production is a second layer).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../server/app.ts';
import { createLogger, memoryDestination } from '../../server/log/logger.ts';
import { Metrics, foundationMetrics } from '../../server/ops/metrics.ts';
import { createServiceClient } from '../../server/service/index.ts';
import { MemoryStore } from '../../server/store/memory.ts';
import { createWorkers } from '../../server/webhooks/workers.ts';
import { startEmulator, type Emulator } from '../emulator/index.ts';
import { API_KEY, SECRET_A, SECRET_B, event, listen, signed, testConfig, until } from './helpers.ts';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: [API_KEY], webhookSecret: SECRET_A, timeScale: 0.001 });
});
afterAll(async () => {
  await emu?.close();
});

describe('secrets in logs', () => {
  it('a full webhook + Service client round at trace level logs neither the API key nor any secret', async () => {
    const config = testConfig({ SERVICE_BASE_URL: emu.baseUrl, LOG_LEVEL: 'trace' });
    const logs = memoryDestination();
    const log = createLogger({ level: 'trace', destination: logs, secrets: [] });
    const store = new MemoryStore();
    const client = createServiceClient({ baseUrl: emu.baseUrl, apiKey: API_KEY, logger: log.child({ part: 'service' }) });
    const metrics = new Metrics();
    const app = createApp({ config, store, log, metrics });
    const ended: string[] = [];
    const workers = createWorkers({
      store,
      log: log.child({ part: 'workers' }),
      metrics: foundationMetrics(metrics),
      maxAttempts: 3,
      blockMs: 50,
      handlers: {
        'chat.call.connect': async (e) => {
          const c = e.callingConnect as { wacid: string; phoneId: string };
          log.info({ wacid: c.wacid }, 'rejecting the test call');
          await client.calls.reject({ phoneId: c.phoneId, wacid: c.wacid });
        },
        'chat.call.terminate': async (e) => {
          ended.push(String((e as Record<string, unknown>).id));
        },
      },
    });
    const srv = await listen(app.fetch);
    await workers.start();
    try {
      emu.webhooks.addEndpoint({ url: `${srv.url}/webhooks/service`, secret: SECRET_A });
      const started = await fetch(`${emu.controlUrl}/calls`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-API-Key': API_KEY },
        body: JSON.stringify({ audio: 'silence' }),
      });
      expect(started.status).toBe(200);
      await until(() => ended.length > 0, 20_000, 'terminate webhook');

      // A forged delivery and one with the API key where it does not belong.
      const body = JSON.stringify(event());
      await fetch(`${srv.url}/webhooks/service`, { method: 'POST', body, headers: signed(body, 'whsec_forged_secret_000000') });
      await fetch(`${srv.url}/webhooks/service`, { method: 'POST', body, headers: { ...signed(body), 'X-API-Key': API_KEY, Cookie: `sid=${config.sessionSecret}` } });

      const text = logs.text();
      // The round really was logged...
      expect(text).toContain('service request');
      expect(text).toContain('rejecting the test call');
      expect(text).toContain('webhook signature refused');
      // ...and no secret is in it.
      for (const secret of [API_KEY, SECRET_A, SECRET_B, config.sessionSecret]) expect(text).not.toContain(secret);
    } finally {
      await workers.stop();
      await srv.close();
      await store.close();
    }
  }, 40_000);
});
