/**
 * The embedded history database (`openPglite`) runs in a worker thread: the event loop stays
 * free while it works, its errors arrive with message and SQLSTATE, transactions are
 * serialised against other statements as on one connection, and a dead worker fails what
 * was pending instead of hanging (the next statement opens it again).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { getPriority, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPglite, type PgliteDb } from './db.ts';
import { seedPglite } from '../../test/support/data-dir.ts';

let dir: string;
let db: PgliteDb;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sb-pglite-worker-'));
  seedPglite(dir);
  db = await openPglite(dir);
  await db.exec('CREATE TABLE t (id int PRIMARY KEY, a text NOT NULL)');
});

afterAll(async () => {
  await db?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The longest gap between 1 ms timer ticks while `work` runs, and how long it ran. */
async function loopGapDuring(work: () => Promise<unknown>): Promise<{ maxGapMs: number; tookMs: number }> {
  let last = performance.now();
  let maxGapMs = 0;
  const tick = setInterval(() => {
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - last);
    last = now;
  }, 1);
  const t0 = performance.now();
  try {
    await work();
  } finally {
    clearInterval(tick);
  }
  return { maxGapMs: Math.max(maxGapMs, performance.now() - last), tookMs: performance.now() - t0 };
}

describe('openPglite: off the event loop', () => {
  it('the event loop keeps turning while a heavy statement runs', async () => {
    // About a second of work for the database (more on a slow or busy machine).
    const heavy = () => db.query<{ n: number }>('SELECT count(*)::int AS n FROM generate_series(1, 3000000) g WHERE g % 7 = 3');
    let rows: unknown;
    const { maxGapMs, tookMs } = await loopGapDuring(async () => (rows = await heavy()));
    // The statement took long enough to matter...
    expect(tookMs).toBeGreaterThan(200);
    // ...and the loop never stopped for a fraction of it (on the main thread it stops for all of it).
    expect(maxGapMs, `longest event-loop gap ${maxGapMs.toFixed(1)} ms while a ${tookMs.toFixed(0)} ms statement ran`).toBeLessThan(tookMs / 4);
    expect(rows).toEqual([{ n: 428572 }]);
  });
});

describe('openPglite: errors cross the thread boundary', () => {
  it('a failing statement rejects with its message and SQLSTATE code, in and out of a transaction', async () => {
    await db.query('INSERT INTO t VALUES ($1, $2)', [1, 'x']);
    const dup = await db.query('INSERT INTO t VALUES ($1, $2)', [1, 'y']).catch((e: unknown) => e);
    expect(dup).toBeInstanceOf(Error);
    expect(dup).toMatchObject({ code: '23505', message: expect.stringMatching(/duplicate key value violates unique constraint "t_pkey"/) });

    const inTx = await db.tx((sql) => sql.query('INSERT INTO t VALUES ($1, $2)', [1, 'z'])).catch((e: unknown) => e);
    expect(inTx).toMatchObject({ code: '23505' });

    const syntax = await db.exec('SELEC 1').catch((e: unknown) => e);
    expect(syntax).toMatchObject({ code: '42601', message: expect.stringMatching(/syntax error/) });
    const notNull = await db.query('INSERT INTO t VALUES ($1, $2)', [2, null]).catch((e: unknown) => e);
    expect(notNull).toMatchObject({ code: '23502' });
    // The database is fine after all of these.
    expect(await db.query('SELECT id, a FROM t ORDER BY id')).toEqual([{ id: 1, a: 'x' }]);
  });

  it('a transaction commits when its function resolves and rolls back when it throws (the function’s own error comes back)', async () => {
    expect(await db.tx(async (sql) => {
      await sql.query('INSERT INTO t VALUES ($1, $2)', [10, 'a']);
      return (await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM t WHERE id = 10'))[0]!.n;
    })).toBe(1);
    class Mine extends Error {}
    const mine = new Mine('changed my mind');
    await expect(
      db.tx(async (sql) => {
        await sql.query('INSERT INTO t VALUES ($1, $2)', [11, 'b']);
        throw mine;
      }),
    ).rejects.toBe(mine);
    expect(await db.query('SELECT id FROM t WHERE id >= 10 ORDER BY id')).toEqual([{ id: 10 }]);
  });

  it('values round-trip: arrays, json, timestamps, null, bytea', async () => {
    const [row] = await db.query<Record<string, unknown>>(
      "SELECT $1::text[] AS arr, $2::jsonb AS j, '2026-01-02T03:04:05Z'::timestamptz AS ts, NULL AS n, '\\x0102'::bytea AS b",
      [['a', 'b'], JSON.stringify({ x: [1, 2] })],
    );
    expect(row).toEqual({ arr: ['a', 'b'], j: { x: [1, 2] }, ts: new Date('2026-01-02T03:04:05Z'), n: null, b: new Uint8Array([1, 2]) });
  });
});

describe('openPglite: one connection', () => {
  it('a statement outside a transaction waits until the transaction ends, then sees what it committed', async () => {
    let outside: Promise<unknown> | undefined;
    let outsideDone = false;
    await db.tx(async (sql) => {
      await sql.query('INSERT INTO t VALUES ($1, $2)', [20, 'tx']);
      outside = db.query('SELECT a FROM t WHERE id = 20').then((r) => {
        outsideDone = true;
        return r;
      });
      await new Promise((r) => setTimeout(r, 100));
      expect(outsideDone).toBe(false);
      await sql.query('UPDATE t SET a = $1 WHERE id = 20', ['committed']);
    });
    expect(await outside).toEqual([{ a: 'committed' }]);
  });

  it('transactions started together run one after the other', async () => {
    await db.exec('CREATE TABLE c (n int NOT NULL)');
    await db.query('INSERT INTO c VALUES (0)');
    // Read, wait, write: interleaved they would lose updates.
    await Promise.all(
      Array.from({ length: 5 }, () =>
        db.tx(async (sql) => {
          const [{ n }] = (await sql.query<{ n: number }>('SELECT n FROM c')) as [{ n: number }];
          await new Promise((r) => setTimeout(r, 5));
          await sql.query('UPDATE c SET n = $1', [n + 1]);
        }),
      ),
    );
    expect(await db.query('SELECT n FROM c')).toEqual([{ n: 5 }]);
  });
});

describe('openPglite: the worker dies', () => {
  it('every pending statement rejects (none hangs), and the next one opens the database again', async () => {
    const d = mkdtempSync(join(tmpdir(), 'sb-pglite-crash-'));
    seedPglite(d);
    const crashing = await openPglite(d);
    try {
      await crashing.exec('CREATE TABLE k (id int PRIMARY KEY)');
      await crashing.query('INSERT INTO k VALUES (1)');
      const worker = crashing.worker;
      expect(worker, 'openPglite exposes its worker thread').toBeDefined();
      const slow = crashing.query('SELECT count(*) FROM generate_series(1, 20000000)');
      const queued = crashing.query('SELECT 1 AS one');
      const inTx = crashing.tx(async (sql) => sql.query('INSERT INTO k VALUES (2)'));
      const t0 = performance.now();
      await worker!.terminate();
      for (const p of [slow, queued, inTx]) await expect(p).rejects.toMatchObject({ code: 'PGLITE_WORKER_EXITED' });
      expect(performance.now() - t0).toBeLessThan(5000);
      // Opened again on the same directory: what was committed is there.
      expect(await crashing.query('SELECT id FROM k ORDER BY id')).toEqual([{ id: 1 }]);
    } finally {
      await crashing.close();
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('close ends the worker; statements after it reject', async () => {
    const d = mkdtempSync(join(tmpdir(), 'sb-pglite-close-'));
    seedPglite(d);
    const c = await openPglite(d);
    try {
      const worker = c.worker!;
      const exited = new Promise<void>((r) => worker.once('exit', r));
      await c.close();
      await exited;
      await expect(c.query('SELECT 1')).rejects.toThrow(/closed/);
      await c.close();
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

/** Threads of this process at nice value `nice` (Linux: /proc/self/task/<tid>/stat, field 19). */
function threadsAtNice(nice: number): number {
  return readdirSync('/proc/self/task').filter((tid) => {
    try {
      return Number(readFileSync(`/proc/self/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]) === nice;
    } catch {
      return false; // the thread ended meanwhile
    }
  }).length;
}

describe('openPglite: history waits, the event loop does not', () => {
  it('the database thread runs at nice 10 and the event loop keeps its priority', async () => {
    const before = threadsAtNice(10);
    const d = mkdtempSync(join(tmpdir(), 'sb-pglite-nice-'));
    seedPglite(d);
    const c = await openPglite(d);
    try {
      // One more thread at nice 10: this database's.
      expect(threadsAtNice(10)).toBe(before + 1);
      expect(getPriority()).toBe(0);
      await c.close();
      // Its thread ends with it (joined a moment after the worker's exit event).
      for (let i = 0; i < 200 && threadsAtNice(10) !== before; i++) await new Promise((r) => setTimeout(r, 50));
      expect(threadsAtNice(10)).toBe(before);
    } finally {
      await c.close();
      rmSync(d, { recursive: true, force: true });
    }
  });
});

// initdb in a thread: 9-11 s in a full run on 2 cores, over 30 s once with a Janus and Chromium test beside the run.
describe('openPglite: a new directory', { timeout: 90_000 }, () => {
  it("is created by a thread of its own that ends after initdb: the serving thread does not keep initdb's heap", async () => {
    const d = mkdtempSync(join(tmpdir(), 'sb-pglite-new-'));
    const rss = () => process.memoryUsage().rss / 1048576;
    const before = rss();
    const c = await openPglite(d); // not seeded: initdb runs here
    try {
      await c.exec('CREATE TABLE n (id int PRIMARY KEY)');
      await c.query('INSERT INTO n VALUES (1)');
      expect(await c.query('SELECT id FROM n')).toEqual([{ id: 1 }]);
      // initdb in the serving thread left its heap there: some 750 MB more; a fresh open of
      // the files, about 300 MB.
      const grew = rss() - before;
      expect(grew, `RSS grew ${grew.toFixed(0)} MB`).toBeLessThan(500);
    } finally {
      await c.close();
    }
    // What was created is there when opened again.
    const again = await openPglite(d);
    try {
      expect(await again.query('SELECT id FROM n')).toEqual([{ id: 1 }]);
    } finally {
      await again.close();
      rmSync(d, { recursive: true, force: true });
    }
  });
});
