/**
 * Slow searches (16 full-text searches matching nothing tied up the
 * 4-connection pool: the customer panel went from 9 ms to 1 s) must never hold a
 * connection the call path needs. On a real PostgreSQL database: searches run on their own
 * small pool with a statement timeout; with that pool saturated (pg_sleep stands in for a
 * slow search) a writer batch and a callback task complete at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../test/support/postgres.ts';
import { CallbackStore } from '../callbacks/store.ts';
import { openPostgres, type Db } from './db.ts';
import { migrate } from './migrations.ts';
import { HistoryFact } from './schema.ts';
import { HistoryStore } from './store.ts';

let pgdb: TestDatabase;
beforeAll(async () => {
  pgdb = await createTestDatabase();
  const db = openPostgres({ url: pgdb.url, max: 1 });
  await migrate(db);
  await db.close();
}, 30_000);
afterAll(async () => {
  await pgdb?.drop();
});

/** The statement a search runs (the search pool when there is one). */
const searchOf = (db: Db) => ((db as { search?: Db['query'] }).search ?? db.query).bind(db);

describe('searches and the call path on one PostgreSQL', () => {
  it('with the search pool saturated by slow searches, a writer batch and a callback task complete promptly', async () => {
    const db = openPostgres({ url: pgdb.url });
    try {
      const store = new HistoryStore(db);
      const callbacks = new CallbackStore(db);
      await store.apply([]); // connections warm
      const wacid = `sp-${Date.now()}`;
      // Four slow searches at once: as many as the whole (old, shared) pool held. Each notes when it ends.
      let firstSearchDone = Infinity;
      const slow = Array.from({ length: 4 }, () =>
        searchOf(db)('SELECT pg_sleep(4)')
          .catch((e: unknown) => e)
          .finally(() => (firstSearchDone = Math.min(firstSearchDone, performance.now()))),
      );
      await new Promise((r) => setTimeout(r, 200));
      const facts: HistoryFact[] = [
        { type: 'call', wacid, phoneId: 'ph1', businessNumber: '+15550100001', customer: { phoneNumber: '+15550123456' }, direction: 'inbound', outcome: 'missed', receivedAt: new Date().toISOString(), version: 2 },
        { type: 'timeline', wacid, key: 'state:2', at: new Date().toISOString(), event: 'ended' },
      ];
      await store.apply(facts.map((f) => HistoryFact.parse(f)));
      const writeDone = performance.now();
      const task = await callbacks.noteMissedCall({ wacid, customer: '+15550123456', businessNumber: '+15550100001', reason: 'missed', at: new Date().toISOString() });
      const taskDone = performance.now();
      expect(task.created).toBe(true);
      // Both went while every slow search still held its connection: they waited for none of them.
      expect({ writeBeforeSearches: writeDone < firstSearchDone, taskBeforeSearches: taskDone < firstSearchDone }).toEqual({ writeBeforeSearches: true, taskBeforeSearches: true });
      await Promise.all(slow);
    } finally {
      await db.close();
    }
  }, 30_000);

  it('a search past its statement timeout is stopped by PostgreSQL (57014), fast', async () => {
    const db = openPostgres({ url: pgdb.url, searchTimeoutMs: 300 } as Parameters<typeof openPostgres>[0]);
    try {
      const t0 = performance.now();
      const err = (await searchOf(db)('SELECT pg_sleep(5)').then(() => undefined, (e: unknown) => e)) as { code?: string } | undefined;
      // Stopped by the timeout, not by the end of the 5 s sleep.
      expect(performance.now() - t0).toBeLessThan(4500);
      expect(err?.code).toBe('57014');
      // The pool answers the next search.
      expect(await searchOf(db)('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      await db.close();
    }
  }, 30_000);

  it('HistoryStore.searchCalls runs on the search pool, but for one customer\'s calls without words (the customer panel: indexed, fast)', async () => {
    const db = openPostgres({ url: pgdb.url });
    const seen: string[] = [];
    const spied: Db = { ...db, query: (t, p, o) => (seen.push('query'), db.query(t, p, o)), search: (t: string, p?: unknown[]) => (seen.push('search'), searchOf(db)(t, p)) } as Db;
    try {
      const store = new HistoryStore(spied);
      await store.searchCalls({ q: 'refund' });
      expect(seen).toEqual(['search']);
      seen.length = 0;
      await store.searchCalls({ customer: '+15550123456', limit: 20 });
      expect(seen[0]).toBe('query');
      expect(seen).not.toContain('search');
      seen.length = 0;
      await store.searchCalls({ customer: '+15550123456', q: 'refund' });
      expect(seen[0]).toBe('search');
    } finally {
      await db.close();
    }
  });
});
