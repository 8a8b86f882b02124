/**
 * One contract, two implementations: every test here runs against `MemoryStore` and
 * against `RedisStore` on a private `redis-server` (test/support/redis.ts).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { startRedis, uniquePrefix, type TestRedis } from '../../test/support/redis.ts';
import { MemoryStore } from './memory.ts';
import { RedisStore } from './redis.ts';
import type { CallRecord, Store } from './store.ts';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ev = (id: string, type = 'chat.call.connect') => ({
  eventId: id,
  type,
  body: JSON.stringify({ id, type, apiVersion: 'v2', createTime: '2026-01-01T00:00:00.000Z', x: 'é"\\' }),
  receivedAt: 1_700_000_000_000,
});
const call = (wacid: string, phoneId: string, extra: Record<string, unknown> = {}): CallRecord => ({
  wacid,
  phoneId,
  version: 0,
  state: 'ringing',
  ...extra,
});

const impls: Array<[string, () => Store]> = [
  ['MemoryStore', () => new MemoryStore({ prefix: uniquePrefix() })],
  ['RedisStore', () => new RedisStore({ url: redis.url, prefix: uniquePrefix() })],
  // Accept batching off: every event its own script call.
  ['RedisStore (unbatched)', () => new RedisStore({ url: redis.url, prefix: uniquePrefix(), acceptBatchMax: 1 })],
];

describe.each(impls)('Store contract: %s', (name, make) => {
  const open: Store[] = [];
  const fresh = () => {
    const s = make();
    open.push(s);
    return s;
  };
  afterEach(async () => {
    await Promise.all(open.splice(0).map((s) => s.close()));
  });

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
        const r = new Redis(redis.url);
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
    const inStream = async (s: Store) => {
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
    const deadLettered = async (s: Store, ids: string[]) => {
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
      const other = name.startsWith('RedisStore') ? new RedisStore({ url: redis.url, prefix: s.prefix }) : s;
      if (other !== s) open.push(other);
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? other : s).replayDeadLetters([e!.streamId])));
      expect(results.filter((r) => r.replayed.length === 1)).toHaveLength(1);
      expect(results.filter((r) => r.notFound.length === 1 && r.notFound[0] === e!.streamId)).toHaveLength(9);
      expect(await s.listDeadLetters(10)).toEqual([]);
      expect((await s.readGroup('g', 'c', 10, 0)).map((x) => x.eventId)).toEqual(['contested']);
      expect(await s.streamLag('g')).toBe(1);
    });
  });

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
        const n1 = new RedisStore({ url: redis.url, prefix });
        const n2 = new RedisStore({ url: redis.url, prefix });
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
        const n1 = new RedisStore({ url: redis.url, prefix });
        const n2 = new RedisStore({ url: redis.url, prefix });
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
        const n1 = new RedisStore({ url: redis.url, prefix });
        const n2 = new RedisStore({ url: redis.url, prefix });
        open.push(n1, n2);
        const got: string[] = [];
        await n2.subscribe('calls', (m) => got.push(m));
        await n1.publish('calls', 'hello');
        await sleep(100);
        expect(got).toEqual(['hello']);
      });

      it('a node alone on a channel delivers to itself without a PUBLISH; a node joining hears every message from then on; one leaving is noticed', async () => {
        const prefix = uniquePrefix();
        const probe = new Redis(redis.url);
        const publishes = async () => Number(/cmdstat_publish:calls=(\d+)/.exec(await probe.info('commandstats'))?.[1] ?? 0);
        try {
          const n1 = new RedisStore({ url: redis.url, prefix });
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
          const n2 = new RedisStore({ url: redis.url, prefix });
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
          const raw = new Redis(redis.url);
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
      const s = new RedisStore({ url: redis.url, prefix });
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
      const probe = new Redis(redis.url);
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
