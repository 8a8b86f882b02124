/**
 * Workers on the in-memory store, for what needs a store that fails on cue (the rest is in
 * test/foundation/workers.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { Metrics, foundationMetrics } from '../ops/metrics.ts';
import { silentLogger } from '../log/logger.ts';
import { MemoryStore } from '../store/memory.ts';
import { LANES, createWorkers, laneGroup, workersLag } from './workers.ts';

const until = async (cond: () => Promise<boolean> | boolean, ms: number, what: string) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('workers: a failed ack', () => {
  it('an entry whose ack failed is claimed and handled again, with no other event arriving', async () => {
    const store = new MemoryStore();
    let failAcks = 1;
    const ack = store.ack.bind(store);
    store.ack = async (group, ids) => {
      // The handler's ack (the other lanes ack this entry in their groups too, as not theirs).
      if (failAcks > 0 && group === laneGroup('other')) {
        failAcks--;
        throw new Error('store blip');
      }
      return ack(group, ids);
    };
    let handled = 0;
    const w = createWorkers({
      store,
      handlers: { 'chat.user.preferences': async () => void handled++ },
      log: silentLogger(),
      metrics: foundationMetrics(new Metrics()),
      maxAttempts: 3,
      concurrency: 1,
      blockMs: 20,
      claimIdleMs: 60,
      claimEveryMs: 10,
    });
    await w.start();
    try {
      // A known type (handlers are registered per known type), with its payload object.
      const body = JSON.stringify({ id: 'evt_ack', type: 'chat.user.preferences', apiVersion: 'v2', createTime: new Date().toISOString(), preferences: {} });
      await store.acceptEvent({ eventId: 'evt_ack', type: 'chat.user.preferences', body, receivedAt: Date.now() }, 60_000);
      await until(() => handled === 2, 3000, 'the entry handled again after its failed ack');
      await until(async () => (await workersLag(store)) === 0, 3000, 'lag 0');
    } finally {
      await w.stop();
    }
  });
});

const media = (id: string) =>
  JSON.stringify({ id, type: 'chat.call.recording.updated', apiVersion: 'v2', createTime: new Date().toISOString(), callingMedia: { wacid: 'wacid.m', phoneId: 'p1', result: 'AVAILABLE', mediaAssetId: `cma_${id}` } });
const connect = (id: string) =>
  JSON.stringify({
    id,
    type: 'chat.call.connect',
    apiVersion: 'v2',
    createTime: new Date().toISOString(),
    callingConnect: { wacid: `wacid.${id}`, phoneId: 'p1', from: '+15550100', to: '+15550200', direction: 'USER_INITIATED', dialTime: Date.now(), sdpType: 'offer', sdp: 'v=0\r\n' },
  });
const accept = (store: MemoryStore, type: string, id: string, body: string) => store.acceptEvent({ eventId: id, type, body, receivedAt: Date.now() }, 60_000);

describe('workers: the claim and touch loops keep their pace', () => {
  it('200 events handled in about a second: a claim about once a claimEveryMs and a touch once a claimIdleMs / 3, not one each per event', async () => {
    const store = new MemoryStore();
    let claims = 0;
    let touches = 0;
    const claimStale = store.claimStale.bind(store);
    store.claimStale = async (...a) => (claims++, claimStale(...a));
    const touchPending = store.touchPending.bind(store);
    store.touchPending = async (...a) => (touches++, touchPending(...a));
    let handled = 0;
    const w = createWorkers({
      store,
      handlers: { 'chat.call.connect': async () => void (await new Promise((r) => setTimeout(r, 2)), handled++) },
      log: silentLogger(),
      metrics: foundationMetrics(new Metrics()),
      maxAttempts: 3,
      blockMs: 50,
      claimIdleMs: 1_500,
      claimEveryMs: 500,
    });
    await w.start();
    const t0 = Date.now();
    try {
      for (let i = 0; i < 200; i++) {
        await accept(store, 'chat.call.connect', `evt_p${i}`, connect(`evt_p${i}`));
        if (i % 10 === 9) await new Promise((r) => setTimeout(r, 50));
      }
      await until(() => handled === 200, 5000, 'every event handled');
    } finally {
      await w.stop();
    }
    const seconds = (Date.now() - t0) / 1000;
    // Woken by every finished handler, each loop ran about once per event (200 and more).
    // One claim loop per lane (each lane has its consumer group).
    expect(claims).toBeLessThanOrEqual(LANES.length * (Math.ceil(seconds / 0.5) + 2));
    expect(touches).toBeLessThanOrEqual(Math.ceil(seconds / 0.5) + 2);
  });
});

describe('workers: a steady trickle is read in batches, except calls', () => {
  it('80 message events 4 ms apart: the other lane reads about once a readGapMs, the calls lane reads on as they come and a connect is handled at once', async () => {
    const store = new MemoryStore();
    const reads = new Map<string, number>();
    const readGroup = store.readGroup.bind(store);
    store.readGroup = async (g, ...a) => {
      const r = await readGroup(g, ...a);
      if (r.length > 0) reads.set(g, (reads.get(g) ?? 0) + 1);
      return r;
    };
    let handled = 0;
    let connectAt = 0;
    const w = createWorkers({
      store,
      handlers: {
        'chat.message.updated': async () => void handled++,
        'chat.call.connect': async () => void (connectAt = Date.now()),
      },
      log: silentLogger(),
      metrics: foundationMetrics(new Metrics()),
      maxAttempts: 3,
      blockMs: 1_000,
      lanes: { other: { readGapMs: 40 } },
    });
    await w.start();
    const message = (id: string) => JSON.stringify({ id, type: 'chat.message.updated', apiVersion: 'v2', createTime: new Date().toISOString(), chatMessage: { id: 'm1', from: '+15550100', to: '+15550200', status: 'delivered' } });
    const t0 = Date.now();
    let connectSentAt = 0;
    try {
      for (let i = 0; i < 80; i++) {
        await accept(store, 'chat.message.updated', `evt_m${i}`, message(`evt_m${i}`));
        if (i === 40) {
          connectSentAt = Date.now();
          await accept(store, 'chat.call.connect', 'evt_c', connect('evt_c'));
        }
        await new Promise((r) => setTimeout(r, 4));
      }
      await until(() => handled === 80 && connectAt > 0, 5000, 'every event handled');
    } finally {
      await w.stop();
    }
    const elapsed = Date.now() - t0;
    const other = reads.get(laneGroup('other')) ?? 0;
    const calls = reads.get(laneGroup('calls')) ?? 0;
    // Without the gap the other lane reads once per event (80); with it, once a gap at most.
    expect(other, `other lane reads in ${elapsed} ms`).toBeLessThanOrEqual(Math.ceil(elapsed / 40) + 2);
    expect(other).toBeLessThan(40);
    // The calls lane is not paced: it reads more often than the gap allows the others.
    expect(calls).toBeGreaterThan(other);
    expect(connectAt - connectSentAt).toBeLessThan(40);
  });
});

describe('workers: lanes and deadlines', () => {
  it('20 media handlers that never finish do not delay a call event: it is handled at once in its own lane', async () => {
    const store = new MemoryStore();
    let hung = 0;
    let connectedAt = 0;
    const w = createWorkers({
      store,
      handlers: {
        'chat.call.recording.updated': () => {
          hung++;
          return new Promise<void>(() => undefined);
        },
        'chat.call.connect': async () => void (connectedAt = Date.now()),
      },
      log: silentLogger(),
      metrics: foundationMetrics(new Metrics()),
      maxAttempts: 3,
      blockMs: 50,
      stopTimeoutMs: 100,
    });
    await w.start();
    try {
      for (let i = 0; i < 20; i++) await accept(store, 'chat.call.recording.updated', `evt_m${i}`, media(`evt_m${i}`));
      await until(() => hung >= 8, 3000, 'the media lane full');
      const t0 = Date.now();
      await accept(store, 'chat.call.connect', 'evt_c', connect('evt_c'));
      await until(() => connectedAt > 0, 3000, 'the connect handled');
      expect(connectedAt - t0).toBeLessThan(200);
      expect(hung).toBe(8); // the media lane's default limit: the rest wait their turn
    } finally {
      await w.stop();
    }
  });

  it('a handler past its deadline: its signal is aborted, the attempt fails (retry, then dead letter) and its lane slot is freed', async () => {
    const store = new MemoryStore();
    const signals: AbortSignal[] = [];
    const quick: string[] = [];
    const w = createWorkers({
      store,
      handlers: {
        'chat.call.recording.updated': async (e, _entry, ctx) => {
          if (e.id === 'evt_quick') return void quick.push(e.id);
          signals.push(ctx.signal);
          await new Promise<void>(() => undefined); // ignores its signal: the worker moves on anyway
        },
      },
      log: silentLogger(),
      metrics: foundationMetrics(new Metrics()),
      maxAttempts: 2,
      blockMs: 20,
      retryDelayMs: 10,
      lanes: { media: { limit: 1, deadlineMs: 150 } },
      stopTimeoutMs: 100,
    });
    await w.start();
    try {
      await accept(store, 'chat.call.recording.updated', 'evt_hung', media('evt_hung'));
      await until(() => signals.length === 1, 3000, 'the first attempt');
      await accept(store, 'chat.call.recording.updated', 'evt_quick', media('evt_quick'));
      // The only slot of the lane is taken by the hung attempt until its deadline frees it.
      await until(() => quick.length === 1, 3000, 'the quick event handled after the deadline freed the slot');
      await until(async () => (await store.listDeadLetters(10)).length === 1, 3000, 'the dead letter');
      const [dl] = await store.listDeadLetters(10);
      expect(dl).toMatchObject({ entry: { eventId: 'evt_hung' }, attempts: 2 });
      expect(dl!.error).toMatch(/deadline exceeded \(media lane, 150 ms\)/);
      expect(signals).toHaveLength(2);
      expect(signals.every((s) => s.aborted)).toBe(true);
      await until(async () => (await workersLag(store)) === 0, 3000, 'lag 0');
    } finally {
      await w.stop();
    }
  });

  it('stop() is bounded: a handler that never finishes is aborted after stopTimeoutMs and its event stays pending', async () => {
    const store = new MemoryStore();
    let signal: AbortSignal | undefined;
    const w = createWorkers({
      store,
      handlers: {
        'chat.call.recording.updated': async (_e, _entry, ctx) => {
          signal = ctx.signal;
          await new Promise<void>(() => undefined);
        },
      },
      log: silentLogger(),
      metrics: foundationMetrics(new Metrics()),
      maxAttempts: 3,
      blockMs: 20,
      stopTimeoutMs: 300,
    });
    await w.start();
    await accept(store, 'chat.call.recording.updated', 'evt_stuck', media('evt_stuck'));
    await until(() => signal !== undefined, 3000, 'the handler');
    const t0 = Date.now();
    await w.stop();
    expect(Date.now() - t0).toBeLessThan(1500);
    expect(signal!.aborted).toBe(true);
    expect(await workersLag(store)).toBe(1); // not acked, not dead-lettered: claimed later
    expect(await store.listDeadLetters(10)).toEqual([]);
  });
});
