/**
 * The server's monitoring relay across two nodes sharing one Redis: the
 * agent's tab on node A holds a real call (werift answer, emulator caller), the supervisor
 * on node B monitors it. Roles and states are checked, the offer / answer go to exactly
 * the other tab (without the request id), the mode reaches both, and each end trigger
 * (supervisor's tab closing, the call ending, the agent's tab closing) ends it once; the
 * call's timeline in history (one PostgreSQL for both nodes) shows it.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServerMsg } from '../../shared/protocol.ts';
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.ts';
import { agentClient, emulatorRequest, login, ProtocolClient, sleep, startBridge, until, type Bridge } from './harness.ts';
import { PeerHost } from './program-agent.ts';

let redis: TestRedis;
let pg: TestDatabase;
let a: Bridge;
let b: Bridge;
let host: PeerHost;
let agent: ProtocolClient;

const SDP = 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n';

beforeAll(async () => {
  redis = await startRedis();
  const prefix = uniquePrefix('monitor');
  const env = { SESSION_SECRET: randomBytes(24).toString('base64url'), WRAP_UP_MS: 'off', MONITOR_SHOW_LISTENING: 'false' };
  // Both nodes record history in one PostgreSQL: the monitor's timeline entries land there, whichever node acts.
  pg = await createTestDatabase('sb_monitor');
  const withHistory = { ...env, DATABASE_URL: pg.url };
  b = await startBridge({ agents: ['agent1'], supervisors: ['boss'], redisUrl: redis.url, storePrefix: prefix, env: withHistory, history: true });
  a = await startBridge({ agents: ['agent1'], supervisors: ['boss'], redisUrl: redis.url, storePrefix: prefix, env: withHistory, history: true, sharedEmulator: { emu: b.emu, secret: b.secret } });
  host = await PeerHost.start(a.url);
}, 60_000);
afterAll(async () => {
  await host?.close();
  await a?.close();
  await b?.close();
  await pg?.drop();
  await redis?.close();
});

/** A live call held by `agent` (a fresh agent tab on node A). */
async function liveCall(tab?: string): Promise<string> {
  agent = await agentClient(a.url, 'agent1', tab ? { tab } : {});
  const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', {})).wacid as string;
  const offer = await agent.next('call.offered', (m) => m.wacid === wacid, 8_000);
  const sdp = await host.answer(wacid, offer.sdp);
  expect(await agent.request({ type: 'call.answer', wacid, sdp })).toMatchObject({ type: 'ack', wacid });
  await host.unmute(wacid);
  await host.connectedAt(wacid);
  return wacid;
}

async function supervisor(): Promise<ProtocolClient> {
  return agentClient(b.url, 'boss', { available: false });
}

/** The monitor id of a `monitor.start` ack (fails on an error frame). */
function idOf(r: Extract<ServerMsg, { type: 'ack' | 'error' }>): string {
  if (r.type !== 'ack' || typeof r.monitorId !== 'string') throw new Error(`monitor.start refused: ${JSON.stringify(r)}`);
  return r.monitorId;
}

const monitorFrames = (c: ProtocolClient) => c.received.filter((m) => m.type.startsWith('monitor.'));

describe('monitoring relay, two nodes', () => {
  it('refuses non-supervisors (FORBIDDEN), unknown calls (NOT_FOUND); relays offer/answer/mode between exactly the two tabs; the supervisor tab closing ends it for the agent and leaves the call up', async () => {
    const wacid = await liveCall();
    expect(await agent.request({ type: 'monitor.start', wacid, mode: 'listen' })).toMatchObject({ type: 'error', code: 'FORBIDDEN' });
    const boss = await supervisor();
    expect(await boss.request({ type: 'monitor.start', wacid: 'nope', mode: 'listen' })).toMatchObject({ type: 'error', code: 'NOT_FOUND' });
    const started = await boss.request({ type: 'monitor.start', wacid, mode: 'listen' });
    expect(started).toMatchObject({ type: 'ack' });
    const monitorId = idOf(started);
    expect(monitorId).toBeTruthy();
    // A second monitor of the same call is refused.
    const other = await supervisor();
    expect(await other.request({ type: 'monitor.start', wacid, mode: 'barge' })).toMatchObject({ type: 'error', code: 'CONFLICT' });
    // MONITOR_SHOW_LISTENING=false: listening is not shown to the agent.
    expect(await agent.next('monitor.started', (m) => m.monitorId === monitorId)).toMatchObject({ side: 'agent', shown: false, supervisor: 'boss', agent: 'agent1', mode: 'listen', wacid });
    expect(await boss.next('monitor.started', (m) => m.monitorId === monitorId)).toMatchObject({ side: 'supervisor', shown: true });

    expect(await boss.request({ type: 'monitor.signal', monitorId, kind: 'offer', sdp: SDP })).toMatchObject({ type: 'error', code: 'BAD_REQUEST' });
    expect(await other.request({ type: 'monitor.signal', monitorId, kind: 'answer', sdp: SDP })).toMatchObject({ type: 'error', code: 'FORBIDDEN' });
    expect(await agent.request({ type: 'monitor.signal', monitorId, kind: 'offer', sdp: SDP + 'a=agent\r\n' })).toMatchObject({ type: 'ack' });
    const relayedOffer = await boss.next('monitor.signal', (m) => m.kind === 'offer');
    expect(relayedOffer).toEqual({ type: 'monitor.signal', monitorId, kind: 'offer', sdp: SDP + 'a=agent\r\n' });
    expect(await boss.request({ type: 'monitor.signal', monitorId, kind: 'answer', sdp: SDP + 'a=boss\r\n' })).toMatchObject({ type: 'ack' });
    expect(await agent.next('monitor.signal', (m) => m.kind === 'answer')).toEqual({ type: 'monitor.signal', monitorId, kind: 'answer', sdp: SDP + 'a=boss\r\n' });

    expect(await agent.request({ type: 'monitor.mode', monitorId, mode: 'barge' })).toMatchObject({ type: 'error', code: 'FORBIDDEN' });
    expect(await boss.request({ type: 'monitor.mode', monitorId, mode: 'whisper' })).toMatchObject({ type: 'ack' });
    expect(await agent.next('monitor.mode', (m) => m.mode === 'whisper')).toMatchObject({ monitorId, wacid, shown: true });
    expect(await boss.next('monitor.mode', (m) => m.mode === 'whisper')).toMatchObject({ monitorId, shown: true });
    // Nobody else saw any of it.
    expect(monitorFrames(other)).toEqual([]);

    boss.close();
    expect(await agent.next('monitor.ended', (m) => m.monitorId === monitorId)).toMatchObject({ reason: 'supervisor-gone', wacid });
    await sleep(300);
    const rec = await a.store.getCall(wacid);
    expect(rec?.state).toBe('active');
    // The call's timeline in history: started (who, mode), the mode change, the end (why).
    const timeline = await until('monitor timeline in history', async () => {
      const t = (await b.sb.history!.store.getCall(wacid))?.timeline.filter((e) => e.event.startsWith('monitor.'));
      return t && t.length === 3 ? t : undefined;
    }, 15_000);
    expect(timeline.map((e) => [e.event, e.detail])).toEqual([
      ['monitor.started', { supervisor: 'boss', mode: 'listen' }],
      ['monitor.mode', { mode: 'whisper' }],
      ['monitor.ended', { reason: 'supervisor-gone' }],
    ]);
    // The call can be monitored again (nothing left claimed).
    const again = await other.request({ type: 'monitor.start', wacid, mode: 'listen' });
    expect(again).toMatchObject({ type: 'ack' });
    other.close();
    await agent.next('monitor.ended', (m) => m.monitorId === idOf(again));
    await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/hangup`, {});
    await agent.next('call.state', (m) => m.wacid === wacid && m.state === 'ended', 8_000);
    await host.closePeer(wacid);
    agent.close();
  }, 60_000);

  it('the call ending ends the monitor for both tabs, once', async () => {
    const wacid = await liveCall();
    const boss = await supervisor();
    const r = await boss.request({ type: 'monitor.start', wacid, mode: 'barge' });
    const monitorId = idOf(r);
    expect(await agent.next('monitor.started', (m) => m.monitorId === monitorId)).toMatchObject({ shown: true, mode: 'barge' });
    await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/hangup`, {});
    expect(await boss.next('monitor.ended', (m) => m.monitorId === monitorId, 8_000)).toMatchObject({ reason: 'call-ended', wacid });
    expect(await agent.next('monitor.ended', (m) => m.monitorId === monitorId, 8_000)).toMatchObject({ reason: 'call-ended' });
    await sleep(500);
    expect(boss.received.filter((m: ServerMsg) => m.type === 'monitor.ended')).toHaveLength(1);
    // Not live any more: refused.
    expect(await boss.request({ type: 'monitor.start', wacid, mode: 'listen' })).toMatchObject({ type: 'error', code: 'CONFLICT' });
    await host.closePeer(wacid);
    agent.close();
    boss.close();
  }, 60_000);

  it("the agent's tab closing ends the monitor for the supervisor (agent-gone)", async () => {
    const wacid = await liveCall();
    const boss = await supervisor();
    const r = await boss.request({ type: 'monitor.start', wacid, mode: 'listen' });
    const monitorId = idOf(r);
    await agent.next('monitor.started', (m) => m.monitorId === monitorId);
    agent.close();
    expect(await boss.next('monitor.ended', (m) => m.monitorId === monitorId, 8_000)).toMatchObject({ reason: 'agent-gone', wacid });
    await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/hangup`, {}).catch(() => undefined);
    await host.closePeer(wacid);
    boss.close();
  }, 60_000);

  it("after the agent's socket drops and reconnects (a new connection, on the other node) during the call, monitoring reaches the tab's new connection, not a second tab", async () => {
    const wacid = await liveCall('tab-holding');
    const oldConn = (await a.store.getCall(wacid))?.conn as string;
    expect(oldConn).toBeTruthy();
    // The same agent has a second tab open (another tab id): it does not hold the call.
    const cookie = await login(b.url, 'agent1');
    const otherTab = new ProtocolClient(b.url, cookie, { tab: 'tab-other' });
    await otherTab.opened;
    await otherTab.next('welcome');
    // The holding tab's link dies; the server sees the socket go.
    agent.ws.terminate();
    await until('the old socket closed on the server', async () => ((await a.store.get(`conn-live:${oldConn}`)) === null ? true : undefined), 10_000);
    // The page reconnects (same tab id; this time through node B) within the grace: the call is still up.
    const back = new ProtocolClient(b.url, cookie, { tab: 'tab-holding' });
    await back.opened;
    const welcome = await back.next('welcome');
    expect(welcome.calls.map((c) => [c.wacid, c.state])).toEqual([[wacid, 'active']]);

    const boss = await supervisor();
    const monitorId = idOf(await boss.request({ type: 'monitor.start', wacid, mode: 'listen' }));
    expect(await back.next('monitor.started', (m) => m.monitorId === monitorId)).toMatchObject({ side: 'agent', wacid, agent: 'agent1' });
    // The relay runs between the new connection and the supervisor.
    expect(await back.request({ type: 'monitor.signal', monitorId, kind: 'offer', sdp: SDP + 'a=back\r\n' })).toMatchObject({ type: 'ack' });
    expect(await boss.next('monitor.signal', (m) => m.kind === 'offer')).toEqual({ type: 'monitor.signal', monitorId, kind: 'offer', sdp: SDP + 'a=back\r\n' });
    // The second tab saw none of it and may not signal it.
    expect(await otherTab.request({ type: 'monitor.signal', monitorId, kind: 'offer', sdp: SDP })).toMatchObject({ type: 'error', code: 'FORBIDDEN' });
    expect(monitorFrames(otherTab)).toEqual([]);

    await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/hangup`, {});
    expect(await back.next('monitor.ended', (m) => m.monitorId === monitorId, 8_000)).toMatchObject({ reason: 'call-ended' });
    await host.closePeer(wacid);
    back.close();
    otherTab.close();
    boss.close();
  }, 60_000);

  it('a tab that reconnects with another tab id (a reload: the call media is gone) is not taken for the holding tab', async () => {
    const wacid = await liveCall('tab-before-reload');
    const oldConn = (await a.store.getCall(wacid))?.conn as string;
    agent.ws.terminate();
    await until('the old socket closed on the server', async () => ((await a.store.get(`conn-live:${oldConn}`)) === null ? true : undefined), 10_000);
    const reloaded = new ProtocolClient(a.url, await login(a.url, 'agent1'), { tab: 'tab-after-reload' });
    await reloaded.opened;
    await reloaded.next('welcome');
    const boss = await supervisor();
    expect(await boss.request({ type: 'monitor.start', wacid, mode: 'listen' })).toMatchObject({ type: 'error', code: 'CONFLICT' });
    expect(monitorFrames(reloaded)).toEqual([]);
    await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/hangup`, {});
    await reloaded.next('call.state', (m) => m.wacid === wacid && m.state === 'ended', 8_000);
    await host.closePeer(wacid);
    reloaded.close();
    boss.close();
  }, 60_000);

  it('a tab whose new socket opened before the server noticed the old one die is monitored on the new socket; the old one closing later leaves the monitor up', async () => {
    const wacid = await liveCall('tab-quick');
    const old = agent;
    const oldConn = (await a.store.getCall(wacid))?.conn as string;
    const back = await agentClient(b.url, 'agent1', { tab: 'tab-quick', available: false });
    // The same page on a new socket holds the call now (the old socket's loss must not end it).
    await until('the call held on the new socket', async () => ((await a.store.getCall(wacid))?.conn !== oldConn ? true : undefined), 5_000);
    const boss = await supervisor();
    const monitorId = idOf(await boss.request({ type: 'monitor.start', wacid, mode: 'whisper' }));
    expect(await back.next('monitor.started', (m) => m.monitorId === monitorId)).toMatchObject({ side: 'agent', wacid });
    old.ws.terminate();
    await until('the old socket closed on the server', async () => ((await a.store.get(`conn-live:${oldConn}`)) === null ? true : undefined), 10_000);
    await sleep(300);
    expect(monitorFrames(old)).toEqual([]);
    expect(monitorFrames(boss).filter((m) => m.type === 'monitor.ended')).toEqual([]);
    await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/hangup`, {});
    expect(await boss.next('monitor.ended', (m) => m.monitorId === monitorId, 8_000)).toMatchObject({ reason: 'call-ended' });
    await host.closePeer(wacid);
    back.close();
    boss.close();
  }, 60_000);
});
