/**
 * A command sent while ioredis is between reconnect attempts (status `connecting`, which
 * the fail-fast `up()` lets through) fails with ioredis's own error, not
 * `StoreUnavailableError`. It is still an outage: the app answers 503 `UNAVAILABLE` and a
 * WebSocket request gets an `UNAVAILABLE` frame, never a 500 / `INTERNAL` (seen in CI:
 * `test/e2e/store-down.test.ts`, a login answered 500 once in five full runs).
 */
import { Hono } from 'hono';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { freePort, startRedis } from '../../test/support/redis.ts';
import { errorHandler } from '../app.ts';
import { errorFrame } from '../gateway/requests.ts';
import { RedisConnection } from './redis-connection.ts';
import { isStoreDown } from './store.ts';

describe('a command lost with a connection attempt', () => {
  it('is a store outage: 503 UNAVAILABLE from the app, UNAVAILABLE on the socket', async () => {
    // Nothing listens there: the connection is `connecting` when the command is sent.
    const conn = new RedisConnection({ url: `redis://127.0.0.1:${await freePort()}` });
    try {
      expect(conn.redis.status).toBe('connecting');
      const err = await conn
        .up()
        .get('k')
        .then(() => undefined, (e: Error) => e);
      expect(err).toBeInstanceOf(Error);
      expect(isStoreDown(err)).toBe(true);

      const app = new Hono();
      app.onError(errorHandler(pino({ level: 'silent' })));
      app.post('/api/login', () => {
        throw err;
      });
      const res = await app.request('/api/login', { method: 'POST' });
      expect(res.status).toBe(503);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('UNAVAILABLE');
      expect(errorFrame('r1', err)).toMatchObject({ type: 'error', id: 'r1', code: 'UNAVAILABLE' });
    } finally {
      await conn.close();
    }
  });

  it('an error of the code is not', () => {
    expect(isStoreDown(new TypeError('x is undefined'))).toBe(false);
    expect(isStoreDown('Connection is closed.')).toBe(false);
  });
});

describe('ping: every connection of the store', () => {
  it('a connection of its own still waiting to reconnect makes the store unavailable, not ready', async () => {
    const redis = await startRedis();
    // A long backoff, so the killed connection stays between attempts while the test looks.
    const conn = new RedisConnection({ url: redis.url, redis: { retryStrategy: () => 1500 } });
    const admin = new Redis(redis.url);
    try {
      const ingest = conn.duplicate('switchboard-ingest', { enableAutoPipelining: false }, 'quit');
      await ingest.ping();
      await conn.ping();
      const list = await admin.client('LIST');
      const id = /id=(\d+) [^\n]*name=switchboard-ingest/.exec(String(list))![1]!;
      await admin.client('KILL', 'ID', id);
      for (const end = Date.now() + 3000; ingest.status === 'ready' && Date.now() < end; ) await new Promise((r) => setTimeout(r, 10));
      expect(ingest.status).toBe('reconnecting');
      // The first connection answers; the store does not, as a whole.
      await conn.redis.ping();
      await expect(conn.ping()).rejects.toThrow(/unreachable \(reconnecting\)/);
      for (const end = Date.now() + 5000; ingest.status !== 'ready' && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
      await conn.ping();
    } finally {
      admin.disconnect();
      await conn.close();
      await redis.close();
    }
  });
});
