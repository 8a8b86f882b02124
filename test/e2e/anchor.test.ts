/**
 * Anchor mode (MEDIA_MODE=anchor), end to end with real parts only: a private Janus 1.1.2
 * (AudioBridge) in a network namespace this test makes, the bridge on loopback, the
 * emulator's werift caller (it offers every address of this machine, the veth's host end
 * included, and answers only checks from its links: Janus reaches it over the veth) and a
 * werift program agent whose leg joins the room through the WebSocket signalling only.
 *
 * Asserted: the business SDP sent with preAccept and with accept is Janus's answer, byte for
 * byte (non-trickle, Opus only, SHA-256, Janus's own address in its candidates); the agent
 * gets an offer for its own leg after answering; the caller hears the agent's voice and the
 * agent hears the caller's tone, through the room's mix, measured by energy per frequency;
 * the room is destroyed when the call ends. Figures are printed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromRecord } from '../../server/calls/record.ts';
import { createNetns, type Netns } from '../support/netns.ts';
import { JanusApi, startJanus, type TestJanus } from '../support/janus.ts';
import { agentClient, emulatorCall, emulatorRequest, startBridge, until, type Bridge, type ProtocolClient } from './harness.ts';
import { AGENT_HZ, WeriftAgent } from './werift-agent.ts';
import { PAGE_LEFT_CLOSE, type ServerMsg } from '../../shared/protocol.ts';

const CALLER_HZ = 400; // the emulator caller's default tone
/** A 0.25–0.3 tone arrives at ~0.25 after Opus; an absent one measures ≤ 0.002. */
const HEARD = 0.05;

let ns: Netns;
let janus: TestJanus;
let control: JanusApi;
let b: Bridge;
let agent: ProtocolClient;
const peers: WeriftAgent[] = [];
const clients: ProtocolClient[] = [];

beforeAll(async () => {
  ns = await createNetns();
  janus = await startJanus(ns);
  control = await JanusApi.connect(janus.url);
  b = await startBridge({ agents: ['agent1', 'agent2'], env: { MEDIA_MODE: 'anchor', JANUS_URLS: janus.url, WRAP_UP_MS: 'off' } });
  agent = await agentClient(b.url, 'agent1');
}, 60_000);
afterAll(async () => {
  for (const p of peers) await p.close();
  for (const c of clients) c.close();
  agent?.close();
  await b?.close();
  control?.close();
  await janus?.close();
  await ns?.close();
});

async function rooms(): Promise<number[]> {
  const h = await control.attach();
  const list = (await control.message(h, { request: 'list' })).plugindata!.data.list as Array<{ room: number }>;
  await control.request({ janus: 'detach', handle_id: h });
  return list.map((r) => r.room);
}

async function callerHears(wacid: string, ms: number): Promise<{ voice: number; blocks: number }> {
  const r = await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(wacid)}/hears?hz=${AGENT_HZ}&ms=${ms}`);
  return { voice: (r.levels as number[])[0]!, blocks: r.blocks as number };
}

describe('anchor mode: the caller held in a Janus room, a werift program agent joins it', () => {
  it("the business SDP of preAccept and accept is Janus's answer, byte-identical; the agent's leg is offered on answer; audio both ways through the room; the room is destroyed after", async () => {
    const i = agent.received.length;
    const tConnect = Date.now();
    const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', {})).wacid as string;
    const offered = await agent.next('call.offered', (m) => m.wacid === wacid, 10_000, i);
    expect(offered.media).toBe('anchor');
    const ringMs = Date.now() - tConnect;

    // The call has its room (made at the connect event, on the one Janus).
    const roomed = await until('the call has a room', async () => {
      const r = await b.store.getCall(wacid);
      const c = r ? fromRecord(r) : undefined;
      return c?.anchor ? c : undefined;
    }, 5_000);
    expect(roomed.anchor!.janus).toBe(janus.url);
    expect(await rooms()).toContain(roomed.anchor!.room);

    // Answer (no SDP in anchor mode): the leg offer comes to this connection; the ack after accept.
    const tAnswer = Date.now();
    const answered = agent.request({ type: 'call.answer', wacid }, 20_000);
    const legOffer = await agent.next('call.legOffer', (m) => m.wacid === wacid, 10_000, i);
    const legOfferMs = Date.now() - tAnswer;
    const peer = await WeriftAgent.answer(legOffer.sdp, { network: 'machine' });
    peers.push(peer);
    expect(await agent.request({ type: 'call.legAnswer', wacid, sdp: peer.sdp })).toMatchObject({ type: 'ack' });
    expect(await answered).toMatchObject({ type: 'ack', wacid, startedAt: expect.any(Number) });
    const acceptedMs = Date.now() - tAnswer;
    peer.speak();
    await peer.connected(15_000);
    const agentConnectedMs = Date.now() - tAnswer;

    // The caller joined once the agent's leg was there; Janus's answer is on the record.
    const rec = fromRecord((await b.store.getCall(wacid))!);
    const janusAnswer = rec.answerSdp!;
    // Janus's: complete (non-trickle), its only address (the namespace's), Opus only, SHA-256.
    expect(janusAnswer).toMatch(new RegExp(`^a=candidate:.* ${ns.nsAddress.replace(/\./g, '\\.')} \\d+ typ host`, 'm'));
    expect(janusAnswer).toMatch(/^a=end-of-candidates/m);
    expect(janusAnswer).toMatch(/^a=rtpmap:\d+ opus\/48000\/2/m);
    expect(janusAnswer).not.toMatch(/telephone-event|PCMU|PCMA/);
    expect(janusAnswer).toMatch(/^a=fingerprint:sha-256 /m);
    // preAccept and accept carried Janus's answer, byte for byte.
    const sent = await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(wacid)}/answers`);
    expect(sent.preAccept).toBe(janusAnswer);
    expect(sent.accept).toBe(janusAnswer);

    // Audio both ways through the room's mix: first heard (a 200 ms window), then a second of it.
    await until('the caller first hears the agent', async () => (await callerHears(wacid, 200)).voice > HEARD, 15_000);
    const callerFirstHeardMs = Date.now() - tAnswer;
    let voice = 0;
    await until('the caller hears the agent through the room', async () => {
      const h = await callerHears(wacid, 1000);
      voice = h.voice;
      return h.voice > HEARD && h.blocks >= 10;
    }, 15_000);
    const callerHeardMs = Date.now() - tAnswer;
    let tone = 0;
    await until('the agent hears the caller through the room', () => {
      const h = peer.peer.hears([CALLER_HZ], 1000);
      tone = h.levels[0]!;
      return tone > HEARD && h.blocks >= 10;
    }, 15_000);
    const emu = await emulatorCall(b.emu, wacid);
    console.log(
      `anchor e2e: connect → ring ${ringMs} ms; answer → leg offer ${legOfferMs} ms, → accepted (ack) ${acceptedMs} ms, → agent leg connected ${agentConnectedMs} ms, → caller first hears the agent ${callerFirstHeardMs} ms (a full second of it by ${callerHeardMs} ms); ` +
        `caller's first packet from the room ${emu.media?.firstReceivedAt !== undefined && emu.acceptedAt !== undefined ? `${emu.media.firstReceivedAt - emu.acceptedAt} ms after accept` : 'unknown'}; levels: caller hears the agent at ${voice.toFixed(3)} (${AGENT_HZ} Hz), the agent hears the caller at ${tone.toFixed(3)} (${CALLER_HZ} Hz); caller packets before accept: ${emu.earlyPackets}`,
    );

    // Hang up: the call ends at the Service and its room is destroyed.
    expect(await agent.request({ type: 'call.hangup', wacid })).toMatchObject({ type: 'ack' });
    const ended = await until('the emulator ends the call', async () => {
      const c = await emulatorCall(b.emu, wacid);
      return c.state === 'ended' ? c : undefined;
    }, 10_000);
    expect(ended.terminate).toMatchObject({ status: 'COMPLETED', reason: 'BUSINESS_HANGUP' });
    expect(ended.terminate!.errors).toBeUndefined();
    await until('the room is destroyed', async () => !(await rooms()).includes(roomed.anchor!.room), 5_000);
  }, 90_000);

  it("the call outlives the agent's page: the page is reloaded mid-call, the caller stays in the room, the new page rejoins and audio flows again — same call, never dropped", async () => {
    // This call rings agent2 (agent1 steps away).
    expect(await agent.request({ type: 'presence.set', status: 'away', reason: 'Break' })).toMatchObject({ type: 'ack' });
    const page1 = await agentClient(b.url, 'agent2', { tab: 'tab-before-reload' });
    clients.push(page1);
    const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', {})).wacid as string;
    await page1.next('call.offered', (m) => m.wacid === wacid, 10_000).catch(async (err: Error) => {
      throw new Error(`${err.message}; the call: ${JSON.stringify(await b.store.getCall(wacid))}`);
    });
    const answered = page1.request({ type: 'call.answer', wacid }, 20_000);
    const legOffer = await page1.next('call.legOffer', (m) => m.wacid === wacid, 10_000);
    const leg1 = await WeriftAgent.answer(legOffer.sdp, { network: 'machine' });
    peers.push(leg1);
    expect(await page1.request({ type: 'call.legAnswer', wacid, sdp: leg1.sdp })).toMatchObject({ type: 'ack' });
    expect(await answered).toMatchObject({ type: 'ack', wacid });
    leg1.speak();
    await leg1.connected(15_000);
    await until('the caller hears the agent', async () => (await callerHears(wacid, 300)).voice > HEARD, 15_000);
    const room = fromRecord((await b.store.getCall(wacid))!).anchor!.room;

    // The reload: the page leaves (its pagehide close) and its audio goes with it.
    const tGone = Date.now();
    page1.ws.close(PAGE_LEFT_CLOSE, 'page left');
    await page1.closed;
    await leg1.close();
    const packetsAtLoss = (await emulatorCall(b.emu, wacid)).media?.packetsReceived ?? 0;
    await new Promise((r) => setTimeout(r, 1000));
    const away = await emulatorCall(b.emu, wacid);
    expect(away.state).toBe('active'); // the caller was not dropped
    const packetsWhileAway = (away.media?.packetsReceived ?? 0) - packetsAtLoss;
    const recAway = fromRecord((await b.store.getCall(wacid))!);
    expect(recAway).toMatchObject({ state: 'active', agent: 'agent2' });
    expect(recAway.recoverBy).toBeGreaterThan(Date.now());

    // The new page (a new tab id): the call is in its welcome; it rejoins the same room.
    const page2 = await agentClient(b.url, 'agent2', { tab: 'tab-after-reload', available: false });
    clients.push(page2);
    const welcome = page2.received.find((m) => m.type === 'welcome') as Extract<ServerMsg, { type: 'welcome' }>;
    expect(welcome.calls.map((c) => c.wacid)).toContain(wacid);
    const tRejoin = Date.now();
    expect(await page2.request({ type: 'call.rejoin', wacid })).toMatchObject({ type: 'ack' });
    const offer2 = await page2.next('call.legOffer', (m) => m.wacid === wacid, 10_000);
    const leg2 = await WeriftAgent.answer(offer2.sdp, { network: 'machine' });
    peers.push(leg2);
    expect(await page2.request({ type: 'call.legAnswer', wacid, sdp: leg2.sdp })).toMatchObject({ type: 'ack' });
    leg2.speak();
    await leg2.connected(15_000);
    await until('the caller hears the agent again', async () => (await callerHears(wacid, 200)).voice > HEARD, 15_000);
    const backMs = Date.now() - tGone;
    const rejoinMs = Date.now() - tRejoin;
    await until('the new leg hears the caller', () => leg2.peer.hears([CALLER_HZ], 300).levels[0]! > HEARD, 10_000);
    const rec = fromRecord((await b.store.getCall(wacid))!);
    expect(rec).toMatchObject({ state: 'active', agent: 'agent2', anchor: { room } });
    expect(rec.recoverBy).toBeUndefined();
    console.log(`anchor reload: page gone → caller hears the agent again ${backMs} ms (rejoin → heard ${rejoinMs} ms); caller packets from the room while the agent was away (1 s): ${packetsWhileAway}`);
    expect(backMs).toBeLessThan(5_000);

    expect(await page2.request({ type: 'call.hangup', wacid })).toMatchObject({ type: 'ack' });
    const ended = await until('the emulator ends the call', async () => {
      const c = await emulatorCall(b.emu, wacid);
      return c.state === 'ended' ? c : undefined;
    }, 10_000);
    expect(ended.terminate).toMatchObject({ status: 'COMPLETED', reason: 'BUSINESS_HANGUP' });
    await until('the room is destroyed', async () => !(await rooms()).includes(room), 5_000);
  }, 90_000);

  it("the agent's page does not come back within AGENT_RECOVERY_MS: the call rings the next agent, who joins the same room and talks to the same caller; history shows both agents on one call", async () => {
    const other = await startBridge({ agents: ['agent3', 'agent4'], history: true, env: { MEDIA_MODE: 'anchor', JANUS_URLS: janus.url, AGENT_RECOVERY_MS: '1500', WRAP_UP_MS: 'off' } });
    try {
      const page = await agentClient(other.url, 'agent3', { tab: 'tab-closed-for-good' });
      const next = await agentClient(other.url, 'agent4', { available: false });
      const wacid = (await emulatorRequest(other.emu, 'POST', '/calls', {})).wacid as string;
      await page.next('call.offered', (m) => m.wacid === wacid, 10_000);
      const answered = page.request({ type: 'call.answer', wacid }, 20_000);
      const offer = await page.next('call.legOffer', (m) => m.wacid === wacid, 10_000);
      const leg = await WeriftAgent.answer(offer.sdp, { network: 'machine' });
      peers.push(leg);
      expect(await page.request({ type: 'call.legAnswer', wacid, sdp: leg.sdp })).toMatchObject({ type: 'ack', });
      expect(await answered).toMatchObject({ type: 'ack', wacid });
      leg.speak();
      await leg.connected(15_000);
      const room = fromRecord((await other.store.getCall(wacid))!).anchor!.room;
      // agent3's page goes for good; agent4 becomes available meanwhile.
      const tGone = Date.now();
      page.ws.close(PAGE_LEFT_CLOSE, 'page left');
      await leg.close();
      expect(await next.request({ type: 'presence.set', status: 'available' })).toMatchObject({ type: 'ack' });
      const offered = await next.next('call.offered', (m) => m.wacid === wacid, 10_000);
      const offeredMs = Date.now() - tGone;
      expect(offeredMs).toBeGreaterThanOrEqual(1_400);
      expect(offered.media).toBe('anchor');
      expect((await emulatorCall(other.emu, wacid)).state).toBe('active'); // the caller never dropped
      // agent4 answers: acked at once (the Service accepted the call long ago), then its own leg into the same room.
      const i = next.received.length;
      expect(await next.request({ type: 'call.answer', wacid }, 10_000)).toMatchObject({ type: 'ack', wacid });
      const offer2 = await next.next('call.legOffer', (m) => m.wacid === wacid, 10_000, i);
      const leg2 = await WeriftAgent.answer(offer2.sdp, { network: 'machine', hz: 1230 });
      peers.push(leg2);
      expect(await next.request({ type: 'call.legAnswer', wacid, sdp: leg2.sdp })).toMatchObject({ type: 'ack' });
      leg2.speak();
      await leg2.connected(15_000);
      // The same caller hears agent4 (its 1230 Hz) and agent4 hears the caller, through the same room.
      await until('the caller hears the next agent', async () => {
        const r = await emulatorRequest(other.emu, 'GET', `/calls/${encodeURIComponent(wacid)}/hears?hz=1230&ms=300`);
        return (r.levels as number[])[0]! > HEARD ? true : undefined;
      }, 15_000);
      await until('the next agent hears the caller', () => (leg2.peer.hears([CALLER_HZ], 300).levels[0]! > HEARD ? true : undefined), 10_000);
      const talkingMs = Date.now() - tGone;
      expect(fromRecord((await other.store.getCall(wacid))!)).toMatchObject({ state: 'active', agent: 'agent4', anchor: { room }, legs: ['agent3', 'agent4'] });
      expect((await emulatorRequest(other.emu, 'GET', `/calls/${encodeURIComponent(wacid)}/answers`)).accept).toBeDefined();
      console.log(`anchor handoff: page gone for good → the next agent rings after ${offeredMs} ms (AGENT_RECOVERY_MS 1500), → talks to the same caller after ${talkingMs} ms`);
      expect(await next.request({ type: 'call.hangup', wacid })).toMatchObject({ type: 'ack' });
      await until('the emulator ends the call', async () => ((await emulatorCall(other.emu, wacid)).state === 'ended' ? true : undefined), 10_000);
      // History: one call, both agents on its timeline (the handoff, then agent4's answer); agent4 held it last.
      const h = await until('history has the call with both agents', async () => {
        const d = await other.sb.history!.store.getCall(wacid);
        return d && d.timeline.some((t) => t.event === 'handoff') && d.timeline.some((t) => t.event === 'answer' && t.detail?.agent === 'agent4') ? d : undefined;
      }, 15_000);
      expect(h.agent).toBe('agent4');
      expect(h.timeline.filter((t) => t.event === 'answer').map((t) => t.detail?.agent)).toEqual(['agent3', 'agent4']);
      expect(h.timeline.find((t) => t.event === 'handoff')?.detail).toMatchObject({ agent: 'agent3' });
      await until('the room is destroyed', async () => !(await rooms()).includes(room), 5_000);
    } finally {
      await other.close();
    }
  }, 60_000);

  it("the sweep destroys rooms of ours whose call is over or unknown (a crashed node's), and leaves other rooms alone", async () => {
    const h = await control.attach();
    const make = async (room: number, description: string) => expect((await control.message(h, { request: 'create', room, description })).plugindata!.data.audiobridge).toBe('created');
    await make(910001, 'sb:wacid.never-stored');
    await make(910002, 'someone else\'s room');
    expect(await rooms()).toEqual(expect.arrayContaining([910001, 910002]));
    expect(await b.sb.engine.sweepRooms()).toBe(1);
    const left = await rooms();
    expect(left).not.toContain(910001);
    expect(left).toContain(910002);
    await control.message(h, { request: 'destroy', room: 910002 });
  }, 30_000);

  it("without a reachable Janus the call is refused at the Service, saying why; readiness names Janus", async () => {
    const other = await startBridge({ agents: ['agent1'], env: { MEDIA_MODE: 'anchor', JANUS_URLS: 'ws://127.0.0.1:9' } });
    try {
      const ready = await fetch(`${other.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.text()).toContain('janus');
      const wacid = (await emulatorRequest(other.emu, 'POST', '/calls', {})).wacid as string;
      const ended = await until('the emulator ends the call', async () => {
        const c = await emulatorCall(other.emu, wacid);
        return c.state === 'ended' ? c : undefined;
      }, 10_000);
      expect(ended.terminate?.status).toBe('FAILED');
      const rec = fromRecord((await other.store.getCall(wacid))!);
      expect(rec.reason).toMatch(/^media anchor unavailable: no Janus server of JANUS_URLS is reachable/);
    } finally {
      await other.close();
    }
  }, 30_000);
});
