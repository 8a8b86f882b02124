/**
 * Routing across two nodes of one deployment (one private Redis, one key prefix): every
 * agent has a tab on each node, and both nodes' workers place calls. A node must learn of
 * the offers the other node made, or it rings an agent who is already ringing while other
 * agents sit idle (the fault test: 20 agents, 20 calls, 10 agents rang twice, 10 never).
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.ts';
import { agentClient, emulatorRequest, sleep, startBridge, type Bridge, type ProtocolClient } from './harness.ts';

const AGENTS = Array.from({ length: 8 }, (_, i) => `agent${i + 1}`);
let redis: TestRedis;
let a: Bridge;
let b: Bridge;
const tabs: ProtocolClient[] = [];

beforeAll(async () => {
  redis = await startRedis();
  const prefix = uniquePrefix('nodes-routing');
  const env = { SESSION_SECRET: randomBytes(24).toString('base64url'), WRAP_UP_MS: 'off', RING_TIMEOUT_MS: '60000' };
  // Both nodes receive webhooks (the emulator delivers to B; both workers read the stream).
  b = await startBridge({ agents: AGENTS, redisUrl: redis.url, storePrefix: prefix, env });
  a = await startBridge({ agents: AGENTS, redisUrl: redis.url, storePrefix: prefix, env, sharedEmulator: { emu: b.emu, secret: b.secret } });
  for (const name of AGENTS) {
    tabs.push(await agentClient(a.url, name));
    tabs.push(await agentClient(b.url, name, { available: false }));
  }
}, 90_000);
afterAll(async () => {
  for (const t of tabs) t.close();
  await a?.close();
  await b?.close();
  await redis?.close();
});

describe('two nodes, agents with a tab on each', () => {
  it('calls placed one after another ring every agent once, never one agent twice', async () => {
    const offers = new Map<string, string[]>();
    for (let i = 0; i < AGENTS.length; i++) {
      const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', {})).wacid as string;
      // Each call rings (on both tabs of its agent) before the next is placed.
      const rung = await Promise.any(tabs.map(async (t, j) => (await t.next('call.offered', (m) => m.wacid === wacid, 8_000), AGENTS[Math.floor(j / 2)]!)));
      offers.set(rung, [...(offers.get(rung) ?? []), wacid]);
      await sleep(50);
    }
    const twice = [...offers.entries()].filter(([, w]) => w.length > 1).map(([n]) => n);
    expect(twice, `agents rung with two calls at once: ${twice.join(', ')}`).toEqual([]);
    expect(offers.size).toBe(AGENTS.length);
  }, 90_000);
});
