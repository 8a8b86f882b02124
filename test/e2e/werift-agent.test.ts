/**
 * An agent that is a program — signaling over the WebSocket, media in Node
 * with werift (test/e2e/werift-agent.ts), no browser anywhere — goes available, answers the
 * emulator's werift caller, holds (the caller hears hold music, packets keep flowing),
 * resumes, hangs up and wraps up with a disposition; the history record has the hold time
 * and the disposition. Who hears what is told apart by frequency: the caller plays 400 Hz,
 * the agent 730 Hz, the hold music is the pages' tune.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServerMsg } from '../../shared/protocol.ts';
import { HOLD_TUNE_HZ } from '../../web-agent/src/hold-music.ts';
import { agentClient, emulatorCall, emulatorRequest, startBridge, until, type Bridge, type ProtocolClient } from './harness.ts';
import { AGENT_HZ, WeriftAgent } from './werift-agent.ts';

const WRAP_UP_MS = 30_000; // the wrap-up comes from the agent, not the countdown
const CALLER_HZ = 400; // the emulator caller's default tone
const TUNE = [...new Set(HOLD_TUNE_HZ)];
/** A 0.25–0.3 tone arrives at ~0.25 after Opus; an absent one measures ≤ 0.002. */
const HEARD = 0.05;
const SILENT = 0.01;

let b: Bridge;
let agent: ProtocolClient;
let peer: WeriftAgent | undefined;

beforeAll(async () => {
  b = await startBridge({ history: true, agents: ['agent1'], env: { WRAP_UP_MS: String(WRAP_UP_MS) } });
  agent = await agentClient(b.url, 'agent1', { available: false });
}, 60_000);
afterAll(async () => {
  await peer?.close();
  agent?.close();
  await b?.close();
});

/** What the emulator's caller heard in the last `ms`: level per frequency (AGENT_HZ, then TUNE). */
async function callerHears(wacid: string, ms: number): Promise<{ voice: number; tune: number[]; blocks: number }> {
  const r = await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(wacid)}/hears?hz=${[AGENT_HZ, ...TUNE].join(',')}&ms=${ms}`);
  const levels = r.levels as number[];
  return { voice: levels[0]!, tune: levels.slice(1), blocks: r.blocks as number };
}
const callerPackets = async (wacid: string) => (await emulatorCall(b.emu, wacid)).media?.packetsReceived ?? 0;

type AgentState = Extract<ServerMsg, { type: 'agent.state' }>;

describe('a werift program agent over the protocol', () => {
  it('available → answers → holds (music, packets flowing) → resumes → hangs up → wraps up; media both ways; history has hold time and disposition', async () => {
    const i = agent.received.length;
    expect(await agent.request({ type: 'presence.set', status: 'available' })).toMatchObject({ type: 'ack' });
    const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', {})).wacid as string;
    const offer = await agent.next('call.offered', (m) => m.wacid === wacid, 10_000, i);

    // Answer: a complete answer SDP from werift, then audio only after the ack (accept's 200).
    peer = await WeriftAgent.answer(offer.sdp);
    expect(await agent.request({ type: 'call.answer', wacid, sdp: peer.sdp })).toMatchObject({ type: 'ack', wacid });
    peer.speak();
    await peer.connected(15_000);
    expect((await emulatorCall(b.emu, wacid)).earlyPackets).toBe(0);

    // Media both ways, a second of it (11 blocks of 85 ms): the caller hears the agent's
    // voice; the agent hears the caller's tone.
    await until('the caller hears the agent', async () => {
      const h = await callerHears(wacid, 1000);
      return h.voice > HEARD && h.blocks >= 10;
    }, 15_000);
    await until('the agent hears the caller', () => {
      const h = peer!.peer.hears([CALLER_HZ], 1000);
      return h.levels[0]! > HEARD && h.blocks >= 10;
    }, 15_000);
    expect(peer.stats().packetsReceived).toBeGreaterThan(40);

    // Hold: the music replaces the voice on the same stream; packets keep flowing.
    const held = await agent.request({ type: 'call.hold', wacid });
    expect(held).toMatchObject({ type: 'ack', heldSince: expect.any(Number) });
    const heldSince = (held as { heldSince?: number }).heldSince!;
    peer.hold();
    const packetsAtHold = await callerPackets(wacid);
    const notes = new Set<number>();
    await until(
      'the caller hears three notes of the hold tune for at least a second',
      async () => {
        const h = await callerHears(wacid, 300);
        const loudest = Math.max(...h.tune);
        if (loudest > HEARD) notes.add(TUNE[h.tune.indexOf(loudest)]!);
        return notes.size >= 3 && Date.now() - heldSince >= 1_200;
      },
      20_000,
    );
    // Long enough into the hold that the last 300 ms is all music: the voice is gone.
    expect((await callerHears(wacid, 300)).voice).toBeLessThan(SILENT);
    expect(await callerPackets(wacid)).toBeGreaterThan(packetsAtHold + 25);

    const resumed = await agent.request({ type: 'call.resume', wacid });
    expect(resumed).toMatchObject({ type: 'ack', holdMs: expect.any(Number) });
    const holdMs = (resumed as { holdMs?: number }).holdMs!;
    expect(holdMs).toBeGreaterThanOrEqual(1_000);
    peer.resume();
    await until('the caller hears the agent again, not the music', async () => {
      const h = await callerHears(wacid, 300);
      return h.voice > HEARD && Math.max(...h.tune) < SILENT;
    }, 15_000);

    // Hang up, then wrap up with a disposition and notes.
    expect(await agent.request({ type: 'call.hangup', wacid })).toMatchObject({ type: 'ack' });
    await agent.next('agent.state', (m) => m.status === 'after-call-work' && m.wacid === wacid, 10_000, i);
    await peer.close();
    expect(await agent.request({ type: 'call.wrapup', wacid, disposition: 'Follow-up needed', notes: 'call back Friday' })).toMatchObject({ type: 'ack' });
    await until('available again', () => agent.received.slice(i).filter((m): m is AgentState => m.type === 'agent.state').at(-1)?.status === 'available', 5_000);
    const states = agent.received.slice(i).filter((m): m is AgentState => m.type === 'agent.state').map((m) => m.status);
    expect(states).toEqual(['available', 'ringing', 'on-call', 'after-call-work', 'available']);

    // The Service side ended the call as a normal hangup by the business (no media error).
    const ended = await until('the emulator ends the call', async () => {
      const c = await emulatorCall(b.emu, wacid);
      return c.state === 'ended' ? c : undefined;
    }, 10_000);
    expect(ended.terminate).toMatchObject({ status: 'COMPLETED', reason: 'BUSINESS_HANGUP' });
    expect(ended.terminate!.errors).toBeUndefined();

    const store = b.sb.history!.store;
    const rec = await until('history has the wrap-up and the hold time', async () => {
      const r = await store.getCall(wacid);
      return r?.disposition === 'Follow-up needed' && r.holdMs !== undefined ? r : undefined;
    }, 15_000);
    expect(rec).toMatchObject({ agent: 'agent1', outcome: 'answered', disposition: 'Follow-up needed', notes: 'call back Friday', holdMs });
  }, 120_000);
});
