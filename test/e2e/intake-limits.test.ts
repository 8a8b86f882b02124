/**
 * Intake refuses what the pages would refuse (shared/limits.ts): a connect event with a
 * 257-character wacid or a 70 KB SDP, signed and posted to the real receiver of a running
 * bridge (workers + call engine), is dead-lettered with the field and the rule and counted;
 * no call is created or offered, no agent is set away, and every frame the agent and the
 * supervisor receive passes the pages' schema (`parseServerMsg`, as web-agent/ does).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServerMsg } from '../../shared/protocol.ts';
import { agentClient, fakeConnect, login, postEvent, sleep, startBridge, until, type Bridge, type ProtocolClient } from './harness.ts';

let b: Bridge;
beforeAll(async () => {
  // A short ring timeout: were the bad call offered, the agent would be set away within the test.
  b = await startBridge({ agents: ['agent1'], supervisors: ['boss'], policy: { ringTimeoutMs: 1000 } });
});
afterAll(async () => {
  await b?.close();
});

/** Every raw text frame a client receives, checked later with the browser's parser. */
function rawFrames(c: ProtocolClient): string[] {
  const raw: string[] = [];
  c.ws.prependListener('message', (d) => raw.push(String(d)));
  return raw;
}

describe('intake limits', () => {
  it('a 257-character wacid and a 70 KB SDP are dead-lettered naming the field and rule, counted; no call, no offer, no agent set away, no frame the pages refuse', async () => {
    const agent = await agentClient(b.url, 'agent1');
    const boss = await agentClient(b.url, 'boss', { available: false });
    const agentRaw = rawFrames(agent);
    const bossRaw = rawFrames(boss);

    const longWacid = `wacid.${'x'.repeat(251)}`;
    expect(longWacid.length).toBe(257);
    const bigSdpWacid = `wacid.bigsdp.${Date.now()}`;
    expect(await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(longWacid))).toBe(200);
    expect(await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(bigSdpWacid, { sdp: `v=0\r\n${'a=x\r\n'.repeat(14 * 1024)}` }))).toBe(200);

    const ops = await login(b.url, 'ops');
    type Dead = { type: string; error: string; body: string };
    let dead: Dead[] = [];
    await until('two dead letters', async () => {
      const r = await fetch(`${b.url}/api/ops/dead-letters`, { headers: { cookie: ops } });
      dead = ((await r.json()) as { items: Dead[] }).items;
      return dead.length >= 2;
    }, 10_000);
    const errors = dead.map((d) => d.error).sort();
    expect(errors).toEqual([
      'chat.call.connect: callingConnect.sdp: must be at most 60000 characters',
      'chat.call.connect: callingConnect.wacid: must be at most 256 characters',
    ]);

    const metrics = await (await fetch(`${b.url}/metrics`)).text();
    expect(metrics).toMatch(/switchboard_webhook_dead_lettered_total\{type="chat\.call\.connect"\} 2\b/);

    // Past the ring timeout: nothing was offered, nobody was set away, no call exists.
    await sleep(1500);
    const calls = (await (await fetch(`${b.url}/api/calls`, { headers: { cookie: await login(b.url, 'boss') } })).json()) as { items: unknown[] };
    expect(calls.items).toEqual([]);
    expect(await b.store.getCall(longWacid)).toBeNull();
    expect(await b.store.getCall(bigSdpWacid)).toBeNull();
    expect(agent.received.filter((m) => m.type === 'call.offered' || m.type === 'presence' || m.type === 'call.state')).toEqual([]);
    expect(boss.received.filter((m) => m.type === 'call.state')).toEqual([]);

    // A supervisor page opened now is welcomed with a frame it understands, and a good call still rings.
    const late = await agentClient(b.url, 'boss', { available: false });
    const lateRaw = rawFrames(late);
    const wacid = `wacid.good.${Date.now()}`;
    expect(await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(wacid))).toBe(200);
    await agent.next('call.offered', (m) => m.wacid === wacid);
    await late.next('call.state', (m) => m.wacid === wacid);

    for (const raw of [...agentRaw, ...bossRaw, ...lateRaw]) {
      const r = parseServerMsg(raw);
      expect(r.ok, `a frame the pages refuse: ${raw.slice(0, 200)}`).toBe(true);
    }
    agent.close();
    boss.close();
    late.close();
  });
});
