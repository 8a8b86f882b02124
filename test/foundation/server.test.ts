/**
 * The whole server in-process (`startSwitchboard`) on Redis: the store follows REDIS_URL,
 * /readyz reports Redis going away with the reason and recovers, close() is clean.
 */
import { describe, expect, it } from 'vitest';
import { request } from 'undici';
import { loadConfig } from '../../server/config/config.ts';
import { silentLogger } from '../../server/log/logger.ts';
import { startSwitchboard } from '../../server/main.ts';
import { MemoryStore } from '../../server/store/memory.ts';
import { RedisStore } from '../../server/store/redis.ts';
import { startRedis } from '../support/redis.ts';
import { until } from './helpers.ts';
import { tempDataDir } from '../support/data-dir.ts';

describe('startSwitchboard', () => {
  it('with REDIS_URL uses Redis; /readyz is 503 naming the store while Redis is down and 200 again after', async () => {
    const redis = await startRedis();
    const running = await startSwitchboard(loadConfig({ PORT: '0', REDIS_URL: redis.url, LOG_LEVEL: 'silent', DATA_DIR: tempDataDir() }), { log: silentLogger(), drainMs: 2000 });
    try {
      expect(running.store).toBeInstanceOf(RedisStore);
      const ready = async () => {
        const r = await request(`${running.url}/readyz`);
        return { status: r.statusCode, body: (await r.body.json()) as { reason?: string } };
      };
      expect((await ready()).status).toBe(200);
      await redis.stop();
      await until(async () => (await ready()).status === 503, 10_000, 'readyz 503');
      expect((await ready()).body.reason).toMatch(/^store: /);
      await redis.start();
      await until(async () => (await ready()).status === 200, 15_000, 'readyz 200 again');
    } finally {
      await running.close();
      await running.close(); // safe twice
      await redis.close();
    }
  }, 60_000);

  it('without REDIS_URL uses the in-memory store', async () => {
    const running = await startSwitchboard(loadConfig({ PORT: '0', LOG_LEVEL: 'silent', DATA_DIR: tempDataDir() }), { log: silentLogger(), drainMs: 2000 });
    try {
      expect(running.store).toBeInstanceOf(MemoryStore);
      expect((await request(`${running.url}/healthz`)).statusCode).toBe(200);
    } finally {
      await running.close();
    }
  }, 60_000);
});
