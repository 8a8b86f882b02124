/**
 * `openHistory` as main.ts will use it: the configuration picks the engine; demo mode
 * (no DATABASE_URL, no REDIS_URL) keeps history in PGlite under DATA_DIR across restarts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../test/support/postgres.ts';
import { startRedis, startSentinelGroup } from '../../test/support/redis.ts';
import { until } from '../../test/support/wait.ts';
import { loadConfig } from '../config/config.ts';
import { openHistory } from './index.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const call = (wacid: string) =>
  ({ type: 'call', wacid, phoneId: 'ph1', direction: 'inbound', outcome: 'missed', receivedAt: '2026-05-01T08:00:00.000Z', customer: { phoneNumber: '+15550123456' } }) as const;

describe('openHistory', () => {
  it('without DATABASE_URL: PGlite under DATA_DIR/history, kept across a restart; enqueue → writer → search', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'sb-data-'));
    dirs.push(dataDir);
    const config = loadConfig({ DATA_DIR: dataDir });
    const h1 = await openHistory(config);
    expect(h1.store.db.engine).toBe('pglite');
    h1.enqueue(call('persist-1'));
    await until('written', async () => (await h1.writer.lag()).pending === 0 && h1.writer.status().written === 1, 20_000);
    await h1.close();

    const h2 = await openHistory(config);
    try {
      expect((await h2.store.getCall('persist-1'))?.outcome).toBe('missed');
      expect((await h2.store.searchCalls({ customer: '+15550123456' })).items.map((c) => c.wacid)).toEqual(['persist-1']);
      expect(await h2.health()).toMatchObject({ ok: true, lag: { pending: 0 } });
    } finally {
      await h2.close();
    }
  });

  it('with DATABASE_URL: PostgreSQL, migrated at start', async () => {
    const pg = await createTestDatabase();
    try {
      const h = await openHistory(loadConfig({ DATABASE_URL: pg.url }));
      try {
        expect(h.store.db.engine).toBe('postgres');
        h.enqueue(call('pg-1'));
        await until('written', async () => (await h.store.getCall('pg-1')) !== null, 20_000);
        expect((await h.purge(new Date('2028-01-01T00:00:00.000Z'))).calls).toBe(1);
      } finally {
        await h.close();
      }
    } finally {
      await pg.drop();
    }
  });

  it('the database down at start: openHistory still returns, facts stay queued in Redis, written once it can be opened', async () => {
    const [pg, redis] = await Promise.all([createTestDatabase(), startRedis()]);
    try {
      await pg.cutOff();
      const t0 = Date.now();
      const h = await openHistory(loadConfig({ DATABASE_URL: pg.url, REDIS_URL: redis.url }), { retryMs: 200 });
      try {
        expect(Date.now() - t0).toBeLessThan(5000);
        expect(await h.health()).toMatchObject({ ok: false });
        h.enqueue(call('down-1'));
        await until('queued', async () => (await h.queue.lag()).pending >= 1, 5000);
        await expect(h.store.getCall('down-1')).rejects.toThrow(/not open yet/);
        await pg.reopen();
        await until('written after the database opened', async () => (await h.store.getCall('down-1').catch(() => null)) !== null, 20_000);
        await until('healthy', async () => (await h.health()).ok, 10_000);
      } finally {
        await h.close();
      }
    } finally {
      await pg.drop();
      await redis.close();
    }
  });

  it('Redis behind Sentinel: the queue finds the primary through the sentinels (REDIS_URL host is not a server)', async () => {
    const ha = await startSentinelGroup({ replicas: 0, sentinels: 1, durable: false });
    const dataDir = mkdtempSync(join(tmpdir(), 'sb-data-'));
    dirs.push(dataDir);
    try {
      // A URL whose host answers nothing: only the sentinels lead to the primary.
      const h = await openHistory(loadConfig({ DATA_DIR: dataDir, REDIS_URL: 'redis://127.0.0.1:1/0', REDIS_SENTINELS: ha.sentinelsEnv, REDIS_SENTINEL_NAME: ha.name }));
      try {
        h.enqueue(call('sentinel-1'));
        await until('written through the sentinel-found primary', async () => (await h.store.getCall('sentinel-1')) !== null, 20_000);
      } finally {
        await h.close();
      }
    } finally {
      await ha.close();
    }
  });
});
