/**
 * The store (a private redis-server) goes down under a running bridge: every WebSocket
 * request still gets an answer (`error` with code UNAVAILABLE), a `call.dial` whose
 * connect the Service already took is ended at the Service instead of ringing the user
 * untracked, and `POST /api/login` answers 503 in the error shape.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AudioPeer } from '../emulator/calls/peer.ts';
import type { CallView as EmuCall } from '../emulator/calls/index.ts';
import { startRedis, type TestRedis } from '../support/redis.ts';
import { PASSWORD, agentClient, until } from './harness.ts';
import { programSuite } from './suite.ts';

const BUSINESS = '+15550100001';
const FAKE_SDP = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
}, 30_000);
afterAll(async () => {
  await redis?.close();
});
const suite = programSuite();

describe('the store goes down', () => {
  it('every WebSocket request gets an error frame; a dial the Service took is ended there; login answers 503', async () => {
    const b = await suite.startBridge({ agents: ['agent1'], supervisors: ['boss'], redisUrl: redis.url });
    const boss = suite.track(await agentClient(b.url, 'boss', { available: false }));
    const user = '+15550124001';
    await suite.control('POST', '/callPermissions', { business: BUSINESS, user, isPermanent: true });
    // The user's phone keeps ringing: only the bridge can end the call.
    await suite.control('PATCH', '/callee', { user, action: 'noAnswer', ringTimeoutMs: 60_000 });
    const { peer, sdp } = await AudioPeer.offerer();
    try {
      await redis.stop();
      await until('the store to notice', async () => b.store.ping().then(() => false, () => true));

      // Requests that need the store: an error frame each, not silence.
      for (const msg of [
        { type: 'call.answer', wacid: 'wacid.nosuch', sdp: FAKE_SDP },
        { type: 'call.decline', wacid: 'wacid.nosuch' },
        { type: 'call.hangup', wacid: 'wacid.nosuch' },
      ] as const) {
        const r = await boss.request(msg, 5_000);
        expect(r, msg.type).toMatchObject({ type: 'error', code: 'UNAVAILABLE' });
      }

      // The Service takes the connect; the call cannot be tracked: it is ended at the Service.
      const dialed = await boss.request({ type: 'call.dial', from: BUSINESS, to: user, sdp }, 10_000);
      expect(dialed).toMatchObject({ type: 'error', code: 'UNAVAILABLE' });
      expect((dialed as { message: string }).message).toMatch(/ended at the Service/);
      const ended = await until('the dialed call to end at the Service', async () => {
        const { items } = await suite.control<{ items: EmuCall[] }>('GET', '/calls');
        const c = items.find((x) => x.to === user && x.direction === 'BUSINESS_INITIATED');
        return c && c.state === 'ended' ? c : undefined;
      });
      expect(ended.terminate).toMatchObject({ status: 'FAILED', reason: 'BUSINESS_CANCELLED' });

      // Login needs the store for its session: 503 in the error shape, not 500.
      const login = await fetch(`${b.url}/api/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: b.url },
        body: JSON.stringify({ name: 'agent1', password: PASSWORD }),
      });
      expect(login.status).toBe(503);
      const body = (await login.json()) as { error: Record<string, unknown> };
      expect(body.error).toMatchObject({ status: 503, code: 'UNAVAILABLE' });
      expect(typeof body.error.requestId).toBe('string');
    } finally {
      await peer.close();
      await redis.start();
    }
  }, 60_000);
});
