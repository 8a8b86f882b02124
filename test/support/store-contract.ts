/**
 * The store's contract suites (`server/store/*.contract.test.ts`) run each of their cases
 * against every implementation: `MemoryStore` and `RedisStore` on a private `redis-server`
 * (batched and unbatched accepts). One suite per part of the store.
 *
 *   storeContract('Calls', ({ name, fresh }) => { describe('calls', () => { ... }) });
 */
import { afterAll, afterEach, beforeAll, describe } from 'vitest';
import { MemoryStore } from '../../server/store/memory.ts';
import { RedisStore } from '../../server/store/redis.ts';
import type { CallRecord, Store } from '../../server/store/store.ts';
import { startRedis, uniquePrefix, type TestRedis } from './redis.ts';

export interface ContractContext {
  /** `MemoryStore`, `RedisStore` or `RedisStore (unbatched)`. */
  name: string;
  /** A new store with a prefix of its own, closed after the case. */
  fresh: () => Store;
  /** Stores to close after the case (those a case opens itself). */
  open: Store[];
  /** The private Redis server's URL (Redis cases only). */
  redisUrl: () => string;
}

export function storeContract(part: string, body: (ctx: ContractContext) => void): void {
  let redis: TestRedis | undefined;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.close();
  });
  const redisUrl = () => redis!.url;
  const impls: Array<[string, () => Store]> = [
    ['MemoryStore', () => new MemoryStore({ prefix: uniquePrefix() })],
    ['RedisStore', () => new RedisStore({ url: redisUrl(), prefix: uniquePrefix() })],
    // Accept batching off: every event its own script call.
    ['RedisStore (unbatched)', () => new RedisStore({ url: redisUrl(), prefix: uniquePrefix(), acceptBatchMax: 1 })],
  ];
  describe.each(impls)(`${part} contract: %s`, (name, make) => {
    const open: Store[] = [];
    const fresh = () => {
      const s = make();
      open.push(s);
      return s;
    };
    afterEach(async () => {
      await Promise.all(open.splice(0).map((s) => s.close()));
    });
    body({ name, fresh, open, redisUrl });
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A webhook event as the receiver hands it to `acceptEvent`. */
export const ev = (id: string, type = 'chat.call.connect') => ({
  eventId: id,
  type,
  body: JSON.stringify({ id, type, apiVersion: 'v2', createTime: '2026-01-01T00:00:00.000Z', x: 'é"\\' }),
  receivedAt: 1_700_000_000_000,
});

export const call = (wacid: string, phoneId: string, extra: Record<string, unknown> = {}): CallRecord => ({
  wacid,
  phoneId,
  version: 0,
  state: 'ringing',
  ...extra,
});
