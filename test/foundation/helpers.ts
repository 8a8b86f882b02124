/** Shared setup of the foundation's integration tests. */
import { until as waitUntil } from '../support/wait.ts';
import { serve } from '@hono/node-server';
import type { AddressInfo } from 'node:net';
import { createAppWithMetrics, type AppDeps } from '../../server/app.ts';
import { loadConfig, type Config } from '../../server/config/config.ts';
import { createLogger, memoryDestination } from '../../server/log/logger.ts';
import type { Store } from '../../server/store/store.ts';
import { sign } from '../../server/webhooks/signature.ts';
import { tempDataDir } from '../support/data-dir.ts';
import { closeServer } from '../support/close-server.ts';

export const SECRET_A = 'whsec_test_secret_aaaaaaaaaa';
export const SECRET_B = 'whsec_test_secret_bbbbbbbbbb';
export const API_KEY = 'key_test_api_key_zzzzzzzzzzzz';

export function testConfig(over: Record<string, string> = {}): Config {
  return loadConfig({
    SERVICE_BASE_URL: 'http://service.invalid/v2',
    SERVICE_API_KEY: API_KEY,
    SERVICE_WEBHOOK_SECRETS: `${SECRET_A},${SECRET_B}`,
    SESSION_SECRET: 'session_secret_for_tests_0000',
    USERS_FILE: './users.json',
    PUBLIC_URL: 'http://127.0.0.1:8080',
    LOG_LEVEL: 'debug',
    DATA_DIR: tempDataDir(),
    ...over,
  });
}

export function testApp(store: Store, over: Partial<AppDeps> = {}) {
  const config = over.config ?? testConfig();
  const logs = memoryDestination();
  const log = createLogger({ level: 'trace', destination: logs, secrets: [config.serviceApiKey, config.sessionSecret, ...config.webhookSecrets] });
  const made = createAppWithMetrics({ config, store, log, ...over });
  return { ...made, config, logs, log };
}

let seq = 0;
export function event(type = 'chat.call.connect', id = `evt_${process.pid}_${Date.now()}_${seq++}`, payload?: Record<string, unknown>) {
  return {
    id,
    type,
    apiVersion: 'v2',
    createTime: new Date().toISOString(),
    ...(payload ?? {
      callingConnect: {
        wacid: `wacid.${id}`,
        phoneId: 'phone-1',
        from: '+15550001111',
        to: '+15550002222',
        direction: 'USER_INITIATED',
        dialTime: Date.now(),
        sdpType: 'offer',
        sdp: 'v=0\r\n',
      },
    }),
  };
}

export function signed(body: string, secret = SECRET_A, t = Math.floor(Date.now() / 1000)): Record<string, string> {
  return { 'Content-Type': 'application/json', 'Service-Signature': sign(secret, t, body) };
}

/** Serve `fetch` on 127.0.0.1, on `atPort` (default: any free one). */
export async function listen(fetch: (req: Request) => Response | Promise<Response>, atPort = 0): Promise<{ url: string; close(): Promise<void> }> {
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch, port: atPort, hostname: '127.0.0.1' }, () => resolve(s));
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      closeServer(server),
  };
}

export { sleep } from '../support/wait.ts';

/** `until` of test/support/wait.ts for a boolean condition, polled every 20 ms. */
export async function until(cond: () => boolean | Promise<boolean>, ms = 10_000, what = 'condition'): Promise<void> {
  await waitUntil(what, async () => (await cond()) || undefined, ms, 20);
}
