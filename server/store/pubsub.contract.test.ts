/**
 * Messages between nodes (`pubsub.ts`): every case runs against `MemoryStore` and `RedisStore` on a private
 * `redis-server` (test/support/store-contract.ts).
 */
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { sleep, storeContract } from '../../test/support/store-contract.ts';
import { uniquePrefix } from '../../test/support/redis.ts';
import { RedisStore } from './redis.ts';

storeContract('Pub/sub', ({ name, fresh, open, redisUrl }) => {
  describe('pub/sub', () => {
    it('a published message reaches every subscriber until it unsubscribes', async () => {
      const s = fresh();
      const a: string[] = [];
      const b: string[] = [];
      const unA = await s.subscribe('room', (m) => a.push(m));
      await s.subscribe('room', (m) => b.push(m));
      await s.publish('room', 'one');
      await s.publish('other', 'nope');
      await sleep(100);
      expect(a).toEqual(['one']);
      expect(b).toEqual(['one']);
      await unA();
      await s.publish('room', 'two');
      await sleep(100);
      expect(a).toEqual(['one']);
      expect(b).toEqual(['one', 'two']);
    });

    if (name.startsWith('RedisStore')) {
      it('messages cross store instances (nodes) that share a prefix', async () => {
        const prefix = uniquePrefix();
        const n1 = new RedisStore({ url: redisUrl(), prefix });
        const n2 = new RedisStore({ url: redisUrl(), prefix });
        open.push(n1, n2);
        const got: string[] = [];
        await n2.subscribe('calls', (m) => got.push(m));
        await n1.publish('calls', 'hello');
        await sleep(100);
        expect(got).toEqual(['hello']);
      });

      it('a node alone on a channel delivers to itself without a PUBLISH; a node joining hears every message from then on; one leaving is noticed', async () => {
        const prefix = uniquePrefix();
        const probe = new Redis(redisUrl());
        const publishes = async () => Number(/cmdstat_publish:calls=(\d+)/.exec(await probe.info('commandstats'))?.[1] ?? 0);
        try {
          const n1 = new RedisStore({ url: redisUrl(), prefix });
          open.push(n1);
          const one: string[] = [];
          await n1.subscribe('push', (m) => one.push(m));
          await n1.publish('push', 'first'); // through Redis: the receiver count says nobody else listens
          const before = await publishes();
          for (let i = 0; i < 50; i++) await n1.publish('push', `alone-${i}`);
          await sleep(50);
          expect(await publishes()).toBe(before);
          expect(one).toEqual(['first', ...Array.from({ length: 50 }, (_, i) => `alone-${i}`)]);
          // A second node joins: its hello makes the first publish through Redis again, at once.
          const n2 = new RedisStore({ url: redisUrl(), prefix });
          open.push(n2);
          const two: string[] = [];
          const unsub2 = await n2.subscribe('push', (m) => two.push(m));
          await sleep(50);
          for (let i = 0; i < 5; i++) await n1.publish('push', `both-${i}`);
          await sleep(100);
          expect(two).toEqual(Array.from({ length: 5 }, (_, i) => `both-${i}`));
          expect(one.slice(-5)).toEqual(two);
          // It leaves: the next publish's receiver count tells the first node it is alone again.
          await unsub2();
          await n1.publish('push', 'last-through-redis');
          const after = await publishes();
          await n1.publish('push', 'alone-again');
          await sleep(50);
          expect(await publishes()).toBe(after);
          expect(one.slice(-2)).toEqual(['last-through-redis', 'alone-again']);
          // A node whose hello was missed (it subscribed to Redis directly) is found by the poll.
          const raw = new Redis(redisUrl());
          const heard: string[] = [];
          raw.on('message', (_ch: string, m: string) => heard.push(m));
          await raw.subscribe(`${prefix}ch:push`);
          await sleep(1500);
          await n1.publish('push', 'found-by-poll');
          await sleep(100);
          raw.disconnect();
          expect(heard).toEqual(['found-by-poll']);
        } finally {
          probe.disconnect();
        }
      });
    }
  });
});
