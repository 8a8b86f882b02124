/**
 * One test per enforced call rule of the emulator (calling-facts.md, interface part 4):
 * field validation, the same-SDP rule, the accept window, the no-media drop, every way a
 * call ends, business-initiated permission (138006) and callee knobs, capture settings
 * validation, and the call media download rules.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parseEvent } from '../../shared/events.ts';
import { AudioPeer, emulatorApi, startEmulator, startReceiver, type Emulator, type TestReceiver } from './index.ts';
import { until } from '../support/wait.ts';

const PHONE_ID = '100000000000001';
const BUSINESS = '+15550100001';
const WABA = '200000000000001';

interface Harness {
  emu: Emulator;
  rx: TestReceiver;
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; json: any; headers: Headers }>;
  event(type: string, wacid?: string, timeoutMs?: number): Promise<any>;
  answerer(offer: string): Promise<{ peer: AudioPeer; sdp: string }>;
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function harness(opts: Parameters<typeof startEmulator>[0] = {}, register = cleanups): Promise<Harness> {
  const rx = await startReceiver();
  const emu = await startEmulator({ timeScale: 0.001, ...opts, webhookEndpoints: [{ url: rx.url, secret: 'whsec_rules_test' }] });
  register.push(() => rx.close(), () => emu.close());
  const api: Harness['api'] = emulatorApi(emu);
  const match = (d: { event: { type: string } }, type: string, wacid?: string) => d.event.type === type && (!wacid || JSON.stringify(d.event).includes(`"wacid":"${wacid}"`));
  const event: Harness['event'] = async (type, wacid, timeoutMs = 10_000) => {
    const got = await rx.waitFor((r) => r.some((d) => match(d, type, wacid)), timeoutMs);
    return got.find((d) => match(d, type, wacid))!.event;
  };
  const answerer = async (offer: string) => {
    const made = await AudioPeer.answerer(offer);
    register.push(() => made.peer.close());
    return made;
  };
  return { emu, rx, api, event, answerer };
}

/** Resolves once the simulated user has received `n` RTP packets from the business. */
const userHeard = (h: Harness, wacid: string, n: number) =>
  until(`${n} packets at the user`, async () => {
    const v = (await h.api('GET', `/_emulator/calls/${wacid}`)).json;
    return v.media?.packetsReceived >= n ? v : undefined;
  });

/** Starts a user-initiated call and returns its connect payload. */
async function ring(h: Harness, body: Record<string, unknown> = {}) {
  const r = await h.api('POST', '/_emulator/calls', body);
  expect(r.status).toBe(200);
  return (await h.event('chat.call.connect', r.json.wacid)).callingConnect as { wacid: string; phoneId: string; sdp: string; dialTime: number };
}

describe('signaling validation', () => {
  it('preAccept and accept name the missing or wrong field in a 400', async () => {
    const h = await harness();
    const cc = await ring(h);
    const { sdp } = await h.answerer(cc.sdp);
    for (const path of ['/chat/calls/preAccept', '/chat/calls/accept']) {
      const cases: Array<[Record<string, unknown>, RegExp]> = [
        [{ wacid: cc.wacid, sdpType: 'answer', sdp }, /^phoneId:/],
        [{ phoneId: cc.phoneId, sdpType: 'answer', sdp }, /^wacid:/],
        [{ phoneId: cc.phoneId, wacid: cc.wacid, sdp }, /^sdpType:/],
        [{ phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'offer', sdp }, /^sdpType: must be 'answer'/],
        [{ phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer' }, /^sdp:/],
        [{ phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp: sdp.replace('sha-256', 'sha-1') }, /^sdp: only SHA-256/],
        [{ phoneId: '999', wacid: cc.wacid, sdpType: 'answer', sdp }, /^phoneId: does not match/],
      ];
      for (const [body, re] of cases) {
        const r = await h.api('POST', path, body);
        expect(r.status, `${path} ${JSON.stringify(Object.keys(body))}`).toBe(400);
        expect(r.json.error.code).toBe('BAD_REQUEST');
        expect(r.json.error.message).toMatch(re);
        expect(r.json.error.requestId).toBe(r.headers.get('Service-Request-ID'));
      }
    }
    expect((await h.api('POST', '/chat/calls/accept', { phoneId: PHONE_ID, wacid: 'wacid.unknown', sdpType: 'answer', sdp })).status).toBe(404);
  });

  it('a call is invisible to another API key (404)', async () => {
    const h = await harness({ apiKeys: ['key-one-1234', 'key-two-5678'] });
    const cc = await ring(h);
    const { sdp } = await h.answerer(cc.sdp);
    const r = await h.api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp }, { 'X-API-Key': 'key-two-5678' });
    expect(r.status).toBe(404);
  });
});

describe('same-SDP rule', () => {
  it('accept with a different SDP than preAccept is refused, and the preAccepted one is accepted', async () => {
    const h = await harness();
    const cc = await ring(h);
    const a = await h.answerer(cc.sdp);
    const b = await h.answerer(cc.sdp);
    expect(a.sdp).not.toBe(b.sdp);
    expect((await h.api('POST', '/chat/calls/preAccept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp: a.sdp })).status).toBe(200);
    const refused = await h.api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp: b.sdp });
    expect(refused.status).toBe(400);
    expect(refused.json.error.message).toMatch(/^sdp: differs from the SDP answer sent in preAccept/);
    const ok = await h.api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp: a.sdp });
    expect(ok.json).toEqual({ wacid: cc.wacid, success: true });
    expect((await h.api('GET', `/_emulator/calls/${cc.wacid}`)).json.state).toBe('active');
    // a retried accept: same SDP is answered again, another SDP is refused
    expect((await h.api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp: a.sdp })).status).toBe(200);
    expect((await h.api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp: b.sdp })).status).toBe(409);
  });

  it('even a whitespace-only difference counts as a different SDP', async () => {
    const h = await harness();
    const cc = await ring(h);
    const a = await h.answerer(cc.sdp);
    await h.api('POST', '/chat/calls/preAccept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp: a.sdp });
    const r = await h.api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp: a.sdp.replace(/\r\n/g, '\n') });
    expect(r.status).toBe(400);
  });
});

describe('early media', () => {
  it('business audio sent after preAccept but before accept is counted as earlyPackets', async () => {
    const h = await harness();
    const cc = await ring(h);
    const { peer, sdp } = await h.answerer(cc.sdp);
    await h.api('POST', '/chat/calls/preAccept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp });
    peer.startSending(); // too early: accept has not returned yet
    await until('media before accept', async () => {
      const v = (await h.api('GET', `/_emulator/calls/${cc.wacid}`)).json;
      return v.media.packetsReceived > 5 ? v : undefined;
    });
    await h.api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp });
    expect((await h.api('GET', `/_emulator/calls/${cc.wacid}`)).json.earlyPackets).toBeGreaterThan(5);
  });
});

describe('accept window', () => {
  it('a call not accepted within acceptWindowMs of dialTime ends FAILED NOT_ANSWERED (138007) and can no longer be accepted', async () => {
    const h = await harness({ acceptWindowMs: 400 });
    const cc = await ring(h);
    const { sdp } = await h.answerer(cc.sdp);
    const term = (await h.event('chat.call.terminate', cc.wacid)).callingTerminate;
    expect(term).toMatchObject({ wacid: cc.wacid, status: 'FAILED', reason: 'NOT_ANSWERED', duration: 0 });
    expect(term.errors[0].code).toBe(138007);
    expect(term.endTime - Date.now()).toBeLessThan(1000);
    const late = await h.api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp });
    expect(late.status).toBe(409);
    expect(late.json.error.message).toMatch(/^wacid: cannot accept a call that is ended \(NOT_ANSWERED\)/);
  });

  it('a call accepted inside the window is not ended by it', async () => {
    const h = await harness({ acceptWindowMs: 600, noMediaAtStartMs: 60_000 });
    const cc = await ring(h);
    const { sdp } = await h.answerer(cc.sdp);
    expect((await h.api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 800));
    expect((await h.api('GET', `/_emulator/calls/${cc.wacid}`)).json.state).toBe('active');
  });
});

describe('no-media drop', () => {
  it('no business media for noMediaAtStartMs after accept ends the call FAILED MEDIA_TIMEOUT (138023)', async () => {
    const h = await harness({ noMediaAtStartMs: 500 });
    const cc = await ring(h);
    const { sdp } = await h.answerer(cc.sdp); // this business never sends
    const t0 = Date.now();
    await h.api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp });
    const term = (await h.event('chat.call.terminate', cc.wacid)).callingTerminate;
    expect(Date.now() - t0).toBeGreaterThanOrEqual(450);
    expect(term).toMatchObject({ status: 'FAILED', reason: 'MEDIA_TIMEOUT' });
    expect(term.errors).toEqual([{ code: 138023, message: expect.any(String) }]);
  });

  it('a business that keeps sending silence frames is not dropped', async () => {
    const h = await harness({ noMediaMidCallMs: 1500 });
    const cc = await ring(h);
    const { peer, sdp } = await h.answerer(cc.sdp);
    await h.api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp });
    peer.startSending({ kind: 'silence' });
    await userHeard(h, cc.wacid, 10);
    await new Promise((r) => setTimeout(r, 2500)); // longer than noMediaMidCallMs
    const v = (await h.api('GET', `/_emulator/calls/${cc.wacid}`)).json;
    expect(v.state).toBe('active');
    expect(v.media.packetsReceived).toBeGreaterThan(20);
    expect(v.media.audibleFrames).toBe(0);
  });

  it('business media that stops mid-call ends the call after noMediaMidCallMs (138021)', async () => {
    const h = await harness({ noMediaMidCallMs: 600 });
    const cc = await ring(h);
    const { peer, sdp } = await h.answerer(cc.sdp);
    await h.api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp });
    peer.startSending({ kind: 'tone' });
    await userHeard(h, cc.wacid, 10);
    await new Promise((r) => setTimeout(r, 600));
    peer.stopSending();
    const term = (await h.event('chat.call.terminate', cc.wacid)).callingTerminate;
    expect(term).toMatchObject({ status: 'FAILED', reason: 'MEDIA_TIMEOUT' });
    expect(term.errors[0].code).toBe(138021);
    expect(term.duration).toBeGreaterThanOrEqual(1);
  });
});

describe('every ending is a terminate event', () => {
  it('reject ends a ringing call FAILED REJECTED', async () => {
    const h = await harness();
    const cc = await ring(h);
    expect((await h.api('POST', '/chat/calls/reject', { phoneId: cc.phoneId, wacid: cc.wacid })).json).toEqual({ wacid: cc.wacid, success: true });
    expect((await h.event('chat.call.terminate', cc.wacid)).callingTerminate).toMatchObject({ status: 'FAILED', reason: 'REJECTED', duration: 0 });
    expect((await h.api('POST', '/chat/calls/reject', { phoneId: cc.phoneId, wacid: cc.wacid })).status).toBe(409);
  });

  it('business terminate of an active call ends it COMPLETED with its duration', async () => {
    const h = await harness();
    const cc = await ring(h);
    const { peer, sdp } = await h.answerer(cc.sdp);
    await h.api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp });
    peer.startSending();
    await userHeard(h, cc.wacid, 5);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await h.api('POST', '/chat/calls/terminate', { phoneId: cc.phoneId, wacid: cc.wacid })).status).toBe(200);
    const term = (await h.event('chat.call.terminate', cc.wacid)).callingTerminate;
    expect(term).toMatchObject({ status: 'COMPLETED', reason: 'BUSINESS_HANGUP' });
    expect(term.endTime - term.startTime).toBeGreaterThanOrEqual(1100);
    expect(term.duration).toBe(Math.round((term.endTime - term.startTime) / 1000));
  });

  it('the caller hanging up on a control request ends it COMPLETED USER_HANGUP; before answer it is USER_CANCELLED', async () => {
    const h = await harness();
    const cc = await ring(h);
    const { peer, sdp } = await h.answerer(cc.sdp);
    await h.api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp });
    peer.startSending();
    const hung = await h.api('POST', `/_emulator/calls/${cc.wacid}/hangup`);
    expect(hung.json.state).toBe('ended');
    expect((await h.event('chat.call.terminate', cc.wacid)).callingTerminate).toMatchObject({ status: 'COMPLETED', reason: 'USER_HANGUP' });

    const cc2 = await ring(h);
    await h.api('POST', `/_emulator/calls/${cc2.wacid}/hangup`);
    expect((await h.event('chat.call.terminate', cc2.wacid)).callingTerminate).toMatchObject({ status: 'FAILED', reason: 'USER_CANCELLED', duration: 0 });
  });
});

describe('business-initiated calls', () => {
  async function offer() {
    const made = await AudioPeer.offerer();
    cleanups.push(() => made.peer.close());
    return made;
  }

  it('without call permission, connect is refused with provider code 138006', async () => {
    const h = await harness();
    const { sdp } = await offer();
    const r = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: '+15550209999', sdpType: 'offer', sdp });
    expect(r.status).toBe(403);
    expect(r.json.error).toMatchObject({ code: 'FORBIDDEN', chatApiError: { code: 138006 } });
  });

  it('a rejected or expired permission is refused with 138006 too', async () => {
    const h = await harness();
    const { sdp } = await offer();
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user: '+15550209998', response: 'reject' });
    expect((await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: '+15550209998', sdpType: 'offer', sdp })).json.error.chatApiError.code).toBe(138006);
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user: '+15550209997', response: 'accept' }); // 7 days
    await h.api('POST', '/_emulator/clock/advance', { ms: 7 * 24 * 3600 * 1000 + 1000 });
    const r = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: '+15550209997', sdpType: 'offer', sdp });
    expect(r.status).toBe(403);
    expect(r.json.error.chatApiError.code).toBe(138006);
  });

  it('a permission the user grants in reply to an interactive call_permission_request lets the business call', async () => {
    const h = await harness();
    const user = '+15550208010';
    const { sdp } = await offer();
    expect((await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp })).status).toBe(403);
    const sent = await h.api('POST', '/chat/messages/sendDirectly', {
      from: BUSINESS,
      to: user,
      type: 'interactive',
      interactive: { type: 'call_permission_request', action: { name: 'call_permission_request' }, body: { text: 'May we call you?' } },
    });
    expect(sent.status).toBe(200);
    await h.rx.waitFor((r) => r.some((d) => d.event.type === 'chat.inbound_message.received'));
    const r = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp });
    expect(r.status).toBe(200);
    expect(r.json.success).toBe(true);
  });

  it('four unanswered business calls in a row revoke the permission (the fifth connect gets 138006)', async () => {
    const h = await harness({ callee: { action: 'noAnswer', ringTimeoutMs: 100 } });
    const user = '+15550208020';
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user, response: 'accept', isPermanent: true });
    const { sdp } = await offer();
    for (let i = 0; i < 4; i++) {
      const r = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp });
      expect(r.status).toBe(200);
      expect((await h.event('chat.call.terminate', r.json.wacid)).callingTerminate.reason).toBe('NOT_ANSWERED');
    }
    const fifth = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp });
    expect(fifth.status).toBe(403);
    expect(fifth.json.error.chatApiError.code).toBe(138006);
  });

  /** Connects a business-initiated call and waits until it ends (answered calls are hung up by the business once ACCEPTED). */
  async function callOnce(h: Harness, user: string, sdp: string) {
    const r = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp });
    expect(r.status, JSON.stringify(r.json)).toBe(200);
    const wacid = r.json.wacid as string;
    const ended = await until(`call ${wacid} answered or ended`, async () => {
      const v = (await h.api('GET', `/_emulator/calls/${wacid}`)).json;
      return v.state === 'active' || v.state === 'ended' ? v : undefined;
    });
    if (ended.state === 'active') await h.api('POST', '/chat/calls/terminate', { phoneId: PHONE_ID, wacid });
    return (await h.event('chat.call.terminate', wacid)).callingTerminate as { reason: string };
  }
  const limitsOf = async (h: Harness, user: string) => (await h.api('GET', `/_emulator/callLimits?business=${encodeURIComponent(BUSINESS)}&user=${encodeURIComponent(user)}`)).json;

  it('at most 5 connected calls per 24 h to one user: the sixth connect is refused 400 with 138012 and nextAllowedTime; 24 h later it goes', async () => {
    const h = await harness({ callee: { action: 'answer', answerAfterMs: 20, ringTimeoutMs: 5000 } });
    const user = '+15550208040';
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user, isPermanent: true });
    const { sdp } = await offer();
    const firstAt = (await h.api('GET', '/_emulator/clock')).json.now as number;
    for (let i = 0; i < 5; i++) expect((await callOnce(h, user, sdp)).reason, `call ${i + 1}`).toBe('BUSINESS_HANGUP');
    const sixth = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp });
    expect(sixth.status).toBe(400);
    expect(sixth.json.error).toMatchObject({ code: 'BAD_REQUEST', chatApiError: { code: 138012 } });
    expect(sixth.json.error.message).toMatch(/^to: business-initiated call limit reached .*5 connected calls per 24 hours/);
    const next = Date.parse(sixth.json.error.chatApiError.nextAllowedTime);
    expect(next - firstAt).toBeGreaterThan(24 * 3600_000 - 60_000);
    expect(next - firstAt).toBeLessThan(24 * 3600_000 + 60_000);
    expect(await limitsOf(h, user)).toMatchObject({ connectedLast24h: 5, maxConnectedPerDay: 5 });
    // Another user of the same number is not affected.
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user: '+15550208041', isPermanent: true });
    expect((await callOnce(h, '+15550208041', sdp)).reason).toBe('BUSINESS_HANGUP');
    await h.api('POST', '/_emulator/clock/advance', { ms: 24 * 3600_000 });
    expect((await callOnce(h, user, sdp)).reason).toBe('BUSINESS_HANGUP');
  });

  it('unanswered calls in a row: 2 prompt the user to review the permission, an answered call resets the run, 4 revoke it (138006 says why)', async () => {
    const h = await harness({ callee: { action: 'noAnswer', ringTimeoutMs: 100 } });
    const user = '+15550208050';
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user, isPermanent: true });
    const { sdp } = await offer();
    expect((await callOnce(h, user, sdp)).reason).toBe('NOT_ANSWERED');
    expect(await limitsOf(h, user)).toMatchObject({ unansweredInARow: 1, reviewPrompted: false, revoked: false });
    expect((await callOnce(h, user, sdp)).reason).toBe('NOT_ANSWERED');
    expect(await limitsOf(h, user)).toMatchObject({ unansweredInARow: 2, reviewPrompted: true, revoked: false });
    await h.api('PATCH', '/_emulator/callee', { user, action: 'answer', answerAfterMs: 20 });
    expect((await callOnce(h, user, sdp)).reason).toBe('BUSINESS_HANGUP');
    expect(await limitsOf(h, user)).toMatchObject({ unansweredInARow: 0, reviewPrompted: false, connectedLast24h: 1 });
    await h.api('PATCH', '/_emulator/callee', { user, action: 'noAnswer' });
    for (let i = 0; i < 3; i++) expect((await callOnce(h, user, sdp)).reason).toBe('NOT_ANSWERED');
    expect(await limitsOf(h, user)).toMatchObject({ unansweredInARow: 3, reviewPrompted: true, revoked: false });
    expect((await callOnce(h, user, sdp)).reason).toBe('NOT_ANSWERED');
    expect(await limitsOf(h, user)).toMatchObject({ revoked: true });
    const refused = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp });
    expect(refused.status).toBe(403);
    expect(refused.json.error.chatApiError.code).toBe(138006);
    expect(refused.json.error.message).toBe('to: the permission was revoked after 4 unanswered calls in a row');
    // The user allows calls again: the run starts afresh.
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user, isPermanent: true });
    expect(await limitsOf(h, user)).toMatchObject({ revoked: false, unansweredInARow: 0 });
    expect((await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp })).status).toBe(200);
  });

  it('the connected-calls limit is adjustable through the control API (the published figure has varied)', async () => {
    const h = await harness({ callee: { action: 'answer', answerAfterMs: 20, ringTimeoutMs: 5000 } });
    const user = '+15550208060';
    expect((await h.api('PATCH', '/_emulator/callLimits', { maxConnectedPerDay: 0 })).json.error.message).toBe('maxConnectedPerDay: an integer >= 1');
    expect((await h.api('PATCH', '/_emulator/callLimits', { maxConnectedPerDay: 1 })).status).toBe(200);
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user, isPermanent: true });
    const { sdp } = await offer();
    expect((await callOnce(h, user, sdp)).reason).toBe('BUSINESS_HANGUP');
    const second = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp });
    expect(second.json.error).toMatchObject({ chatApiError: { code: 138012 } });
    expect(second.json.error.message).toMatch(/1 connected calls per 24 hours/);
  });

  it('beyond maxConcurrentCalls on the business number, connect is refused with provider code 138002', async () => {
    const h = await harness({ maxConcurrentCalls: 1, callee: { action: 'noAnswer' } });
    for (const user of ['+15550208031', '+15550208032']) await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user, isPermanent: true });
    const { sdp } = await offer();
    expect((await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: '+15550208031', sdpType: 'offer', sdp })).status).toBe(200);
    const second = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: '+15550208032', sdpType: 'offer', sdp });
    expect(second.status).toBe(409);
    expect(second.json.error.chatApiError.code).toBe(138002);
  });

  it('a call to a BSUID carries the user as recipient (not to) in its events', async () => {
    const h = await harness({ callee: { action: 'reject', answerAfterMs: 50 } });
    const bsuid = 'US.13491208655302741918';
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user: bsuid, isPermanent: true });
    const { sdp } = await offer();
    const r = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, recipient: bsuid, sdpType: 'offer', sdp });
    expect(r.status).toBe(200);
    const cc = (await h.event('chat.call.connect', r.json.wacid)).callingConnect;
    expect(cc).toMatchObject({ from: BUSINESS, recipient: bsuid });
    expect(cc.to).toBeUndefined();
    const term = (await h.event('chat.call.terminate', r.json.wacid)).callingTerminate;
    expect(term).toMatchObject({ recipient: bsuid, reason: 'USER_REJECTED' });
    for (const d of h.rx.received) expect(parseEvent(JSON.parse(d.rawBody)), d.event.type).toMatchObject({ known: true });
  });

  it('connect validates its fields: from, to or recipient, sdpType offer, sdp', async () => {
    const h = await harness();
    const { sdp } = await offer();
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ to: '+15550209999', sdpType: 'offer', sdp }, /^from:/],
      [{ from: '+15559999999', to: '+15550209999', sdpType: 'offer', sdp }, /^from: not a business phone number/],
      [{ from: BUSINESS, sdpType: 'offer', sdp }, /^to: required when recipient is absent/],
      [{ from: BUSINESS, to: '5550209999', sdpType: 'offer', sdp }, /^to: must be an E.164/],
      [{ from: BUSINESS, recipient: 'not-a-bsuid', sdpType: 'offer', sdp }, /^recipient:/],
      [{ from: BUSINESS, to: '+15550209999', sdpType: 'answer', sdp }, /^sdpType: must be 'offer'/],
      [{ from: BUSINESS, to: '+15550209999', sdpType: 'offer' }, /^sdp:/],
    ];
    for (const [body, re] of cases) {
      const r = await h.api('POST', '/chat/calls/connect', body);
      expect(r.status).toBe(400);
      expect(r.json.error.message).toMatch(re);
    }
  });

  it('with permission the user answers: connect event with the SDP answer, RINGING then ACCEPTED, audio both ways, terminate', async () => {
    // ringTimeoutMs shorter than the call: an answered call must outlive its ring timeout
    const h = await harness({ callee: { ringTimeoutMs: 800 } });
    const user = '+15550208001';
    await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user, response: 'accept' });
    await h.api('PATCH', '/_emulator/callee', { user, action: 'answer', answerAfterMs: 300 });
    const { peer, sdp } = await offer();
    const r = await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: user, sdpType: 'offer', sdp });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ wacid: expect.stringMatching(/^wacid\./), success: true });
    const wacid = r.json.wacid as string;
    const cc = (await h.event('chat.call.connect', wacid)).callingConnect;
    expect(cc).toMatchObject({ wacid, phoneId: PHONE_ID, from: BUSINESS, to: user, direction: 'BUSINESS_INITIATED', sdpType: 'answer' });
    await peer.applyAnswer(cc.sdp); // apply at once; don't wait for ACCEPTED
    peer.startSending({ kind: 'tone', hz: 500 });
    await h.event('chat.call.status.updated', wacid);
    await h.rx.waitFor((rr) => rr.filter((d) => d.event.type === 'chat.call.status.updated' && JSON.stringify(d.event).includes(wacid)).length >= 2);
    const statuses = h.rx.received.filter((d) => d.event.type === 'chat.call.status.updated').map((d) => (d.event as any).callingStatus.status);
    expect(statuses).toEqual(['RINGING', 'ACCEPTED']);
    const callee = await until('audio both ways', async () => {
      const v = (await h.api('GET', `/_emulator/calls/${wacid}`)).json;
      return v.media?.packetsReceived > 25 && peer.mediaStats().packetsReceived > 25 ? v : undefined;
    });
    await new Promise((res) => setTimeout(res, 900 - Math.min(900, Date.now() - callee.acceptedAt))); // past the 800 ms ring timeout
    expect((await h.api('GET', `/_emulator/calls/${wacid}`)).json.state).toBe('active');
    expect(callee.media.meanLevel).toBeGreaterThan(0.1);
    expect(peer.mediaStats().meanLevel).toBeGreaterThan(0.1);
    await h.api('POST', '/chat/calls/terminate', { phoneId: PHONE_ID, wacid });
    expect((await h.event('chat.call.terminate', wacid)).callingTerminate).toMatchObject({ status: 'COMPLETED', reason: 'BUSINESS_HANGUP', direction: 'BUSINESS_INITIATED' });
    // Contract with the bridge: connect, status and terminate parse with its schemas.
    for (const d of h.rx.received) expect(parseEvent(JSON.parse(d.rawBody)), d.event.type).toMatchObject({ known: true });
  });

  it('a user set to reject declines: REJECTED status then terminate FAILED USER_REJECTED; noAnswer ends NOT_ANSWERED', async () => {
    const h = await harness({ callee: { ringTimeoutMs: 500 } });
    for (const [user, action] of [['+15550208002', 'reject'], ['+15550208003', 'noAnswer']] as const) {
      await h.api('POST', '/_emulator/callPermissions', { business: BUSINESS, user, response: 'accept', isPermanent: true });
      await h.api('PATCH', '/_emulator/callee', { user, action, answerAfterMs: 100 });
    }
    const { sdp } = await offer();
    const a = (await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: '+15550208002', sdpType: 'offer', sdp })).json.wacid;
    const b = (await h.api('POST', '/chat/calls/connect', { from: BUSINESS, to: '+15550208003', sdpType: 'offer', sdp })).json.wacid;
    expect((await h.event('chat.call.terminate', a)).callingTerminate).toMatchObject({ status: 'FAILED', reason: 'USER_REJECTED' });
    expect((await h.api('GET', `/_emulator/calls/${a}`)).json.statuses).toEqual(['RINGING', 'REJECTED']);
    expect((await h.event('chat.call.terminate', b)).callingTerminate).toMatchObject({ status: 'FAILED', reason: 'NOT_ANSWERED' });
  });
});

describe('capture settings', () => {
  const path = `/chat/phoneNumbers/${WABA}/${encodeURIComponent(BUSINESS)}/settings`;
  it('capture requires recordingEnabled and transcriptionEnabled booleans, and purpose and a listed announcementLanguage when either is on', async () => {
    const h = await harness();
    const cases: Array<[unknown, RegExp]> = [
      [{ transcriptionEnabled: false }, /^capture\.recordingEnabled:/],
      [{ recordingEnabled: 'yes', transcriptionEnabled: false }, /^capture\.recordingEnabled:/],
      [{ recordingEnabled: false }, /^capture\.transcriptionEnabled:/],
      [{ recordingEnabled: true, transcriptionEnabled: false, announcementLanguage: 'en' }, /^capture\.purpose:/],
      [{ recordingEnabled: true, transcriptionEnabled: false, purpose: 'x'.repeat(251), announcementLanguage: 'en' }, /^capture\.purpose: at most 250/],
      [{ recordingEnabled: false, transcriptionEnabled: true, purpose: 'qa' }, /^capture\.announcementLanguage:/],
      [{ recordingEnabled: false, transcriptionEnabled: true, purpose: 'qa', announcementLanguage: 'en-US' }, /^capture\.announcementLanguage:/],
    ];
    for (const [capture, re] of cases) {
      const r = await h.api('POST', path, { capture });
      expect(r.status).toBe(400);
      expect(r.json.error.message).toMatch(re);
    }
    expect((await h.api('POST', path, { capture: { recordingEnabled: false, transcriptionEnabled: false } })).status).toBe(200);
    expect((await h.api('POST', path, { capture: { recordingEnabled: true, transcriptionEnabled: false, purpose: 'x'.repeat(250), announcementLanguage: 'es_ES' } })).status).toBe(200);
    expect((await h.api('GET', `${path}?type=capture`)).json.capture).toMatchObject({ recordingEnabled: true, announcementLanguage: 'es_ES' });
  });

  it('calling and capture are saved independently: a valid calling section is stored when capture fails', async () => {
    const h = await harness();
    const r = await h.api('POST', path, { calling: { status: 'DISABLED', iconVisibility: 'DISABLE_ALL' }, capture: { recordingEnabled: true } });
    expect(r.status).toBe(400);
    expect(r.json.error.message).toMatch(/^capture\.transcriptionEnabled:.*\(saved: calling\)$/);
    expect((await h.api('GET', path)).json.calling).toMatchObject({ id: PHONE_ID, status: 'DISABLED', iconVisibility: 'DISABLE_ALL' });
    expect((await h.api('GET', `${path}?type=capture`)).json.capture).toEqual({ recordingEnabled: false, transcriptionEnabled: false });
    // calling DISABLED: the simulated user can't call this number
    expect((await h.api('POST', '/_emulator/calls', {})).status).toBe(409);
  });
});

describe('call media download', () => {
  const local: Array<() => Promise<void> | void> = [];
  let h: Harness;
  let recordingId: string;
  beforeAll(async () => {
    h = await harness({ apiKeys: ['media-key-owner', 'media-key-other'] }, local);
    await h.api('POST', `/chat/phoneNumbers/${WABA}/${encodeURIComponent(BUSINESS)}/settings`, { capture: { recordingEnabled: true, transcriptionEnabled: false, purpose: 'qa', announcementLanguage: 'en' } });
    const cc = await ring(h, { hangupAfterMs: 600 });
    const made = await AudioPeer.answerer(cc.sdp);
    local.push(() => made.peer.close());
    await h.api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp: made.sdp });
    made.peer.startSending();
    recordingId = (await h.event('chat.call.recording.updated', cc.wacid)).callingMedia.mediaAssetId;
  });
  afterAll(async () => {
    while (local.length) await local.pop()!();
  });
  const get = (id: string, headers: Record<string, string> = {}) => fetch(`${h.emu.baseUrl}/chat/calls/media/${id}`, { headers: { 'X-API-Key': 'media-key-owner', ...headers } });

  it('serves the whole file as an attachment to its owner', async () => {
    const r = await get(recordingId);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('audio/ogg');
    const body = Buffer.from(await r.arrayBuffer());
    expect(body.subarray(0, 4).toString()).toBe('OggS');
    expect(Number(r.headers.get('content-length'))).toBe(body.length);
  });
  it('an unknown media id is 404', async () => {
    expect((await get('cma_doesnotexist')).status).toBe(404);
  });
  it('a Range header is refused', async () => {
    const r = await get(recordingId, { Range: 'bytes=0-99' });
    expect(r.status).toBe(416);
    expect(((await r.json()) as any).error.message).toMatch(/^Range:/);
  });
  it('another API key gets 404 for media it does not own', async () => {
    expect((await get(recordingId, { 'X-API-Key': 'media-key-other' })).status).toBe(404);
  });
  it('media expires 30 days after creation on the emulator clock (404 after)', async () => {
    await h.api('POST', '/_emulator/clock/advance', { ms: 29 * 24 * 3600 * 1000 }, { 'X-API-Key': 'media-key-owner' });
    expect((await get(recordingId)).status).toBe(200);
    await h.api('POST', '/_emulator/clock/advance', { ms: 24 * 3600 * 1000 + 1000 }, { 'X-API-Key': 'media-key-owner' });
    expect((await get(recordingId)).status).toBe(404);
  });
});

describe('capture failure knob', () => {
  it('recordingResult FAILED announces FAILED without a media id', async () => {
    const h = await harness({ faults: { recordingResult: 'FAILED' } });
    await h.api('POST', `/chat/phoneNumbers/${WABA}/${encodeURIComponent(BUSINESS)}/settings`, { capture: { recordingEnabled: true, transcriptionEnabled: false, purpose: 'qa', announcementLanguage: 'en' } });
    const cc = await ring(h, { hangupAfterMs: 300 });
    const made = await h.answerer(cc.sdp);
    await h.api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp: made.sdp });
    made.peer.startSending();
    const rec = (await h.event('chat.call.recording.updated', cc.wacid)).callingMedia;
    expect(rec.result).toBe('FAILED');
    expect(rec.mediaAssetId).toBeUndefined();
  });
});
