/**
 * Off the hot path, nothing lost: the queue + writer against a real PostgreSQL database
 * (`sb_test_<random>`) that becomes unreachable, with the Redis queue (a private
 * redis-server) and the memory queue.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, uniquePrefix, type TestRedis } from '../../test/support/redis.ts';
import { createTestDatabase, type TestDatabase } from '../../test/support/postgres.ts';
import { sleep, until } from '../../test/support/wait.ts';
import { Metrics } from '../ops/metrics.ts';
import { openPostgres, type Db } from './db.ts';
import { migrate } from './migrations.ts';
import { Redis } from 'ioredis';
import { MemoryHistoryQueue, RedisHistoryQueue, type HistoryQueue } from './queue.ts';
import type { HistoryFact } from './schema.ts';
import { HistoryStore } from './store.ts';
import { HistoryWriter } from './writer.ts';

let redis: TestRedis;
let pgdb: TestDatabase;
let check: Db;
beforeAll(async () => {
  [redis, pgdb] = await Promise.all([startRedis({ durable: true }), createTestDatabase()]);
  check = openPostgres({ url: pgdb.url, max: 1 });
  await migrate(check);
});
afterAll(async () => {
  await check?.close();
  await pgdb?.admin(`ALTER DATABASE ${pgdb.name} ALLOW_CONNECTIONS true`).catch(() => undefined);
  await pgdb?.drop();
  await redis?.close();
});

/** A real outage of this database: no new connections, the open ones cut. */
async function cutDatabase(): Promise<void> {
  await pgdb.admin(`ALTER DATABASE ${pgdb.name} ALLOW_CONNECTIONS false`);
  await pgdb.admin('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [pgdb.name]);
}
async function restoreDatabase(): Promise<void> {
  await pgdb.admin(`ALTER DATABASE ${pgdb.name} ALLOW_CONNECTIONS true`);
}

const T0 = Date.parse('2026-04-01T09:00:00.000Z');
function factsOf(tag: string, i: number): HistoryFact[] {
  const wacid = `${tag}-${i}`;
  const at = (s: number) => new Date(T0 + i * 60_000 + s * 1000).toISOString();
  return [
    { type: 'call', wacid, phoneId: 'ph1', businessNumber: `+1${tag}`, customer: { phoneNumber: '+15550123456' }, direction: 'inbound', outcome: 'in-progress', receivedAt: at(0), version: 1 },
    { type: 'timeline', wacid, key: `evt-${i}-connect`, at: at(0), event: 'chat.call.connect' },
    { type: 'timeline', wacid, key: 'state:2', at: at(1), event: 'ringing', detail: { agent: 'agent1' } },
    { type: 'call', wacid, phoneId: 'ph1', businessNumber: `+1${tag}`, customer: { phoneNumber: '+15550123456' }, direction: 'inbound', outcome: 'answered', agent: 'agent1', receivedAt: at(0), answeredAt: at(3), endedAt: at(30), version: 4 },
    { type: 'media', wacid, mediaAssetId: `m-${wacid}`, kind: 'recording', status: 'available', bytes: 1000 + i, path: `/archive/${wacid}/m.ogg`, at: at(40) },
  ];
}

async function counts(tag: string) {
  const [r] = await check.query<{ calls: number; timeline: number; media: number; answered: number }>(
    `SELECT (SELECT count(*)::int FROM history_calls WHERE wacid LIKE $1) AS calls,
            (SELECT count(*)::int FROM history_calls WHERE wacid LIKE $1 AND outcome = 'answered') AS answered,
            (SELECT count(*)::int FROM history_timeline WHERE wacid LIKE $1) AS timeline,
            (SELECT count(*)::int FROM history_media WHERE wacid LIKE $1) AS media`,
    [`${tag}-%`],
  );
  return r!;
}

describe.each([
  ['Redis stream queue', () => new RedisHistoryQueue({ url: redis.url, prefix: uniquePrefix(), claimIdleMs: 1000 })],
  ['memory queue', () => new MemoryHistoryQueue()],
] as Array<[string, () => HistoryQueue]>)('history writer with the %s', (_name, makeQueue) => {
  const open: Array<{ close(): Promise<void> }> = [];
  afterEach(async () => {
    await restoreDatabase();
    for (const o of open.splice(0).reverse()) await o.close();
  });

  it('a database outage delays history, never the caller: 50 calls enqueued during it arrive once after recovery; a double replay adds nothing', async () => {
    const tag = `w${Math.random().toString(36).slice(2, 8)}`;
    const queue = makeQueue();
    const db = openPostgres({ url: pgdb.url, connectTimeoutMs: 500 });
    const metrics = new Metrics();
    const writer = new HistoryWriter({ queue, store: new HistoryStore(db), metrics, blockMs: 100, backoffMinMs: 50, backoffMaxMs: 300 });
    open.push(db, queue, { close: () => writer.stop() });
    writer.start();

    // Warm: the writer has a connection that the outage will cut.
    for (const f of factsOf(tag, 999)) queue.enqueue(f);
    await until('history condition', async () => (await counts(tag)).calls === 1, 10_000);

    await cutDatabase();
    // The call path: enqueue returns at once, database or not.
    const t = performance.now();
    for (let i = 0; i < 50; i++) for (const f of factsOf(tag, i)) queue.enqueue(f);
    const enqueueMs = performance.now() - t;
    // Waiting on the database even once would cost its 500 ms connect timeout; the bound is
    // below that, and far above what 250 in-memory appends take on a loaded machine (a 50 ms
    // bound failed under a full suite run at load 12).
    expect(enqueueMs).toBeLessThan(400);
    await queue.flush();

    await until('history condition', () => !writer.status().healthy, 10_000);
    const lag = await writer.lag();
    expect(lag.pending).toBeGreaterThanOrEqual(250);
    expect(lag.oldestAgeMs).toBeGreaterThan(0);
    const health = await writer.health();
    expect(health.ok).toBe(false);
    expect(health.reason).toMatch(/history writes failing/);
    expect(health.reason).not.toContain(pgdb.url);
    const scrape = await metrics.render();
    expect(scrape).toMatch(/^switchboard_history_queue_pending (2[5-9]\d|\d{4,})$/m);
    expect(scrape).toMatch(/^switchboard_history_writer_healthy 0$/m);
    // Minutes of outage are the same as seconds here: nothing is written, nothing is lost.
    await sleep(1500);
    expect(writer.status().written).toBe(5);

    await restoreDatabase();
    await until('history condition', async () => (await writer.lag()).pending === 0, 20_000);
    expect(writer.status().healthy).toBe(true);
    expect(await counts(tag)).toEqual({ calls: 51, answered: 51, timeline: 102, media: 51 });
    expect((await writer.health()).ok).toBe(true);

    // Replay every fact twice: same rows, no duplicate timeline entries.
    const before = await check.query(`SELECT * FROM history_calls WHERE wacid LIKE $1 ORDER BY wacid`, [`${tag}-%`]);
    for (let round = 0; round < 2; round++) for (let i = 0; i < 50; i++) for (const f of factsOf(tag, i).reverse()) queue.enqueue(f);
    await queue.flush();
    await until('history condition', async () => (await writer.lag()).pending === 0 && writer.status().written >= 5 + 250 + 500, 20_000);
    expect(await counts(tag)).toEqual({ calls: 51, answered: 51, timeline: 102, media: 51 });
    expect(await check.query(`SELECT * FROM history_calls WHERE wacid LIKE $1 ORDER BY wacid`, [`${tag}-%`])).toEqual(before);
  });

  it('facts trickling in share transactions: at most one a writer interval while batches are not full', async () => {
    const tag = `t${Math.random().toString(36).slice(2, 8)}`;
    const queue = makeQueue();
    const db = openPostgres({ url: pgdb.url });
    const store = new HistoryStore(db);
    let transactions = 0;
    const writer = new HistoryWriter({ queue, store: { apply: (f) => (transactions++, store.apply(f)) }, blockMs: 100, intervalMs: 200 });
    open.push(db, queue, { close: () => writer.stop() });
    writer.start();
    const t0 = performance.now();
    // 40 calls, one every 15 ms (600 ms): one transaction per call without the interval.
    for (let i = 0; i < 40; i++) {
      for (const f of factsOf(tag, i)) queue.enqueue(f);
      await sleep(15);
    }
    await until('history condition', async () => (await counts(tag)).calls === 40 && (await writer.lag()).pending === 0, 10_000);
    const ms = performance.now() - t0;
    expect(await counts(tag)).toEqual({ calls: 40, answered: 40, timeline: 80, media: 40 });
    expect(transactions).toBeLessThanOrEqual(Math.ceil(ms / 200) + 1);
    expect(transactions).toBeLessThan(10);
  });

  it('an invalid fact is dropped and counted; the facts behind it, enqueued with it (one entry on Redis), are written', async () => {
    const tag = `i${Math.random().toString(36).slice(2, 8)}`;
    const queue = makeQueue();
    const db = openPostgres({ url: pgdb.url });
    const writer = new HistoryWriter({ queue, store: new HistoryStore(db), blockMs: 100 });
    open.push(db, queue, { close: () => writer.stop() });
    writer.start();
    queue.enqueue({ type: 'call', wacid: `${tag}-bad` } as HistoryFact, ...factsOf(tag, 1));
    await until('history condition', async () => (await writer.lag()).pending === 0, 10_000);
    expect(writer.status().invalid).toBe(1);
    expect(await counts(tag)).toEqual({ calls: 1, answered: 1, timeline: 2, media: 1 });
  });
});

describe('openPostgres', () => {
  it('a connection cut inside a transaction, between two statements, rejects the transaction and does not crash the process', async () => {
    const db = openPostgres({ url: pgdb.url, max: 1 });
    try {
      const tx = db.tx(async (sql) => {
        const [me] = await sql.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        await pgdb.admin('SELECT pg_terminate_backend($1)', [me!.pid]);
        await sleep(300); // the 'error' event arrives while no statement is running
        await sql.query('SELECT 1');
      });
      await expect(tx).rejects.toThrow();
      // The broken connection was dropped: the pool answers again.
      expect(await db.query<{ one: number }>('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      await db.close();
    }
  });
});

describe('Redis history queue', () => {
  it('facts read by a writer that died unacked are claimed and written by another', async () => {
    const tag = `c${Math.random().toString(36).slice(2, 8)}`;
    const prefix = uniquePrefix();
    const a = new RedisHistoryQueue({ url: redis.url, prefix, consumer: 'node-a', claimIdleMs: 300 });
    a.enqueue(...factsOf(tag, 1)); // one entry
    await a.flush();
    expect(await a.read(100, 0)).toHaveLength(5); // node-a takes them and dies before writing
    await a.close();

    const b = new RedisHistoryQueue({ url: redis.url, prefix, consumer: 'node-b', claimIdleMs: 300 });
    const db = openPostgres({ url: pgdb.url });
    const writer = new HistoryWriter({ queue: b, store: new HistoryStore(db), blockMs: 100 });
    writer.start();
    try {
      await until('history condition', async () => (await counts(tag)).calls === 1 && (await b.lag()).pending === 0, 10_000);
      expect(await counts(tag)).toEqual({ calls: 1, answered: 1, timeline: 2, media: 1 });
    } finally {
      await writer.stop();
      await b.close();
      await db.close();
    }
  });

  it('the facts of one enqueue (a transition\'s) are one stream entry: one command, all written, then the entry leaves the stream', async () => {
    const tag = `p${Math.random().toString(36).slice(2, 8)}`;
    const look = new Redis(redis.url);
    const q = new RedisHistoryQueue({ url: redis.url, prefix: uniquePrefix() });
    const db = openPostgres({ url: pgdb.url });
    const writer = new HistoryWriter({ queue: q, store: new HistoryStore(db), blockMs: 100 });
    const xadds = async () => Number(/cmdstat_xadd:calls=(\d+)/.exec(await look.info('commandstats'))?.[1] ?? 0);
    try {
      await q.lag(); // connected: facts go straight out (before that they wait in the outbox, an XADD each)
      const before = await xadds();
      q.enqueue(...factsOf(tag, 1));
      await q.flush();
      expect((await xadds()) - before).toBe(1);
      const [entry] = (await look.xrange(q.stream, '-', '+')) as Array<[string, string[]]>;
      expect(entry![1].filter((_, i) => i % 2 === 0)).toEqual(['f', 'f', 'f', 'f', 'f', 'a']);
      writer.start();
      await until('the entry written and deleted', async () => (await look.xlen(q.stream)) === 0, 10_000);
      expect(await counts(tag)).toEqual({ calls: 1, answered: 1, timeline: 2, media: 1 });
      expect(writer.status().written).toBe(5);
    } finally {
      await writer.stop();
      await q.close();
      await db.close();
      look.disconnect();
    }
  });

  it('facts go out on the connection given as `send` (the store\'s), which the queue leaves open', async () => {
    const send = new Redis(redis.url, { enableAutoPipelining: true, connectionName: 'the-store' });
    const look = new Redis(redis.url);
    const q = new RedisHistoryQueue({ url: redis.url, prefix: uniquePrefix(), send });
    try {
      for (const f of factsOf('s', 0)) q.enqueue(f);
      await q.flush();
      // Each connection's last command: the facts' XADDs were the store connection's; the queue's own sent none.
      const clients = String(await look.client('LIST')).split('\n');
      const last = (name: string) => clients.filter((c) => c.includes(` name=${name} `)).map((c) => /\bcmd=(\S+)/.exec(c)?.[1]);
      expect(last('the-store')).toEqual(['xadd']);
      expect(last('switchboard-history')).toHaveLength(1);
      expect(last('switchboard-history')).not.toContain('xadd');
      expect((await q.lag()).pending).toBe(5);
    } finally {
      await q.close();
      look.disconnect();
    }
    expect(send.status).toBe('ready');
    await send.quit();
  });

  it.each([
    ['its own connection', () => undefined],
    ['the store\'s connection', () => new Redis(redis.url, { enableAutoPipelining: true, maxRetriesPerRequest: 1, retryStrategy: (n: number) => Math.min(n * 50, 500) })],
  ])('facts enqueued while Redis is down wait in the outbox and reach the stream once it is back (sent on %s)', async (_on, makeSend) => {
    const send = makeSend();
    send?.on('error', () => undefined);
    const q = new RedisHistoryQueue({ url: redis.url, prefix: uniquePrefix(), ...(send ? { send } : {}) });
    try {
      q.enqueue(factsOf('r', 0)[0]!);
      await q.flush();
      await redis.stop();
      for (let i = 1; i <= 20; i++) q.enqueue(factsOf('r', i)[0]!);
      await sleep(300);
      await redis.start();
      await q.flush();
      expect((await q.lag()).pending).toBe(21);
      const got = await q.read(100, 0);
      expect(got.map((e) => (JSON.parse(e.body) as { wacid: string }).wacid)).toEqual(Array.from({ length: 21 }, (_, i) => `r-${i}`));
    } finally {
      await q.close();
      send?.disconnect();
    }
  });
});
