/**
 * Redis that lost its data: a private redis-server without persistence is
 * restarted under a running node (everything gone: the event stream's consumer group, the
 * history queue's group, login sessions, call records). Without a restart of the node:
 * - the agent's socket, whose session no longer exists, is closed (4001);
 * - webhook intake recovers: a new call rings a freshly logged-in agent within 10 s of Redis
 *   being back, and reaches history (the history queue's group is recreated too);
 * - while intake cannot be processed (the stream key unusable), `/readyz` says not ready.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { agentClient, emulatorRequest, startBridge, until, type ProtocolClient } from '../e2e/harness.ts';
import { startRedis, uniquePrefix } from '../support/redis.ts';
import { printCounts } from './support.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Poll `/readyz` every 100 ms until stopped: the statuses seen, in order of change. */
function watchReady(url: string): { stop(): Promise<number[]> } {
  const seen: number[] = [];
  let on = true;
  const loop = (async () => {
    while (on) {
      const s = await fetch(`${url}/readyz`).then(
        async (r) => (await r.body?.cancel(), r.status),
        () => 0,
      );
      if (seen.at(-1) !== s) seen.push(s);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    async stop() {
      on = false;
      await loop;
      return seen;
    },
  };
}

describe('Redis that lost its data', () => {
  it('restarted without persistence: sockets of vanished sessions close, intake and history recover within 10 s, no node restart', async () => {
    const redis = await startRedis();
    cleanups.push(() => redis.close());
    const b = await startBridge({ redisUrl: redis.url, storePrefix: uniquePrefix('wipe'), agents: ['agent1'], history: true, heartbeatMs: 1000 });
    cleanups.push(() => b.close());
    const history = b.sb.history!;
    const old: ProtocolClient = await agentClient(b.url, 'agent1');
    cleanups.push(() => old.close());

    // A call before the wipe: the group and the history queue exist and work.
    const before = (await emulatorRequest(b.emu, 'POST', '/calls', {})).wacid as string;
    await old.next('call.offered', (m) => m.wacid === before, 10_000);
    expect(await old.request({ type: 'call.decline', wacid: before })).toMatchObject({ type: 'ack' });
    await until('the first call in history', async () => (await history.store.getCall(before)) !== null, 15_000, 200);

    const ready = watchReady(b.url);
    await redis.stop();
    await redis.start();
    const upAt = Date.now();

    // The session key is gone: its socket is closed, the agent logs in again.
    const closedCode = await Promise.race([old.closed, new Promise<number>((r) => setTimeout(() => r(-1), 10_000))]);
    const closedMs = Date.now() - upAt;
    expect(closedCode).toBe(4001);
    const agent = await agentClient(b.url, 'agent1');
    cleanups.push(() => agent.close());

    const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', {})).wacid as string;
    const offer = await agent.next('call.offered', (m) => m.wacid === wacid, Math.max(1000, 10_000 - (Date.now() - upAt))).catch(() => undefined);
    const offeredMs = Date.now() - upAt;
    let inHistory = false;
    if (offer) {
      expect(await agent.request({ type: 'call.decline', wacid })).toMatchObject({ type: 'ack' });
      inHistory = await until('the new call in history', async () => (await history.store.getCall(wacid)) !== null, 15_000, 200).then(() => true, () => false);
    }
    const readySeen = await ready.stop();
    printCounts('redis-wipe', { socketClosedAfterMs: closedMs, closeCode: closedCode, newCallOfferedAfterMs: offer ? offeredMs : -1, newCallInHistory: inHistory ? 1 : 0, readyzSeen: readySeen.join('>') });
    expect(offer).toBeDefined();
    expect(offeredMs).toBeLessThan(10_000);
    expect(inHistory).toBe(true);
    expect(readySeen.at(-1)).toBe(200);
  }, 90_000);

  it('intake that cannot be processed (the event stream key unusable) makes /readyz fail, and it recovers once the key is usable', async () => {
    const redis = await startRedis();
    cleanups.push(() => redis.close());
    const prefix = uniquePrefix('wipe');
    const b = await startBridge({ redisUrl: redis.url, storePrefix: prefix, agents: ['agent1'] });
    cleanups.push(() => b.close());
    expect((await fetch(`${b.url}/readyz`)).status).toBe(200);

    // Data lost, and the stream's key taken by something else: neither reading nor recreating the group works.
    const r = new Redis({ port: redis.port, host: '127.0.0.1' });
    cleanups.push(() => void r.disconnect());
    await r.flushall();
    await r.set(`${prefix}events`, 'not a stream');
    const notReady = await until('readyz 503', async () => ((await fetch(`${b.url}/readyz`)).status === 503 ? true : undefined), 10_000, 100).then(
      () => true,
      () => false,
    );
    const body = (await (await fetch(`${b.url}/readyz`)).json()) as { reason?: string };
    await r.del(`${prefix}events`);
    const backMs = await (async () => {
      const t = Date.now();
      await until('readyz 200 again', async () => ((await fetch(`${b.url}/readyz`)).status === 200 ? true : undefined), 10_000, 100);
      return Date.now() - t;
    })().catch(() => -1);
    printCounts('redis-wipe-readiness', { notReady: notReady ? 1 : 0, readyAgainAfterMs: backMs, reason: JSON.stringify(body.reason ?? '') });
    expect(notReady).toBe(true);
    expect(body.reason).toMatch(/intake/);
    expect(backMs).toBeGreaterThanOrEqual(0);

    // And a call rings again.
    const agent = await agentClient(b.url, 'agent1');
    cleanups.push(() => agent.close());
    const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', {})).wacid as string;
    await agent.next('call.offered', (m) => m.wacid === wacid, 10_000);
  }, 60_000);
});
