/**
 * The event log and its dead letters (`event-log.ts`): every case runs against `MemoryStore` and `RedisStore` on a private
 * `redis-server` (test/support/store-contract.ts).
 */
import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { ev, sleep, storeContract } from '../../test/support/store-contract.ts';
import type { DeadLetters, EventLog } from './event-log.ts';
import { RedisStore } from './redis.ts';

storeContract('Event log', ({ name, fresh, open, redisUrl }) => {
  describe('dedupe + append', () => {
    it('the first delivery of an event id is accepted, a repeat is a duplicate and appends nothing', async () => {
      const s = fresh();
      await s.ensureGroup('g');
      expect(await s.acceptEvent(ev('e1'), 60_000)).toBe('accepted');
      expect(await s.acceptEvent(ev('e1'), 60_000)).toBe('duplicate');
      const got = await s.readGroup('g', 'c1', 10, 0);
      expect(got).toHaveLength(1);
      expect(got[0]).toMatchObject({ eventId: 'e1', type: 'chat.call.connect', body: ev('e1').body, receivedAt: 1_700_000_000_000, deliveries: 1 });
      expect(await s.readGroup('g', 'c1', 10, 0)).toEqual([]);
    });

    it('20 concurrent deliveries of one event id: exactly one is accepted', async () => {
      const s = fresh();
      const results = await Promise.all(Array.from({ length: 20 }, () => s.acceptEvent(ev('same'), 60_000)));
      expect(results.filter((r) => r === 'accepted')).toHaveLength(1);
      expect(results.filter((r) => r === 'duplicate')).toHaveLength(19);
      expect(await s.streamLag('g-none')).toBe(1);
    });

    it('after the dedupe TTL the same id is accepted again', async () => {
      const s = fresh();
      expect(await s.acceptEvent(ev('t1'), 60)).toBe('accepted');
      await sleep(120);
      expect(await s.acceptEvent(ev('t1'), 60)).toBe('accepted');
    });

    if (name.startsWith('RedisStore')) {
      it('an append that fails refuses the delivery and leaves no dedupe key: the next delivery of the ids is accepted', async () => {
        const s = fresh() as RedisStore;
        await s.acceptEvent(ev('before'), 60_000);
        const r = new Redis(redisUrl());
        try {
          // The stream key holding another type makes XADD fail inside the script.
          await r.del(`${s.prefix}events`);
          await r.set(`${s.prefix}events`, 'not a stream');
          const ids = ['f1', 'f2', 'f3'];
          const results = await Promise.allSettled(ids.map((id) => s.acceptEvent(ev(id), 60_000)));
          for (const x of results) expect(x.status).toBe('rejected');
          expect(await r.exists(...ids.map((id) => `${s.prefix}dedupe:${id}`))).toBe(0);
          await r.del(`${s.prefix}events`);
          expect(await Promise.all(ids.map((id) => s.acceptEvent(ev(id), 60_000)))).toEqual(['accepted', 'accepted', 'accepted']);
          expect(await s.acceptEvent(ev('f1'), 60_000)).toBe('duplicate');
        } finally {
          r.disconnect();
        }
      });
    }

    if (name === 'RedisStore') {
      it('a burst of 100 concurrent accepts goes out in script calls of at most 16 events, each event accepted once', async () => {
        const s = fresh() as RedisStore;
        const before = { ...s.acceptStats };
        const ids = Array.from({ length: 100 }, (_, i) => `burst${i}`);
        expect(await Promise.all(ids.map((id) => s.acceptEvent(ev(id), 60_000)))).toEqual(ids.map(() => 'accepted'));
        const calls = s.acceptStats.calls - before.calls;
        expect(s.acceptStats.events - before.events).toBe(100);
        // 6 full calls of 16 at once, the last 4 after the event-loop turn; with no cap, 1 call.
        expect(calls).toBe(7);
        expect(await s.streamLag('g-none')).toBe(100);
      });
    }
  });

  describe('consumer groups', () => {
    it('events accepted before the group exists are delivered, in order', async () => {
      const s = fresh();
      for (const id of ['a', 'b', 'c']) await s.acceptEvent(ev(id), 60_000);
      await s.ensureGroup('g');
      await s.ensureGroup('g'); // idempotent
      const got = await s.readGroup('g', 'c1', 10, 0);
      expect(got.map((e) => e.eventId)).toEqual(['a', 'b', 'c']);
    });

    if (name.startsWith('RedisStore')) {
      it('a group that takes over an older one starts at its oldest pending entry, or after its last delivered one (an upgrade neither repeats nor skips)', async () => {
        const s = fresh();
        for (const id of ['a', 'b', 'c', 'd', 'e']) await s.acceptEvent(ev(id), 60_000);
        await s.ensureGroup('old');
        const read = await s.readGroup('old', 'c1', 3, 0); // a, b, c delivered
        await s.ack('old', [read[0]!.streamId, read[2]!.streamId]); // b still pending
        await s.ensureGroup('new', { from: 'old' });
        expect((await s.readGroup('new', 'c1', 10, 0)).map((e) => e.eventId)).toEqual(['b', 'c', 'd', 'e']);
        await s.ack('old', [read[1]!.streamId]); // nothing pending: after the last delivered (c)
        await s.ensureGroup('newer', { from: 'old' });
        expect((await s.readGroup('newer', 'c1', 10, 0)).map((e) => e.eventId)).toEqual(['d', 'e']);
        await s.ensureGroup('fresh', { from: 'no-such-group' }); // no older group: the whole stream
        expect((await s.readGroup('fresh', 'c1', 10, 0)).map((e) => e.eventId)).toEqual(['a', 'b', 'c', 'd', 'e']);
      });
    }

    it('two consumers of one group never receive the same entry', async () => {
      const s = fresh();
      await s.ensureGroup('g');
      for (let i = 0; i < 10; i++) await s.acceptEvent(ev(`e${i}`), 60_000);
      const a = await s.readGroup('g', 'ca', 4, 0);
      const b = await s.readGroup('g', 'cb', 10, 0);
      expect(a).toHaveLength(4);
      expect(b).toHaveLength(6);
      const ids = new Set([...a, ...b].map((e) => e.eventId));
      expect(ids.size).toBe(10);
    });

    it('a blocked read wakes up when an event is appended', async () => {
      const s = fresh();
      await s.ensureGroup('g');
      const t0 = Date.now();
      const p = s.readGroup('g', 'c1', 10, 3000);
      await sleep(100);
      await s.acceptEvent(ev('late'), 60_000);
      const got = await p;
      expect(got.map((e) => e.eventId)).toEqual(['late']);
      expect(Date.now() - t0).toBeLessThan(2500);
    });

    it('a blocked read with nothing to read returns empty after blockMs', async () => {
      const s = fresh();
      await s.ensureGroup('g');
      const t0 = Date.now();
      expect(await s.readGroup('g', 'c1', 10, 150)).toEqual([]);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(100);
    });

    it('ack removes entries from the lag; streamLag counts pending and never-delivered entries', async () => {
      const s = fresh();
      await s.ensureGroup('g');
      for (let i = 0; i < 5; i++) await s.acceptEvent(ev(`e${i}`), 60_000);
      expect(await s.streamLag('g')).toBe(5);
      const got = await s.readGroup('g', 'c1', 3, 0);
      expect(await s.streamLag('g')).toBe(5); // 3 pending + 2 undelivered
      await s.ack('g', got.map((e) => e.streamId));
      expect(await s.streamLag('g')).toBe(2);
    });

    it('an entry left unacked by a dead consumer is claimed by another after minIdle, with deliveries counted', async () => {
      const s = fresh();
      await s.ensureGroup('g');
      await s.acceptEvent(ev('orphan'), 60_000);
      const [first] = await s.readGroup('g', 'dead-consumer', 10, 0);
      expect(first?.deliveries).toBe(1);
      expect(await s.claimStale('g', 'rescuer', 800, 10)).toEqual([]); // not idle long enough
      await sleep(1000);
      const claimed = await s.claimStale('g', 'rescuer', 800, 10);
      expect(claimed).toHaveLength(1);
      expect(claimed[0]).toMatchObject({ eventId: 'orphan', body: ev('orphan').body, deliveries: 2 });
      // Now owned by the rescuer and fresh again.
      expect(await s.claimStale('g', 'third', 800, 10)).toEqual([]);
      await sleep(1000);
      expect((await s.claimStale('g', 'third', 800, 10))[0]?.deliveries).toBe(3);
      await s.ack('g', [claimed[0]!.streamId]);
      expect(await s.streamLag('g')).toBe(0);
      await sleep(1000);
      expect(await s.claimStale('g', 'fourth', 800, 10)).toEqual([]);
    });

    it('touchPending keeps a live consumer\'s entries from being claimed, never takes back another\'s, and keeps the delivery count', async () => {
      const s = fresh();
      await s.ensureGroup('g');
      await s.acceptEvent(ev('held'), 60_000);
      await s.acceptEvent(ev('other'), 60_000);
      const [held, other] = await s.readGroup('g', 'live', 10, 0);
      await sleep(1000);
      expect(await s.touchPending('g', 'live', [held!.streamId])).toEqual([held!.streamId]);
      await sleep(200);
      // 1.2 s since the read, 0.2 s since the touch (idle counts from 0.8 s): only the untouched one is stale.
      const claimed = await s.claimStale('g', 'rescuer', 800, 10);
      expect(claimed.map((e) => e.eventId)).toEqual(['other']);
      expect(claimed[0]!.deliveries).toBe(2);
      // `other` is the rescuer's now: the old consumer's touch does not take it back.
      expect(await s.touchPending('g', 'live', [other!.streamId, held!.streamId])).toEqual([held!.streamId]);
      await s.ack('g', [held!.streamId]);
      expect(await s.touchPending('g', 'live', [held!.streamId])).toEqual([]);
      await sleep(1000);
      expect((await s.claimStale('g', 'third', 800, 10)).map((e) => [e.eventId, e.deliveries])).toEqual([['other', 3]]);
    });

    it('a dead-lettered entry is acked and listed, newest first', async () => {
      const s = fresh();
      await s.ensureGroup('g');
      await s.acceptEvent(ev('bad1'), 60_000);
      await s.acceptEvent(ev('bad2'), 60_000);
      const [e1, e2] = await s.readGroup('g', 'c', 10, 0);
      await s.deadLetter('g', e1!, 'handler failed: one');
      await s.deadLetter('g', e2!, 'handler failed: two');
      expect(await s.streamLag('g')).toBe(0);
      const dl = await s.listDeadLetters(10);
      expect(dl.map((d) => [d.entry.eventId, d.error])).toEqual([
        ['bad2', 'handler failed: two'],
        ['bad1', 'handler failed: one'],
      ]);
      expect(typeof dl[0]!.at).toBe('number');
      expect(await s.listDeadLetters(1)).toHaveLength(1);
      await sleep(50);
      expect(await s.claimStale('g', 'x', 10, 10)).toEqual([]);
    });
  });

  describe('trimming processed entries (trimProcessed)', () => {
    /** Event ids still in the stream, read through a fresh group from the start. */
    const inStream = async (s: EventLog) => {
      const g = `look-${Math.random()}`;
      await s.ensureGroup(g);
      return (await s.readGroup(g, 'x', 1000, 0)).map((e) => e.eventId);
    };

    it('drops what every listed group acked, up to the first entry one of them still holds or has not read; nothing while a group is missing', async () => {
      const s = fresh();
      for (let i = 0; i < 6; i++) await s.acceptEvent(ev(`t${i}`), 60_000);
      // No group yet: the workers that will read from the start need everything.
      expect(await s.trimProcessed(['a', 'b'])).toBe(0);
      await s.ensureGroup('a');
      await s.ensureGroup('b');
      const a = await s.readGroup('a', 'c', 10, 0);
      await s.ack('a', a.map((e) => e.streamId)); // group a: all six done
      const b = await s.readGroup('b', 'c', 4, 0); // group b: four read, t2 still pending, t4 and t5 unread
      await s.ack('b', [b[0]!.streamId, b[1]!.streamId, b[3]!.streamId]);
      expect(await s.trimProcessed(['a', 'b', 'missing'])).toBe(0);
      expect(await s.trimProcessed(['a', 'b'], 1)).toBe(0); // kept: appended after epoch ms 1
      expect(await s.trimProcessed(['a', 'b'])).toBe(2);
      expect(await inStream(s)).toEqual(['t2', 't3', 't4', 't5']);
      // The pending one is still claimable, and everything is still delivered to b.
      await s.ack('b', [b[2]!.streamId]);
      expect((await s.readGroup('b', 'c', 10, 0)).map((e) => e.eventId)).toEqual(['t4', 't5']);
      expect(await s.trimProcessed(['a', 'b'])).toBe(2); // t2, t3; t4 and t5 pending in b
      expect(await s.streamLag('b')).toBe(2);
      // Dedupe does not live in the stream: a trimmed event is still a duplicate.
      expect(await s.acceptEvent(ev('t0'), 60_000)).toBe('duplicate');
    });

    it('a dead-lettered entry is trimmed once acked, and its replay is a new entry the groups read', async () => {
      const s = fresh();
      await s.ensureGroup('a');
      await s.acceptEvent(ev('d1'), 60_000);
      const [e] = await s.readGroup('a', 'c', 10, 0);
      await s.deadLetter('a', e!, 'broken', 3);
      expect(await s.trimProcessed(['a'])).toBe(1);
      const r = await s.replayDeadLetters('all');
      expect(r.replayed.map((x) => x.eventId)).toEqual(['d1']);
      expect((await s.readGroup('a', 'c', 10, 0)).map((x) => x.eventId)).toEqual(['d1']);
    });
  });

  describe('dead-letter replay', () => {
    /** Accept, read and dead-letter events; returns their stream entries. */
    const deadLettered = async (s: EventLog & DeadLetters, ids: string[]) => {
      await s.ensureGroup('g');
      for (const id of ids) await s.acceptEvent(ev(id), 60_000);
      const got = await s.readGroup('g', 'c', ids.length, 0);
      for (const e of got) await s.deadLetter('g', e, `failed: ${e.eventId}`, 3);
      return got;
    };

    it('a replayed dead letter is read by the consumer group again, unchanged, and leaves the dead list; an unknown id is not found', async () => {
      const s = fresh();
      const [e1, e2] = await deadLettered(s, ['bad1', 'bad2']);
      expect((await s.listDeadLetters(10)).map((d) => [d.entry.eventId, d.attempts])).toEqual([
        ['bad2', 3],
        ['bad1', 3],
      ]);
      const res = await s.replayDeadLetters([e1!.streamId, '1-999']);
      expect(res.notFound).toEqual(['1-999']);
      expect(res.replayed).toHaveLength(1);
      expect(res.replayed[0]).toMatchObject({ streamId: e1!.streamId, eventId: 'bad1', type: 'chat.call.connect' });
      expect(res.replayed[0]!.newStreamId).not.toBe(e1!.streamId);
      expect((await s.listDeadLetters(10)).map((d) => d.entry.streamId)).toEqual([e2!.streamId]);
      expect(await s.streamLag('g')).toBe(1);
      const again = await s.readGroup('g', 'c2', 10, 0);
      expect(again).toEqual([
        { streamId: res.replayed[0]!.newStreamId, eventId: 'bad1', type: 'chat.call.connect', body: ev('bad1').body, receivedAt: 1_700_000_000_000, deliveries: 1, replayOf: e1!.streamId },
      ]);
      // The dedupe key was left alone: the Service's repeat of the event is still a duplicate.
      expect(await s.acceptEvent(ev('bad1'), 60_000)).toBe('duplicate');
      // Gone from the dead list: a second replay finds nothing.
      expect(await s.replayDeadLetters([e1!.streamId])).toEqual({ replayed: [], notFound: [e1!.streamId] });
      expect(await s.replayDeadLetters([])).toEqual({ replayed: [], notFound: [] });
    });

    it("replay 'all' puts every dead letter back, oldest first, and empties the list", async () => {
      const s = fresh();
      const entries = await deadLettered(s, ['a1', 'a2', 'a3']);
      const res = await s.replayDeadLetters('all');
      expect(res.notFound).toEqual([]);
      expect(res.replayed.map((r) => r.streamId)).toEqual(entries.map((e) => e.streamId));
      expect(await s.listDeadLetters(10)).toEqual([]);
      expect((await s.readGroup('g', 'c', 10, 0)).map((e) => e.eventId)).toEqual(['a1', 'a2', 'a3']);
      expect(await s.replayDeadLetters('all')).toEqual({ replayed: [], notFound: [] });
    });

    it('an entry dead-lettered twice (two copies in the list) is replayed once and both copies go', async () => {
      const s = fresh();
      const [e] = await deadLettered(s, ['twice']);
      await s.deadLetter('g', e!, 'again');
      expect(await s.listDeadLetters(10)).toHaveLength(2);
      const res = await s.replayDeadLetters([e!.streamId]);
      expect(res.replayed.map((r) => r.streamId)).toEqual([e!.streamId]);
      expect(await s.listDeadLetters(10)).toEqual([]);
      expect(await s.readGroup('g', 'c', 10, 0)).toHaveLength(1);
    });

    it('10 concurrent replays of the same id: exactly one replays it, the others report it not found, the stream gets it once', async () => {
      const s = fresh();
      const [e] = await deadLettered(s, ['contested']);
      // Two store instances for Redis (two nodes), so the race is also between connections.
      const other = name.startsWith('RedisStore') ? new RedisStore({ url: redisUrl(), prefix: s.prefix }) : s;
      if (other !== s) open.push(other);
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? other : s).replayDeadLetters([e!.streamId])));
      expect(results.filter((r) => r.replayed.length === 1)).toHaveLength(1);
      expect(results.filter((r) => r.notFound.length === 1 && r.notFound[0] === e!.streamId)).toHaveLength(9);
      expect(await s.listDeadLetters(10)).toEqual([]);
      expect((await s.readGroup('g', 'c', 10, 0)).map((x) => x.eventId)).toEqual(['contested']);
      expect(await s.streamLag('g')).toBe(1);
    });
  });
});
