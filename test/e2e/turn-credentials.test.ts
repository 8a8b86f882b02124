/**
 * TURN credentials on the socket, with protocol clients: each agent's and
 * supervisor's `welcome` carries STUN/TURN servers with credentials minted for that user
 * (coturn REST: `<expiry>:<user>`, HMAC-SHA1 of it with TURN_SECRET), renewed with
 * `ice.servers` at half their life for as long as the socket lives; an ops user's pages make
 * no peer connections and get none. `call.path` from the call's holder reaches supervisors
 * and history; from anyone else it is refused.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ServerMsg } from '../../shared/protocol.ts';
import { ProtocolClient, agentClient, login, sleep } from './harness.ts';
import { programSuite } from './suite.ts';

const suite = programSuite();
const SECRET = 'turn-secret-for-the-e2e-0123456789';
const ENV = { ICE_SERVERS: 'stun:turn.example.com:3478,turn:turn.example.com:3478?transport=udp', TURN_SECRET: SECRET };

const turnOf = (m: { iceServers: Array<{ urls: string[]; username?: string; credential?: string }> }) => m.iceServers.find((s) => s.urls.some((u) => u.startsWith('turn')))!;

describe('TURN credentials over the socket', () => {
  it("welcome carries the user's own minted credential; ice.servers renews it at half its life; ops gets none", async () => {
    const b = await suite.startBridge({ agents: ['agent1'], supervisors: ['boss'], env: ENV, iceTtlS: 2 });
    const t0 = Date.now();
    const a = suite.track(await agentClient(b.url, 'agent1', { available: false }));
    const welcome = a.received.find((m): m is Extract<ServerMsg, { type: 'welcome' }> => m.type === 'welcome')!;
    expect(welcome.ice?.iceTransportPolicy).toBe('all');
    expect(welcome.ice?.iceServers[0]).toEqual({ urls: ['stun:turn.example.com:3478'] });
    const first = turnOf(welcome.ice!);
    expect(first.username).toMatch(/^\d+:agent1$/);
    const expiry = Number(first.username!.split(':')[0]);
    expect(expiry * 1000).toBeGreaterThanOrEqual(t0 + 1_000);
    expect(expiry * 1000).toBeLessThanOrEqual(Date.now() + 2_000);
    expect(first.credential).toBe(createHmac('sha1', SECRET).update(first.username!).digest('base64'));
    // Renewed on the socket: twice within ~2.5 s at a 2 s life.
    const r1 = await a.next('ice.servers', undefined, 3_000);
    const r2 = await a.next('ice.servers', (m) => m !== r1, 3_000);
    const [u1, u2] = [turnOf(r1).username!, turnOf(r2).username!];
    expect(Number(u1.split(':')[0])).toBeGreaterThanOrEqual(expiry);
    expect(Number(u2.split(':')[0])).toBeGreaterThan(expiry);
    expect(r2.expiresAt).toBeGreaterThan(welcome.ice!.expiresAt!);
    // Another user, another credential; nobody's frames carry the secret.
    const boss = suite.track(await agentClient(b.url, 'boss', { available: false }));
    const bossTurn = turnOf(boss.received.find((m): m is Extract<ServerMsg, { type: 'welcome' }> => m.type === 'welcome')!.ice!);
    expect(bossTurn.username).toMatch(/^\d+:boss$/);
    expect(JSON.stringify(a.received)).not.toContain(bossTurn.credential!);
    expect(JSON.stringify([...a.received, ...boss.received])).not.toContain(SECRET);
    // Ops: no peer connections, no TURN credentials.
    const ops = suite.track(new ProtocolClient(b.url, await login(b.url, 'ops')));
    const opsWelcome = await ops.next('welcome');
    expect(opsWelcome.ice).toBeUndefined();
  }, 30_000);

  it("call.path: only the call's holder may report it; supervisors see it on the call and history keeps it", async () => {
    const b = await suite.startBridge({ agents: ['agent1', 'agent2'], supervisors: ['boss'], history: true });
    const boss = suite.track(await agentClient(b.url, 'boss', { available: false }));
    const a1 = suite.track(await agentClient(b.url, 'agent1'));
    const a2 = suite.track(await agentClient(b.url, 'agent2', { available: false }));
    const wacid = (await suite.control('POST', '/calls', { audio: 'tone' })).wacid as string;
    const offer = await a1.next('call.offered', (m) => m.wacid === wacid);
    const host = await suite.peerHost();
    const sdp = await host.answer(wacid, offer.sdp);
    expect(await a1.request({ type: 'call.answer', wacid, sdp })).toMatchObject({ type: 'ack' });
    expect(await a2.request({ type: 'call.path', wacid, path: 'direct' })).toMatchObject({ type: 'error', code: 'FORBIDDEN' });
    expect(await a1.request({ type: 'call.path', wacid, path: 'relay-tcp' })).toMatchObject({ type: 'ack' });
    const seen = await boss.next('call.state', (m) => m.wacid === wacid && m.path === 'relay-tcp');
    expect(seen.agent).toBe('agent1');
    expect(await a1.request({ type: 'call.path', wacid, path: 'relay-tcp' })).toMatchObject({ type: 'ack' }); // a repeat: nothing new
    await suite.control('POST', `/calls/${encodeURIComponent(wacid)}/hangup`);
    await a1.next('call.state', (m) => m.wacid === wacid && m.state === 'ended');
    const cookie = await login(b.url, 'boss');
    let rec: { networkPath?: string } | undefined;
    for (let i = 0; i < 100 && rec?.networkPath === undefined; i++) {
      const r = await fetch(`${b.url}/api/history/calls/${encodeURIComponent(wacid)}`, { headers: { cookie } });
      if (r.ok) rec = (await r.json()) as { networkPath?: string };
      if (rec?.networkPath === undefined) await sleep(100);
    }
    expect(rec?.networkPath).toBe('relay-tcp');
    expect(await a1.request({ type: 'call.path', wacid, path: 'direct' })).toMatchObject({ type: 'error', code: 'CONFLICT' }); // the call is over
  }, 60_000);
});
