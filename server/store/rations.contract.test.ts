/**
 * Rations, window counters and call outcomes (`rations.ts`): every case runs against `MemoryStore` and `RedisStore` on a private
 * `redis-server` (test/support/store-contract.ts).
 */
import { describe, expect, it } from 'vitest';
import { sleep, storeContract } from '../../test/support/store-contract.ts';
import { uniquePrefix } from '../../test/support/redis.ts';
import { MemoryStore } from './memory.ts';
import { RedisStore } from './redis.ts';

storeContract('Rate windows', ({ name, fresh, open, redisUrl }) => {
  describe('rations (reserveSlot)', () => {
    const H = 3600_000;
    const DAY = 24 * H;
    const T0 = 1_700_000_000_000;
    // The call-permission ration (server/permissions/model.ts RATION): 1 per 24 h, 2 per 7 days.
    const RATION = [
      { windowMs: DAY, max: 1 },
      { windowMs: 7 * DAY, max: 2 },
    ];

    it('1 per 24 h and 2 per 7 days: a refusal names the full window and when it frees up', async () => {
      const s = fresh();
      expect(await s.reserveSlot('u1', 'a', T0, RATION)).toEqual({ ok: true });
      expect(await s.reserveSlot('u1', 'b', T0 + H, RATION)).toEqual({ ok: false, window: 0, retryAt: T0 + DAY });
      expect(await s.reserveSlot('u1', 'c', T0 + DAY, RATION)).toEqual({ ok: true });
      expect(await s.reserveSlot('u1', 'd', T0 + 3 * DAY, RATION)).toEqual({ ok: false, window: 1, retryAt: T0 + 7 * DAY });
      expect(await s.reserveSlot('u1', 'e', T0 + 7 * DAY, RATION)).toEqual({ ok: true });
      // Another key has its own ration.
      expect(await s.reserveSlot('u2', 'a', T0 + H, RATION)).toEqual({ ok: true });
    });

    it('20 concurrent reservations of one key: exactly one succeeds', async () => {
      const s = fresh();
      const all = await Promise.all(Array.from({ length: 20 }, (_, i) => s.reserveSlot('race', `slot-${i}`, T0, RATION)));
      expect(all.filter((r) => r.ok)).toHaveLength(1);
      for (const r of all.filter((x) => !x.ok)) expect(r).toEqual({ ok: false, window: 0, retryAt: T0 + DAY });
    });

    it('a released slot frees its place; releasing an unknown slot changes nothing', async () => {
      const s = fresh();
      expect(await s.reserveSlot('u', 'a', T0, RATION)).toEqual({ ok: true });
      await s.releaseSlot('u', 'nope');
      expect((await s.reserveSlot('u', 'b', T0 + 1, RATION)).ok).toBe(false);
      await s.releaseSlot('u', 'a');
      expect(await s.reserveSlot('u', 'b', T0 + 2, RATION)).toEqual({ ok: true });
    });

    if (name.startsWith('RedisStore')) {
      it('store instances (nodes) sharing a prefix share the ration: 10 racing on two nodes, one wins', async () => {
        const prefix = uniquePrefix();
        const n1 = new RedisStore({ url: redisUrl(), prefix });
        const n2 = new RedisStore({ url: redisUrl(), prefix });
        open.push(n1, n2);
        const all = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? n1 : n2).reserveSlot('shared', `s${i}`, T0, RATION)));
        expect(all.filter((r) => r.ok)).toHaveLength(1);
      });
    }
  });

  describe('business-initiated call outcomes (recordCallOutcome)', () => {
    const T0 = 1_700_000_000_000;
    const DAY = 24 * 3600_000;
    const TTL = 7 * DAY;

    it('connected calls are kept by call id, an answered call clears the unanswered run, each pair on its own', async () => {
      const s = fresh();
      expect(await s.callOutcomes('b|u')).toEqual({ connected: [], unanswered: [] });
      await s.recordCallOutcome('b|u', 'w1', 'unanswered', T0, TTL);
      await s.recordCallOutcome('b|u', 'w2', 'unanswered', T0 + 10, TTL);
      await s.recordCallOutcome('b|u', 'w2', 'unanswered', T0 + 20, TTL); // a repeat: still one
      expect(await s.callOutcomes('b|u')).toEqual({ connected: [], unanswered: [T0, T0 + 20] });
      await s.recordCallOutcome('b|u', 'w3', 'connected', T0 + 30, TTL);
      await s.recordCallOutcome('b|u', 'w3', 'connected', T0 + 30, TTL);
      expect(await s.callOutcomes('b|u')).toEqual({ connected: [T0 + 30], unanswered: [] });
      await s.recordCallOutcome('b|v', 'w4', 'unanswered', T0, TTL);
      expect(await s.callOutcomes('b|v')).toEqual({ connected: [], unanswered: [T0] });
      expect((await s.callOutcomes('b|u')).unanswered).toEqual([]);
    });

    it('connected calls older than the ttl are forgotten when a newer one is recorded', async () => {
      const s = fresh();
      await s.recordCallOutcome('p', 'a', 'connected', T0, DAY);
      await s.recordCallOutcome('p', 'b', 'connected', T0 + DAY / 2, DAY);
      await s.recordCallOutcome('p', 'c', 'connected', T0 + DAY, DAY);
      expect((await s.callOutcomes('p')).connected).toEqual([T0 + DAY / 2, T0 + DAY]);
    });

    it('the lists expire ttl after the last record', async () => {
      const s = fresh();
      await s.recordCallOutcome('x', 'a', 'unanswered', T0, 150);
      expect((await s.callOutcomes('x')).unanswered).toHaveLength(1);
      await sleep(300);
      expect(await s.callOutcomes('x')).toEqual({ connected: [], unanswered: [] });
    });

    if (name.startsWith('RedisStore')) {
      it('nodes sharing a prefix share the outcomes: 8 calls recorded on two nodes, all seen on both', async () => {
        const prefix = uniquePrefix();
        const n1 = new RedisStore({ url: redisUrl(), prefix });
        const n2 = new RedisStore({ url: redisUrl(), prefix });
        open.push(n1, n2);
        await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? n1 : n2).recordCallOutcome('shared', `w${i}`, 'unanswered', T0 + i, TTL)));
        expect((await n1.callOutcomes('shared')).unanswered).toHaveLength(8);
        await n2.recordCallOutcome('shared', 'ok', 'connected', T0 + 9, TTL);
        expect(await n1.callOutcomes('shared')).toEqual({ connected: [T0 + 9], unanswered: [] });
      });
    }
  });

  describe('window counters (rate limits)', () => {
    it('countInWindow counts up within the window, tells the time left, and is gone after it', async () => {
      const s = fresh();
      const a = await s.countInWindow('login:n', 1, 300);
      expect(a.count).toBe(1);
      expect(a.resetInMs).toBeGreaterThan(0);
      expect(a.resetInMs).toBeLessThanOrEqual(300);
      expect((await s.countInWindow('login:n', 1, 300)).count).toBe(2);
      // The window is fixed at the first increment: later ones do not extend it.
      const c = await s.countInWindow('login:n', 1, 10_000);
      expect(c.count).toBe(3);
      expect(c.resetInMs).toBeLessThanOrEqual(300);
      expect((await s.countInWindow('other', 1, 300)).count).toBe(1);
      await sleep(400);
      expect((await s.countInWindow('login:n', 1, 300)).count).toBe(1);
    });

    it('a give-back (negative delta) lowers the count, never creates a counter, and removes one at 0', async () => {
      const s = fresh();
      expect(await s.countInWindow('g', -1, 1000)).toEqual({ count: 0, resetInMs: 0 });
      expect((await s.countInWindow('g', 1, 1000)).count).toBe(1);
      expect((await s.countInWindow('g', 1, 1000)).count).toBe(2);
      expect((await s.countInWindow('g', -1, 1000)).count).toBe(1);
      expect((await s.countInWindow('g', -1, 1000)).count).toBe(0);
      expect(await s.countInWindow('g', -1, 1000)).toEqual({ count: 0, resetInMs: 0 });
      expect((await s.countInWindow('g', 1, 1000)).count).toBe(1);
    });

    it('200 concurrent increments: each sees a different count, 1..200 (atomic)', async () => {
      const s = fresh();
      const got = await Promise.all(Array.from({ length: 200 }, () => s.countInWindow('race', 1, 60_000)));
      expect(got.map((g) => g.count).sort((x, y) => x - y)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    });

    if (name === 'MemoryStore') {
      it('expired counters are swept, so many distinct keys do not pile up', async () => {
        const s = fresh() as MemoryStore;
        for (let i = 0; i < 2000; i++) await s.countInWindow(`k${i}`, 1, 20);
        await sleep(50);
        for (let i = 0; i < 2048; i++) await s.countInWindow('live', 1, 60_000);
        expect(s.counterKeys).toBeLessThan(100);
      });
    }
  });
});
