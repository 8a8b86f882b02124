/**
 * Warm transfer (consult) and conference in anchor mode, end to end: a private Janus, werift
 * program agents on the WebSocket protocol, the emulator's werift caller (transfer-rig.ts).
 * Who hears whom is checked at every step by energy per frequency; the caller never hears the
 * consult (music meanwhile, or the conference's other agents).
 */
import { describe, expect, it } from 'vitest';
import { until } from './harness.ts';
import { HEARD, QUIET, transferRig, type AgentName, type Levels } from './transfer-rig.ts';
import type { WeriftAgent } from './werift-agent.ts';
import type { ProtocolClient } from './harness.ts';

const rig = transferRig();

/** Waits until the caller hears exactly `voices` (and the music when named), nobody else. */
async function callerHearsOnly(wacid: string, voices: ReadonlyArray<keyof Levels>, what: string): Promise<void> {
  let last: Levels | undefined;
  await until(what, async () => {
    const l = (last = await rig.callerHears(wacid, 400));
    return (Object.keys(l) as Array<keyof Levels>).every((k) => (voices.includes(k) ? l[k] > HEARD : l[k] < QUIET));
  }, 8_000).catch((err: Error) => {
    throw new Error(`${err.message}; last heard ${JSON.stringify(last)}`);
  });
}

/** Waits until an agent's leg hears exactly `voices` (the caller and other agents). */
async function agentHearsOnly(peer: WeriftAgent, self: AgentName, voices: ReadonlyArray<AgentName | 'caller'>, what: string): Promise<void> {
  let last: Record<string, number> | undefined;
  await until(what, () => {
    const l = (last = rig.agentHears(peer, 400));
    return (Object.keys(l) as Array<AgentName | 'caller'>).filter((k) => k !== self).every((k) => (voices.includes(k) ? l[k] > HEARD : l[k] < QUIET));
  }, 8_000).catch((err: Error) => {
    throw new Error(`${err.message}; last heard ${JSON.stringify(last)}`);
  });
}

/** agent1 talking to the caller consults `target`, who joins the consult room. */
async function consult(a1: ProtocolClient, wacid: string, target: ProtocolClient, name: AgentName, note?: string): Promise<WeriftAgent> {
  const j = target.received.length;
  const started = await a1.request({ type: 'call.transfer', wacid, mode: 'warm', to: { agent: name }, ...(note ? { note } : {}) });
  expect(started, JSON.stringify(started) + JSON.stringify(target.received.filter((m) => m.type !== 'ping' && m.type !== 'welcome'))).toMatchObject({ type: 'ack' });
  const offered = await target.next('call.offered', (m) => m.wacid === wacid, 10_000, j);
  expect(offered.transfer).toEqual({ by: 'agent1', consult: true, ...(note ? { note } : {}) });
  return rig.answer(target, name, wacid, j);
}

describe('warm transfer (anchor mode, program agents)', () => {
  it('consult then complete: the caller hears music while the agents talk privately, then the target; the first agent leaves', async () => {
    const a1 = await rig.agent('agent1');
    const { wacid, peer: p1 } = await rig.talking(a1, 'agent1'); // before the others connect: the call rings agent1 only
    const a2 = await rig.agent('agent2');

    const p2 = await consult(a1, wacid, a2, 'agent2', 'wants a refund');
    await agentHearsOnly(p1, 'agent1', ['agent2'], 'agent1 hears agent2 only (the consult)');
    await agentHearsOnly(p2, 'agent2', ['agent1'], 'agent2 hears agent1 only (the consult)');
    await callerHearsOnly(wacid, ['music'], 'the caller hears music, never the consult');
    const during = await a1.next('call.state', (m) => m.wacid === wacid && m.consult?.phase === 'talking', 5_000);
    expect(during.consult).toEqual({ by: 'agent1', target: 'agent2', phase: 'talking' });

    const t0 = Date.now();
    expect(await a1.request({ type: 'call.transfer', wacid, action: 'complete' })).toMatchObject({ type: 'ack' });
    await until('the caller hears agent2', async () => (await rig.callerHears(wacid, 200)).agent2 > HEARD, 8_000);
    const heardMs = Date.now() - t0;
    await callerHearsOnly(wacid, ['agent2'], 'the caller hears agent2 only');
    await agentHearsOnly(p2, 'agent2', ['caller'], 'agent2 hears the caller only');
    await agentHearsOnly(p1, 'agent1', [], 'agent1 hears nobody (left)');
    const after = await a2.next('call.state', (m) => m.wacid === wacid && m.agent === 'agent2' && m.consult === undefined, 5_000);
    expect(after.state).toBe('active');
    console.log(`warm transfer: complete → the caller hears agent2 ${heardMs} ms`);

    expect(await a2.request({ type: 'call.hangup', wacid })).toMatchObject({ type: 'ack' });
    await until('the rooms are destroyed', async () => (await rig.rooms()) === 0, 10_000);
  }, 90_000);

  it('consult then cancel: back to the caller; the target leaves', async () => {
    const a1 = await rig.agent('agent1');
    const { wacid, peer: p1 } = await rig.talking(a1, 'agent1'); // before the others connect: the call rings agent1 only
    const a2 = await rig.agent('agent2');
    const p2 = await consult(a1, wacid, a2, 'agent2');
    await agentHearsOnly(p1, 'agent1', ['agent2'], 'agent1 hears agent2 only (the consult)');
    await callerHearsOnly(wacid, ['music'], 'the caller hears music, never the consult');

    expect(await a1.request({ type: 'call.transfer', wacid, action: 'cancel' })).toMatchObject({ type: 'ack' });
    await callerHearsOnly(wacid, ['agent1'], 'the caller hears agent1 again, no music');
    await agentHearsOnly(p1, 'agent1', ['caller'], 'agent1 hears the caller only');
    await agentHearsOnly(p2, 'agent2', [], 'agent2 hears nobody (left)');
    expect(await a1.request({ type: 'call.hangup', wacid })).toMatchObject({ type: 'ack' });
    await until('the rooms are destroyed', async () => (await rig.rooms()) === 0, 10_000);
  }, 90_000);

  it('conference of three, one leaving: everyone hears everyone; the caller is never alone; the rest talk on', async () => {
    const a1 = await rig.agent('agent1');
    const { wacid, peer: p1 } = await rig.talking(a1, 'agent1'); // before the others connect: the call rings agent1 only
    const a2 = await rig.agent('agent2');
    const a3 = await rig.agent('agent3');

    const p2 = await consult(a1, wacid, a2, 'agent2');
    await agentHearsOnly(p2, 'agent2', ['agent1'], 'agent2 hears agent1 only (the consult)');
    expect(await a1.request({ type: 'call.transfer', wacid, action: 'conference' })).toMatchObject({ type: 'ack' });
    await callerHearsOnly(wacid, ['agent1', 'agent2'], 'the caller hears agent1 and agent2');
    await agentHearsOnly(p2, 'agent2', ['agent1', 'caller'], 'agent2 hears agent1 and the caller');

    // A third: agent1 consults agent3 while agent2 stays with the caller (no music then).
    const p3 = await consult(a1, wacid, a3, 'agent3');
    await agentHearsOnly(p3, 'agent3', ['agent1'], 'agent3 hears agent1 only (the consult)');
    await callerHearsOnly(wacid, ['agent2'], 'the caller hears agent2, not the consult');
    expect(await a1.request({ type: 'call.transfer', wacid, action: 'conference' })).toMatchObject({ type: 'ack' });
    await callerHearsOnly(wacid, ['agent1', 'agent2', 'agent3'], 'the caller hears all three');
    await agentHearsOnly(p3, 'agent3', ['agent1', 'agent2', 'caller'], 'agent3 hears everyone');
    const conf = await a1.next('call.state', (m) => m.wacid === wacid && m.conference?.length === 2, 5_000);
    expect(conf).toMatchObject({ agent: 'agent1', conference: ['agent2', 'agent3'] });

    // agent2 leaves; the others talk on with the caller.
    expect(await a2.request({ type: 'call.hangup', wacid })).toMatchObject({ type: 'ack' });
    await callerHearsOnly(wacid, ['agent1', 'agent3'], 'the caller hears agent1 and agent3, no longer agent2');
    await agentHearsOnly(p1, 'agent1', ['agent3', 'caller'], 'agent1 hears agent3 and the caller');
    await agentHearsOnly(p2, 'agent2', [], 'agent2 hears nobody (left)');
    // The holder leaves: agent3 holds the call, alone with the caller; its hangup ends it.
    expect(await a1.request({ type: 'call.hangup', wacid })).toMatchObject({ type: 'ack' });
    await callerHearsOnly(wacid, ['agent3'], 'the caller hears agent3');
    await a3.next('call.state', (m) => m.wacid === wacid && m.agent === 'agent3' && (m.conference ?? []).length === 0, 5_000);
    expect(await a3.request({ type: 'call.hangup', wacid })).toMatchObject({ type: 'ack' });
    await until('the rooms are destroyed', async () => (await rig.rooms()) === 0, 10_000);

    // History: each consult and conference join, and each leaving, with who was on the call after it.
    const timeline = await rig.timeline(wacid, 'agent3');
    const legs = timeline.filter((t) => t.event === 'transferAction' || t.event === 'hangup').map((t) => `${t.event} ${String(t.detail?.action ?? t.detail?.agent)} → ${(t.detail?.legs as string[] | undefined)?.join('+')}`);
    expect(legs).toEqual(['transferAction conference → agent1+agent2', 'transferAction conference → agent1+agent2+agent3', 'hangup agent2 → agent1+agent3', 'hangup agent1 → agent3', 'hangup agent3 → undefined']);
  }, 120_000);
});
