/**
 * One test per enforced call rule of the emulator (calling-facts.md, interface part 4):
 * field validation, the same-SDP rule, the accept window, the no-media drop, every way a
 * call ends, capture settings validation, and the call media download rules
 * (business-initiated calls: call-rules-outbound.test.ts).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AudioPeer } from './index.ts';
import { PHONE_ID, BUSINESS, WABA, cleanups, harness, userHeard, ring, type Harness } from '../support/call-rules.ts';
import { until } from '../support/wait.ts';

afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

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
