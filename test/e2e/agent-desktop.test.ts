/**
 * The agent desktop through the protocol alone: a program agent goes available,
 * answers, holds, resumes, hangs up and wraps up; its state goes to its tabs and to the
 * supervisors on every change; no call rings during after-call work until the disposition
 * (or the countdown's `Not set`); the wrap-up is in history (with the hold time) and, with
 * CONTACT_NOTES, a note on the customer's contact at the emulator.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServerMsg } from '../../shared/protocol.ts';
import { agentClient, emulatorRequest, login, sleep, startBridge, until, type Bridge, type ProtocolClient } from './harness.ts';
import { PeerHost } from './program-agent.ts';

const WRAP_UP_MS = 4_000;
let b: Bridge;
let host: PeerHost;
let agent: ProtocolClient;
let boss: ProtocolClient;
/** The first test call's caller and wacid (the customer panel test reads them back). */
let customer: { from: string; wacid: string } | undefined;

beforeAll(async () => {
  b = await startBridge({ history: true, agents: ['agent1'], env: { WRAP_UP_MS: String(WRAP_UP_MS), CONTACT_NOTES: 'on' } });
  boss = await agentClient(b.url, 'boss', { available: false });
  agent = await agentClient(b.url, 'agent1', { available: false });
  host = await PeerHost.start(b.url);
}, 60_000);
afterAll(async () => {
  agent?.close();
  boss?.close();
  await host?.close();
  await b?.close();
});

type AgentStateFrame = Extract<ServerMsg, { type: 'agent.state' }>;
const statesAfter = (c: ProtocolClient, from: number) => c.received.slice(from).filter((m): m is AgentStateFrame => m.type === 'agent.state').map((m) => m.status);
const bossStatesAfter = (from: number) =>
  boss.received.slice(from).filter((m): m is Extract<ServerMsg, { type: 'agents.state' }> => m.type === 'agents.state' && m.name === 'agent1').map((m) => m.status);

async function ringAndAnswer(): Promise<{ wacid: string; from: string }> {
  const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', {})).wacid as string;
  const offer = await agent.next('call.offered', (m) => m.wacid === wacid, 8_000);
  const sdp = await host.answer(wacid, offer.sdp);
  expect(await agent.request({ type: 'call.answer', wacid, sdp })).toMatchObject({ type: 'ack', wacid });
  await host.unmute(wacid);
  await host.connectedAt(wacid);
  return { wacid, from: offer.from };
}

describe('agent desktop over the protocol', () => {
  it('welcome carries the state, the dispositions and the away reasons; away needs a listed reason', async () => {
    const w = agent.received.find((m) => m.type === 'welcome') as Extract<ServerMsg, { type: 'welcome' }>;
    expect(w.agentState).toMatchObject({ status: 'away' });
    expect(w.dispositions).toEqual(['Resolved', 'Follow-up needed', 'Wrong number', 'Escalated', 'Other']);
    expect(w.awayReasons).toEqual(['Break', 'Lunch', 'Training', 'Meeting']);
    expect(await agent.request({ type: 'presence.set', status: 'away', reason: 'Nap' })).toMatchObject({ type: 'error', code: 'BAD_REQUEST', message: expect.stringMatching(/^reason: must be one of Break/) });
    const i = agent.received.length;
    const j = boss.received.length;
    expect(await agent.request({ type: 'presence.set', status: 'away', reason: 'Lunch' })).toMatchObject({ type: 'ack' });
    await agent.next('agent.state', (m) => m.status === 'away' && m.reason === 'Lunch', 3_000, i);
    await boss.next('agents.state', (m) => m.name === 'agent1' && m.status === 'away' && m.reason === 'Lunch', 3_000, j);
  });

  it('available → ringing → on-call → hold → resume → hang up → after-call work → wrap-up: pushed to the agent and supervisors; history has hold time and disposition; the contact has a note', async () => {
    const i = agent.received.length;
    const j = boss.received.length;
    expect(await agent.request({ type: 'presence.set', status: 'available' })).toMatchObject({ type: 'ack' });
    const { wacid, from } = await ringAndAnswer();
    await emulatorRequest(b.emu, 'POST', `${b.emu.baseUrl}/contact/contacts`, { phoneNumber: from, remarkName: 'Ann', tags: ['vip'] });
    customer = { from, wacid };

    const held = await agent.request({ type: 'call.hold', wacid });
    expect(held).toMatchObject({ type: 'ack', heldSince: expect.any(Number) });
    await boss.next('call.state', (m) => m.wacid === wacid && m.heldSince !== undefined, 3_000, j);
    await sleep(700);
    const resumed = await agent.request({ type: 'call.resume', wacid });
    expect(resumed.type).toBe('ack');
    const holdMs = (resumed as { holdMs?: number }).holdMs!;
    expect(holdMs).toBeGreaterThanOrEqual(600);
    await boss.next('call.state', (m) => m.wacid === wacid && m.heldSince === undefined && m.holdMs === holdMs, 3_000, j);

    // Still on the call: no wrap-up yet.
    expect(await agent.request({ type: 'call.wrapup', wacid, disposition: 'Resolved' })).toMatchObject({ type: 'error', code: 'CONFLICT' });
    expect(await agent.request({ type: 'call.hangup', wacid })).toMatchObject({ type: 'ack' });
    const acw = await agent.next('agent.state', (m) => m.status === 'after-call-work', 8_000, i);
    expect(acw).toMatchObject({ wacid, until: expect.any(Number) });
    expect(acw.until! - acw.since).toBe(WRAP_UP_MS);
    await host.closePeer(wacid);

    expect(await agent.request({ type: 'call.wrapup', wacid, disposition: 'Fine' })).toMatchObject({ type: 'error', code: 'BAD_REQUEST', message: expect.stringMatching(/^disposition: must be one of/) });
    expect(await agent.request({ type: 'call.wrapup', wacid, disposition: 'Escalated', notes: 'wants a manager' })).toMatchObject({ type: 'ack' });
    await agent.next('agent.state', (m) => m.status === 'available', 3_000, i);
    expect(statesAfter(agent, i)).toEqual(['available', 'ringing', 'on-call', 'after-call-work', 'available']);
    await until('supervisor sees five states', () => bossStatesAfter(j).length >= 5, 3_000);
    expect(bossStatesAfter(j)).toEqual(['available', 'ringing', 'on-call', 'after-call-work', 'available']);

    const store = b.sb.history!.store;
    await until('history has the wrap-up', async () => (await store.getCall(wacid))?.disposition === 'Escalated' && (await store.getCall(wacid))?.holdMs !== undefined, 10_000);
    expect(await store.getCall(wacid)).toMatchObject({ disposition: 'Escalated', notes: 'wants a manager', holdMs, agent: 'agent1' });
    const notes = await until('the contact note', async () => {
      const r = (await emulatorRequest(b.emu, 'GET', `${b.emu.baseUrl}/contact/contacts/${encodeURIComponent(from)}/notes`)) as { items?: Array<{ content: string; username?: string }> };
      return r.items?.length ? r.items : undefined;
    }, 5_000);
    expect(notes[0]).toMatchObject({ content: `Call ${wacid}: Escalated\nwants a manager`, username: 'agent1' });
  }, 60_000);

  it('no call rings during after-call work until the disposition; More time extends once; the countdown records Not set', async () => {
    const first = await ringAndAnswer();
    expect(await agent.request({ type: 'call.hangup', wacid: first.wacid })).toMatchObject({ type: 'ack' });
    const i = agent.received.length;
    await agent.next('agent.state', (m) => m.status === 'after-call-work' && m.wacid === first.wacid, 8_000);
    await host.closePeer(first.wacid);
    // A second caller waits: after-call work is not over.
    const second = (await emulatorRequest(b.emu, 'POST', '/calls', {})).wacid as string;
    const more = await agent.request({ type: 'agent.moreTime' });
    expect(more).toMatchObject({ type: 'ack', until: expect.any(Number) });
    expect(await agent.request({ type: 'agent.moreTime' })).toMatchObject({ type: 'error', code: 'CONFLICT' });
    await agent.next('agent.state', (m) => m.status === 'after-call-work' && m.extended === true, 3_000, i);
    await sleep(WRAP_UP_MS + 500); // past the first countdown: still extended
    expect(agent.received.slice(i).some((m) => m.type === 'call.offered' && m.wacid === second)).toBe(false);
    // The extended countdown runs out: Not set, available, and the waiting call rings.
    await agent.next('call.offered', (m) => m.wacid === second, WRAP_UP_MS + 5_000, i);
    await until('Not set in history', async () => (await b.sb.history!.store.getCall(first.wacid))?.disposition === 'Not set', 10_000);
    expect(await agent.request({ type: 'call.decline', wacid: second })).toMatchObject({ type: 'ack' });
  }, 60_000);

  it('GET /api/customers/:id: the contact, permission, past calls with disposition and notes, messages, open callbacks; a new customer has no contact', async () => {
    const { from, wacid } = customer!;
    const get = async (who: string, id: string) => {
      const r = await fetch(`${b.url}/api/customers/${encodeURIComponent(id)}`, { headers: { cookie: await login(b.url, who) } });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    };
    const panel = await get('agent1', from);
    expect(panel.status).toBe(200);
    expect(panel.body).toMatchObject({
      id: from,
      contact: { phoneNumber: from, remarkName: 'Ann', tags: ['vip'] },
      permission: { user: from, state: 'unknown' },
      messages: [],
      callbacks: [],
    });
    const calls = panel.body.calls as Array<Record<string, unknown>>;
    expect(calls.find((k) => k.wacid === wacid)).toMatchObject({ agent: 'agent1', outcome: 'answered', disposition: 'Escalated', notes: 'wants a manager' });
    expect((await get('boss', from)).status).toBe(200);
    const fresh = await get('agent1', '+447700900999');
    expect(fresh.status).toBe(200);
    expect(fresh.body.contact).toBeUndefined();
    expect(fresh.body.calls).toEqual([]);
    expect(await get('agent1', 'nobody')).toMatchObject({ status: 400, body: { error: { code: 'BAD_REQUEST', message: expect.stringMatching(/^id: must be an E\.164/) } } });
    expect((await get('ops', from)).status).toBe(403);
  });

  it('the agent closing its last tab shows offline to supervisors after the reconnect grace; a new tab shows its state again', async () => {
    const j = boss.received.length;
    agent.close();
    const off = await boss.next('agents.state', (m) => m.name === 'agent1' && m.status === 'offline', 10_000, j);
    expect(off.since).toBeGreaterThan(0);
    agent = await agentClient(b.url, 'agent1', { available: false });
    const w = agent.received.find((m) => m.type === 'welcome') as Extract<ServerMsg, { type: 'welcome' }>;
    expect(w.agentState?.status).not.toBe('offline');
    await boss.next('agents.state', (m) => m.name === 'agent1' && m.status !== 'offline', 5_000, boss.received.indexOf(off) + 1);
  }, 30_000);
});
