/**
 * ONE node SIGKILLed and restarted on the same Redis. Before the kill an
 * agent is on an active call and another agent's desk rings with a second call. After the
 * restart (the real `server/main.ts`, a fresh process: nothing in memory), from Redis alone:
 * - the busy agent's `welcome` carries the active call, its state is `on-call` and its
 *   presence what it chose (`available`), not the new-process default `away`;
 * - the call that rang at the moment of the kill rings the other agent again (its `welcome`
 *   offer, or a new `call.offered`) and is answered inside the accept window;
 * - a third call is never offered to an agent who is on a call.
 * Counts come from the frames and the Service's call records.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { ServerMsg } from '../../shared/protocol.ts';
import { hashPassword } from '../../server/auth/users.ts';
import { AudioPeer, startEmulator } from '../emulator/index.ts';
import { PASSWORD, agentClient, emulatorCall, emulatorRequest, sleep, until, type ProtocolClient } from '../e2e/harness.ts';
import { freePort, startRedis } from '../support/redis.ts';
import { printCounts } from './support.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function startNode(port: number, env: Record<string, string>): Promise<ChildProcess> {
  const p = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  cleanups.push(() => void p.kill('SIGKILL'));
  await until(`node on ${port} healthy`, async () => (await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))?.ok, 60_000, 200);
  return p;
}

type Welcome = Extract<ServerMsg, { type: 'welcome' }>;

describe('one node killed and restarted on the same Redis', () => {
  it("rebuilds every agent's view from Redis: the active call in welcome, busy agents not offered, the ringing call offered again", async () => {
    const redis = await startRedis();
    cleanups.push(() => redis.close());
    const dir = mkdtempSync(join(tmpdir(), 'sb-noderestart-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const hash = await hashPassword(PASSWORD);
    writeFileSync(join(dir, 'users.json'), JSON.stringify({ users: ['agent1', 'agent2'].map((name) => ({ name, roles: ['agent'], passwordHash: hash })) }));
    const secret = `whsec_${randomBytes(16).toString('hex')}`;
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const windowMs = 30_000;
    const emu = await startEmulator({ webhookSecret: secret, acceptWindowMs: windowMs, webhookEndpoints: [{ url: `${url}/webhooks/service`, secret }] });
    cleanups.push(() => emu.close());
    const env = {
      SERVICE_BASE_URL: emu.baseUrl,
      SERVICE_API_KEY: emu.apiKey,
      SERVICE_WEBHOOK_SECRETS: secret,
      SESSION_SECRET: randomBytes(24).toString('base64url'),
      USERS_FILE: join(dir, 'users.json'),
      REDIS_URL: redis.url,
      RING_TIMEOUT_MS: '15000',
      ACCEPT_WINDOW_MS: String(windowMs),
      WRAP_UP_MS: 'off',
      LOG_LEVEL: 'warn',
      DATA_DIR: dir,
    };
    const node = await startNode(port, env);

    const first: Record<string, ProtocolClient> = { agent1: await agentClient(url, 'agent1'), agent2: await agentClient(url, 'agent2') };
    for (const c of Object.values(first)) cleanups.push(() => c.close());
    const offerTo = (wacid: string) =>
      Promise.any(Object.entries(first).map(async ([name, c]) => ({ name, offer: await c.next('call.offered', (m) => m.wacid === wacid, 10_000) })));

    // Call A: answered, active at the Service.
    const callA = (await emulatorRequest(emu, 'POST', '/calls', {})).wacid as string;
    const a = await offerTo(callA);
    const busy = a.name;
    const free = busy === 'agent1' ? 'agent2' : 'agent1';
    const { peer: peerA, sdp: sdpA } = await AudioPeer.answerer(a.offer.sdp);
    cleanups.push(() => peerA.close());
    expect(await first[busy]!.request({ type: 'call.answer', wacid: callA, sdp: sdpA })).toMatchObject({ type: 'ack' });
    await until('call A active at the Service', async () => ((await emulatorCall(emu, callA)).state === 'active' ? true : undefined), 10_000);

    // Call B: rings the free agent at the moment of the kill.
    const callB = (await emulatorRequest(emu, 'POST', '/calls', {})).wacid as string;
    await first[free]!.next('call.offered', (m) => m.wacid === callB, 10_000);

    const killedAt = Date.now();
    node.kill('SIGKILL');
    await Promise.all(Object.values(first).map((c) => c.closed));
    await startNode(port, env);
    const restartedMs = Date.now() - killedAt;

    // The busy agent comes back: its desk must show the call it is on (a page takes its presence from welcome).
    const busyAgain = await agentClient(url, busy, { available: false });
    cleanups.push(() => busyAgain.close());
    const wBusy = (await busyAgain.next('welcome')) as Welcome;
    const activeInWelcome = wBusy.calls.some((c) => c.wacid === callA && c.state === 'active');

    // The other agent comes back: the call that rang at the kill rings again.
    const freeAgain = await agentClient(url, free, { available: false });
    cleanups.push(() => freeAgain.close());
    const wFree = (await freeAgain.next('welcome')) as Welcome;
    const inWelcome = wFree.calls.find((c) => c.wacid === callB && c.state === 'ringing' && c.sdp);
    const sdpB = inWelcome?.sdp ?? (await freeAgain.next('call.offered', (m) => m.wacid === callB, windowMs - (Date.now() - killedAt)).then((m) => m.sdp, () => undefined));
    const reofferedMs = Date.now() - killedAt;
    let answeredB = false;
    if (sdpB) {
      const { peer: peerB, sdp } = await AudioPeer.answerer(sdpB);
      cleanups.push(() => peerB.close());
      const r = await freeAgain.request({ type: 'call.answer', wacid: callB, sdp });
      answeredB = r.type === 'ack';
    }
    const eB = await emulatorCall(emu, callB);

    // Call C: both agents are on calls now; neither may be offered it.
    const callC = (await emulatorRequest(emu, 'POST', '/calls', {})).wacid as string;
    await sleep(3000);
    const offeredC = [busyAgain, freeAgain].filter((c) => c.received.some((m) => m.type === 'call.offered' && m.wacid === callC)).length;
    const offeredBusyB = busyAgain.received.some((m) => m.type === 'call.offered' && m.wacid === callB) ? 1 : 0;
    const eA = await emulatorCall(emu, callA);

    printCounts('node-restart', {
      restartedAfterMs: restartedMs,
      activeCallInWelcome: activeInWelcome ? 1 : 0,
      busyWelcomeState: wBusy.agentState?.status ?? 'none',
      busyWelcomePresence: wBusy.presence,
      ringingCallReofferedAfterMs: sdpB ? reofferedMs : -1,
      reofferedIn: inWelcome ? 'welcome' : sdpB ? 'call.offered' : 'never',
      ringingCallAnswered: answeredB && eB.state === 'active' ? 1 : 0,
      offersToBusyAgents: offeredC + offeredBusyB,
      callAAtService: eA.state,
    });
    expect(activeInWelcome).toBe(true);
    expect(wBusy.agentState?.status).toBe('on-call');
    expect(wBusy.presence).toBe('available');
    expect(sdpB).toBeDefined();
    expect(answeredB).toBe(true);
    expect(eB.state).toBe('active');
    expect(eB.acceptedAt! - eB.dialTime).toBeLessThan(windowMs);
    // What each agent's socket got after the restart (the counts line may be cut from a CI log): which call was offered to whom, and when it was on a call.
    const frames = (c: ProtocolClient) => c.received.map((m) => [m.type, 'wacid' in m ? (m.wacid === callA ? 'A' : m.wacid === callB ? 'B' : m.wacid === callC ? 'C' : m.wacid) : '', 'state' in m ? m.state : 'status' in m ? m.status : ''].filter(Boolean).join(':'));
    expect(offeredC + offeredBusyB, JSON.stringify({ busy, free, busyFrames: frames(busyAgain), freeFrames: frames(freeAgain), restartedMs, reofferedMs })).toBe(0);
    expect(eA.state).toBe('active');
  }, 150_000);
});
