/**
 * The store the configuration asks for: Redis when `REDIS_URL` is set, memory otherwise.
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

export function createStore(config: Pick<Config, 'redisUrl'>, log: Logger): Store {
  if (!config.redisUrl) return new MemoryStore();
  return new RedisStore({
    url: config.redisUrl,
    // Only message and code: ioredis errors can carry the connection options.
    onError: (err) => log.error({ err: { message: err.message, code: (err as { code?: string }).code } }, 'redis connection error'),
  });
}
