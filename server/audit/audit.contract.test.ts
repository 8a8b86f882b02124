/**
 * The audit table on both engines (PostgreSQL: a database of its own, dropped afterwards;
 * PGlite: a temporary directory): rows written once, searched newest first by user,
 * action and time with a cursor; never updated, never deleted but by retention; and the
 * trail's writer, which never throws at its caller and keeps rows through a failing write.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../history/migrations.ts';
import type { Db } from '../history/db.ts';
import { pgliteEngine, postgresEngine, type HistoryEngine } from '../../test/support/history.ts';
import { createLogger } from '../log/logger.ts';
import { Metrics } from '../ops/metrics.ts';
import { AuditStore, type AuditRow } from './store.ts';
import { AuditTrail } from './trail.ts';
import { parseAuditQuery, AuditQueryError } from './schema.ts';

const log = createLogger({ level: 'silent' });
const DAY = 86_400_000;

describe.each([
  ['PostgreSQL', postgresEngine],
  ['PGlite', pgliteEngine],
])('audit store: %s', (_name, makeEngine) => {
  let engine: HistoryEngine;
  let store: AuditStore;
  let db: Db;
  beforeAll(async () => {
    engine = makeEngine();
    db = await engine.open();
    await migrate(db);
    store = new AuditStore(db);
  });
  afterAll(async () => {
    await engine?.cleanup();
  });

  it('keeps a row once (by id), and searches newest first by user (actor or subject), action and time, page by page', async () => {
    const t0 = Date.parse('2026-05-01T10:00:00Z');
    const rows = Array.from({ length: 7 }, (_, i) => ({
      id: `r${i}`,
      at: new Date(t0 + i * 1000).toISOString(),
      actor: i % 2 ? 'sue' : 'ann',
      action: i < 5 ? ('login.success' as const) : ('monitor.start' as const),
      ...(i === 6 ? { subject: 'bob', target: 'wacid-1', detail: { mode: 'listen' } } : {}),
    }));
    await store.insert(rows);
    await store.insert(rows.slice(0, 2)); // written twice: nothing added
    const all = await store.search({ limit: 100, from: '2026-05-01T00:00:00.000Z', to: '2026-05-02T00:00:00.000Z' });
    expect(all.items.map((e) => e.id)).toEqual(['r6', 'r5', 'r4', 'r3', 'r2', 'r1', 'r0']);
    expect(all.items[0]).toEqual({ id: 'r6', at: rows[6]!.at, actor: 'ann', action: 'monitor.start', subject: 'bob', target: 'wacid-1', detail: { mode: 'listen' } });
    expect((await store.search({ limit: 100, user: 'bob' })).items.map((e) => e.id)).toEqual(['r6']);
    expect((await store.search({ limit: 100, user: 'sue', action: 'login.success' })).items.map((e) => e.id)).toEqual(['r3', 'r1']);
    const p1 = await store.search({ limit: 3, from: '2026-05-01T00:00:00.000Z' });
    expect(p1.items.map((e) => e.id)).toEqual(['r6', 'r5', 'r4']);
    const p2 = await store.search(parseAuditQuery({ limit: ['3'], from: ['2026-05-01'], cursor: [p1.cursor!] }));
    expect(p2.items.map((e) => e.id)).toEqual(['r3', 'r2', 'r1']);
    const p3 = await store.search(parseAuditQuery({ limit: ['3'], from: ['2026-05-01'], cursor: [p2.cursor!] }));
    expect(p3).toEqual({ items: [expect.objectContaining({ id: 'r0' })] });
  });

  it('is append-only: an UPDATE, a DELETE of a young row and a TRUNCATE are refused by the database itself', async () => {
    await store.insert([{ id: 'young', at: new Date().toISOString(), actor: 'ann', action: 'logout' }]);
    await expect(store.db.query("UPDATE audit_log SET actor = 'eve' WHERE id = 'young'")).rejects.toThrow(/append-only/);
    await expect(store.db.query("DELETE FROM audit_log WHERE id = 'young'")).rejects.toThrow(/append-only/);
    await expect(db.exec('TRUNCATE audit_log')).rejects.toThrow(/append-only/);
    expect((await store.search({ limit: 10, user: 'ann', action: 'logout' })).items).toHaveLength(1);
  });

  it('retention deletes only the rows older than its days', async () => {
    const now = new Date();
    await store.insert([
      { id: 'old', at: new Date(now.getTime() - 401 * DAY).toISOString(), actor: 'retention-test', action: 'logout' },
      { id: 'kept', at: new Date(now.getTime() - 399 * DAY).toISOString(), actor: 'retention-test', action: 'logout' },
    ]);
    expect(await store.purge(400, now)).toBe(1);
    expect((await store.search({ limit: 10, user: 'retention-test' })).items.map((e) => e.id)).toEqual(['kept']);
  });

  it('the trail: record never throws or waits; a failing write is counted and the rows are written once it works', async () => {
    const metrics = new Metrics();
    // A store whose table is missing until `ok`: a real database refusing the INSERT.
    let ok = false;
    const failing = { insert: async (rows: Parameters<AuditStore['insert']>[0]) => (ok ? store.insert(rows) : db.query('INSERT INTO audit_missing_table VALUES (1)').then(() => undefined)) };
    const trail = new AuditTrail({ store: failing, log, metrics });
    // Never waits: record returns at once (nothing to await) and the write has not even failed yet.
    // (A 5 ms wall-clock bound said the same and failed on a loaded machine.)
    const returned: unknown = trail.record({ action: 'login.failure', actor: 'trail-test', address: '127.0.0.1', detail: { reason: 'wrong name or password', password: 'hunter2', sessionId: 'abc' } });
    expect(returned).toBeUndefined();
    expect(trail.failures).toBe(0);
    expect(await trail.flush(300)).toBe(false);
    expect(trail.failures).toBeGreaterThanOrEqual(1);
    expect(await metrics.render()).toMatch(/switchboard_audit_write_failures_total [1-9]/);
    ok = true;
    expect(await trail.flush(10_000)).toBe(true);
    const rows = (await store.search({ limit: 10, user: 'trail-test' })).items;
    expect(rows).toHaveLength(1);
    // Detail keys that could hold a secret are never kept.
    expect(rows[0]!.detail).toEqual({ reason: 'wrong name or password' });
    await trail.close();
  });
});

describe('audit query', () => {
  it.each([
    [{ action: ['nope'] }, /^action: must be one of login\.success/],
    [{ from: ['yesterday'] }, /^from: must be an ISO 8601/],
    [{ to: ['2026-13-45'] }, /^to: must be an ISO 8601/],
    [{ from: ['2026-02-02'], to: ['2026-02-01'] }, /^to: must be later than from/],
    [{ limit: ['0'] }, /^limit: must be an integer from 1 to 500/],
    [{ limit: ['1', '2'] }, /^limit: give it at most once/],
    [{ cursor: ['garbage'] }, /^cursor: must be the cursor/],
    [{ users: ['ann'] }, /^users: unknown query parameter/],
  ])('%j is refused naming the field', (q, message) => {
    expect(() => parseAuditQuery(q)).toThrow(AuditQueryError);
    expect(() => parseAuditQuery(q)).toThrow(message);
  });
});

describe('audit rows survive their node (Redis queue)', () => {
  it('rows a node recorded but could not write are written by another node', async () => {
    const { startRedis, uniquePrefix } = await import('../../test/support/redis.ts');
    const { RedisHistoryQueue } = await import('../history/queue.ts');
    const redis = await startRedis();
    const engine = pgliteEngine();
    try {
      const db = await engine.open();
      await migrate(db);
      const store = new AuditStore(db);
      const prefix = `${uniquePrefix('audit')}audit-`;
      const queueOf = () => new RedisHistoryQueue<AuditRow>({ url: redis.url, prefix, claimIdleMs: 300 });
      // Node 1: its database refuses (a real error), then the node goes away.
      const broken = { insert: () => db.query('INSERT INTO audit_missing_table VALUES (1)').then(() => undefined) };
      const node1 = new AuditTrail({ store: broken, log, queue: queueOf() });
      for (let i = 0; i < 3; i++) node1.record({ action: 'recording.download', actor: 'survivor', target: `w${i}` });
      expect(await node1.flush(500)).toBe(false);
      await node1.close();
      // Node 2 claims what node 1 read and never acked, and writes it, once each.
      const node2 = new AuditTrail({ store, log, queue: queueOf() });
      expect(await node2.flush(15_000)).toBe(true);
      const rows = (await store.search({ limit: 10, user: 'survivor' })).items;
      expect(rows.map((r) => r.target).sort()).toEqual(['w0', 'w1', 'w2']);
      await node2.close();
    } finally {
      await engine.cleanup();
      await redis.close();
    }
  }, 60_000);
});
