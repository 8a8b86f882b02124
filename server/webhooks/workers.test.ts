/**
 * Workers on the in-memory store, for what needs a store that fails on cue (the rest is in
 * test/foundation/workers.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { Metrics, foundationMetrics } from '../ops/metrics.ts';
import { silentLogger } from '../log/logger.ts';
import { MemoryStore } from '../store/memory.ts';
import { WORKER_GROUP, createWorkers } from './workers.ts';

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
      if (failAcks > 0) {
        failAcks--;
        throw new Error('store blip');
      }
      return ack(group, ids);
    };
    let handled = 0;
    const w = createWorkers({
      store,
      handlers: { 'test.thing': async () => void handled++ },
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
      const body = JSON.stringify({ id: 'evt_ack', type: 'test.thing', apiVersion: 'v2', createTime: new Date().toISOString() });
      await store.acceptEvent({ eventId: 'evt_ack', type: 'test.thing', body, receivedAt: Date.now() }, 60_000);
      await until(() => handled === 2, 3000, 'the entry handled again after its failed ack');
      await until(async () => (await store.streamLag(WORKER_GROUP)) === 0, 3000, 'lag 0');
    } finally {
      await w.stop();
    }
  });
});
