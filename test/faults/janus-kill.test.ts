/**
 * Fault: several Janus servers, one killed (`kill -9`) during calls (MEDIA_MODE=anchor).
 * Two private Janus processes in one network namespace, the bridge with history, the
 * emulator's werift callers and werift program agents joining the rooms through the
 * WebSocket signalling. Calls spread over both (least loaded); then one Janus dies.
 *
 * Asserted: the calls on the survivor go on untouched (still active at the Service, the
 * caller still hears its agent, no terminate sent); the lost ones end cleanly within 10 s
 * with a reason (terminate at the Service, the record and history say why); a new call goes
 * to the survivor and talks; readiness names the dead Janus; after the room sweep the
 * survivor holds exactly the live calls' rooms.
 *
 * Quick: 3 calls on each Janus; FAULTS_SIZE=full: 20 on each.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromRecord } from '../../server/calls/record.ts';
import { JanusApi, startJanus, type TestJanus } from '../support/janus.ts';
import { createNetns, type Netns } from '../support/netns.ts';
import { agentClient, emulatorCall, emulatorRequest, startBridge, until, type Bridge, type ProtocolClient } from '../e2e/harness.ts';
import { WeriftAgent } from '../e2e/werift-agent.ts';
import { printCounts, size } from './support.ts';

const PER_JANUS = size(3, 20);
const AGENT_HZ = 730;
const HEARD = 0.05;

let ns: Netns;
let janus: TestJanus[];
let b: Bridge;
let agents: ProtocolClient[];
const peers: WeriftAgent[] = [];

beforeAll(async () => {
  ns = await createNetns();
  janus = await Promise.all([startJanus(ns, { port: 8188, rtpPorts: '20000-24999' }), startJanus(ns, { port: 8189, rtpPorts: '25000-29999' })]);
  const names = Array.from({ length: 2 * PER_JANUS + 1 }, (_, i) => `agent${i + 1}`);
  b = await startBridge({ agents: names, history: true, env: { MEDIA_MODE: 'anchor', JANUS_URLS: janus.map((j) => j.url).join(','), WRAP_UP_MS: 'off' } });
  agents = await Promise.all(names.map((n) => agentClient(b.url, n)));
}, 120_000);
afterAll(async () => {
  for (const p of peers) await p.close();
  for (const a of agents ?? []) a.close();
  await b?.close();
  for (const j of janus ?? []) await j.close();
  await ns?.close();
}, 60_000);

/** A call answered by whichever agent it rang, with a werift leg into its room, the agent speaking. */
async function talkingCall(): Promise<{ wacid: string; janus: string; agent: ProtocolClient; leg: WeriftAgent }> {
  const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', {})).wacid as string;
  const agent = await Promise.any(agents.map((a) => a.next('call.offered', (m) => m.wacid === wacid, 15_000).then(() => a)));
  const i = agent.received.length;
  const answered = agent.request({ type: 'call.answer', wacid }, 20_000);
  const offer = await agent.next('call.legOffer', (m) => m.wacid === wacid, 10_000, i);
  const leg = await WeriftAgent.answer(offer.sdp, { network: 'machine', hz: AGENT_HZ });
  peers.push(leg);
  expect(await agent.request({ type: 'call.legAnswer', wacid, sdp: leg.sdp })).toMatchObject({ type: 'ack' });
  expect(await answered).toMatchObject({ type: 'ack', wacid });
  leg.speak();
  await leg.connected(15_000);
  const rec = fromRecord((await b.store.getCall(wacid))!);
  return { wacid, janus: rec.anchor!.janus, agent, leg };
}

async function callerHears(wacid: string): Promise<number> {
  const r = await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(wacid)}/hears?hz=${AGENT_HZ}&ms=400`);
  return (r.levels as number[])[0]!;
}

async function roomsOf(url: string): Promise<number[]> {
  const api = await JanusApi.connect(url);
  try {
    const h = await api.attach();
    return ((await api.message(h, { request: 'list' })).plugindata!.data.list as Array<{ room: number }>).map((r) => r.room);
  } finally {
    api.close();
  }
}

describe('fault: one of two Janus servers is killed during calls', () => {
  it(`${PER_JANUS} calls on each; kill -9 one: the survivor's calls go on, the lost ones end within 10 s saying why, new calls go to the survivor, readiness names the dead one, no orphan rooms`, async () => {
    const calls = [];
    for (let i = 0; i < 2 * PER_JANUS; i++) calls.push(await talkingCall());
    const [dead, alive] = janus as [TestJanus, TestJanus];
    const lost = calls.filter((c) => c.janus === dead.url);
    const kept = calls.filter((c) => c.janus === alive.url);
    // Least loaded placement: the calls are spread evenly.
    expect(lost.length).toBe(PER_JANUS);
    expect(kept.length).toBe(PER_JANUS);
    for (const c of kept) await until(`${c.wacid}: the caller hears its agent`, async () => ((await callerHears(c.wacid)) > HEARD ? true : undefined), 10_000);

    const tKill = Date.now();
    await dead.crash();
    // The lost calls end cleanly at the Service (the business terminated them) within 10 s, saying why.
    const endedMs: number[] = [];
    await Promise.all(
      lost.map(async (c) => {
        const e = await until(`${c.wacid}: ended at the Service`, async () => {
          const x = await emulatorCall(b.emu, c.wacid);
          return x.state === 'ended' ? x : undefined;
        }, 12_000);
        endedMs.push(Date.now() - tKill);
        expect(e.terminate).toMatchObject({ reason: 'BUSINESS_HANGUP' });
      }),
    );
    expect(Math.max(...endedMs)).toBeLessThan(10_000);
    for (const c of lost) {
      const rec = await until('the record ended', async () => {
        const r = fromRecord((await b.store.getCall(c.wacid))!);
        return r.state === 'ended' ? r : undefined;
      }, 10_000);
      expect(rec.reason!.startsWith(`media server lost: ${dead.url} `)).toBe(true);
      expect(rec.reason).toMatch(/^media server lost: \S+ not answering for \d+ s/);
    }
    // History says why.
    const h = await until('history has the lost call with its reason', async () => {
      const d = await b.sb.history!.store.getCall(lost[0]!.wacid);
      return d?.endReason?.startsWith('media server lost:') ? d : undefined;
    }, 15_000);
    expect(h.endReason).toContain(dead.url);

    // The survivor's calls: untouched (active, no terminate, the caller still hears its agent).
    for (const c of kept) {
      const e = await emulatorCall(b.emu, c.wacid);
      expect(e.state).toBe('active');
      expect(e.terminate).toBeUndefined();
      expect(await callerHears(c.wacid)).toBeGreaterThan(HEARD);
      expect(fromRecord((await b.store.getCall(c.wacid))!)).toMatchObject({ state: 'active' });
    }

    // Readiness: ready (a Janus answers), the dead one named.
    const ready = await fetch(`${b.url}/readyz`);
    expect(ready.status).toBe(200);
    const body = (await ready.json()) as { checks: Record<string, string> };
    expect(body.checks['janus-servers']).toBe(`degraded: not reachable: ${dead.url}`);

    // A new call goes to the survivor and talks.
    const fresh = await talkingCall();
    expect(fresh.janus).toBe(alive.url);
    await until('the new caller hears its agent', async () => ((await callerHears(fresh.wacid)) > HEARD ? true : undefined), 10_000);

    // No orphan rooms: after the sweep the survivor holds exactly the live calls' rooms.
    await b.sb.engine.sweepRooms();
    const live = await Promise.all([...kept, fresh].map(async (c) => fromRecord((await b.store.getCall(c.wacid))!).anchor!.room));
    expect((await roomsOf(alive.url)).sort()).toEqual(live.sort());
    printCounts('janus-kill', { onEach: PER_JANUS, lostEnded: lost.length, lostEndedMaxMs: Math.max(...endedMs), survivorsActive: kept.length, newCallOn: 'survivor' });
  }, 300_000);
});
