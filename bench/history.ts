/**
 * History figures: prints, doesn't assert.
 *   npx tsx bench/history.ts [--rows 1000000]
 * On the local PostgreSQL (test/support/postgres.ts: a database of its own, dropped after):
 * - search p95 over N call rows (generated in SQL with generate_series): customer + date
 *   range + outcome (goal ≤ 50 ms), transcript full text (goal ≤ 150 ms);
 * - throughput of the history writer (facts/s and call records/s), through the memory queue
 *   and the Redis stream queue (a private redis-server);
 * - RSS growth of this process while the archive handler downloads a 50 MB recording from a
 *   media server in another process (goal ≤ 16 MB: streamed to disk, never held);
 * - webhook → `call.offered` p99 at 100 calls/s (bench/fleet.ts, one node, 100 agents) with
 *   history on (PostgreSQL) and off (goal: on is not worse by more than 1 ms), the median of
 *   `--fleet-pairs 5` pairs of runs of `--fleet-seconds 20`; `--fleet-seconds 0` skips it.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createArchive, type MediaEvent } from '../server/archive/index.ts';
import { createServiceClient } from '../server/service/index.ts';
import { parseEvent } from '../shared/events.ts';
import { muxOggOpus } from '../test/emulator/calls/ogg.ts';
import { createTestDatabase } from '../test/support/postgres.ts';
import { startRedis } from '../test/support/redis.ts';
import { openPostgres, type Db } from '../server/history/db.ts';
import { migrate } from '../server/history/migrations.ts';
import { MemoryHistoryQueue, RedisHistoryQueue, type HistoryQueue } from '../server/history/queue.ts';
import type { CallSearch, HistoryFact } from '../server/history/schema.ts';
import { HistoryStore } from '../server/history/store.ts';
import { HistoryWriter } from '../server/history/writer.ts';
import { figure, parseFigures } from './figures.ts';

const arg = (name: string, dflt: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const ROWS = arg('rows', 1_000_000);
const CUSTOMERS = Math.max(1, Math.floor(ROWS / 10));
const RUNS = arg('runs', 200);
const FLEET_SECONDS = arg('fleet-seconds', 20);
/**
 * Off/on pairs of the offer-latency run. One run's p99 varies by about a millisecond from
 * the next identical one on a shared 2-core machine, as much as the goal: the figure is the
 * median of the pairs' differences (each pair run back to back, off first in odd pairs and
 * on first in even ones, so a drift of the machine does not always favour the same side).
 */
const FLEET_PAIRS = Math.max(1, Math.round(arg('fleet-pairs', 5)));
const DOWNLOAD_MB = arg('download-mb', 50);

const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * 0.95)]!;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const rnd = (n: number) => Math.floor(Math.random() * n);

/** N calls over the last year: 10 per customer, 50 agents, 5 numbers, ~1/3 answered, a transcript of ~12 words each. */
async function generate(db: Db): Promise<void> {
  // Bulk load without the secondary indexes, then build them (as a restore would).
  const defs = await db.query<{ indexname: string; indexdef: string }>(
    "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'history_calls' AND indexname <> 'history_calls_pkey'",
  );
  for (const d of defs) await db.exec(`DROP INDEX ${d.indexname}`);
  await db.query(
    `INSERT INTO history_calls (wacid, phone_id, business_number, customer_phone, customer_user_id, direction, agent, outcome, outcome_rank,
       received_at, answered_at, ended_at, wait_ms, talk_ms, version, transcript)
     SELECT 'wacid.' || i, 'ph' || (i % 5), '+1555010000' || (i % 5),
       '+1556' || lpad((i % $2)::text, 7, '0'),
       CASE WHEN i % 4 = 0 THEN 'US.bsuid' || (i % $2) END,
       CASE WHEN i % 6 = 0 THEN 'outbound' ELSE 'inbound' END,
       'agent' || (i % 50),
       (ARRAY['answered','answered','missed','abandoned','rejected','failed','no-answer'])[1 + i % 7], 1,
       now() - make_interval(secs => i * (365.0 * 86400 / $1)),
       now() - make_interval(secs => i * (365.0 * 86400 / $1)) + interval '5 s',
       now() - make_interval(secs => i * (365.0 * 86400 / $1)) + interval '5 min',
       5000, 295000, 4,
       'hello thank you for calling about your order kw' || (i % 997) || ' and the invoice kx' || (i % 1999) || ' have a good day'
     FROM generate_series(1, $1::int) AS i`,
    [ROWS, CUSTOMERS],
  );
  for (const d of defs) await db.exec(d.indexdef);
  await db.exec('ANALYZE history_calls');
}

async function timeSearches(store: HistoryStore, make: () => CallSearch): Promise<{ p95: number; median: number; avgItems: number }> {
  for (let i = 0; i < 10; i++) await store.searchCalls(make()); // warm
  const ms: number[] = [];
  let items = 0;
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    items += (await store.searchCalls(make())).items.length;
    ms.push(performance.now() - t);
  }
  return { p95: p95(ms), median: median(ms), avgItems: items / RUNS };
}

async function writerThroughput(db: Db, queue: HistoryQueue, calls: number): Promise<number> {
  const writer = new HistoryWriter({ queue, store: new HistoryStore(db), blockMs: 50 });
  const tag = randomBytes(3).toString('hex');
  const t0 = Date.now() - 3600_000;
  const at = (i: number, s: number) => new Date(t0 + i * 100 + s * 1000).toISOString();
  const facts: HistoryFact[] = [];
  for (let i = 0; i < calls; i++) {
    const wacid = `bench-${tag}-${i}`;
    const base = { type: 'call', wacid, phoneId: 'ph1', businessNumber: '+15550100001', customer: { phoneNumber: '+15550123456' }, direction: 'inbound', receivedAt: at(i, 0) } as const;
    facts.push(
      { ...base, outcome: 'in-progress', version: 1 },
      { type: 'timeline', wacid, key: 'connect', at: at(i, 0), event: 'chat.call.connect' },
      { type: 'timeline', wacid, key: 'state:3', at: at(i, 3), event: 'active', detail: { agent: 'agent1' } },
      { ...base, outcome: 'answered', agent: 'agent1', answeredAt: at(i, 3), endedAt: at(i, 60), version: 5 },
    );
  }
  const start = performance.now();
  for (const f of facts) queue.enqueue(f);
  writer.start();
  while ((await queue.lag()).pending > 0) await new Promise((r) => setTimeout(r, 20));
  const secs = (performance.now() - start) / 1000;
  await writer.stop();
  await queue.close();
  return facts.length / secs;
}

/** RSS growth (peak during − before) while the archive handler downloads a 50 MB recording. */
async function downloadRss(): Promise<{ growthMb: number; retainedMb: number; seconds: number; bytes: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-bench-dl-'));
  try {
    // A real Ogg Opus head (the handler checks it) followed by 50 MB.
    const file = join(dir, 'big.ogg');
    const fd = openSync(file, 'w');
    writeSync(fd, muxOggOpus(Array.from({ length: 50 }, (_, i) => Buffer.alloc(80, i))));
    const chunk = randomBytes(1 << 20);
    for (let i = 0; i < DOWNLOAD_MB; i++) writeSync(fd, chunk);
    closeSync(fd);
    // The media server in its own process: its buffers are not this process's RSS.
    const server = spawn(process.execPath, ['-e', `
      const http = require('node:http'); const fs = require('node:fs');
      const s = http.createServer((req, res) => { res.writeHead(200, { 'content-length': fs.statSync(${JSON.stringify(file)}).size }); fs.createReadStream(${JSON.stringify(file)}).pipe(res); });
      s.listen(0, '127.0.0.1', () => console.log(s.address().port));`], { stdio: ['ignore', 'pipe', 'inherit'] });
    const port = await new Promise<number>((resolve) => server.stdout!.once('data', (d) => resolve(Number(String(d).trim()))));
    try {
      const archive = createArchive({ dir: join(dir, 'archive'), calls: createServiceClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'k' }).calls });
      const e = parseEvent({ id: 'e_big', type: 'chat.call.recording.updated', apiVersion: 'v2', createTime: new Date().toISOString(), callingMedia: { wacid: 'wacid.big', result: 'AVAILABLE', mediaAssetId: 'cma_big' } });
      if (!e.known || e.type !== 'chat.call.recording.updated') throw new Error('not a media event');
      (globalThis as { gc?: () => void }).gc?.();
      await new Promise((r) => setTimeout(r, 200));
      const before = process.memoryUsage().rss;
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
      const t = performance.now();
      const r = await archive.archive(e as MediaEvent);
      const seconds = (performance.now() - t) / 1000;
      clearInterval(sampler);
      peak = Math.max(peak, process.memoryUsage().rss);
      if (r?.status !== 'saved') throw new Error(`download not archived: ${JSON.stringify(r)}`);
      // What stays once garbage is collected: a held body would show here.
      (globalThis as { gc?: () => void }).gc?.();
      const retainedMb = (process.memoryUsage().rss - before) / 1048576;
      return { growthMb: (peak - before) / 1048576, retainedMb, seconds, bytes: r.bytes ?? 0 };
    } finally {
      server.kill();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** bench/fleet.ts on one node with `--history <mode>`: its figures. */
async function fleet(history: 'off' | 'postgres'): Promise<Map<string, number>> {
  const script = fileURLToPath(new URL('./fleet.ts', import.meta.url));
  const args = ['--import', 'tsx', script, '--nodes', '1', '--agents', '100', '--rate', '100', '--seconds', String(FLEET_SECONDS), '--warmup', '3', '--numbers', '1', '--history', history];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  if (code !== 0) throw new Error(`bench/fleet.ts --history ${history} exited ${code}:\n${out}`);
  return new Map(parseFigures(out).map((f) => [f.name, f.value]));
}

async function main() {
  const dl = await downloadRss();
  console.log(
    `archive download of a ${(dl.bytes / 1048576).toFixed(0)} MB recording: RSS growth ${dl.growthMb.toFixed(1)} MB (peak during − before; garbage chunks waiting for V8's GC count), ${dl.retainedMb.toFixed(1)} MB after a GC, ${dl.seconds.toFixed(2)} s  (goal <= 16 MB)`,
  );
  figure('history', 'RSS retained after downloading a 50 MB recording (after GC)', dl.retainedMb, 'MB');
  figure('history', 'RSS growth downloading a 50 MB recording', dl.growthMb, 'MB', { max: 16 });

  const pg = await createTestDatabase('sb_bench');
  const db = openPostgres({ url: pg.url, max: 4, statementTimeoutMs: 600_000 });
  const redis = await startRedis();
  try {
    await migrate(db);
    const store = new HistoryStore(db);
    let t = performance.now();
    await generate(db);
    console.log(`generated ${ROWS.toLocaleString('en')} call rows with indexes in ${((performance.now() - t) / 1000).toFixed(1)} s (database ${pg.name}, dropped after)`);

    const yearAgo = Date.now() - 365 * 86400_000;
    const filtered = await timeSearches(store, () => {
      const from = yearAgo + rnd(180) * 86400_000;
      return {
        customer: `+1556${String(rnd(CUSTOMERS)).padStart(7, '0')}`,
        from: new Date(from).toISOString(),
        to: new Date(from + 180 * 86400_000).toISOString(),
        outcome: 'answered',
      };
    });
    console.log(`filtered search (customer + 180-day range + outcome): p95 ${filtered.p95.toFixed(2)} ms, median ${filtered.median.toFixed(2)} ms, ${filtered.avgItems.toFixed(1)} items/page  (goal p95 <= 50 ms)`);
    figure('history', 'filtered search p95', filtered.p95, 'ms', { max: 50 });

    const text = await timeSearches(store, () => ({ q: `kw${rnd(997)}` }));
    console.log(`transcript search (one word in ~1/1000 of calls, first page of 25): p95 ${text.p95.toFixed(2)} ms, median ${text.median.toFixed(2)} ms, ${text.avgItems.toFixed(1)} items/page  (goal p95 <= 150 ms)`);
    figure('history', 'transcript search p95', text.p95, 'ms', { max: 150 });
    const text2 = await timeSearches(store, () => ({ q: `kw${rnd(997)} kx${rnd(1999)}` }));
    console.log(`transcript search (two words, rarely together): p95 ${text2.p95.toFixed(2)} ms, median ${text2.median.toFixed(2)} ms`);
    const common = await timeSearches(store, () => ({ q: 'invoice', outcome: 'missed' }));
    console.log(`transcript search (a word in every call) + outcome: p95 ${common.p95.toFixed(2)} ms, median ${common.median.toFixed(2)} ms`);
    const page = await timeSearches(store, () => ({ agent: `agent${rnd(50)}`, limit: 100 }));
    console.log(`agent's calls, newest 100: p95 ${page.p95.toFixed(2)} ms`);

    t = performance.now();
    const mem = await writerThroughput(db, new MemoryHistoryQueue(), 5000);
    console.log(`history writer, memory queue: ${Math.round(mem).toLocaleString('en')} facts/s (20,000 facts: 5,000 calls x 2 call facts + 2 timeline entries; batches of 200, one transaction each)`);
    const rq = await writerThroughput(db, new RedisHistoryQueue({ url: redis.url, prefix: `bench:${randomBytes(3).toString('hex')}:` }), 5000);
    console.log(`history writer, Redis stream queue: ${Math.round(rq).toLocaleString('en')} facts/s (same facts; enqueue, stream, claim-free read, ack + delete)`);
    // 4 facts per call here; a real call gives ~8-10 (a fact per committed step + timeline).
    figure('history', 'writer throughput (Redis queue), facts', rq, 'facts/s');
    figure('history', 'writer throughput (Redis queue), call records of 4 facts', rq / 4, 'records/s');
  } finally {
    await db.close();
    await pg.drop();
    await redis.close();
  }

  if (FLEET_SECONDS > 0) {
    // Pairs of runs, off and on back to back: one node, 100 agents, 100 calls/s (the Service's webhooks), the offer latency.
    const pairs: Array<{ off: number; on: number }> = [];
    for (let i = 0; i < FLEET_PAIRS; i++) {
      // Off first in odd pairs, on first in even ones.
      let off: Map<string, number>, on: Map<string, number>;
      if (i % 2 === 0) {
        off = await fleet('off');
        on = await fleet('postgres');
      } else {
        on = await fleet('postgres');
        off = await fleet('off');
      }
      // bench/fleet.ts names its figures with what differs from its defaults (history on PostgreSQL, 50 lines).
      const pair = { off: off.get('offer latency p99 (history off, 1 queue)') ?? NaN, on: on.get('offer latency p99 (1 queue)') ?? NaN };
      pairs.push(pair);
      console.log(`webhook → call.offered p99 at 100 calls/s (1 node, 100 agents, ${FLEET_SECONDS} s), pair ${i + 1} of ${FLEET_PAIRS}: history off ${pair.off.toFixed(2)} ms, on (PostgreSQL) ${pair.on.toFixed(2)} ms, difference ${(pair.on - pair.off).toFixed(2)} ms`);
    }
    const [a, b, d] = [median(pairs.map((x) => x.off)), median(pairs.map((x) => x.on)), median(pairs.map((x) => x.on - x.off))];
    console.log(`offer p99, medians of ${FLEET_PAIRS} pairs: off ${a.toFixed(2)} ms, on ${b.toFixed(2)} ms, difference ${d.toFixed(2)} ms  (goal <= 1 ms)`);
    figure('history', 'offer p99, history off', a, 'ms');
    figure('history', 'offer p99, history on (PostgreSQL)', b, 'ms');
    figure('history', 'offer p99 difference, on − off', d, 'ms', { max: 1 });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
