/**
 * One server under test for bench/ingest.ts, in its own process (so its CPU time can be
 * read from /proc per target). argv: <kind> [redisUrl]
 *
 * - `ingest`: the real `POST /webhooks/service` (createApp) on a Redis store;
 * - `bare`: a bare Hono handler that parses the JSON body and answers JSON;
 * - `ingest-no-redis` (diagnostic, `--explain`): the real app, but the store accepts every
 *   event at once without Redis: what signature, JSON, middleware and response cost;
 * - `ingest-unawaited` (diagnostic, `--explain`, NOT a valid receiver): the real app whose
 *   store does the full Redis accept but answers before it returns: the Redis work
 *   without its latency, i.e. a ceiling for any batching scheme.
 *
 * Prints `{"url": ...}` when listening; on SIGTERM prints `{"acceptStats": ...}` and exits.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from '../server/app.ts';
import { loadConfig } from '../server/config/config.ts';
import { silentLogger } from '../server/log/logger.ts';
import { RedisStore } from '../server/store/redis.ts';
import type { Store } from '../server/store/store.ts';

export const BENCH_SECRET = 'whsec_bench_secret_0123456789';
export type TargetKind = 'ingest' | 'bare' | 'ingest-no-redis' | 'ingest-unawaited';
const [kind, redisUrl] = process.argv.slice(2) as [TargetKind, string | undefined];

/** The Redis store with `acceptEvent` replaced (diagnostic targets only). */
function withAccept(store: RedisStore, acceptEvent: Store['acceptEvent']): Store {
  return new Proxy(store, { get: (t, k) => (k === 'acceptEvent' ? acceptEvent : Reflect.get(t, k, t)) }) as Store;
}

let redis: RedisStore | undefined;
let fetch: (r: Request) => Response | Promise<Response>;
if (kind === 'bare') {
  const bare = new Hono();
  bare.post('/webhooks/service', async (c) => {
    const body = await c.req.json<{ id: string }>();
    return c.json({ received: true, id: body.id });
  });
  fetch = bare.fetch;
} else {
  redis = new RedisStore({ url: redisUrl!, prefix: kind === 'ingest' ? 'bench:' : `bench-${kind}:` });
  await redis.ping();
  const r = redis;
  const store: Store =
    kind === 'ingest'
      ? r
      : kind === 'ingest-no-redis'
        ? withAccept(r, () => Promise.resolve('accepted'))
        : withAccept(r, (e, ttl) => {
            r.acceptEvent(e, ttl).catch(() => undefined);
            return Promise.resolve('accepted');
          });
  const config = loadConfig({
    SERVICE_BASE_URL: 'http://service.invalid/v2',
    SERVICE_API_KEY: 'bench_key_0000000000000000',
    SERVICE_WEBHOOK_SECRETS: BENCH_SECRET,
    SESSION_SECRET: 'bench_session_secret_000000',
    USERS_FILE: './users.json',
    PUBLIC_URL: 'http://127.0.0.1:8080',
    LOG_LEVEL: 'warn',
  });
  fetch = createApp({ config, store, log: silentLogger() }).fetch;
}

const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
  const s = serve({ fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
});
// The generator keeps every target's connections open while it measures the others (up
// to 12 targets of 500 ms each): longer than Node's default 5 s keep-alive timeout.
(server as Server).keepAliveTimeout = 10 * 60_000;
process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks/service` }) + '\n');
process.once('SIGTERM', async () => {
  process.stdout.write(JSON.stringify({ acceptStats: redis?.acceptStats ?? null }) + '\n');
  await redis?.close();
  process.exit(0);
});
