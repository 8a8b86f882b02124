/**
 * The wallboard on two nodes: one PostgreSQL history and one Redis,
 * a scripted day of 200 inbound calls with known outcomes and times (history facts, as the
 * recorder writes them), plus calls that must not count (yesterday's, outbound) or count
 * differently (one answered and still talking), plus live calls in the store. Both nodes'
 * `GET /api/wallboard` give the same, known figures; the `wallboard` push reaches a
 * supervisor's socket; an agent connected to one node shows its state (and away reason) on
 * the other.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Wallboard } from '../../shared/protocol.ts';
import { startOfDay } from '../../server/wallboard/compute.ts';
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.ts';
import { agentClient, login, startBridge, until, type Bridge } from './harness.ts';

let redis: TestRedis;
let pg: TestDatabase;
let a: Bridge;
let b: Bridge;
const N1 = '+15550001000';
const N2 = '+15550002000';

beforeAll(async () => {
  [redis, pg] = await Promise.all([startRedis(), createTestDatabase('sb_wallboard')]);
  const prefix = uniquePrefix('wallboard');
  const env = { SESSION_SECRET: randomBytes(24).toString('base64url'), DATABASE_URL: pg.url, SLA_SECONDS: '20' };
  b = await startBridge({ agents: ['agent1', 'agent2'], redisUrl: redis.url, storePrefix: prefix, env, history: true });
  a = await startBridge({ agents: ['agent1', 'agent2'], redisUrl: redis.url, storePrefix: prefix, env, history: true, sharedEmulator: { emu: b.emu, secret: b.secret } });
}, 60_000);
afterAll(async () => {
  await a?.close();
  await b?.close();
  await pg?.drop();
  await redis?.close();
});

/** The scripted day, written to history through node B's store (the system of record both read). */
async function scriptDay(day0: number): Promise<void> {
  const at = (ms: number) => new Date(day0 + ms).toISOString();
  const facts = [];
  for (let i = 0; i < 200; i++) {
    const businessNumber = i % 2 ? N1 : N2;
    const base = { wacid: `day-${i}`, phoneId: 'phone-1', businessNumber, customer: { phoneNumber: `+1555030${String(i).padStart(4, '0')}` }, direction: 'inbound' as const, receivedAt: at(i * 50), version: 9 };
    const k = i % 10;
    if (k <= 5) {
      const waitMs = (i % 7) * 5_000; // 0..30 s: some beyond the 20 s SLA
      const talkMs = 60_000 + (i % 5) * 1_000;
      facts.push({ ...base, outcome: 'answered' as const, agent: i % 3 === 0 ? 'agent1' : 'agent2', answeredAt: at(i * 50 + 1), endedAt: at(i * 50 + 2), waitMs, talkMs, ...(i % 4 === 0 ? { holdMs: 10_000 } : {}) });
    } else if (k <= 7) facts.push({ ...base, outcome: 'abandoned' as const, waitMs: 15_000, endedAt: at(i * 50 + 2) });
    else if (k === 8) facts.push({ ...base, outcome: 'missed' as const, waitMs: 30_000, endedAt: at(i * 50 + 2) });
    else facts.push({ ...base, outcome: 'rejected' as const, waitMs: 1_000, endedAt: at(i * 50 + 2) });
  }
  // Not counted: yesterday's call; outbound calls (they count only in the agent's calls today).
  facts.push({ wacid: 'yesterday', phoneId: 'phone-1', businessNumber: N1, customer: {}, direction: 'inbound' as const, outcome: 'answered' as const, agent: 'agent2', receivedAt: new Date(day0 - 3_600_000).toISOString(), answeredAt: new Date(day0 - 3_500_000).toISOString(), waitMs: 1_000, version: 3 });
  for (const w of ['out-1', 'out-2']) facts.push({ wacid: w, phoneId: 'phone-1', businessNumber: N1, customer: {}, direction: 'outbound' as const, outcome: 'answered' as const, agent: 'agent1', receivedAt: at(20_000), answeredAt: at(20_001), endedAt: at(20_002), talkMs: 5_000, waitMs: 0, version: 3 });
  // Answered, still talking: answered (within SLA), not yet in the handle time.
  facts.push({ wacid: 'talking', phoneId: 'phone-1', businessNumber: N2, customer: {}, direction: 'inbound' as const, outcome: 'in-progress' as const, agent: 'agent1', receivedAt: at(20_100), answeredAt: at(20_101), waitMs: 5_000, version: 2 });
  for (const f of facts) await b.sb.history!.store.record({ type: 'call', ...f });
}

/** Live calls in the shared store: two waiting on N1 (30 s and 10 s), one ringing on N2. */
async function liveCalls(now: number): Promise<void> {
  const rec = (wacid: string, to: string, state: string, createdAt: number, extra: Record<string, unknown> = {}) => ({
    wacid, phoneId: 'phone-1', version: 0, direction: 'USER_INITIATED', from: '+15550300999', to, state, createdAt, offeredTo: [], declined: [], deadline: now + 3_600_000, ...extra,
  });
  await a.store.createCall(rec('live-q1', N1, 'queued', now - 30_000), 600_000);
  await a.store.createCall(rec('live-q2', N1, 'queued', now - 10_000), 600_000);
  await a.store.createCall(rec('live-r1', N2, 'ringing', now - 5_000, { agent: 'agent2', offeredTo: ['agent2'], ringUntil: now + 3_600_000 }), 600_000);
}

async function wallboardOf(node: Bridge, cookie: string): Promise<Wallboard> {
  const r = await fetch(`${node.url}/api/wallboard`, { headers: { cookie } });
  expect(r.status).toBe(200);
  return (await r.json()) as Wallboard;
}

describe('wallboard, two nodes', () => {
  it('a scripted day of 200 calls gives the known figures, the same on both nodes; live calls count as waiting / ringing', async () => {
    const t0 = Date.now();
    await scriptDay(startOfDay(t0));
    await liveCalls(t0);
    const [ca, cb] = await Promise.all([login(a.url, 'boss'), login(b.url, 'boss')]);
    const [wa, wb] = await Promise.all([wallboardOf(a, ca), wallboardOf(b, cb)]);
    const elapsed = Date.now() - t0;
    for (const w of [wa, wb]) {
      const [n1, n2] = w.numbers;
      expect(w.numbers.map((n) => n.businessNumber)).toEqual([N1, N2]);
      // N1: odd calls. 60 answered (43 within 20 s), 20 abandoned, 0 missed, 20 rejected.
      expect(n1).toMatchObject({ waiting: 2, ringing: 0, offered: 100, answered: 60, abandoned: 20, missed: 0, asaMs: 15_167, ahtMs: 61_333 });
      expect(n1!.serviceLevel).toBeCloseTo(0.43, 10);
      expect(n1!.longestWaitMs).toBeGreaterThanOrEqual(30_000);
      expect(n1!.longestWaitMs).toBeLessThanOrEqual(30_000 + elapsed);
      // N2: even calls + the one still talking. 61 answered (44 within 20 s), 20 abandoned, 20 missed.
      expect(n2).toMatchObject({ waiting: 0, ringing: 1, offered: 101, answered: 61, abandoned: 20, missed: 20, asaMs: 14_672, ahtMs: 67_000 });
      expect(n2!.serviceLevel).toBeCloseTo(44 / 101, 10);
      expect(n2!.longestWaitMs).toBeGreaterThanOrEqual(5_000);
      // Calls today per agent: 40 + 2 outbound + 1 talking; 80 (yesterday's not counted). Neither is connected.
      expect(w.agents.map((g) => [g.name, g.callsToday, g.status])).toEqual([
        ['agent1', 43, 'offline'],
        ['agent2', 80, 'offline'],
      ]);
    }
    // The same figures on both nodes (the live wait grows with the clock: compared apart).
    const strip = (w: Wallboard) => ({ ...w, at: 0, numbers: w.numbers.map((n) => ({ ...n, longestWaitMs: 0 })) });
    expect(strip(wa)).toEqual(strip(wb));
  }, 60_000);

  it('agents are refused (403); supervisors get the board pushed as `wallboard` on their socket', async () => {
    const agentCookie = await login(a.url, 'agent1');
    expect((await fetch(`${a.url}/api/wallboard`, { headers: { cookie: agentCookie } })).status).toBe(403);
    const sup = await agentClient(b.url, 'boss', { available: false });
    const pushed = await until('a wallboard push', () => sup.next('wallboard', () => true, 8_000), 10_000);
    expect(pushed.numbers.find((n) => n.businessNumber === N1)).toMatchObject({ offered: 100, answered: 60 });
    sup.close();
  }, 30_000);

  it("an agent connected to the other node shows its state and away reason (not offline)", async () => {
    const agent = await agentClient(a.url, 'agent1', { available: false });
    expect(await agent.request({ type: 'presence.set', status: 'away', reason: 'Lunch' })).toMatchObject({ type: 'ack' });
    const cookie = await login(b.url, 'boss');
    const seen = await until('agent1 away on node B', async () => {
      const g = (await wallboardOf(b, cookie)).agents.find((x) => x.name === 'agent1');
      return g?.status === 'away' && g.reason === 'Lunch' ? g : undefined;
    }, 10_000);
    expect(seen).toMatchObject({ status: 'away', reason: 'Lunch' });
    agent.close();
  }, 30_000);
});
