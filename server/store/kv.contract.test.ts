/**
 * Small values and small indexes (`kv.ts`): every case runs against `MemoryStore` and `RedisStore` on a private
 * `redis-server` (test/support/store-contract.ts).
 */
import { describe, expect, it } from 'vitest';
import { sleep, storeContract } from '../../test/support/store-contract.ts';

storeContract('Key-value', ({ fresh }) => {
  describe('small values', () => {
    it('setNX sets only when absent, until the TTL', async () => {
      const s = fresh();
      // TTLs long enough that a loaded machine cannot expire them between two commands.
      expect(await s.setNX('lock', 'a', 800)).toBe(true);
      expect(await s.setNX('lock', 'b', 800)).toBe(false);
      expect(await s.get('lock')).toBe('a');
      await sleep(1000);
      expect(await s.get('lock')).toBeNull();
      expect(await s.setNX('lock', 'c', 1000)).toBe(true);
    });

    it('set/get/del, with and without TTL', async () => {
      const s = fresh();
      await s.set('k', 'v1');
      await s.set('t', 'v2', 800);
      expect(await s.get('k')).toBe('v1');
      expect(await s.get('t')).toBe('v2');
      await sleep(1000);
      expect(await s.get('t')).toBeNull();
      expect(await s.get('k')).toBe('v1');
      await s.del('k');
      expect(await s.get('k')).toBeNull();
    });
  });

  describe('small indexes (a user\'s sessions)', () => {
    it('members until their time, oldest first; removed ones and past ones gone; the key goes with its latest member', async () => {
      const s = fresh();
      const now = Date.now();
      await s.indexAdd('sessions-of:ann', 'a', now + 60_000);
      await s.indexAdd('sessions-of:ann', 'b', now + 30_000);
      await s.indexAdd('sessions-of:ann', 'c', now + 700);
      await s.indexAdd('sessions-of:bob', 'x', now + 60_000);
      expect(await s.indexMembers('sessions-of:ann', now)).toEqual(['c', 'b', 'a']);
      await s.indexRemove('sessions-of:ann', 'b');
      expect(await s.indexMembers('sessions-of:ann', now + 1000)).toEqual(['a']);
      expect(await s.indexMembers('sessions-of:bob', now)).toEqual(['x']);
      expect(await s.indexMembers('sessions-of:nobody', now)).toEqual([]);
      const t = fresh();
      await t.indexAdd('short', 'only', Date.now() + 500);
      await sleep(900);
      expect(await t.indexMembers('short', 0)).toEqual([]);
    });
  });
});
