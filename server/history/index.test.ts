/**
 * `openHistory` as main.ts will use it: the configuration picks the engine; demo mode
 * (no DATABASE_URL, no REDIS_URL) keeps history in PGlite under DATA_DIR across restarts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../test/support/postgres.ts';
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
});
