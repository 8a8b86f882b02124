/**
 * Webhook ingest benchmark, one run, one load generator (bench/loadgen.ts, its own
 * process, same connections for every target):
 *
 *   1. our `POST /webhooks/service`: raw body with limit, signature check, JSON +
 *      envelope, Redis dedupe + XADD on a private `redis-server` with append-only
 *      persistence (fsync every second, as in docker-compose.yml);
 *   2. a bare Hono handler that parses the JSON body and answers JSON;
 *   3. the whole bridge with the embedded history (`startSwitchboard` in demo mode, as
 *      `npm start` runs it: PGlite under a temporary `DATA_DIR`), whose workers hand every
 *      `chat.message.updated` to messaging, which writes the message record to history;
 *   4. the same bridge with `DATABASE_URL` on PostgreSQL (a database of its own,
 *      `test/support/postgres.ts`, dropped at the end);
 *   5, 6. bridges 3 and 4 with `WEBHOOK_PORT`: webhooks received on the intake thread
 *      (server/webhooks/intake.ts), the node's event loop left to appends and processing.
 *
 * Ratios to the bare handler: ingest (goal >= 0.6), bridge with embedded history (>= 0.75),
 * bridge with PostgreSQL (>= 0.85). Each bridge's event-loop delay (p50/p99/max, over the
 * whole run) is printed, and how many of the events it accepted its workers had handled
 * when the load stopped (the rest is backlog in its stream).
 *
 * Each server runs in its own process (bench/_ingest-target.ts). Every (server,
 * concurrency) pair of the sweep (default 64, 128 and 256 connections) is one target, and
 * all targets are measured in interleaved slices by the same generator, so load from
 * elsewhere on the machine, or the machine changing speed during the run, hits them alike.
 * Prints req/s, p50/p99 latency and the CPU time per request of each side (server + Redis
 * for ingest, and the generator) at each concurrency, then each server's throughput, i.e.
 * its best over the sweep, and the ratio of the two (goal >= 0.6).
 *
 * Why a sweep: a closed-loop generator with a fixed number of connections measures
 * throughput at that concurrency only. The bare handler answers at once and is saturated
 * at 64 connections already; ingest waits for a Redis round trip per batch, so at low
 * concurrency it idles between batches and the figure is its latency, not its capacity.
 * Both figures are printed, and latency at the peak too.
 *
 * `--explain` adds two diagnostic targets to the same run, to show where the gap to the
 * bare handler comes from: the real app with a store that accepts without Redis, and the
 * real app doing the full Redis accept without waiting for it (not a valid receiver: a
 * ceiling for any batching of the Redis step on this machine).
 *
 *   npx tsx bench/ingest.ts [--slice 500] [--rounds 12] [--connections 64,128,256] [--explain]
 *   BENCH_TARGET_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/prof" npx tsx bench/ingest.ts   # profile the servers
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { createTestDatabase } from '../test/support/postgres.ts';
import { startRedis } from '../test/support/redis.ts';
import type { TargetKind } from './_ingest-target.ts';
import { figure } from './figures.ts';
import { otherLaneBacklog } from './stats.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const SLICE = arg('slice', 500);
const ROUNDS = arg('rounds', 12);
const CONNECTION_LEVELS = (() => {
  const i = process.argv.indexOf('--connections');
  const v = i > 0 ? process.argv[i + 1]! : '64,128,256';
  const levels = v.split(',').map(Number);
  if (levels.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--connections: a comma-separated list of positive integers, got ${v}`);
  return levels;
})();
const EXPLAIN = process.argv.includes('--explain');
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
  loadgenCpuUsPerRequest: number;
  /** Per pid of the target (server, then its redis-server if any). */
  cpuUsPerRequest: number[];
}

const here = (f: string) => fileURLToPath(new URL(f, import.meta.url));

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

interface LoopDelay {
  p50: number;
  p99: number;
  max: number;
}

async function startTarget(kind: TargetKind, redisUrl: string, databaseUrl?: string) {
  const p = spawn(process.execPath, [...(process.env.BENCH_TARGET_FLAGS ?? '').split(' ').filter(Boolean), '--import', 'tsx', here('./_ingest-target.ts'), kind, redisUrl, ...(databaseUrl ? [databaseUrl] : [])], { stdio: ['ignore', 'pipe', 'inherit'] });
  const out = lines(p);
  const first = await out.next();
  if (first.done) throw new Error(`${kind} target exited`);
  const { url } = JSON.parse(first.value) as { url: string };
  return {
    url,
    pid: p.pid!,
    async stop(): Promise<{ acceptStats: { calls: number; events: number } | null; loopDelay?: LoopDelay }> {
      p.kill('SIGTERM');
      const last = await out.next();
      return last.done ? { acceptStats: null } : (JSON.parse(last.value) as { acceptStats: { calls: number; events: number } | null; loopDelay: LoopDelay });
    },
  };
}

interface LoadTarget {
  url: string;
  connections: number;
  pids: number[];
}

function load(targets: LoadTarget[], idPrefix: string): Promise<Result[]> {
  const opts = { targets, sliceMs: SLICE, rounds: ROUNDS, secret: SECRET, idPrefix, warmupMs: 500 };
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['--import', 'tsx', here('./loadgen.ts'), JSON.stringify(opts)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => (out += String(d)));
    p.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as Result[]) : reject(new Error(`load generator exited ${code}`))));
  });
}

const aof = ['--appendonly', 'yes', '--appendfsync', 'everysec'];
// One redis-server per Redis-using target, so that its CPU time belongs to that target.
const redisMain = await startRedis({ args: aof });
const redisDiag = EXPLAIN ? await startRedis({ args: aof }) : undefined;
const redisPglite = await startRedis({ args: aof });
const redisPostgres = await startRedis({ args: aof });
const redisPgliteIntake = await startRedis({ args: aof });
const redisPostgresIntake = await startRedis({ args: aof });
const postgres = await createTestDatabase('sb_bench');
const postgresIntake = await createTestDatabase('sb_bench');
const probe = new Redis(redisMain.url);
const stopping: Array<() => Promise<unknown>> = [];
try {
  const pidOf = async (url: string) => {
    const r = new Redis(url);
    try {
      return Number(/process_id:(\d+)/.exec(await r.info('server'))![1]);
    } finally {
      r.disconnect();
    }
  };
  interface Row {
    label: string;
    target: Awaited<ReturnType<typeof startTarget>>;
    redisPid?: number;
  }
  const rows: Row[] = [
    { label: 'signed webhook ingest (Redis dedupe+append)', target: await startTarget('ingest', redisMain.url), redisPid: await pidOf(redisMain.url) },
    { label: 'bare Hono JSON POST handler', target: await startTarget('bare', redisMain.url) },
    { label: 'bridge, embedded history (PGlite)', target: await startTarget('bridge-pglite', redisPglite.url), redisPid: await pidOf(redisPglite.url) },
    { label: 'bridge, history on PostgreSQL', target: await startTarget('bridge-postgres', redisPostgres.url, postgres.url), redisPid: await pidOf(redisPostgres.url) },
    { label: 'bridge, PGlite, intake thread', target: await startTarget('bridge-pglite-intake', redisPgliteIntake.url), redisPid: await pidOf(redisPgliteIntake.url) },
    { label: 'bridge, PostgreSQL, intake thread', target: await startTarget('bridge-postgres-intake', redisPostgresIntake.url, postgresIntake.url), redisPid: await pidOf(redisPostgresIntake.url) },
  ];
  // Row indexes (diagnostics come after these).
  const INGEST = 0;
  const BARE = 1;
  const BRIDGE_PGLITE = 2;
  const BRIDGE_POSTGRES = 3;
  const INTAKE_PGLITE = 4;
  const INTAKE_POSTGRES = 5;
  if (redisDiag) {
    rows.push(
      { label: '  diagnostic: same app, store without Redis', target: await startTarget('ingest-no-redis', redisDiag.url) },
      { label: '  diagnostic: Redis accept not awaited', target: await startTarget('ingest-unawaited', redisDiag.url), redisPid: await pidOf(redisDiag.url) },
    );
  }
  for (const r of rows) stopping.push(() => r.target.stop());

  const us = (n: number) => n.toFixed(0).padStart(3);
  const fmt = (n: number) => n.toFixed(0).padStart(7);
  const ms = (n: number) => n.toFixed(2).padStart(6);
  const targets = rows.length * CONNECTION_LEVELS.length;
  process.stdout.write([
    `webhook ingest benchmark: one load generator process; ${targets} targets (${rows.length} servers x ${CONNECTION_LEVELS.length} concurrencies), each ${ROUNDS} ${SLICE} ms slices, all interleaved`,
    `conns  target                                        req/s   p50 ms  p99 ms  non-2xx/errors  CPU us/request: server + redis | load generator`,
  ].join('\n') + '\n');
  // Every (server, concurrency) pair is one target of one interleaved run: a change of the
  // machine's speed during the run hits all of them alike, so their ratios, and the best
  // over the sweep of each server, compare figures taken at the same times.
  const all = await load(
    CONNECTION_LEVELS.flatMap((connections) =>
      rows.map((r) => ({ url: r.target.url, connections, pids: r.redisPid ? [r.target.pid, r.redisPid] : [r.target.pid] })),
    ),
    `evt_${process.pid}_${Date.now()}`,
  );
  interface Level {
    connections: number;
    results: Result[];
  }
  const levels: Level[] = CONNECTION_LEVELS.map((connections, l) => ({ connections, results: all.slice(l * rows.length, (l + 1) * rows.length) }));
  let sentIngest = 0;
  let okIngest = 0;
  for (const { connections, results } of levels) {
    sentIngest += results[0]!.sent;
    okIngest += results[0]!.ok;
    const lines = rows.map((r, i) => {
      const x = results[i]!;
      const [server, redis] = x.cpuUsPerRequest;
      const redisPart = r.redisPid ? ` + ${us(redis!)}` : '      ';
      return `${String(connections).padStart(5)}  ${r.label.padEnd(44)} ${fmt(x.rps)}   ${ms(x.p50Ms)}  ${ms(x.p99Ms)}  ${`${x.requests - x.ok}/${x.errors}`.padEnd(14)}  ${us(server!)}${redisPart} | ${x.loadgenCpuUsPerRequest.toFixed(0)}`;
    });
    const b = results[BARE]!;
    const to = (i: number) => (results[i]!.rps / b.rps).toFixed(2);
    lines.push(
      `${' '.repeat(7)}ratio to bare at ${connections} connections: ingest ${to(INGEST)}, bridge+PGlite ${to(BRIDGE_PGLITE)}, bridge+PostgreSQL ${to(BRIDGE_POSTGRES)}; intake thread: +PGlite ${to(INTAKE_PGLITE)}, +PostgreSQL ${to(INTAKE_POSTGRES)}` +
        (EXPLAIN ? `; diagnostics: without Redis ${to(6)}, Redis not awaited ${to(7)}` : ''),
    );
    process.stdout.write(lines.join('\n') + '\n');
  }
  // What each bridge's workers had handled when the load stopped (the rest is backlog).
  const backlog = async (url: string) => {
    const { length, waiting } = await otherLaneBacklog(url);
    return { length, handled: length - waiting };
  };
  const backlogs = [await backlog(redisPglite.url), await backlog(redisPostgres.url), await backlog(redisPgliteIntake.url), await backlog(redisPostgresIntake.url)];
  stopping.length = 0;
  const stopped = [];
  for (const r of rows) stopped.push(await r.target.stop());
  const { acceptStats } = stopped[INGEST]!;
  const stored = Number(await probe.xlen('bench:events'));
  const aofRewrites = /aof_rewrites:(\d+)/.exec(await probe.info('persistence'))?.[1] ?? '?';

  const peak = (i: number) => levels.reduce((best, l) => (l.results[i]!.rps > best.results[i]!.rps ? l : best));
  const pi = peak(INGEST);
  const pb = peak(BARE);
  const pp = peak(BRIDGE_PGLITE);
  const pq = peak(BRIDGE_POSTGRES);
  const tp = peak(INTAKE_PGLITE);
  const tq = peak(INTAKE_POSTGRES);
  const at = (l: Level, i: number) => `${l.results[i]!.rps.toFixed(0)} req/s at ${l.connections} connections (p50 ${l.results[i]!.p50Ms.toFixed(2)} ms, p99 ${l.results[i]!.p99Ms.toFixed(2)} ms)`;
  const ratio = (l: Level, i: number) => l.results[i]!.rps / pb.results[BARE]!.rps;
  const delay = (d: LoopDelay | undefined) => (d ? `p50 ${d.p50.toFixed(2)} ms, p99 ${d.p99.toFixed(2)} ms, max ${d.max.toFixed(2)} ms` : '?');
  const handled = (b: { length: number; handled: number }) => `${b.handled} of ${b.length} accepted events handled when the load stopped`;
  const out = [
    `throughput (best over the sweep): ingest ${at(pi, INGEST)}; bare ${at(pb, BARE)}`,
    `  bridge, embedded history: ${at(pp, BRIDGE_PGLITE)}; bridge, PostgreSQL history: ${at(pq, BRIDGE_POSTGRES)}`,
    `  intake thread (WEBHOOK_PORT): embedded history ${at(tp, INTAKE_PGLITE)}; PostgreSQL history ${at(tq, INTAKE_POSTGRES)}`,
    `ratio ingest / bare: ${ratio(pi, INGEST).toFixed(3)} (goal >= 0.600); bridge+PGlite / bare: ${ratio(pp, BRIDGE_PGLITE).toFixed(3)} (goal >= 0.750); bridge+PostgreSQL / bare: ${ratio(pq, BRIDGE_POSTGRES).toFixed(3)} (goal >= 0.850)`,
    `  with the intake thread: bridge+PGlite / bare: ${ratio(tp, INTAKE_PGLITE).toFixed(3)} (goal >= 0.750); bridge+PostgreSQL / bare: ${ratio(tq, INTAKE_POSTGRES).toFixed(3)} (goal >= 0.850)`,
    `event-loop delay over the run: bridge+PGlite ${delay(stopped[BRIDGE_PGLITE]!.loopDelay)}; bridge+PostgreSQL ${delay(stopped[BRIDGE_POSTGRES]!.loopDelay)}`,
    `  node's loop with the intake thread: +PGlite ${delay(stopped[INTAKE_PGLITE]!.loopDelay)}; +PostgreSQL ${delay(stopped[INTAKE_POSTGRES]!.loopDelay)}`,
    `history: bridge+PGlite ${handled(backlogs[0]!)}; bridge+PostgreSQL ${handled(backlogs[1]!)}; intake thread +PGlite ${handled(backlogs[2]!)}, +PostgreSQL ${handled(backlogs[3]!)}`,
    `events durably appended to the Redis stream: ${stored} (all ${sentIngest} sent, warm-up included, were accepted: ${stored === sentIngest}); ` +
      `${acceptStats ? (acceptStats.events / Math.max(1, acceptStats.calls)).toFixed(1) : '?'} events per accept script call; ` +
      `${aofRewrites} AOF rewrites by Redis during the run (forked children: their CPU is in no figure above, but it shares the machine)`,
    `machine: ${readFileSync('/proc/cpuinfo', 'utf8').match(/^processor/gm)?.length ?? '?'} CPUs, load average at the end ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
  ];
  process.stdout.write(out.join('\n') + '\n');
  figure('ingest', 'webhook ingest throughput', pi.results[INGEST]!.rps, 'req/s');
  figure('ingest', 'ingest / bare handler', ratio(pi, INGEST), 'ratio', { min: 0.6 });
  figure('ingest', 'bridge with embedded history / bare handler', ratio(pp, BRIDGE_PGLITE), 'ratio', { min: 0.75 });
  figure('ingest', 'bridge with PostgreSQL history / bare handler', ratio(pq, BRIDGE_POSTGRES), 'ratio', { min: 0.85 });
  figure('ingest', 'bridge with embedded history, intake thread / bare handler', ratio(tp, INTAKE_PGLITE), 'ratio', { min: 0.75 });
  figure('ingest', 'bridge with PostgreSQL history, intake thread / bare handler', ratio(tq, INTAKE_POSTGRES), 'ratio', { min: 0.85 });
  const pgliteDelay = stopped[BRIDGE_PGLITE]!.loopDelay;
  const postgresDelay = stopped[BRIDGE_POSTGRES]!.loopDelay;
  if (pgliteDelay) figure('ingest', 'bridge with embedded history: event-loop delay p99', pgliteDelay.p99, 'ms');
  if (postgresDelay) figure('ingest', 'bridge with PostgreSQL history: event-loop delay p99', postgresDelay.p99, 'ms');
  figure('ingest', 'accepted events missing from the stream', Math.max(0, okIngest - stored), 'events', { max: 0 });
  if (stored < okIngest) throw new Error(`only ${stored} of ${okIngest} accepted events are in the stream`);
} finally {
  for (const stop of stopping) await stop().catch(() => undefined);
  probe.disconnect();
  await redisMain.close();
  await redisDiag?.close();
  await redisPglite.close();
  await redisPostgres.close();
  await redisPgliteIntake.close();
  await redisPostgresIntake.close();
  await postgres.drop();
  await postgresIntake.drop();
}
