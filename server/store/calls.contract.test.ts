/**
 * Calls with compare-and-set (`calls.ts`): every case runs against `MemoryStore` and `RedisStore` on a private
 * `redis-server` (test/support/store-contract.ts).
 */
import { describe, expect, it } from 'vitest';
import { call, sleep, storeContract } from '../../test/support/store-contract.ts';

storeContract('Calls', ({ fresh }) => {
  describe('calls', () => {
    it('createCall creates once at version 0; getCall returns it', async () => {
      const s = fresh();
      expect(await s.createCall(call('w1', 'p1', { version: 7 }), 60_000)).toBe(true);
      expect(await s.createCall(call('w1', 'p1', { state: 'other' }), 60_000)).toBe(false);
      expect(await s.getCall('w1')).toEqual(call('w1', 'p1'));
      expect(await s.getCall('nope')).toBeNull();
    });

    it('casCall succeeds only at the expected version and bumps it', async () => {
      const s = fresh();
      await s.createCall(call('w1', 'p1'), 60_000);
      const next = await s.casCall('w1', 0, call('w1', 'p1', { state: 'active', sdp: 'v=0\r\n', list: [] }), 60_000);
      expect(next).toEqual({ wacid: 'w1', phoneId: 'p1', version: 1, state: 'active', sdp: 'v=0\r\n', list: [] });
      expect(await s.casCall('w1', 0, call('w1', 'p1', { state: 'stale' }), 60_000)).toBeNull();
      expect(await s.getCall('w1')).toEqual(next);
      expect(await s.casCall('missing', 0, call('missing', 'p1'), 60_000)).toBeNull();
    });

    it('two concurrent claims of the same version: exactly one wins', async () => {
      const s = fresh();
      await s.createCall(call('w1', 'p1'), 60_000);
      for (let round = 0; round < 5; round++) {
        const cur = (await s.getCall('w1'))!;
        const results = await Promise.all(
          ['alice', 'bob'].map((agent) => s.casCall('w1', cur.version, { ...cur, agent }, 60_000)),
        );
        const winners = results.filter((r) => r !== null);
        expect(winners).toHaveLength(1);
        expect((await s.getCall('w1'))!.agent).toBe(winners[0]!.agent);
        expect((await s.getCall('w1'))!.version).toBe(cur.version + 1);
      }
    });

    it('listCalls lists every stored call, also after a record moved to another phone', async () => {
      const s = fresh();
      await s.createCall(call('w1', 'p1'), 60_000);
      await s.createCall(call('w2', 'p1'), 60_000);
      await s.createCall(call('w3', 'p2'), 60_000);
      await s.casCall('w2', 0, call('w2', 'p2'), 60_000);
      expect((await s.listCalls()).map((c) => c.wacid).sort()).toEqual(['w1', 'w2', 'w3']);
    });

    it('listLiveCalls lists the calls not ended: a call leaves it when it ends, and comes back if a record says live again', async () => {
      const s = fresh();
      await s.createCall({ ...call('w1', 'p1'), state: 'ringing' }, 60_000);
      await s.createCall({ ...call('w2', 'p1'), state: 'queued' }, 60_000);
      await s.createCall({ ...call('w3', 'p1'), state: 'ended' }, 60_000);
      expect((await s.listLiveCalls()).map((c) => c.wacid).sort()).toEqual(['w1', 'w2']);
      await s.casCall('w1', 0, { ...call('w1', 'p1'), state: 'ended' }, 60_000);
      expect((await s.listLiveCalls()).map((c) => c.wacid)).toEqual(['w2']);
      expect((await s.listCalls()).map((c) => c.wacid).sort()).toEqual(['w1', 'w2', 'w3']);
      await s.casCall('w3', 0, { ...call('w3', 'p1'), state: 'active' }, 60_000);
      expect((await s.listLiveCalls()).map((c) => c.wacid).sort()).toEqual(['w2', 'w3']);
    });

    it('a call record expires after its TTL, and leaves the index', async () => {
      const s = fresh();
      await s.createCall(call('short', 'p1'), 80);
      await s.createCall(call('long', 'p1'), 60_000);
      await sleep(150);
      expect(await s.getCall('short')).toBeNull();
      expect((await s.listCalls()).map((c) => c.wacid)).toEqual(['long']);
      expect(await s.createCall(call('short', 'p1'), 60_000)).toBe(true);
    });

    it('casCall renews the TTL', async () => {
      const s = fresh();
      await s.createCall(call('w', 'p'), 100);
      await s.casCall('w', 0, call('w', 'p'), 60_000);
      await sleep(150);
      expect((await s.getCall('w'))?.version).toBe(1);
    });
  });
});
