/**
 * One server under test for bench/ingest.ts, in its own process (so its CPU time can be
 * read from /proc per target). argv: <ingest|bare> [redisUrl]
 * Prints `{"url": ...}` when listening; on SIGTERM prints `{"acceptStats": ...}` and exits.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import type { AddressInfo } from 'node:net';
import { createApp } from '../server/app.ts';
import { loadConfig } from '../server/config/config.ts';
import { silentLogger } from '../server/log/logger.ts';
import { RedisStore } from '../server/store/redis.ts';

export const BENCH_SECRET = 'whsec_bench_secret_0123456789';
const [kind, redisUrl] = process.argv.slice(2);

let store: RedisStore | undefined;
let fetch: (r: Request) => Response | Promise<Response>;
if (kind === 'ingest') {
  store = new RedisStore({ url: redisUrl!, prefix: 'bench:' });
  await store.ping();
  const config = loadConfig({
    SERVICE_BASE_URL: 'http://service.invalid/v2',
    SERVICE_API_KEY: 'bench_key_0000000000000000',
    SERVICE_WEBHOOK_SECRETS: BENCH_SECRET,
    SESSION_SECRET: 'bench_session_secret_000000',
    USERS_FILE: './users.json',
    LOG_LEVEL: 'warn',
  });
  fetch = createApp({ config, store, log: silentLogger() }).fetch;
} else {
  const bare = new Hono();
  bare.post('/webhooks/service', async (c) => {
    const body = await c.req.json<{ id: string }>();
    return c.json({ received: true, id: body.id });
  });
  fetch = bare.fetch;
}

const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
  const s = serve({ fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
});
process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/service` }) + '\n');
process.once('SIGTERM', async () => {
  process.stdout.write(JSON.stringify({ acceptStats: store?.acceptStats ?? null }) + '\n');
  await store?.close();
  process.exit(0);
});
