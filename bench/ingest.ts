/**
 * Webhook ingest benchmark, one run, one load generator (bench/loadgen.ts in a child
 * process, same connections and duration for both targets):
 *
 *   1. our `POST /webhooks/service`: raw body with limit, signature check, JSON +
 *      envelope, Redis dedupe + XADD (one EVALSHA) on a private `redis-server` with
 *      append-only persistence (fsync every second, as in docker-compose.yml);
 *   2. a bare Hono handler that parses the JSON body and answers JSON.
 *
 * Prints req/s of both, their ratio (goal ≥ 0.6) and p50/p99 latency.
 *   npx tsx bench/ingest.ts [--slice 500] [--rounds 12] [--connections 32]
 *
 * The two targets are measured in alternating slices by the same generator, so load from
 * elsewhere on the machine hits both alike.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import type { AddressInfo } from 'node:net';
import { createApp } from '../server/app.ts';
import { loadConfig } from '../server/config/config.ts';
import { silentLogger } from '../server/log/logger.ts';
import { RedisStore } from '../server/store/redis.ts';
import { startRedis } from '../test/support/redis.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const SLICE = arg('slice', 500);
const ROUNDS = arg('rounds', 12);
const CONNECTIONS = arg('connections', 32);
const SECRET = 'whsec_bench_secret_0123456789';

interface Result {
  requests: number;
  ok: number;
  errors: number;
  statuses: Record<string, number>;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

async function listen(fetch: (r: Request) => Response | Promise<Response>) {
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        (server as unknown as { closeAllConnections(): void }).closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** One load generator process for both targets, alternating slices. */
function load(targets: string[], idPrefix: string): Promise<Result[]> {
  const script = fileURLToPath(new URL('./loadgen.ts', import.meta.url));
  const opts = { targets, sliceMs: SLICE, rounds: ROUNDS, connections: CONNECTIONS, secret: SECRET, idPrefix, warmupMs: 500 };
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', script, JSON.stringify(opts)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => (out += String(d)));
    p.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Result[]) : reject(new Error(`load generator exited ${code}`))));
  });
}

const redis = await startRedis({ args: ['--appendonly', 'yes', '--appendfsync', 'everysec'] });
const store = new RedisStore({ url: redis.url, prefix: 'bench:' });
const config = loadConfig({
  SERVICE_BASE_URL: 'http://service.invalid/v2',
  SERVICE_API_KEY: 'bench_key_0000000000000000',
  SERVICE_WEBHOOK_SECRETS: SECRET,
  SESSION_SECRET: 'bench_session_secret_000000',
  USERS_FILE: './users.json',
  LOG_LEVEL: 'warn',
});

try {
  const ours = await listen(createApp({ config, store, log: silentLogger() }).fetch);
  const bare = new Hono();
  bare.post('/webhooks/service', async (c) => {
    const body = await c.req.json<{ id: string }>();
    return c.json({ received: true, id: body.id });
  });
  const baseline = await listen(bare.fetch);

  const run = `${process.pid}_${Date.now()}`;
  const [a, b] = (await load([`${ours.url}/webhooks/service`, `${baseline.url}/webhooks/service`], `evt_${run}`)) as [Result, Result];
  await ours.close();
  await baseline.close();

  const stored = Number(await store.redis.xlen('bench:events'));
  const fmt = (n: number) => n.toFixed(0).padStart(7);
  const ms = (n: number) => n.toFixed(2).padStart(6);
  const lines = [
    `webhook ingest benchmark: one load generator process, ${CONNECTIONS} connections per target, ${ROUNDS} alternating ${SLICE} ms slices per target`,
    `                                            req/s     p50 ms  p99 ms  non-2xx/errors`,
    `signed webhook ingest (Redis dedupe+append) ${fmt(a.rps)}   ${ms(a.p50Ms)}  ${ms(a.p99Ms)}  ${a.requests - a.ok}/${a.errors}`,
    `bare Hono JSON POST handler                 ${fmt(b.rps)}   ${ms(b.p50Ms)}  ${ms(b.p99Ms)}  ${b.requests - b.ok}/${b.errors}`,
    `ratio ingest / bare: ${(a.rps / b.rps).toFixed(2)} (goal >= 0.60)`,
    `events durably appended to the Redis stream: ${stored} (accepted ${a.ok} + warm-up); ${(store.acceptStats.events / Math.max(1, store.acceptStats.calls)).toFixed(1)} events per accept script call`,
  ];
  process.stdout.write(lines.join('\n') + '\n');
  if (stored < a.ok) throw new Error(`only ${stored} of ${a.ok} accepted events are in the stream`);
} finally {
  await store.close();
  await redis.close();
}
