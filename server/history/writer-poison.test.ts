/**
 * A fact the database cannot store (a NUL in a wrap-up note; a lone
 * surrogate in a timeline's JSON detail) is set aside as a history dead letter — counted,
 * listed for ops — and never blocks the facts behind it; on both engines (PostgreSQL and
 * PGlite) and both queues. A connection failure is still retried, never set aside.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, uniquePrefix, type TestRedis } from '../../test/support/redis.ts';
import { pgliteEngine, postgresEngine, type HistoryEngine } from '../../test/support/history.ts';
import { until } from '../../test/support/wait.ts';
import { Metrics } from '../ops/metrics.ts';
import type { Db } from './db.ts';
import { migrate } from './migrations.ts';
import { MemoryHistoryQueue, RedisHistoryQueue, type HistoryQueue } from './queue.ts';
import type { HistoryFact } from './schema.ts';
import { HistoryStore } from './store.ts';
import { HistoryWriter } from './writer.ts';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.close();
});

const T0 = Date.parse('2026-04-02T09:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
function call(wacid: string): HistoryFact[] {
  return [
    { type: 'call', wacid, phoneId: 'ph1', businessNumber: '+15550100001', customer: { phoneNumber: '+15550123456' }, direction: 'inbound', outcome: 'answered', agent: 'agent1', receivedAt: at(0), answeredAt: at(2), endedAt: at(20), version: 3 },
    { type: 'timeline', wacid, key: 'state:3', at: at(20), event: 'ended' },
  ];
}

describe.each([
  ['PostgreSQL', postgresEngine],
  ['PGlite', pgliteEngine],
])('history writer and unstorable facts: %s', (_engine, makeEngine) => {
  let engine: HistoryEngine;
  let db: Db;
  beforeAll(async () => {
    engine = makeEngine();
    db = await engine.open();
    await migrate(db);
  });
  afterAll(async () => {
    await engine?.cleanup();
  });

  it.each([
    ['memory queue', () => new MemoryHistoryQueue()],
    ['Redis stream queue', () => new RedisHistoryQueue({ url: redis.url, prefix: uniquePrefix() })],
  ] as Array<[string, () => HistoryQueue]>)('with the %s: a NUL note and a lone surrogate are set aside, counted and listed; every other fact is written', async (_q, makeQueue) => {
    const tag = `n${Math.random().toString(36).slice(2, 8)}`;
    const queue = makeQueue();
    const metrics = new Metrics();
    const writer = new HistoryWriter({ queue, store: new HistoryStore(db), metrics, blockMs: 100, intervalMs: 50, backoffMinMs: 20, backoffMaxMs: 100 });
    writer.start();
    try {
      queue.enqueue(...call(`${tag}-1`));
      // The tester's wrap-up: notes "hello\u0000world" (text column: invalid byte sequence 0x00).
      queue.enqueue({ type: 'disposition', wacid: `${tag}-1`, disposition: 'Resolved', notes: 'hello\u0000world', at: at(25) });
      queue.enqueue(...call(`${tag}-2`));
      // A lone surrogate in JSON (jsonb: a low surrogate must follow a high one).
      queue.enqueue({ type: 'timeline', wacid: `${tag}-2`, key: 'event:x', at: at(21), event: 'chat.call.terminate', detail: { reason: 'bad \ud800 text' } });
      for (let i = 3; i <= 12; i++) queue.enqueue(...call(`${tag}-${i}`));
      await until('every storable fact written', async () => {
        const [r] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM history_calls WHERE wacid LIKE $1', [`${tag}-%`]);
        return r!.n === 12;
      }, 10_000);
      await until('the queue drained', async () => (await queue.lag()).pending === 0, 10_000);
      const [t] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM history_timeline WHERE wacid LIKE $1', [`${tag}-%`]);
      expect(t!.n).toBe(12);
      expect(writer.status().healthy).toBe(true);
      expect(writer.status().deadLettered).toBe(2);
      const { items: dead, total } = await writer.deadLetters(10);
      expect(total).toBe(2);
      expect(dead.map((d) => (JSON.parse(d.body) as { type: string }).type).sort()).toEqual(['disposition', 'timeline']);
      for (const d of dead) expect(d.error).toMatch(/\S/);
      expect(await metrics.render()).toMatch(/^switchboard_history_facts_dead_lettered_total 2$/m);
      expect(await metrics.render()).toMatch(/^switchboard_history_dead_letters 2$/m);
    } finally {
      await writer.stop();
      await queue.close();
    }
  });
});
