/**
 * Routing and liveness through the real bridge, agents as ws programs: who rings, in which
 * order, what happens on decline, ring timeout, several tabs, reconnect and dead sockets.
 * Connect events are signed webhooks posted to the real receiver.
 */
import { describe, expect, it } from 'vitest';
import { ProtocolClient, agentClient, fakeConnect, login, postEvent, sleep } from './harness.ts';
import { programSuite } from './suite.ts';

const suite = programSuite();

describe('routing', () => {
  it('the longest-idle available agent rings first; a decline rings the next agent', async () => {
    const b = await suite.startBridge({ agents: ['agent1', 'agent2'] });
    const a1 = suite.track(await agentClient(b.url, 'agent1'));
    await sleep(30);
    const a2 = suite.track(await agentClient(b.url, 'agent2'));
    const wacid = `w-decline-${Date.now()}`;
    await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(wacid));
    await a1.next('call.offered', (m) => m.wacid === wacid);
    expect(a2.received.some((m) => m.type === 'call.offered')).toBe(false);
    expect(await a1.request({ type: 'call.decline', wacid })).toMatchObject({ type: 'ack' });
    await a1.next('call.revoked', (m) => m.wacid === wacid);
    const offer2 = await a2.next('call.offered', (m) => m.wacid === wacid);
    expect(offer2.deadline).toBeGreaterThan(Date.now());
    // and the agent who declined is not offered it again
    await sleep(200);
    expect(a1.received.filter((m) => m.type === 'call.offered' && m.wacid === wacid)).toHaveLength(1);
  });

  it('a ring timeout moves the call to the next agent and sets the silent agent away', async () => {
    const b = await suite.startBridge({ agents: ['agent1', 'agent2'], env: { RING_TIMEOUT_MS: '1000' } });
    const a1 = suite.track(await agentClient(b.url, 'agent1'));
    await sleep(30);
    const a2 = suite.track(await agentClient(b.url, 'agent2'));
    const wacid = `w-timeout-${Date.now()}`;
    const t0 = Date.now();
    await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(wacid));
    await a1.next('call.offered', (m) => m.wacid === wacid);
    const revoked = await a1.next('call.revoked', (m) => m.wacid === wacid, 5000);
    expect(revoked.reason).toBe('not answered');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(950);
    await a1.next('presence', (m) => m.presence === 'away');
    // The page and the supervisors are told why: away, "Missed a call".
    await a1.next('agent.state', (m) => m.status === 'away' && m.reason === 'Missed a call', 3000);
    await a2.next('call.offered', (m) => m.wacid === wacid, 3000);
  });

  it('a caller who hangs up while it rings frees the agent: the next call rings the same agent', async () => {
    const b = await suite.startBridge({ agents: ['agent1'] });
    const a1 = suite.track(await agentClient(b.url, 'agent1'));
    const first = `w-gone-${Date.now()}`;
    await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(first));
    await a1.next('call.offered', (m) => m.wacid === first);
    await postEvent(b, 'chat.call.terminate', 'callingTerminate', { wacid: first, phoneId: 'phone-1', status: 'FAILED', duration: 0 });
    await a1.next('call.revoked', (m) => m.wacid === first);
    await a1.next('agent.state', (m) => m.status === 'available', 5000);
    const second = `w-next-${Date.now()}`;
    await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(second));
    await a1.next('call.offered', (m) => m.wacid === second, 5000);
  });

  it('with nobody available the call waits, then rings the first agent who becomes available', async () => {
    const b = await suite.startBridge({ agents: ['agent1'] });
    const a1 = suite.track(await agentClient(b.url, 'agent1', { available: false }));
    const wacid = `w-wait-${Date.now()}`;
    await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(wacid));
    await sleep(300);
    expect(await b.store.getCall(wacid)).toMatchObject({ state: 'queued' });
    expect(await a1.request({ type: 'presence.set', status: 'available' })).toMatchObject({ type: 'ack' });
    await a1.next('call.offered', (m) => m.wacid === wacid, 3000);
  });

  it('a terminate before its connect leaves a tombstone: the late connect never rings', async () => {
    const b = await suite.startBridge({ agents: ['agent1'] });
    const a1 = suite.track(await agentClient(b.url, 'agent1'));
    const wacid = `w-tomb-${Date.now()}`;
    await postEvent(b, 'chat.call.terminate', 'callingTerminate', { wacid, phoneId: 'phone-1', status: 'FAILED', duration: 0 });
    await sleep(300);
    await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(wacid));
    await sleep(500);
    expect(a1.received.some((m) => m.type === 'call.offered')).toBe(false);
    expect(await b.store.getCall(wacid)).toMatchObject({ state: 'ended', tombstone: true });
  });
});

describe('tabs, reconnects and dead sockets', () => {
  it('several tabs of one agent ring together, and a decline on one stops them all', async () => {
    const b = await suite.startBridge({ agents: ['agent1'] });
    const tab1 = suite.track(await agentClient(b.url, 'agent1'));
    const tab2 = suite.track(await agentClient(b.url, 'agent1'));
    const wacid = `w-tabs-${Date.now()}`;
    await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(wacid));
    await tab1.next('call.offered', (m) => m.wacid === wacid);
    await tab2.next('call.offered', (m) => m.wacid === wacid);
    expect(await tab2.request({ type: 'call.decline', wacid })).toMatchObject({ type: 'ack' });
    await tab1.next('call.revoked', (m) => m.wacid === wacid);
    await tab2.next('call.revoked', (m) => m.wacid === wacid);
  });

  it('presence set in one tab shows in the other tabs', async () => {
    const b = await suite.startBridge({ agents: ['agent1'] });
    const tab1 = suite.track(await agentClient(b.url, 'agent1', { available: false }));
    const tab2 = suite.track(await agentClient(b.url, 'agent1', { available: false }));
    await tab1.request({ type: 'presence.set', status: 'available' });
    await tab2.next('presence', (m) => m.presence === 'available');
  });

  it('a socket closed while ringing reconnects within the grace and gets the offer replayed in welcome', async () => {
    const b = await suite.startBridge({ agents: ['agent1', 'agent2'] });
    const a1 = suite.track(await agentClient(b.url, 'agent1'));
    const wacid = `w-replay-${Date.now()}`;
    await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(wacid));
    await a1.next('call.offered', (m) => m.wacid === wacid);
    a1.ws.terminate();
    await a1.closed;
    const again = suite.track(new ProtocolClient(b.url, await login(b.url, 'agent1')));
    await again.opened;
    const welcome = await again.next('welcome');
    expect(welcome.presence).toBe('available');
    const replayed = welcome.calls.find((c) => c.wacid === wacid);
    expect(replayed).toMatchObject({ state: 'ringing', agent: 'agent1' });
    expect(replayed?.sdp).toContain('v=0');
  });

  it("a socket that stops answering pings is cut within 10 s, and its agent's ringing call moves to the next agent", async () => {
    const b = await suite.startBridge({ agents: ['agent1', 'agent2'], reconnectGraceMs: 500, env: { RING_TIMEOUT_MS: '60000', ACCEPT_WINDOW_MS: '60000' } });
    // agent1 is a half-open socket: it never answers pings (no pong) and sends nothing.
    const zombie = suite.track(new ProtocolClient(b.url, await login(b.url, 'agent1'), { respondToPings: false }));
    await zombie.opened;
    await zombie.next('welcome');
    await zombie.request({ type: 'presence.set', status: 'available' });
    const silentSince = Date.now();
    await sleep(30);
    const a2 = suite.track(await agentClient(b.url, 'agent2'));
    const wacid = `w-zombie-${Date.now()}`;
    await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(wacid));
    await zombie.next('call.offered', (m) => m.wacid === wacid);
    await zombie.closed;
    expect(Date.now() - silentSince).toBeLessThanOrEqual(10_000);
    await a2.next('call.offered', (m) => m.wacid === wacid, 3000);
  }, 20_000);
});
