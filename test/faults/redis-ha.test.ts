/**
 * Redis high availability with real processes: a primary, a replica and
 * three sentinels on loopback ports (test/support/redis.ts), the bridge through the e2e
 * harness. Counts effects in Redis (the stream of accepted events on whichever server is
 * primary), not log lines.
 */
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { AudioPeer } from '../emulator/index.ts';
import { agentClient, emulatorCall, emulatorRequest, startBridge, until, type Bridge, type ProtocolClient } from '../e2e/harness.ts';
import { RedisStore } from '../../server/store/redis.ts';
import { startRedis, startSentinelGroup, uniquePrefix, type TestRedis } from '../support/redis.ts';
import { deliverAll, envelope, printCounts, size } from './support.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** Event ids in the stream `${prefix}events` of the Redis on `port`. */
async function streamIds(port: number, prefix: string): Promise<Set<string>> {
  const r = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await r.connect();
    const rows = await r.xrange(`${prefix}events`, '-', '+');
    const ids = new Set<string>();
    for (const [, f] of rows) for (let i = 0; i + 1 < f.length; i += 2) if (f[i] === 'e') ids.add(f[i + 1]!);
    return ids;
  } finally {
    r.disconnect();
  }
}

async function post(b: Pick<Bridge, 'url' | 'secret'>, d: { body: string }): Promise<number> {
  const { signatureHeader } = await import('../emulator/index.ts');
  const r = await fetch(`${b.url}/webhooks/service`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'service-signature': signatureHeader(b.secret, d.body, Math.floor(Date.now() / 1000)) },
    body: d.body,
  });
  await r.body?.cancel();
  return r.status;
}

describe('Redis high availability', () => {
  it('with a replica connected, a webhook is answered 2xx only once a replica has it: a frozen replica → 503, the redelivery after it thaws → 2xx, stored once', async () => {
    const primary = await startRedis({ durable: true });
    cleanups.push(() => primary.close());
    const replica: TestRedis = await startRedis({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
    cleanups.push(() => replica.close());
    const prefix = uniquePrefix('ha');
    const b = await startBridge({ redisUrl: primary.url, storePrefix: prefix });
    cleanups.push(() => b.close());
    const store = b.store as RedisStore;
    await until('the replica counted', () => store.replicaCount() >= 1, 15_000);

    const first = envelope(`evt_${randomBytes(6).toString('hex')}`, 'contact.unsubscribe.created');
    expect(await post(b, first)).toBe(200);

    replica.signal('SIGSTOP');
    const held = envelope(`evt_${randomBytes(6).toString('hex')}`, 'contact.unsubscribe.created');
    const t0 = Date.now();
    const frozen = await post(b, held);
    const waited = Date.now() - t0;
    replica.signal('SIGCONT');
    // The event is on the primary, but no replica confirmed it: the Service must deliver again.
    expect(frozen).toBe(503);
    expect(waited).toBeGreaterThanOrEqual(900); // the WAIT's 1000 ms, not a fast failure

    await until('the redelivery answered 2xx', async () => (await post(b, held)) === 200, 15_000, 200);
    const ids = await streamIds(primary.port, prefix);
    expect(ids.has(first.id) && ids.has(held.id)).toBe(true);
    const onReplica = await streamIds(replica.port, prefix);
    expect(onReplica.has(held.id)).toBe(true);
    printCounts('replica-wait', { frozenStatus: frozen, waitedMs: waited, waits: store.acceptStats.waits, unconfirmed: store.acceptStats.unconfirmed });
  }, 60_000);

  it('primary + replica + 3 sentinels: the primary SIGKILLed during a load loses 0 accepted events; a call ringing at that moment is still answered', async () => {
    const ha = await startSentinelGroup();
    cleanups.push(() => ha.close());
    const prefix = uniquePrefix('ha');
    const b = await startBridge({
      redisUrl: ha.url,
      storePrefix: prefix,
      agents: ['agent1'],
      env: { REDIS_SENTINELS: ha.sentinelsEnv, REDIS_SENTINEL_NAME: ha.name, RING_TIMEOUT_MS: '60000', ACCEPT_WINDOW_MS: '60000' },
    });
    cleanups.push(() => b.close());
    const store = b.store as RedisStore;
    await until('the replica counted', () => store.replicaCount() >= 1, 15_000);
    const agent: ProtocolClient = await agentClient(b.url, 'agent1');
    cleanups.push(() => agent.close());

    // A real call rings at the agent before the failover.
    const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', {})).wacid as string;
    const offer = await agent.next('call.offered', (m) => m.wacid === wacid, 10_000);

    const n = size(400, 2000);
    const events = Array.from({ length: n }, (_, i) => envelope(`evt_ha_${i}_${randomBytes(4).toString('hex')}`, 'contact.unsubscribe.created'));
    const old = await ha.primary();
    const replica = ha.servers.find((x) => x !== old)!;
    let killedAt = -1;
    const sent = await deliverAll(b.url, b.secret, events, {
      concurrency: 16,
      retryMs: 200,
      timeoutMs: 60_000,
      onAccepted: (k) => {
        if (killedAt < 0 && k >= n / 3) {
          killedAt = k;
          // The worst moment: the replica is cut off (frozen, link dropped) for 400 ms while
          // the primary takes writes, then the primary dies and that replica is promoted. Whatever
          // was answered 2xx in between exists only on the dead primary, unless the
          // answer waited for the replica.
          replica.signal('SIGSTOP');
          void (async () => {
            // Cut the replication link too: what the primary takes from now on never
            // leaves it (bytes already sent would wait in the frozen replica's socket).
            const admin = new Redis({ port: old.port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
            await admin.call('CLIENT', 'KILL', 'TYPE', 'replica').catch(() => undefined);
            admin.disconnect();
            await new Promise((r) => setTimeout(r, 400));
            await old.stop({ kill: true });
            replica.signal('SIGCONT');
          })();
        }
      },
    });
    const promoted = await ha.waitForFailover(old.port);
    const stored = await streamIds(promoted.port, prefix);
    const lost = [...sent.accepted].filter((id) => !stored.has(id));

    // The call that rang through the failover is answered and accepted at the Service.
    const { peer, sdp } = await AudioPeer.answerer(offer.sdp);
    cleanups.push(() => peer.close());
    const reply = await until('the answer acked after the failover', async () => {
      const r = await agent.request({ type: 'call.answer', wacid, sdp });
      return r.type === 'ack' ? r : r.type === 'error' && r.code === 'UNAVAILABLE' ? undefined : r;
    }, 20_000, 300);
    const emu = await emulatorCall(b.emu, wacid);

    printCounts('sentinel-failover', {
      events: n,
      acceptedByService: sent.accepted.size,
      retriedDeliveries: sent.retries,
      killedAfterAccepted: killedAt,
      storedOnNewPrimary: stored.size,
      lost: lost.length,
      unconfirmedBatches: store.acceptStats.unconfirmed,
      // Connections ioredis ended on its own (its failover detector racing a reconnect) and the store opened again.
      reopenedConnections: store.reopened,
      ringingCallAnswered: reply.type === 'ack' && emu.state === 'active' ? 1 : 0,
    });
    expect(killedAt).toBeGreaterThan(0);
    expect(sent.accepted.size).toBe(n);
    expect(lost).toEqual([]);
    expect(reply).toMatchObject({ type: 'ack', wacid });
    expect(emu.state).toBe('active');
  }, 120_000);
});
