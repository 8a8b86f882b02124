/**
 * A connection ioredis ends on its own is opened again (`reopenWhenEnded`). ioredis gives a
 * connection up for good when its connector fails — behind Sentinel, a failover announced
 * while a reconnect is asking a sentinel for the primary — and every later command is
 * refused: the node took no webhook until restarted (the sentinel fault case, 1 run in ~20).
 * Here ioredis is told to give up at the first drop (`retryStrategy: () => null`) and the
 * server drops every client: the same `end`, on demand.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, uniquePrefix, type TestRedis } from '../../test/support/redis.ts';
import { RedisStore, reopenWhenEnded } from './redis.ts';

let redis: TestRedis;
let admin: Redis;
beforeAll(async () => {
  redis = await startRedis();
  admin = new Redis(redis.url);
});
afterAll(async () => {
  admin.disconnect();
  await redis.close();
});

const dropEveryClient = () => admin.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');

async function eventually<T>(what: string, f: () => Promise<T>, ms = 5000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await f();
    } catch (err) {
      if (Date.now() > until) throw new Error(`${what}: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

describe('connections ioredis ended on its own', () => {
  it('are connected again while their owner is open, and stay ended once it closed', async () => {
    let closed = false;
    const r = new Redis(redis.url, { retryStrategy: () => null, maxRetriesPerRequest: 0 });
    reopenWhenEnded(r, () => closed, { delayMs: 50 });
    await r.set('k', 'v');
    await dropEveryClient();
    await eventually('ended', async () => expect(r.status).toBe('end'), 2000);
    expect(await eventually('reopened', () => r.get('k'))).toBe('v');

    closed = true;
    r.disconnect();
    await new Promise((res) => setTimeout(res, 300));
    expect(r.status).toBe('end');
  });

  it('a store whose connections all ended keeps taking webhook events and publishing', async () => {
    const store = new RedisStore({ url: redis.url, prefix: uniquePrefix(), redis: { retryStrategy: () => null } });
    try {
      const got: string[] = [];
      await store.subscribe('ch', (m) => void got.push(m));
      expect(await store.acceptEvent({ eventId: 'e1', type: 't', body: '{}', receivedAt: Date.now() }, 60_000)).toBe('accepted');
      await dropEveryClient();
      // Before: 'redis is disconnected' for every event until the process restarted.
      expect(await eventually('intake after the drop', () => store.acceptEvent({ eventId: 'e2', type: 't', body: '{}', receivedAt: Date.now() }, 60_000))).toBe('accepted');
      expect(store.reopened).toBeGreaterThanOrEqual(2);
      // The subscriber came back subscribed (ioredis resubscribes on the new connection).
      await eventually('message after the drop', async () => {
        await store.publish('ch', 'after');
        expect(got).toContain('after');
      });
    } finally {
      await store.close();
    }
  });
});
