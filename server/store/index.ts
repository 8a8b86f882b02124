/**
 * The store the configuration asks for: Redis when `REDIS_URL` is set (through Sentinel
 * when `REDIS_SENTINELS` is set too), memory otherwise.
 * Code outside `server/store/` depends on the `Store` interface only.
 */
import type { Config } from '../config/config.ts';
import type { Logger } from '../log/logger.ts';
import { MemoryStore } from './memory.ts';
import { RedisStore } from './redis.ts';
import type { Store } from './store.ts';

export type { Store, StreamEntry, DeadLetter, CallRecord, AcceptResult } from './store.ts';
export { MemoryStore } from './memory.ts';
export { RedisStore, StoreUnavailableError } from './redis.ts';

export function createStore(config: Pick<Config, 'redisUrl'> & Partial<Pick<Config, 'redisSentinels' | 'redisSentinelName'>>, log: Logger): Store {
  if (!config.redisUrl) return new MemoryStore();
  return new RedisStore({
    url: config.redisUrl,
    // Sentinel mode: the primary is found through the sentinels; the URL gives password and db.
    ...(config.redisSentinels ? { sentinels: config.redisSentinels, sentinelName: config.redisSentinelName ?? 'mymaster' } : {}),
    // Only message and code: ioredis errors can carry the connection options.
    onError: (err) => log.error({ err: { message: err.message, code: (err as { code?: string }).code } }, 'redis connection error'),
  });
}
