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
 * - `bridge-pglite`: the whole bridge as `npm start` runs it in demo mode
 *   (`startSwitchboard`: built-in emulator, Redis store, webhook workers, messaging) with the
 *   embedded history (PGlite under a temporary `DATA_DIR`): every `chat.message.updated`
 *   is received, then handled by the workers into history's message records.
 * - `bridge-postgres`: the same with `DATABASE_URL` (argv[3]) on PostgreSQL.
 * - `bridge-pglite-intake`, `bridge-postgres-intake`: the same two with `WEBHOOK_PORT`:
 *   webhooks received on the intake thread's own port (server/webhooks/intake.ts).
 *
 * Prints `{"url": ...}` when listening; on SIGTERM prints `{"acceptStats": ..., "loopDelay": ...}`
 * (event-loop delay while serving, ms: server/ops/loop-delay.ts) and exits.
 */
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../server/app.ts';
import { loadConfig } from '../server/config/config.ts';
import { silentLogger } from '../server/log/logger.ts';
import { loopDelay } from '../server/ops/loop-delay.ts';
import { startSwitchboard, type Running } from '../server/main.ts';
import { RedisStore } from '../server/store/redis.ts';
import type { Store } from '../server/store/store.ts';

export const BENCH_SECRET = 'whsec_bench_secret_0123456789';
export type TargetKind = 'ingest' | 'bare' | 'ingest-no-redis' | 'ingest-unawaited' | 'bridge-pglite' | 'bridge-postgres' | 'bridge-pglite-intake' | 'bridge-postgres-intake';
const [kind, redisUrl, databaseUrl] = process.argv.slice(2) as [TargetKind, string | undefined, string | undefined];

/** The Redis store with `acceptEvent` replaced (diagnostic targets only). */
function withAccept(store: RedisStore, acceptEvent: Store['acceptEvent']): Store {
  return new Proxy(store, { get: (t, k) => (k === 'acceptEvent' ? acceptEvent : Reflect.get(t, k, t)) }) as Store;
}

let redis: RedisStore | undefined;
let fetch: ((r: Request) => Response | Promise<Response>) | undefined;
let bridge: { running: Running; dir: string } | undefined;
if (kind.startsWith('bridge-')) {
  const dir = mkdtempSync(join(tmpdir(), 'bench-ingest-'));
  const config = loadConfig({
    HOST: '127.0.0.1',
    PORT: '0',
    REDIS_URL: redisUrl,
    DATA_DIR: dir,
    ...(kind.startsWith('bridge-postgres') ? { DATABASE_URL: databaseUrl } : {}),
    ...(kind.endsWith('-intake') ? { WEBHOOK_PORT: '0' } : {}),
    SERVICE_WEBHOOK_SECRETS: BENCH_SECRET,
    SESSION_SECRET: 'bench_session_secret_000000',
    LOG_LEVEL: 'error',
  });
  bridge = { running: await startSwitchboard(config, { log: silentLogger() }), dir };
} else if (kind === 'bare') {
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

let base: string;
if (bridge) base = bridge.running.webhookUrl.replace(/\/webhooks\/service$/, '');
else {
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: fetch!, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  // The generator keeps every target's connections open while it measures the others (up
  // to 12 targets of 500 ms each): longer than Node's default 5 s keep-alive timeout.
  (server as Server).keepAliveTimeout = 10 * 60_000;
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
// Event-loop delay from now on (start-up, e.g. migrations, is not in it).
const loop = loopDelay();
loop.take();
process.stdout.write(JSON.stringify({ url: `${base}/webhooks/service` }) + '\n');
process.once('SIGTERM', async () => {
  const d = loop.take();
  const ms = (s: number) => Math.round(s * 1e5) / 100;
  process.stdout.write(JSON.stringify({ acceptStats: redis?.acceptStats ?? null, loopDelay: { p50: ms(d.p50), p99: ms(d.p99), max: ms(d.max) } }) + '\n');
  await redis?.close();
  // Not drained: the bench is over, only the temporary directory matters.
  if (bridge) rmSync(bridge.dir, { recursive: true, force: true });
  process.exit(0);
});
