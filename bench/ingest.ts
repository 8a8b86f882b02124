/**
 * Webhook ingest benchmark, one run, one load generator (bench/loadgen.ts, its own
 * process, same connections for both targets):
 *
 *   1. our `POST /webhooks/service`: raw body with limit, signature check, JSON +
 *      envelope, Redis dedupe + XADD on a private `redis-server` with append-only
 *      persistence (fsync every second, as in docker-compose.yml);
 *   2. a bare Hono handler that parses the JSON body and answers JSON.
 *
 * Each server runs in its own process (bench/_ingest-target.ts). The two targets are
 * measured in alternating slices by the same generator, so load from elsewhere on the
 * machine hits both alike. Prints req/s of both, their ratio (goal >= 0.6), p50/p99
 * latency, and the CPU time per request of each side (server + Redis for ingest), which
 * a busy machine disturbs much less than throughput.
 *
 *   npx tsx bench/ingest.ts [--slice 500] [--rounds 12] [--connections 32]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
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
  sent: number;
  requests: number;
  ok: number;
  errors: number;
  statuses: Record<string, number>;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

const here = (f: string) => fileURLToPath(new URL(f, import.meta.url));

/** utime + stime of a process, in ms (Linux /proc; 0 elsewhere). */
function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

function lines(p: ChildProcess): AsyncIterator<string> {
  let buf = '';
  const queue: string[] = [];
  let wake: (() => void) | undefined;
  p.stdout!.on('data', (d) => {
    buf += String(d);
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      queue.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
    wake?.();
  });
  return {
    async next() {
      while (queue.length === 0) {
        if (p.exitCode !== null) return { done: true, value: undefined };
        await new Promise<void>((r) => (wake = r));
      }
      return { done: false, value: queue.shift()! };
    },
  };
}

async function startTarget(kind: 'ingest' | 'bare', redisUrl: string) {
  const p = spawn(process.execPath, ['--import', 'tsx', here('./_ingest-target.ts'), kind, redisUrl], { stdio: ['ignore', 'pipe', 'inherit'] });
  const out = lines(p);
  const first = await out.next();
  if (first.done) throw new Error(`${kind} target exited`);
  const { url } = JSON.parse(first.value) as { url: string };
  return {
    url,
    pid: p.pid!,
    async stop(): Promise<{ acceptStats: { calls: number; events: number } | null }> {
      p.kill('SIGTERM');
      const last = await out.next();
      return last.done ? { acceptStats: null } : (JSON.parse(last.value) as { acceptStats: { calls: number; events: number } | null });
    },
  };
}

function load(targets: string[], idPrefix: string): Promise<Result[]> {
  const opts = { targets, sliceMs: SLICE, rounds: ROUNDS, connections: CONNECTIONS, secret: SECRET, idPrefix, warmupMs: 500 };
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', here('./loadgen.ts'), JSON.stringify(opts)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => (out += String(d)));
    p.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Result[]) : reject(new Error(`load generator exited ${code}`))));
  });
}

const redis = await startRedis({ args: ['--appendonly', 'yes', '--appendfsync', 'everysec'] });
const probe = new Redis(redis.url);
try {
  const redisPid = Number(/process_id:(\d+)/.exec(await probe.info('server'))![1]);
  const ingest = await startTarget('ingest', redis.url);
  const bare = await startTarget('bare', redis.url);
  const cpu0 = { ingest: cpuMs(ingest.pid), bare: cpuMs(bare.pid), redis: cpuMs(redisPid) };
  const [a, b] = (await load([ingest.url, bare.url], `evt_${process.pid}_${Date.now()}`)) as [Result, Result];
  const cpu = { ingest: cpuMs(ingest.pid) - cpu0.ingest, bare: cpuMs(bare.pid) - cpu0.bare, redis: cpuMs(redisPid) - cpu0.redis };
  const { acceptStats } = await ingest.stop();
  await bare.stop();
  const stored = Number(await probe.xlen('bench:events'));

  const us = (ms: number, n: number) => ((ms * 1000) / Math.max(1, n)).toFixed(0);
  const cpuIngest = (cpu.ingest + cpu.redis) / Math.max(1, a.sent);
  const cpuBare = cpu.bare / Math.max(1, b.sent);
  const fmt = (n: number) => n.toFixed(0).padStart(7);
  const ms = (n: number) => n.toFixed(2).padStart(6);
  const out = [
    `webhook ingest benchmark: one load generator process, ${CONNECTIONS} connections per target, ${ROUNDS} alternating ${SLICE} ms slices per target`,
    `                                            req/s     p50 ms  p99 ms  non-2xx/errors  CPU us/request`,
    `signed webhook ingest (Redis dedupe+append) ${fmt(a.rps)}   ${ms(a.p50Ms)}  ${ms(a.p99Ms)}  ${a.requests - a.ok}/${a.errors}             ${us(cpu.ingest, a.sent)} server + ${us(cpu.redis, a.sent)} redis`,
    `bare Hono JSON POST handler                 ${fmt(b.rps)}   ${ms(b.p50Ms)}  ${ms(b.p99Ms)}  ${b.requests - b.ok}/${b.errors}             ${us(cpu.bare, b.sent)} server`,
    `ratio ingest / bare: ${(a.rps / b.rps).toFixed(2)} req/s (goal >= 0.60); by CPU per request: ${(cpuBare / cpuIngest).toFixed(2)}`,
    `events durably appended to the Redis stream: ${stored} (all ${a.sent} sent, warm-up included, were accepted: ${stored === a.sent}); ` +
      `${acceptStats ? (acceptStats.events / Math.max(1, acceptStats.calls)).toFixed(1) : '?'} events per accept script call`,
    `machine load average at the end: ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
  ];
  process.stdout.write(out.join('\n') + '\n');
  if (stored < a.ok) throw new Error(`only ${stored} of ${a.ok} accepted events are in the stream`);
} finally {
  probe.disconnect();
  await redis.close();
}
