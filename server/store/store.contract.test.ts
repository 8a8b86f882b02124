/**
 * The composed store: lifecycle and key names (`store.ts`): every case runs against `MemoryStore` and `RedisStore` on a private
 * `redis-server` (test/support/store-contract.ts).
 */
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { call, ev, storeContract } from '../../test/support/store-contract.ts';
import { uniquePrefix } from '../../test/support/redis.ts';
import { RedisStore } from './redis.ts';

storeContract('Store', ({ name, fresh, open, redisUrl }) => {
  describe('lifecycle', () => {
    it('ping resolves while the store is up; close is safe twice', async () => {
      const s = fresh();
      await s.ping();
      await s.close();
      await s.close();
      await expect(s.ping()).rejects.toThrow();
    });
  });

  if (name.startsWith('RedisStore')) {
    it('every key written starts with the prefix (key names of server/store/README.md)', async () => {
      const prefix = uniquePrefix();
      const s = new RedisStore({ url: redisUrl(), prefix });
      open.push(s);
      await s.ensureGroup('g');
      await s.acceptEvent(ev('k1'), 60_000);
      const [e] = await s.readGroup('g', 'c', 1, 0);
      await s.deadLetter('g', e!, 'x');
      await s.createCall(call('w1', 'p1'), 60_000);
      await s.listLiveCalls();
      await s.setNX('lock:w1', '1', 60_000);
      await s.reserveSlot('perm:a', 's1', Date.now(), [{ windowMs: 60_000, max: 1 }]);
      await s.countInWindow('login:x', 1, 60_000);
      const probe = new Redis(redisUrl());
      try {
        const keys = (await probe.keys(`${prefix}*`)).sort();
        expect(keys).toEqual(
          [`${prefix}events`, `${prefix}dedupe:k1`, `${prefix}dead`, `${prefix}call:w1`, `${prefix}calls`, `${prefix}calls:live`, `${prefix}calls:live:built`, `${prefix}kv:lock:w1`, `${prefix}slot:perm:a`, `${prefix}count:login:x`].sort(),
        );
      } finally {
        probe.disconnect();
      }
    });
  }
});
