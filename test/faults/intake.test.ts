/**
 * Webhook intake under faults: events delivered with 30 %
 * duplicates, shuffled, while Redis restarts (append-only file, fsync always) and a worker
 * process is SIGKILLed. Counts effects in Redis — the accepted stream and the handler's
 * guarded effect (test/faults/fixtures/effect-worker.ts) — not log lines.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisStore } from '../../server/store/redis.ts';
import { workersLag } from '../../server/webhooks/workers.ts';
import { SECRET_A, listen, testApp } from '../foundation/helpers.ts';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.ts';
import { until } from '../support/wait.ts';
import { deliverAll, envelope, printCounts, size, type Delivery } from './support.ts';

const procs: ChildProcess[] = [];
const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const p of procs) p.kill('SIGKILL');
  for (const c of cleanups.reverse()) await c();
});

function startWorker(url: string, prefix: string, name: string): Promise<ChildProcess> {
  const script = fileURLToPath(new URL('./fixtures/effect-worker.ts', import.meta.url));
  const p = spawn(process.execPath, ['--import', 'tsx', script, url, prefix, name], { stdio: ['ignore', 'pipe', 'inherit'] });
  procs.push(p);
  return new Promise((resolve, reject) => {
    p.stdout!.on('data', (d) => String(d).includes('ready') && resolve(p));
    p.once('exit', (code) => reject(new Error(`worker ${name} exited (${code}) before it was ready`)));
  });
}

function shuffle<T>(a: T[]): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

describe('webhook intake under faults', () => {
  it('events with 30 % duplicates, shuffled, while Redis restarts and a worker is SIGKILLed: 0 lost, 0 enqueued twice, 0 effects twice', async () => {
    const redis: TestRedis = await startRedis({ durable: true });
    cleanups.push(() => redis.close());
    const prefix = uniquePrefix('faults');
    const store = new RedisStore({ url: redis.url, prefix });
    cleanups.push(() => store.close());
    const { app } = testApp(store);
    const http = await listen(app.fetch);
    cleanups.push(() => http.close());

    const workerA = await startWorker(redis.url, prefix, 'fault-a');
    await startWorker(redis.url, prefix, 'fault-b');

    const n = size(1500, 10_000);
    const events: Delivery[] = Array.from({ length: n }, (_, i) => envelope(`evt_in_${i}_${randomBytes(3).toString('hex')}`, 'contact.unsubscribe.created'));
    const deliveries = shuffle([...events, ...Array.from({ length: Math.round(n * 0.3) }, () => events[Math.floor(Math.random() * n)]!)]);

    let restarted = false;
    let killed = false;
    const faults: Array<Promise<void>> = [];
    const sent = await deliverAll(http.url, SECRET_A, deliveries, {
      concurrency: 32,
      retryMs: 100,
      timeoutMs: 180_000,
      onAccepted: (k) => {
        if (!restarted && k >= deliveries.length / 3) {
          restarted = true;
          // kill -9: only the append-only file (fsync always) keeps what was acknowledged.
          faults.push(redis.stop({ kill: true }).then(() => new Promise((r) => setTimeout(r, 300))).then(() => redis.start()));
        }
        if (!killed && k >= (deliveries.length * 2) / 3) {
          killed = true;
          workerA.kill('SIGKILL');
          faults.push(startWorker(redis.url, prefix, 'fault-c').then(() => undefined));
        }
      },
    });
    await Promise.all(faults);

    const fx = new Redis(redis.url);
    cleanups.push(() => void fx.disconnect());
    await until('every accepted event has its effect', async () => (await fx.hlen(`${prefix}fx:effects`)) >= sent.accepted.size, 60_000, 200);
    await until('the stream fully acked', async () => (await workersLag(store)) === 0, 30_000, 200);

    const effects = await fx.hgetall(`${prefix}fx:effects`);
    const runs = await fx.hgetall(`${prefix}fx:runs`);
    const first = await fx.hgetall(`${prefix}fx:first`);
    const stream = await fx.xrange(`${prefix}events`, '-', '+');
    const inStream = new Map<string, number>();
    for (const [, f] of stream) {
      const id = f[f.indexOf('e') + 1]!;
      inStream.set(id, (inStream.get(id) ?? 0) + 1);
    }
    const lost = [...sent.accepted].filter((id) => effects[id] !== '1').length;
    const enqueuedTwice = [...inStream.values()].filter((c) => c > 1).length;
    const effectsTwice = Object.values(effects).filter((c) => Number(c) > 1).length;
    // A first delivery handled twice: a handler whose effect ran but whose reply was lost to the
    // Redis kill is retried by its worker with the same entry. Printed, not a failure: a
    // duplicate let into the stream shows as `enqueuedTwice` / the stream's length, and a
    // second effect as `effectsTwice`.
    const firstRunTwice = Object.values(first).filter((c) => Number(c) > 1).length;
    const handlerRuns = Object.values(runs).reduce((s, c) => s + Number(c), 0);

    printCounts('intake', {
      events: n,
      deliveries: deliveries.length,
      answered2xx: sent.accepted.size,
      non2xxAnswers: [...sent.statuses].filter(([s]) => s < 200 || s >= 300).reduce((s, [, c]) => s + c, 0),
      inStream: stream.length,
      effects: Object.keys(effects).length,
      handlerRuns,
      rerunsAfterKill: handlerRuns - Object.keys(runs).length,
      lost,
      enqueuedTwice,
      firstRunTwice,
      effectsTwice,
    });
    expect(restarted && killed).toBe(true);
    expect(sent.accepted.size).toBe(n);
    expect(lost).toBe(0);
    expect(enqueuedTwice).toBe(0);
    expect(effectsTwice).toBe(0);
    expect(stream.length).toBe(n);
  }, 240_000);
});
