/**
 * Call events never wait behind other event types. The tester sent ~500
 * `chat.message.updated` events/s with PostgreSQL: message handling fell behind, the
 * reader stopped at 1,000 queued events across all lanes, and offers took up to 7 s.
 *
 * - `lanes-backlog` (every run): the workers on a private Redis with a slow `other` lane
 *   (a handler of 50 ms, 64 at a time: 1,280/s) and 4,000 (full 20,000) of its events
 *   already in the stream; a `chat.call.connect` appended behind them must be handled at
 *   once. On the old reader it waited until the backlog ahead of it drained below 1,000.
 *
 * The offer latency under 500 message events/s with PostgreSQL (p99, goal ≤ 20 ms) is
 * `npx tsx bench/lanes.ts`.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../server/log/logger.ts';
import { Metrics, foundationMetrics } from '../../server/ops/metrics.ts';
import { RedisStore } from '../../server/store/redis.ts';
import { createWorkers, laneGroup } from '../../server/webhooks/workers.ts';
import { fakeConnect, until } from '../e2e/harness.ts';
import { startRedis, uniquePrefix } from '../support/redis.ts';
import { envelope, printCounts, size } from './support.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('lanes: call events never wait behind other event types', () => {
  it('a connect behind thousands of slow other-lane events is handled at once', async () => {
    const redis = await startRedis();
    cleanups.push(() => redis.close());
    const store = new RedisStore({ url: redis.url, prefix: uniquePrefix('lanes') });
    cleanups.push(() => store.close());
    const backlog = size(4000, 20_000);
    let otherDone = 0;
    let connectAt = 0;
    const w = createWorkers({
      store,
      log: silentLogger(),
      metrics: foundationMetrics(new Metrics()),
      maxAttempts: 3,
      blockMs: 100,
      stopTimeoutMs: 500,
      handlers: {
        'contact.unsubscribe.created': async () => {
          await new Promise((r) => setTimeout(r, 50));
          otherDone++;
        },
        'chat.call.connect': async () => {
          connectAt = Date.now();
        },
      },
    });
    cleanups.push(() => w.stop());
    const all = Array.from({ length: backlog }, (_, i) => envelope(`evt_bl_${i}_${randomBytes(3).toString('hex')}`, 'contact.unsubscribe.created'));
    for (let i = 0; i < all.length; i += 500) {
      await Promise.all(all.slice(i, i + 500).map((d) => store.acceptEvent({ eventId: d.id, type: 'contact.unsubscribe.created', body: d.body, receivedAt: Date.now() }, 60_000)));
    }
    await w.start();
    // The other lane is saturated and far behind (half a second of its work done, thousands to go),
    // and the calls lane has read through the backlog (it started, like every lane, at 0).
    await until('the other lane busy', () => otherDone >= 640, 20_000, 10);
    await until('the calls lane caught up', async () => (await store.streamLag(laneGroup('calls'))) === 0, 10_000, 50);
    const connect = { id: `evt_conn_${randomBytes(4).toString('hex')}`, type: 'chat.call.connect', apiVersion: 'v2', createTime: new Date().toISOString(), callingConnect: fakeConnect('wacid.behind-backlog') };
    const t0 = Date.now();
    await store.acceptEvent({ eventId: connect.id, type: connect.type, body: JSON.stringify(connect), receivedAt: t0 }, 60_000);
    await until('the connect handled', () => connectAt > 0, 30_000, 5).catch(() => undefined);
    const waitedMs = connectAt > 0 ? connectAt - t0 : -1;
    printCounts('lanes-backlog', { otherEventsAhead: backlog - otherDone, otherDoneBefore: otherDone, connectHandledAfterMs: waitedMs, loadavg1: loadavg()[0]!.toFixed(2) });
    expect(waitedMs).toBeGreaterThanOrEqual(0);
    expect(waitedMs).toBeLessThan(500);
  }, 60_000);
});
