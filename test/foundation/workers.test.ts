/**
 * Webhook workers on a real RedisStore (private redis-server): exactly-once processing of
 * a repeated event, recovery of a dead worker's event, dead-lettering of a handler that
 * keeps failing without blocking the events behind it.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, memoryDestination } from '../../server/log/logger.ts';
import { Metrics, foundationMetrics } from '../../server/ops/metrics.ts';
import { MemoryStore } from '../../server/store/memory.ts';
import { RedisStore } from '../../server/store/redis.ts';
import type { Store, StreamEntry } from '../../server/store/store.ts';
import { workersLag, createWorkers, type HandlerRegistry, type WebhookEvent } from '../../server/webhooks/workers.ts';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.ts';
import { event, signed, testApp, until } from './helpers.ts';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.close();
});

function workersFor(store: Store, handlers: HandlerRegistry, over: Partial<Parameters<typeof createWorkers>[0]> = {}) {
  const logs = memoryDestination();
  const metrics = new Metrics();
  const m = foundationMetrics(metrics);
  const w = createWorkers({
    store,
    handlers,
    log: createLogger({ level: 'debug', destination: logs }),
    metrics: m,
    maxAttempts: 3,
    blockMs: 100,
    retryDelayMs: 10,
    claimIdleMs: 300,
    claimEveryMs: 100,
    ...over,
  });
  return { w, logs, m, metrics };
}

describe('workers', () => {
  it('the same event delivered 20 times, 10 of them concurrently, is processed exactly once', async () => {
    const store = new RedisStore({ url: redis.url, prefix: uniquePrefix() });
    const handled: string[] = [];
    const { w } = workersFor(store, {
      'chat.call.connect': async (e) => {
        handled.push(e.id);
      },
    });
    const { app } = testApp(store);
    await w.start();
    try {
      const body = JSON.stringify(event());
      const post = () => app.request('/webhooks/service', { method: 'POST', body, headers: signed(body) });
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) statuses.push((await post()).status);
      statuses.push(...(await Promise.all(Array.from({ length: 10 }, post))).map((r) => r.status));
      expect(statuses).toEqual(Array(20).fill(200));
      await until(() => handled.length >= 1, 5000, 'processing');
      await until(async () => (await workersLag(store)) === 0, 5000, 'lag 0');
      await new Promise((r) => setTimeout(r, 300));
      expect(handled).toEqual([JSON.parse(body).id]);
    } finally {
      await w.stop();
      await store.close();
    }
  });

  it('a worker killed after reading an event and before acking it: another worker processes it', async () => {
    const prefix = uniquePrefix();
    const store = new RedisStore({ url: redis.url, prefix });
    const e = event();
    await store.acceptEvent({ eventId: e.id, type: e.type, body: JSON.stringify(e), receivedAt: Date.now() }, 60_000);

    // A separate process reads it and dies with SIGKILL inside the handler.
    const script = fileURLToPath(new URL('./fixtures/dying-worker.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', script, redis.url, prefix, 'doomed'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += String(d)));
    child.stderr.on('data', (d) => (out += String(d)));
    const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_c, s) => resolve(s)));
    expect(signal).toBe('SIGKILL');
    expect(out).toContain(`read ${e.id}`);
    expect(await workersLag(store)).toBe(1); // pending, unacked

    const got: Array<{ id: string; deliveries: number }> = [];
    const { w, logs } = workersFor(store, {
      'chat.call.connect': async (ev: WebhookEvent, entry: StreamEntry) => {
        got.push({ id: ev.id, deliveries: entry.deliveries });
      },
    });
    await w.start();
    try {
      await until(() => got.length > 0, 10_000, 'rescue');
      expect(got).toEqual([{ id: e.id, deliveries: 2 }]);
      await until(async () => (await workersLag(store)) === 0, 5000, 'ack');
      expect(logs.text()).toContain('claimed a stale webhook event');
    } finally {
      await w.stop();
      await store.close();
    }
  }, 30_000);

  it('kill -9 of a worker holding 10 events: another claims them within seconds (not 30 s) and handles them concurrently', async () => {
    const prefix = uniquePrefix();
    const store = new RedisStore({ url: redis.url, prefix });
    const events = Array.from({ length: 10 }, () => event());
    for (const e of events) await store.acceptEvent({ eventId: e.id, type: e.type, body: JSON.stringify(e), receivedAt: Date.now() }, 60_000);

    // The dying worker reads them all (one batch) and dies with SIGKILL in the first handler.
    const script = fileURLToPath(new URL('./fixtures/dying-worker.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', script, redis.url, prefix, 'doomed-many'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_c, s) => resolve(s)));
    expect(signal).toBe('SIGKILL');
    expect(await workersLag(store)).toBe(10);
    const killedAt = Date.now();

    // Default claim settings (production's), handlers that take 500 ms each.
    let inHand = 0;
    let most = 0;
    const done: string[] = [];
    const { w } = workersFor(
      store,
      {
        'chat.call.connect': async (ev: WebhookEvent) => {
          most = Math.max(most, ++inHand);
          await new Promise((r) => setTimeout(r, 500));
          inHand--;
          done.push(ev.id);
        },
      },
      { claimIdleMs: undefined, claimEveryMs: undefined },
    );
    await w.start();
    try {
      await until(() => done.length === 10, 12_000, 'all ten rescued');
      const took = Date.now() - killedAt;
      expect(took).toBeLessThan(8_000); // claimIdleMs 5 s + one claim round + 500 ms, not 30 s + 10 × 500 ms
      expect(most).toBeGreaterThanOrEqual(5); // handled side by side, not one at a time
      expect(done.sort()).toEqual(events.map((e) => e.id).sort());
      await until(async () => (await workersLag(store)) === 0, 5000, 'ack');
    } finally {
      await w.stop();
      await store.close();
    }
  }, 30_000);

  it('processed events leave the stream (raw bodies carry message text): 300 handled → none kept; one a lane still holds stays, and is trimmed once done', async () => {
    const prefix = uniquePrefix();
    const store = new RedisStore({ url: redis.url, prefix });
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    let handled = 0;
    const { w } = workersFor(
      store,
      {
        'chat.call.connect': async () => void handled++,
        'chat.call.terminate': async () => held, // one event that stays in hand
      },
      { trimEveryMs: 100, keepProcessedMs: 0 },
    );
    await w.start();
    const look = new Redis({ port: redis.port, host: '127.0.0.1' });
    try {
      const first = event('chat.call.terminate', undefined, { callingTerminate: { wacid: 'w.held', status: 'COMPLETED' } });
      await store.acceptEvent({ eventId: first.id, type: first.type, body: JSON.stringify(first), receivedAt: Date.now() }, 60_000);
      for (let i = 0; i < 300; i++) {
        const e = event();
        await store.acceptEvent({ eventId: e.id, type: e.type, body: JSON.stringify({ ...e, text: 'a message text '.repeat(20) }), receivedAt: Date.now() }, 60_000);
      }
      await until(() => handled === 300, 10_000, 'all handled');
      await new Promise((r) => setTimeout(r, 500));
      // The held event is first in the stream: nothing behind it may go yet.
      expect(await look.xlen(`${prefix}events`)).toBe(301);
      release();
      await until(async () => (await look.xlen(`${prefix}events`)) === 0, 5000, 'the stream trimmed');
      // Still duplicates: dedupe does not live in the stream.
      expect(await store.acceptEvent({ eventId: first.id, type: first.type, body: JSON.stringify(first), receivedAt: Date.now() }, 60_000)).toBe('duplicate');
    } finally {
      look.disconnect();
      await w.stop();
      await store.close();
    }
  });

  describe.each([
    ['RedisStore', () => new RedisStore({ url: redis.url, prefix: uniquePrefix() }) as Store],
    ['MemoryStore', () => new MemoryStore() as Store],
  ])('dead letters (%s)', (_name, make) => {
    it('a handler that always throws: its event is dead-lettered after N attempts and the next events are processed', async () => {
      const store = make();
      let attempts = 0;
      const processed: string[] = [];
      const { w, logs, m, metrics } = workersFor(
        store,
        {
          'chat.call.terminate': async () => {
            attempts++;
            throw new Error('handler is broken');
          },
          'chat.call.connect': async (e) => {
            processed.push(e.id);
          },
        },
        { maxAttempts: 3, concurrency: 1 },
      );
      await w.start();
      try {
        const bad = event('chat.call.terminate', 'evt_bad', { callingTerminate: { wacid: 'w1', status: 'COMPLETED' } });
        const after = [event(), event(), event()];
        for (const e of [bad, ...after]) {
          await store.acceptEvent({ eventId: e.id, type: e.type, body: JSON.stringify(e), receivedAt: Date.now() }, 60_000);
        }
        await until(async () => (await store.listDeadLetters(10)).length === 1, 10_000, 'dead letter');
        expect(attempts).toBe(3);
        expect(processed.sort()).toEqual(after.map((e) => e.id).sort());
        const [dl] = await store.listDeadLetters(10);
        expect(dl).toMatchObject({ entry: { eventId: 'evt_bad', type: 'chat.call.terminate' }, error: 'handler is broken' });
        expect(m.deadLettered.get({ type: 'chat.call.terminate' })).toBe(1);
        expect(await metrics.render()).toContain('switchboard_webhook_dead_lettered_total{type="chat.call.terminate"} 1');
        expect(logs.text()).toContain('webhook event dead-lettered');
        await until(async () => (await workersLag(store)) === 0, 5000, 'lag 0');
        // Never retried again.
        await new Promise((r) => setTimeout(r, 500));
        expect(attempts).toBe(3);
      } finally {
        await w.stop();
        await store.close();
      }
    });

    it('an event still in hand or awaiting its retry is not claimed back by its own process (attempts stay exactly N)', async () => {
      const store = make();
      let attempts = 0;
      // Each attempt outlasts claimIdleMs, so the entry goes idle in the stream while this
      // process still holds it: without the guard the claim hands it over a second time.
      const { w } = workersFor(
        store,
        {
          'chat.call.terminate': async () => {
            attempts++;
            await new Promise((r) => setTimeout(r, 150));
            throw new Error('slow and broken');
          },
        },
        { maxAttempts: 3, concurrency: 2, claimIdleMs: 60, claimEveryMs: 10, retryDelayMs: 40 },
      );
      await w.start();
      try {
        const bad = event('chat.call.terminate', 'evt_slow', { callingTerminate: { wacid: 'w2', status: 'COMPLETED' } });
        await store.acceptEvent({ eventId: bad.id, type: bad.type, body: JSON.stringify(bad), receivedAt: Date.now() }, 60_000);
        await until(async () => (await store.listDeadLetters(10)).length === 1, 10_000, 'dead letter');
        await new Promise((r) => setTimeout(r, 400));
        expect(attempts).toBe(3);
        expect(await store.listDeadLetters(10)).toHaveLength(1);
      } finally {
        await w.stop();
        await store.close();
      }
    });
  });

  it('an event whose payload breaks its schema is dead-lettered at once; unknown types are acked and ignored', async () => {
    const store = new MemoryStore();
    let called = 0;
    const { w, m } = workersFor(store, {
      'chat.call.connect': async () => {
        called++;
      },
    });
    await w.start();
    try {
      const broken = event('chat.call.connect', 'evt_broken', { callingConnect: { wacid: 'w' } });
      const unknown = event('chat.something.new', 'evt_unknown', { thing: {} });
      for (const e of [broken, unknown]) {
        await store.acceptEvent({ eventId: e.id, type: e.type, body: JSON.stringify(e), receivedAt: Date.now() }, 60_000);
      }
      await until(async () => (await workersLag(store)) === 0, 5000, 'lag 0');
      expect(called).toBe(0);
      const [dl] = await store.listDeadLetters(10);
      expect(dl?.error).toMatch(/^chat\.call\.connect: callingConnect\.phoneId/);
      // Counted under one label for every unknown type (/metrics labels stay bounded).
      expect(m.webhookEvents.get({ type: 'unknown', outcome: 'ignored' })).toBe(1);
    } finally {
      await w.stop();
      await store.close();
    }
  });

  it('stop() lets the event in hand finish before returning', async () => {
    const store = new MemoryStore();
    let finished = false;
    let started = false;
    const { w } = workersFor(store, {
      'chat.call.connect': async () => {
        started = true;
        await new Promise((r) => setTimeout(r, 300));
        finished = true;
      },
    });
    await w.start();
    const e = event();
    await store.acceptEvent({ eventId: e.id, type: e.type, body: JSON.stringify(e), receivedAt: Date.now() }, 60_000);
    await until(() => started, 5000, 'start');
    await w.stop();
    expect(finished).toBe(true);
    expect(await workersLag(store)).toBe(0);
    await store.close();
  });
});
