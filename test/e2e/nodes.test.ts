/**
 * Two bridge nodes sharing one Redis (a private redis-server) and one Service: the Service
 * delivers webhooks to node B only; the agent is connected to node A. Calls must still
 * ring at A at once (routing hint over pub/sub), be answered through A, and end on A's
 * screen when B processes the terminate (pushes over pub/sub).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.ts';
import { agentClient, sleep, startBridge, type Bridge, type ProtocolClient } from './harness.ts';
import { PeerHost } from './program-agent.ts';

let redis: TestRedis;
let a: Bridge;
let b: Bridge;
let host: PeerHost;
let agent: ProtocolClient;

beforeAll(async () => {
  redis = await startRedis();
  const prefix = uniquePrefix('nodes');
  const env = { SESSION_SECRET: randomBytes(24).toString('base64url'), WRAP_UP_MS: 'off' };
  // Node B owns the emulator and is the only webhook receiver.
  // The sweep (which would also find queued calls, but only every sweepMs) is slowed right
  // down, so only the routing hint can place a call in time.
  const sweepMs = 60_000;
  b = await startBridge({ agents: ['agent1'], redisUrl: redis.url, storePrefix: prefix, env, sweepMs });
  a = await startBridge({ agents: ['agent1'], redisUrl: redis.url, storePrefix: prefix, env, sweepMs, sharedEmulator: { emu: b.emu, secret: b.secret } });
  agent = await agentClient(a.url, 'agent1');
  host = await PeerHost.start(a.url);
}, 60_000);
afterAll(async () => {
  agent?.close();
  await host?.close();
  await a?.close();
  await b?.close();
  await redis?.close();
});

async function control(method: string, path: string): Promise<Record<string, unknown>> {
  const r = await fetch(`${b.emu.controlUrl}${path}`, { method, headers: { 'x-api-key': b.emu.apiKey, 'content-type': 'application/json' }, ...(method === 'POST' ? { body: '{}' } : {}) });
  return (await r.json()) as Record<string, unknown>;
}

describe('two nodes, one Redis', () => {
  it('a call whose webhook reaches the node without agents rings the agent on the other node at once', async () => {
    // Both nodes' workers read the shared stream, so some events land on A anyway: six calls
    // make it all but certain that B placed several of them through the hint.
    for (let i = 0; i < 6; i++) {
      const t0 = Date.now();
      const wacid = (await control('POST', '/calls')).wacid as string;
      await agent.next('call.offered', (m) => m.wacid === wacid, 5_000);
      expect(Date.now() - t0).toBeLessThan(3_000);
      // Declined: the agent is free for the next one (this call waits for nobody and is rejected later).
      expect(await agent.request({ type: 'call.decline', wacid })).toMatchObject({ type: 'ack' });
      await sleep(100);
    }
  }, 30_000);

  it('the agent on node A answers, the caller hanging up (processed by either node) ends the call on A, and A takes the next call', async () => {
    await agent.request({ type: 'presence.set', status: 'available' });
    const statesFrom = agent.received.length;
    // Three rounds: each terminate is processed by A or B at random; when by B, A's routing
    // state must still learn that its agent is free, or the next round never rings.
    for (let round = 0; round < 3; round++) {
      const wacid = (await control('POST', '/calls')).wacid as string;
      const offer = await agent.next('call.offered', (m) => m.wacid === wacid, 5_000);
      const sdp = await host.answer(wacid, offer.sdp);
      expect(await agent.request({ type: 'call.answer', wacid, sdp })).toMatchObject({ type: 'ack', wacid });
      await host.unmute(wacid);
      await host.connectedAt(wacid);
      await control('POST', `/calls/${encodeURIComponent(wacid)}/hangup`);
      const ended = await agent.next('call.state', (m) => m.wacid === wacid && m.state === 'ended', 8_000);
      expect(ended.result).toBe('COMPLETED');
      await host.closePeer(wacid);
    }
    // Whichever node made each change, the state pushed to A's tab is right: the agent is
    // connected on A, never "offline" because B has no socket of it.
    const states = agent.received.slice(statesFrom).flatMap((m) => (m.type === 'agent.state' ? [m.status] : []));
    expect(states).toContain('on-call');
    expect(states).not.toContain('offline');
  }, 60_000);

  it('an agent with tabs on both nodes who goes away in one tab is rung by neither node; available again, the waiting call rings', async () => {
    // A second tab of agent1, on node B; each node's routing reads its own board.
    const tabB = await agentClient(b.url, 'agent1');
    try {
      const from = agent.received.length;
      expect(await tabB.request({ type: 'presence.set', status: 'away' })).toMatchObject({ type: 'ack', presence: 'away' });
      await agent.next('presence', (m) => m.presence === 'away', 5_000, from);
      const wacid = (await control('POST', '/calls')).wacid as string;
      // Node A learned "away" from B: it must not ring its tab (nor B its own).
      await expect(agent.next('call.offered', (m) => m.wacid === wacid, 2_500)).rejects.toThrow();
      expect(await tabB.request({ type: 'presence.set', status: 'available' })).toMatchObject({ type: 'ack', presence: 'available' });
      await agent.next('call.offered', (m) => m.wacid === wacid, 5_000);
      expect(await agent.request({ type: 'call.decline', wacid })).toMatchObject({ type: 'ack' });
    } finally {
      tabB.close();
    }
  }, 30_000);
});
