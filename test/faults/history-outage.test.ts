/**
 * The history database down: a real PostgreSQL database (DATABASE_URL on
 * the bridge), a private Redis, emulator calls with werift callers, answered by program
 * agents over the protocol.
 *
 * - cut for `outage` seconds while calls come and go: every call rings and is answered as
 *   usual (accepted at the emulator), and once the database is back every call's record is
 *   complete (outcome, agent, times);
 * - down before the server starts: it starts anyway and takes calls; history catches up;
 * - every queued fact replayed twice: no new rows, no new timeline entries.
 *
 * Quick: 10 calls, 10 s (and 2 calls for the start case); FAULTS_SIZE=full: 50 calls, 30 s.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import type { HistoryFact } from '../../server/history/schema.ts';
import { AudioPeer } from '../emulator/index.ts';
import { agentClient, emulatorCall, emulatorRequest, startBridge, until, type Bridge, type ProtocolClient } from '../e2e/harness.ts';
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.ts';
import { sleep } from '../support/wait.ts';
import { printCounts, size } from './support.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

interface Setup {
  b: Bridge;
  pg: TestDatabase;
  redis: TestRedis;
  prefix: string;
  tabs: ProtocolClient[];
}

async function setup(o: { agents: number; cutBeforeStart?: boolean }): Promise<Setup> {
  const [pg, redis] = await Promise.all([createTestDatabase(), startRedis()]);
  cleanups.push(() => redis.close(), () => pg.drop());
  if (o.cutBeforeStart) await pg.cutOff();
  const prefix = uniquePrefix('hist');
  const agents = Array.from({ length: o.agents }, (_, i) => `hagent${i}`);
  const b = await startBridge({
    agents,
    history: true,
    redisUrl: redis.url,
    storePrefix: prefix,
    env: { DATABASE_URL: pg.url, SESSION_SECRET: randomBytes(24).toString('base64url'), RING_TIMEOUT_MS: '60000', ACCEPT_WINDOW_MS: '60000', WRAP_UP_MS: 'off' },
    loginLimits: { perName: 100, perAddress: 100_000 },
  });
  cleanups.push(() => b.close());
  const tabs = await Promise.all(agents.map((name) => agentClient(b.url, name)));
  cleanups.push(() => tabs.forEach((t) => t.close()));
  return { b, pg, redis, prefix, tabs };
}

/**
 * One call, start to end: placed at the emulator, rung to an agent, answered with a werift
 * peer, hung up by the caller. Returns whether the agent's answer was acked and the
 * Service (emulator) had the call active.
 */
async function oneCall(s: Setup): Promise<{ wacid: string; acked: boolean; active: boolean }> {
  const wacid = (await emulatorRequest(s.b.emu, 'POST', '/calls', { audio: 'silence' })).wacid as string;
  const offered = await until(`call ${wacid} offered`, () => {
    for (const t of s.tabs) {
      const m = t.received.find((x) => x.type === 'call.offered' && x.wacid === wacid);
      if (m) return { tab: t, sdp: (m as { sdp: string }).sdp };
    }
    return undefined;
  }, 30_000, 20);
  const { peer, sdp } = await AudioPeer.answerer(offered.sdp);
  try {
    const r = await offered.tab.request({ type: 'call.answer', wacid, sdp }, 30_000);
    const acked = r.type === 'ack';
    if (!acked) console.error(`answer of ${wacid} refused: ${JSON.stringify(r)}`);
    const active = (await emulatorCall(s.b.emu, wacid)).state === 'active';
    // A conversation, however short: the caller hangs up once the bridge holds the call as active.
    if (acked) await until(`call ${wacid} active in the live store`, async () => (await s.b.store.getCall(wacid))?.state === 'active', 10_000, 20);
    await emulatorRequest(s.b.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/hangup`, {});
    // Ended and wrapped up: the agent is available for the next call.
    await until(`call ${wacid} ended in the live store`, async () => (await s.b.store.getCall(wacid))?.state === 'ended', 30_000, 50);
    return { wacid, acked, active };
  } finally {
    peer.close();
  }
}

/** Calls with full records in the history database (outcome, agent, received/answered/ended, talk time). */
async function completeRecords(s: Setup, wacids: string[]): Promise<number> {
  let n = 0;
  for (const w of wacids) {
    const c = await s.b.sb.history!.store.getCall(w).catch(() => null);
    if (c && c.outcome === 'answered' && c.agent && c.receivedAt && c.answeredAt && c.endedAt && typeof c.talkMs === 'number') n++;
  }
  return n;
}

async function runCalls(s: Setup, n: number, concurrency: number): Promise<Array<{ wacid: string; acked: boolean; active: boolean }>> {
  const out: Array<{ wacid: string; acked: boolean; active: boolean }> = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        next++;
        out.push(await oneCall(s));
      }
    }),
  );
  return out;
}

describe('history database outage', () => {
  it('cut while calls go on: every call rings and is answered; every record is complete once it is back; a replay adds nothing', async () => {
    const n = size(10, 50);
    const outageMs = size(10, 30) * 1000;
    // One call at a time (each rang, answered, talked, hung up): the outage spans the calls.
    const s = await setup({ agents: 2 });
    const h = s.b.sb.history!;
    expect(h.store.db.engine).toBe('postgres');

    // Every fact the server hands to history, kept for the replay.
    const facts: HistoryFact[] = [];
    const enqueue = h.enqueue;
    h.enqueue = (...fs) => {
      facts.push(...fs);
      enqueue(...fs);
    };
    await s.pg.cutOff();
    const cutAt = Date.now();
    const back = sleep(outageMs).then(() => s.pg.reopen());
    const calls = await runCalls(s, n, 1);
    const callsDoneAt = Date.now();
    const duringOutage = callsDoneAt - cutAt < outageMs ? n : undefined;
    const healthDuring = await h.health();
    await back;
    const wacids = calls.map((c) => c.wacid);
    await until('every record complete after the database is back', async () => (await completeRecords(s, wacids)) === n, 60_000, 250).catch(async (err: unknown) => {
      // Which records, and what they say, before failing.
      for (const w of wacids) {
        const c = await h.store.getCall(w).catch((e: unknown) => (e as Error).message);
        console.error(w, JSON.stringify(c && typeof c === 'object' ? { outcome: c.outcome, agent: c.agent, answeredAt: c.answeredAt, endedAt: c.endedAt, talkMs: c.talkMs } : c));
      }
      console.error('writer', JSON.stringify(h.writer.status()), JSON.stringify(await h.health()));
      throw err;
    });
    await until('queue drained', async () => (await h.queue.lag()).pending === 0, 30_000);

    // Replay: every fact the calls produced, handed to the queue twice more.
    const count = async () => {
      const [c] = await h.store.db.query<{ calls: number; timeline: number; media: number }>(
        'SELECT (SELECT count(*) FROM history_calls)::int AS calls, (SELECT count(*) FROM history_timeline)::int AS timeline, (SELECT count(*) FROM history_media)::int AS media',
      );
      return c!;
    };
    const before = await count();
    const writtenBefore = h.writer.status().written;
    for (let round = 0; round < 2; round++) for (const f of facts) enqueue(f);
    await until('the replay written', async () => h.writer.status().written >= writtenBefore + 2 * facts.length && (await h.queue.lag()).pending === 0, 60_000);
    const after = await count();

    const acked = calls.filter((c) => c.acked).length;
    const active = calls.filter((c) => c.active).length;
    printCounts('history-outage', {
      calls: n,
      outageSeconds: outageMs / 1000,
      callsPlacedWhileDown: duringOutage ?? `some (calls took ${callsDoneAt - cutAt} ms)`,
      answeredAcked: acked,
      activeAtService: active,
      healthDuringOutage: healthDuring.ok ? 'ok' : 'failing',
      completeRecords: await completeRecords(s, wacids),
      factsReplayed: facts.length * 2,
      rows: `${before.calls}->${after.calls}`,
      timeline: `${before.timeline}->${after.timeline}`,
    });
    expect({ acked, active }).toEqual({ acked: n, active: n });
    expect(facts.length).toBeGreaterThan(n * 3);
    expect(before.calls).toBe(n);
    expect(before.timeline).toBeGreaterThanOrEqual(n * 3);
    expect(after).toEqual(before);
  }, 600_000);

  it('down before the server starts: it starts, takes calls, and history catches up once the database opens', async () => {
    const n = 2;
    const s = await setup({ agents: 2, cutBeforeStart: true });
    const h = s.b.sb.history!;
    expect((await h.health()).ok).toBe(false);
    const calls = await runCalls(s, n, 1);
    expect(calls.map((c) => [c.acked, c.active])).toEqual([[true, true], [true, true]]);
    expect((await h.queue.lag()).pending).toBeGreaterThan(0);
    await s.pg.reopen();
    await until('records complete once the database opened', async () => (await completeRecords(s, calls.map((c) => c.wacid))) === n, 60_000, 250);
    printCounts('history-down-at-start', { calls: n, answered: calls.filter((c) => c.acked).length, completeRecords: n });
  }, 300_000);
});
