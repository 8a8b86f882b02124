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
import { freePort } from '../../test/support/redis.ts';
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
