/**
 * Concurrent answers raced across two nodes: every agent has a tab on node A
 * and a tab on node B (two bridges, one Redis, one emulator); every call rings both tabs
 * of its agent; all tabs answer at once. Each call must be accepted exactly once: one
 * tab acked, the other told CONFLICT, the call record held by that agent, the Service's
 * call active. Counts acks per call and the Service's view.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { AudioPeer } from '../emulator/index.ts';
import { ProtocolClient, agentClient, emulatorCall, emulatorRequest, startBridge, until, type Bridge } from '../e2e/harness.ts';
import { startRedis, uniquePrefix } from '../support/redis.ts';
import { printCounts, size } from './support.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

describe('answers raced across two nodes', () => {
  it('every call answered at once from two tabs on two nodes is accepted exactly once', async () => {
    const n = size(20, 1000);
    /** Calls answered together (each by two tabs at once): 1,000 answers at once in the full size. */
    const ROUND = 500;
    const names = Array.from({ length: n }, (_, i) => `race${i}`);
    const redis = await startRedis();
    cleanups.push(() => redis.close());
    const prefix = uniquePrefix('race');
    const env = { SESSION_SECRET: randomBytes(24).toString('base64url'), RING_TIMEOUT_MS: '60000', ACCEPT_WINDOW_MS: '60000' };
    const loginLimits = { perName: 100, perAddress: 100_000 };
    // The Service's accept window as long as ours (60 s); its no-media drop out of the way: the
    // answerers' audio is not what is tested, and 1,000 of them outrun 2 cores.
    const emulator = { acceptWindowMs: 60_000, noMediaAtStartMs: 600_000, noMediaMidCallMs: 600_000 };
    const b: Bridge = await startBridge({ agents: names, redisUrl: redis.url, storePrefix: prefix, env, loginLimits, emulator });
    cleanups.push(() => b.close());
    const a: Bridge = await startBridge({ agents: names, redisUrl: redis.url, storePrefix: prefix, env, loginLimits, sharedEmulator: { emu: b.emu, secret: b.secret } });
    cleanups.push(() => a.close());

    const tabs: Array<[ProtocolClient, ProtocolClient]> = [];
    for (let i = 0; i < n; i += 10) {
      tabs.push(...(await Promise.all(names.slice(i, i + 10).map(async (name) => [await agentClient(a.url, name), await agentClient(b.url, name)] as [ProtocolClient, ProtocolClient]))));
    }
    cleanups.push(() => tabs.flat().forEach((c) => c.close()));

    // Each call is routed to one agent: only that agent is available while it is placed,
    // and goes away once both tabs ring (a ringing call stays). Placed with every agent
    // available, two nodes may ring one agent — who has a tab on each — with two calls
    // while others idle (the other node's routing state does not learn of the offer):
    // reported separately; the race measured here is the one on the answer.
    // Calls are placed one by one (~60 ms each), and the Service refuses an accept more than
    // its window (30 to 60 s) after the connect: so the full size goes in rounds of up to 500
    // calls, each round's 1,000 answers sent at once.
    const wacids: string[] = [];
    const byAgent = new Map<number, string>();
    const offered = (t: ProtocolClient, wacid: string) => t.received.some((m) => m.type === 'call.offered' && m.wacid === wacid);
    const presence = async (i: number, status: 'available' | 'away') => {
      const [x, y] = tabs[i]!;
      const from = y.received.length;
      expect(await x.request({ type: 'presence.set', status })).toMatchObject({ type: 'ack' });
      await y.next('presence', (m) => m.presence === status, 10_000, from);
    };
    for (const [x, y] of tabs) for (const t of [x, y]) expect(await t.request({ type: 'presence.set', status: 'away' })).toMatchObject({ type: 'ack' });

    let exactlyOne = 0;
    let twice = 0;
    let none = 0;
    let conflicts = 0;
    let active = 0;
    let heldByAgent = 0;
    const errors = new Map<string, number>();
    let slowestPlacementMs = 0;
    for (let r0 = 0; r0 < n; r0 += ROUND) {
      const round = Array.from({ length: Math.min(ROUND, n - r0) }, (_, j) => r0 + j);
      const placedFrom = Date.now();
      for (const k of round) {
        await presence(k, 'available');
        const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', { audio: 'silence' })).wacid as string;
        wacids.push(wacid);
        const [x, y] = tabs[k]!;
        await until(`call ${k} ringing both tabs of its agent`, () => offered(x, wacid) && offered(y, wacid), 20_000, 20);
        byAgent.set(k, wacid);
        await presence(k, 'away');
      }
      slowestPlacementMs = Math.max(slowestPlacementMs, Date.now() - placedFrom);

      // One usable answer SDP per call (the emulator checks it); both tabs send it at once.
      const peers: AudioPeer[] = [];
      cleanups.push(() => Promise.all(peers.map((p) => p.close())).then(() => undefined)); // closing twice is a no-op
      const answers = await Promise.all(
        round.map(async (i) => {
          const wacid = byAgent.get(i)!;
          const offer = tabs[i]![0].received.find((m) => m.type === 'call.offered' && m.wacid === wacid);
          const { peer, sdp } = await AudioPeer.answerer((offer as { sdp: string }).sdp);
          peers.push(peer);
          return { i, wacid, sdp };
        }),
      );
      const replies = await Promise.all(
        answers.map(async ({ i, wacid, sdp }) => {
          const [x, y] = tabs[i]!;
          return { wacid, agent: names[i]!, r: await Promise.all([x.request({ type: 'call.answer', wacid, sdp }, 60_000), y.request({ type: 'call.answer', wacid, sdp }, 60_000)]) };
        }),
      );
      for (const { wacid, agent, r } of replies) {
        const acks = r.filter((m) => m.type === 'ack').length;
        if (acks === 1) exactlyOne++;
        else if (acks > 1) twice++;
        else none++;
        for (const m of r) if (m.type === 'error') errors.set(m.code, (errors.get(m.code) ?? 0) + 1);
        conflicts += r.filter((m) => m.type === 'error' && m.code === 'CONFLICT').length;
        if ((await emulatorCall(b.emu, wacid)).state === 'active') active++;
        if ((await b.store.getCall(wacid))?.agent === agent) heldByAgent++;
      }
      // The round's calls end (the tab that holds each hangs up): the callers' media stops
      // before the next round places its calls.
      await Promise.all(
        replies.map(async ({ wacid, agent, r }) => {
          const i = names.indexOf(agent);
          const holder = r[0].type === 'ack' ? tabs[i]![0] : r[1].type === 'ack' ? tabs[i]![1] : undefined;
          if (holder) await holder.request({ type: 'call.hangup', wacid }, 60_000);
        }),
      );
      await Promise.all(peers.map((p) => p.close()));
    }
    printCounts('answer-race', {
      calls: n,
      answers: n * 2,
      answersAtOnce: Math.min(n, ROUND) * 2,
      acceptedExactlyOnce: exactlyOne,
      acceptedTwice: twice,
      notAccepted: none,
      conflicts,
      activeAtService: active,
      heldByAgent,
      errors: JSON.stringify(Object.fromEntries(errors)),
      slowestRoundPlacementS: (slowestPlacementMs / 1000).toFixed(1),
    });
    expect({ exactlyOne, twice, none, conflicts, active, heldByAgent }).toEqual({ exactlyOne: n, twice: 0, none: 0, conflicts: n, active: n, heldByAgent: n });
    expect(wacids.sort()).toEqual([...byAgent.values()].sort());
  }, 900_000);
});
