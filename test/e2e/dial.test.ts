/**
 * Business-initiated calls ("callbacks") end to end: a supervisor or agent program dials
 * over the WebSocket (`call.dial` with a real Chromium SDP offer, see program-agent.ts), the
 * bridge asks the emulated Service to connect, the emulator's chat user (a werift peer)
 * answers, declines or lets it ring, and the bridge carries `call.remoteAnswer` and
 * `call.state` back. Permission comes the Service's way: the business sends a
 * `call_permission_request` message and the emulator's user replies to it.
 */
import { describe, expect, it } from 'vitest';
import { createServiceClient } from '../../server/service/index.ts';
import { until, ProtocolClient, agentClient, login, sleep, type Bridge, type BridgeOptions } from './harness.ts';
import type { CallbackTask } from '../../shared/records.ts';
import { programSuite } from './suite.ts';
import type { ServerMsg } from '../../shared/protocol.ts';
import { mediaModes } from './media-modes.ts';

/** The emulator's default business number and its phone id. */
const BUSINESS = '+15550100001';
const PHONE_ID = '100000000000001';

const suite = programSuite({ keepPeerHost: true });
/**
 * Business-initiated calls stay direct in anchor mode (the page's offer goes to the Service):
 * the media case runs on a bridge in each mode (one matrix) to show anchor mode leaves call
 * back's media as it is. The other cases are the dial's signalling, permissions and limits,
 * the same in both modes: direct only, to keep the suite's time.
 */
const modes = mediaModes();

/** A bridge whose emulator takes permission replies and status steps quickly. */
async function bridge(opts: BridgeOptions = {}): Promise<Bridge> {
  const br = await suite.startBridge({ agents: ['agent1'], supervisors: ['boss'], ...opts });
  await suite.control('PATCH', '/messaging/knobs', { stepDelayMs: 20 });
  return br;
}

/**
 * The Service's way to permission: the business sends an interactive
 * `call_permission_request`; the emulator's user replies (accept or reject, per its
 * `permissionReply` knob) with a `chat.inbound_message.received` event. Returns the reply.
 */
async function requestPermission(b: Bridge, user: string): Promise<{ response: string }> {
  const service = createServiceClient({ baseUrl: b.emu.baseUrl, apiKey: b.emu.apiKey });
  await service.messages.requestCallPermission({ from: BUSINESS, to: user, body: 'May we call you back about your order?' });
  return until(`${user}'s permission reply`, async () => {
    const events = (await suite.control('GET', '/events?type=chat.inbound_message.received')).items as Array<Record<string, Record<string, unknown>>>;
    const reply = events
      .map((e) => e.chatInboundMessage)
      .find((m) => m?.from === user && (m.interactive as { type?: string } | undefined)?.type === 'call_permission_reply');
    return reply ? ((reply.interactive as Record<string, unknown>).call_permission_reply as { response: string }) : undefined;
  });
}

/** Dial `to` from the business number with a fresh Chromium peer's offer. */
async function dial(c: ProtocolClient, to: string) {
  const host = await suite.peerHost();
  const key = `dial:${to}:${Math.random()}`;
  const sdp = await host.offer(key);
  const reply = await c.request({ type: 'call.dial', from: BUSINESS, to, sdp });
  return { key, reply };
}

/** The wacid of an acked dial (fails the test with the server's error otherwise). */
function ackedWacid(reply: Extract<ServerMsg, { type: 'ack' | 'error' }>): string {
  if (reply.type !== 'ack') throw new Error(`dial refused: ${reply.code} ${reply.message}`);
  expect(reply.wacid).toMatch(/^wacid\./);
  return reply.wacid as string;
}

const states = (c: ProtocolClient, wacid: string) =>
  c.received.filter((m): m is Extract<ServerMsg, { type: 'call.state' }> => m.type === 'call.state' && m.wacid === wacid).map((m) => m.state);

/** Nothing left live: no unfinished call record, a fresh tab's `welcome` shows no call, the dialer is free. */
async function expectNothingLive(b: Bridge, name: string): Promise<void> {
  await until('no unfinished call in the store', async () => ((await b.store.listCalls()).every((r) => r.state === 'ended') ? true : undefined));
  const fresh = suite.track(await agentClient(b.url, name, { available: false }));
  const welcome = fresh.received.find((m): m is Extract<ServerMsg, { type: 'welcome' }> => m.type === 'welcome');
  expect(welcome?.calls).toEqual([]);
  expect(b.sb.engine.board.view(name).holding).toBeUndefined();
}

/** Dial, apply the remote answer, and wait until the call is active with audio both ways. */
async function connectedCall(c: ProtocolClient, user: string) {
  const { key, reply } = await dial(c, user);
  const wacid = ackedWacid(reply);
  const answer = await c.next('call.remoteAnswer', (m) => m.wacid === wacid, 15_000);
  expect(answer.sdp).toMatch(/^v=0\r\n/);
  expect(answer.sdp).toMatch(/a=fingerprint:sha-256 /);
  await suite.host.applyAnswer(key, answer.sdp);
  const active = await c.next('call.state', (m) => m.wacid === wacid && m.state === 'active', 15_000);
  expect(active).toMatchObject({ direction: 'BUSINESS_INITIATED', from: BUSINESS, to: user });
  expect(active.startedAt).toBeGreaterThan(0);
  // ICE + DTLS up (the emulator's user is ice-lite and DTLS server).
  expect(await suite.host.connectedAt(key, 15_000)).toBeGreaterThan(0);
  await suite.host.unmute(key);
  const media = await until('audio both ways', async () => {
    const e = await suite.emuCall(wacid);
    const mine = await suite.host.inbound(key);
    if (process.env.DEBUG_E2E) console.log(e.state, JSON.stringify(e.media), JSON.stringify(mine));
    return e.state === 'active' && (e.media?.packetsReceived ?? 0) > 20 && (e.media?.audibleFrames ?? 0) > 0 && mine.packetsReceived > 20 && mine.totalAudioEnergy > 0 ? { e, mine } : undefined;
  });
  expect(media.e.media?.connectionState).toBe('connected');
  expect(media.mine.connectionState).toBe('connected');
  expect(media.e.statuses).toEqual(['RINGING', 'ACCEPTED']);
  return { key, wacid };
}

describe('business-initiated calls (program agents, real emulator, real WebRTC)', () => {
  it('without the user\'s call permission the dial is refused with the Service\'s reason, and nothing is left ringing', async () => {
    const b = await bridge();
    const boss = suite.track(await agentClient(b.url, 'boss'));
    const user = '+15550123401';

    // 1. Never asked.
    const none = await dial(boss, user);
    expect(none.reply).toMatchObject({ type: 'error', code: 'SERVICE_ERROR' });
    expect((none.reply as { message: string }).message).toMatch(/no call permission/i);
    expect((none.reply as { message: string }).message).toMatch(/138006/);

    // 2. Asked, and the user said no: once the bridge has the reply (server/permissions),
    // it refuses the dial itself and sends nothing (the interface: do not call after a rejection).
    await suite.control('PATCH', '/messaging/knobs', { permissionReply: 'reject' });
    expect(await requestPermission(b, user)).toMatchObject({ response: 'reject' });
    await until('the bridge records the rejection', async () => ((await b.sb.permissions.book.get(BUSINESS, user)).state === 'rejected' ? true : undefined));
    const rejected = await dial(boss, user);
    expect(rejected.reply).toMatchObject({ type: 'error', code: 'NO_PERMISSION' });
    expect((rejected.reply as { message: string }).message).toMatch(/rejected the call permission request/i);

    await suite.host.closePeer(none.key);
    await suite.host.closePeer(rejected.key);

    // The Service never started a call, and the bridge keeps nothing about one.
    expect((await suite.control('GET', '/calls')).length).toBe(0);
    expect(boss.received.filter((m) => m.type === 'call.state' || m.type === 'call.remoteAnswer')).toEqual([]);
    expect(await b.store.listCalls()).toEqual([]);
    await expectNothingLive(b, 'boss');

    // Still usable: with permission granted the same supervisor's callback goes through.
    const other = '+15550123402';
    await suite.control('PATCH', '/messaging/knobs', { permissionReply: 'accept' });
    expect(await requestPermission(b, other)).toMatchObject({ response: 'accept' });
    const ok = await dial(boss, other);
    const wacid = ackedWacid(ok.reply);
    await boss.next('call.state', (m) => m.wacid === wacid && m.state === 'active', 15_000);
    expect(await boss.request({ type: 'call.hangup', wacid })).toMatchObject({ type: 'ack' });
    await boss.next('call.state', (m) => m.wacid === wacid && m.state === 'ended', 15_000);
    await expectNothingLive(b, 'boss');
  }, 60_000);

});

describe.each(modes.list)('business-initiated calls, media both ways (%s media)', (mode) => {
  it('with permission: dial → remote answer → ICE/DTLS → audio both ways → active → the supervisor hangs up → ended with a duration', async () => {
    const b = await bridge({ env: await modes.env(mode) });
    const boss = suite.track(await agentClient(b.url, 'boss'));
    const user = '+15550123411';
    expect(await requestPermission(b, user)).toMatchObject({ response: 'accept' });

    const { key, wacid } = await connectedCall(boss, user);
    const stored = await b.store.getCall(wacid);
    expect(stored).toMatchObject({ state: 'active', direction: 'BUSINESS_INITIATED', agent: 'boss', phoneId: PHONE_ID });
    expect(b.sb.engine.board.view('boss').holding).toBe(wacid);
    await sleep(1_200); // at least a second of conversation

    expect(await boss.request({ type: 'call.hangup', wacid })).toMatchObject({ type: 'ack' });
    const ended = await boss.next('call.state', (m) => m.wacid === wacid && m.state === 'ended', 15_000);
    expect(ended.result).toBe('COMPLETED');
    expect(ended.duration).toBeGreaterThanOrEqual(1);
    const e = await suite.emuCall(wacid);
    expect(e.state).toBe('ended');
    expect(e.terminate).toMatchObject({ status: 'COMPLETED', reason: 'BUSINESS_HANGUP' });
    expect(e.terminate!.duration).toBeGreaterThanOrEqual(1);
    // The states went forward only, through the outbound ones.
    const seen = states(boss, wacid);
    expect(seen).toContain('dialing');
    expect(seen.indexOf('active')).toBeLessThan(seen.indexOf('ending'));
    expect(seen.at(-1)).toBe('ended');
    expect(await b.store.getCall(wacid)).toMatchObject({ state: 'ended', result: 'COMPLETED', endedBy: 'event' });
    await suite.host.closePeer(key);
    await expectNothingLive(b, 'boss');
  }, 90_000);
});

describe('business-initiated calls (program agents, real emulator, real WebRTC)', () => {
  it('with permission: an agent\'s callback, and the user hangs up → ended COMPLETED (USER_HANGUP) with a duration', async () => {
    const b = await bridge();
    const a1 = suite.track(await agentClient(b.url, 'agent1'));
    const watcher = suite.track(await agentClient(b.url, 'boss', { available: false }));
    const user = '+15550123421';
    expect(await requestPermission(b, user)).toMatchObject({ response: 'accept' });

    const { wacid } = await connectedCall(a1, user);
    // Supervisors see the live callback.
    await watcher.next('call.state', (m) => m.wacid === wacid && m.state === 'active' && m.agent === 'agent1');
    await sleep(1_200);

    await suite.control('POST', `/calls/${encodeURIComponent(wacid)}/hangup`);
    const ended = await a1.next('call.state', (m) => m.wacid === wacid && m.state === 'ended', 15_000);
    expect(ended).toMatchObject({ result: 'COMPLETED', reason: 'USER_HANGUP' });
    expect(ended.duration).toBeGreaterThanOrEqual(1);
    await watcher.next('call.state', (m) => m.wacid === wacid && m.state === 'ended');
    expect(states(a1, wacid)).not.toContain('ending'); // nobody on our side hung up
    await expectNothingLive(b, 'agent1');
  }, 60_000);

  it('the user declines the callback → ended FAILED with the reason, nothing stuck', async () => {
    const b = await bridge();
    const boss = suite.track(await agentClient(b.url, 'boss'));
    const user = '+15550123431';
    expect(await requestPermission(b, user)).toMatchObject({ response: 'accept' });
    await suite.control('PATCH', '/callee', { user, action: 'reject', answerAfterMs: 500 });

    const { key, reply } = await dial(boss, user);
    const wacid = ackedWacid(reply);
    // The answer comes while the phone rings; applying it at once is right even if declined later.
    const answer = await boss.next('call.remoteAnswer', (m) => m.wacid === wacid, 15_000);
    await suite.host.applyAnswer(key, answer.sdp);
    const ended = await boss.next('call.state', (m) => m.wacid === wacid && m.state === 'ended', 15_000);
    expect(ended.result).toBe('FAILED');
    expect(ended.reason).toMatch(/USER_REJECTED|declined/);
    expect(ended.duration ?? 0).toBe(0);
    expect(ended.startedAt).toBeUndefined();
    expect(states(boss, wacid)).not.toContain('active');
    const e = await suite.emuCall(wacid);
    expect(e.statuses).toEqual(['RINGING', 'REJECTED']);
    expect(e.terminate).toMatchObject({ status: 'FAILED', reason: 'USER_REJECTED' });
    await expectNothingLive(b, 'boss');
  }, 60_000);

  it('the user never answers → the Service gives up (NOT_ANSWERED, 138007) → ended FAILED, nothing stuck', async () => {
    const b = await bridge();
    const a1 = suite.track(await agentClient(b.url, 'agent1'));
    const user = '+15550123441';
    expect(await requestPermission(b, user)).toMatchObject({ response: 'accept' });
    await suite.control('PATCH', '/callee', { user, action: 'noAnswer', ringTimeoutMs: 2_500 });

    const { key, reply } = await dial(a1, user);
    const wacid = ackedWacid(reply);
    const answer = await a1.next('call.remoteAnswer', (m) => m.wacid === wacid, 15_000);
    await suite.host.applyAnswer(key, answer.sdp);
    const ended = await a1.next('call.state', (m) => m.wacid === wacid && m.state === 'ended', 20_000);
    expect(ended.result).toBe('FAILED');
    expect(ended.reason).toMatch(/did not answer|NOT_ANSWERED/);
    expect(await b.store.getCall(wacid)).toMatchObject({ state: 'ended', result: 'FAILED', errorCode: '138007', endedBy: 'event' });
    expect(states(a1, wacid)).not.toContain('active');
    expect((await suite.emuCall(wacid)).terminate).toMatchObject({ status: 'FAILED', reason: 'NOT_ANSWERED' });
    await expectNothingLive(b, 'agent1');
  }, 60_000);

  it('the caller gives up while it rings → the Service call is cancelled (BUSINESS_CANCELLED), nothing stuck', async () => {
    const b = await bridge();
    const a1 = suite.track(await agentClient(b.url, 'agent1'));
    const user = '+15550123451';
    expect(await requestPermission(b, user)).toMatchObject({ response: 'accept' });
    await suite.control('PATCH', '/callee', { user, action: 'noAnswer', ringTimeoutMs: 60_000 });

    const { reply } = await dial(a1, user);
    const wacid = ackedWacid(reply);
    await a1.next('call.remoteAnswer', (m) => m.wacid === wacid, 15_000);
    await until('the user\'s phone to ring', async () => ((await suite.emuCall(wacid)).state === 'ringing' ? true : undefined));
    expect(await a1.request({ type: 'call.hangup', wacid })).toMatchObject({ type: 'ack' });
    const ended = await a1.next('call.state', (m) => m.wacid === wacid && m.state === 'ended', 15_000);
    expect(ended.result).toBe('FAILED');
    expect((await suite.emuCall(wacid)).terminate).toMatchObject({ status: 'FAILED', reason: 'BUSINESS_CANCELLED' });
    await expectNothingLive(b, 'agent1');
  }, 60_000);

  it("a hangup before the Service's connect event arrives still stops the user's phone (terminate carries the Service's phone id)", async () => {
    const b = await bridge();
    const a1 = suite.track(await agentClient(b.url, 'agent1'));
    const user = '+15550123461';
    expect(await requestPermission(b, user)).toMatchObject({ response: 'accept' });
    await suite.control('PATCH', '/callee', { user, action: 'noAnswer', ringTimeoutMs: 60_000 });
    // Every event reaches the bridge late, so the hangup below surely comes first.
    await suite.control('PATCH', '/faults', { deliveryDelayMs: 1_500 });

    const { reply } = await dial(a1, user);
    const wacid = ackedWacid(reply);
    expect(await a1.request({ type: 'call.hangup', wacid })).toMatchObject({ type: 'ack' });
    expect(a1.received.some((m) => m.type === 'call.remoteAnswer')).toBe(false);
    const e = await until("the user's side to end", async () => {
      const c = await suite.emuCall(wacid);
      return c.state === 'ended' ? c : undefined;
    });
    expect(e.terminate).toMatchObject({ status: 'FAILED', reason: 'BUSINESS_CANCELLED' });
    const ended = await a1.next('call.state', (m) => m.wacid === wacid && m.state === 'ended', 15_000);
    expect(ended.result).toBe('FAILED');
    expect(await b.store.getCall(wacid)).toMatchObject({ state: 'ended', phoneId: PHONE_ID, endedBy: 'event' });
    await expectNothingLive(b, 'agent1');
  }, 60_000);

  // ---- the permission budget: connected calls per day, unanswered calls in a row ----

  /** A dial that rings out unanswered (the user's callee knob says noAnswer): ended FAILED. */
  async function unansweredCall(c: ProtocolClient, user: string): Promise<void> {
    const { key, reply } = await dial(c, user);
    const wacid = ackedWacid(reply);
    const ended = await c.next('call.state', (m) => m.wacid === wacid && m.state === 'ended', 20_000);
    expect(ended.reason).toMatch(/did not answer|NOT_ANSWERED/);
    await suite.host.closePeer(key);
  }

  it('5 connected calls in 24 h: the 6th dial is refused by the bridge (CALL_LIMIT, with when) before it reaches the Service', async () => {
    const b = await bridge();
    const boss = suite.track(await agentClient(b.url, 'boss'));
    const user = '+15550123471';
    expect(await requestPermission(b, user)).toMatchObject({ response: 'accept' });
    // The user answers at once and hangs up soon after: each call connects, then ends.
    await suite.control('PATCH', '/callee', { user, action: 'answer', answerAfterMs: 100, hangupAfterMs: 300 });
    for (let i = 0; i < 5; i++) {
      const { key, reply } = await dial(boss, user);
      const wacid = ackedWacid(reply);
      const answer = await boss.next('call.remoteAnswer', (m) => m.wacid === wacid, 15_000);
      await suite.host.applyAnswer(key, answer.sdp);
      const ended = await boss.next('call.state', (m) => m.wacid === wacid && m.state === 'ended', 20_000);
      expect(ended.startedAt).toBeGreaterThan(0);
      await suite.host.closePeer(key);
    }
    const limits = () => suite.control('GET', `/callLimits?business=${encodeURIComponent(BUSINESS)}&user=${encodeURIComponent(user)}`);
    expect(await limits()).toMatchObject({ connectedLast24h: 5 });
    const connectsBefore = ((await suite.control('GET', '/calls')).items as unknown[]).length;

    const sixth = await dial(boss, user);
    // Ours, not the Service's 138012 (which would come back as SERVICE_ERROR after a connect).
    expect(sixth.reply).toMatchObject({ type: 'error', code: 'CALL_LIMIT' });
    const message = (sixth.reply as { message: string }).message;
    expect(message).toMatch(/already called 5 times in the last 24 hours/);
    expect(message).toMatch(/You can call again at \d{4}-\d\d-\d\dT/);
    expect(((await suite.control('GET', '/calls')).items as unknown[]).length).toBe(connectsBefore);
    await suite.host.closePeer(sixth.key);
    await expectNothingLive(b, 'boss');
  }, 120_000);

  it('unanswered calls in a row: 2 → the callback task\'s permission warns; 4 → treated as revoked (dial refused NO_PERMISSION, as the Service revoked it)', async () => {
    const b = await suite.startBridge({ history: true, agents: ['agent1'], supervisors: ['boss'], policy: { acceptWindowMs: 4_000, ringTimeoutMs: 1_500, rejectMarginMs: 1_000 } });
    await suite.control('PATCH', '/messaging/knobs', { stepDelayMs: 20 });
    const boss = suite.track(await agentClient(b.url, 'boss', { available: false }));
    const user = '+15550123481';
    expect(await requestPermission(b, user)).toMatchObject({ response: 'accept' });
    await until('the bridge records the grant', async () => ((await b.sb.permissions.book.get(BUSINESS, user)).state === 'granted' ? true : undefined));
    // A missed call from the user makes a callback task (nobody is available).
    await suite.control('POST', '/calls', { from: user });
    const task = (await boss.next('callback.updated', (m) => m.task.customer === user, 20_000)).task;
    const cookie = await login(b.url, 'boss');
    // The 4th unanswered call back closes the task `unreachable` (the retry schedule): look in both lists.
    const permissionOfTask = async () => {
      for (const state of ['open', 'done']) {
        const r = await fetch(`${b.url}/api/callbacks?state=${state}`, { headers: { cookie, origin: b.url } });
        const found = ((await r.json()) as { items: CallbackTask[] }).items.find((t) => t.id === task.id);
        if (found) return found.permission;
      }
      return undefined;
    };
    expect(await permissionOfTask()).toMatchObject({ state: 'granted', callAllowed: true });
    expect((await permissionOfTask())?.warning).toBeUndefined();

    await suite.control('PATCH', '/callee', { user, action: 'noAnswer', ringTimeoutMs: 300 });
    await unansweredCall(boss, user);
    await unansweredCall(boss, user);
    const warned = await until('the warning on the task', async () => {
      const p = await permissionOfTask();
      return p?.warning ? p : undefined;
    });
    expect(warned).toMatchObject({ callAllowed: true });
    expect(warned.warning).toMatch(/2 calls in a row went unanswered.*2 more unanswered calls revoke it/);
    expect(warned.text).toContain(warned.warning!);

    await unansweredCall(boss, user);
    await unansweredCall(boss, user);
    // The Service agrees: its permission is gone.
    const limits = await suite.control('GET', `/callLimits?business=${encodeURIComponent(BUSINESS)}&user=${encodeURIComponent(user)}`);
    expect(limits).toMatchObject({ revoked: true });
    const revoked = await until('revoked on the task', async () => {
      const p = await permissionOfTask();
      return p && !p.callAllowed ? p : undefined;
    });
    expect(revoked.text).toMatch(/4 calls in a row went unanswered, so the user's permission is revoked/);
    // Asking again is what is left (this test's request went straight to the Service, past the bridge's ration).
    expect(revoked.requestAllowed).toBe(true);
    expect(revoked.text).toMatch(/the permission was revoked: you can ask the user to allow calls again/);
    const connectsBefore = ((await suite.control('GET', '/calls')).items as unknown[]).length;
    const refused = await dial(boss, user);
    expect(refused.reply).toMatchObject({ type: 'error', code: 'NO_PERMISSION' });
    expect((refused.reply as { message: string }).message).toMatch(/permission is revoked; ask again before calling/);
    expect(((await suite.control('GET', '/calls')).items as unknown[]).length).toBe(connectsBefore);
    await suite.host.closePeer(refused.key);
  }, 120_000);
});
