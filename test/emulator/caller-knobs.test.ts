/**
 * Knobs of the simulated caller and the signaling faults that agent-desk e2e tests use:
 * a caller whose audio never arrives (`audio: 'none'`, one-way audio), the caller's
 * listening window over the control API (hold music vs one tone vs silence), and an
 * endpoint refusal that passes on the provider's 138xxx code (`kind: 'refuse'`).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../support/wait.ts';
import { AudioPeer, emulatorApi, startEmulator } from './index.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** An emulator (no webhooks needed: the control API answers with the caller's offer) and a started call. */
async function ringing(body: Record<string, unknown>, faults?: Record<string, unknown>) {
  const emu = await startEmulator(faults ? { faults: faults as never } : {});
  cleanups.push(() => emu.close());
  const api = emulatorApi(emu);
  const started = await api('POST', '/_emulator/calls', body);
  expect(started.status).toBe(200);
  const { wacid, phoneId, sdp: offer } = started.json as { wacid: string; phoneId: string; sdp: string };
  const { peer, sdp } = await AudioPeer.answerer(offer);
  cleanups.push(() => peer.close());
  const accept = () => api('POST', '/chat/calls/accept', { phoneId, wacid, sdpType: 'answer', sdp });
  return { api, wacid, peer, accept };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('caller audio', () => {
  it("audio 'none': the caller sends no RTP at all (not even silence frames) while hearing the business; the call stays up", async () => {
    const { api, wacid, peer, accept } = await ringing({ audio: 'none' });
    expect((await accept()).status).toBe(200);
    peer.startSending({ kind: 'tone', hz: 500 });
    await until('the caller hears the business', async () => ((await api('GET', `/_emulator/calls/${wacid}`)).json.media?.packetsReceived > 50 ? true : undefined), 10_000);
    await sleep(1000);
    const v = (await api('GET', `/_emulator/calls/${wacid}`)).json;
    expect(v.state).toBe('active');
    expect(v.media.packetsSent).toBe(0);
    expect(peer.mediaStats().packetsReceived).toBe(0);
  });

  it("audio 'silence' still sends packets (the 3-byte silence frames): the contrast to 'none'", async () => {
    const { wacid, peer, accept, api } = await ringing({ audio: 'silence' });
    expect((await accept()).status).toBe(200);
    peer.startSending({ kind: 'silence' });
    await until('silence frames reach the business', () => (peer.mediaStats().packetsReceived > 20 ? true : undefined), 10_000);
    expect(peer.mediaStats().audibleFrames).toBe(0);
    expect((await api('GET', `/_emulator/calls/${wacid}`)).json.media.packetsSent).toBeGreaterThan(20);
  });

  it("a bad audio value names the choices", async () => {
    const emu = await startEmulator();
    cleanups.push(() => emu.close());
    const r = await emulatorApi(emu)('POST', '/_emulator/calls', { audio: 'music' });
    expect(r.status).toBe(400);
    expect(r.json.error.message).toBe("audio: 'tone', 'silence' or 'none'");
  });
});

describe("the caller's listening window over the control API", () => {
  it('POST starts a window, GET says what was heard since: one tone has one pitch and is continuous; nothing sent is silence', async () => {
    const { api, wacid, peer, accept } = await ringing({});
    expect((await api('GET', `/_emulator/calls/${wacid}/window`)).json).toMatchObject({ frames: 0 });
    expect((await accept()).status).toBe(200);
    peer.startSending({ kind: 'tone', hz: 600 });
    await until('audio at the caller', async () => ((await api('GET', `/_emulator/calls/${wacid}`)).json.media?.decodedFrames > 25 ? true : undefined), 10_000);
    expect((await api('POST', `/_emulator/calls/${wacid}/window`)).json).toMatchObject({ frames: 0 });
    await sleep(1000);
    const tone = (await api('GET', `/_emulator/calls/${wacid}/window`)).json;
    expect(tone.frames).toBeGreaterThan(30);
    expect(tone.audibleFraction).toBeGreaterThan(0.9);
    expect(tone.pitches).toEqual([600]);
    peer.stopSending();
    await sleep(200);
    await api('POST', `/_emulator/calls/${wacid}/window`);
    await sleep(500);
    expect((await api('GET', `/_emulator/calls/${wacid}/window`)).json).toMatchObject({ frames: 0, pitches: [] });
    expect((await api('GET', '/_emulator/calls/wacid.nope/window')).status).toBe(404);
  });
});

describe("endpoint fault 'refuse'", () => {
  it('accept is refused with the provider code in chatApiError and nothing is carried out; after `times` it goes through', async () => {
    const { api, wacid, accept } = await ringing({}, { endpoints: { 'POST /chat/calls/accept': { kind: 'refuse', code: 138019, times: 1 } } });
    const r = await accept();
    expect(r.status).toBe(400);
    expect(r.json.error).toMatchObject({ code: 'BAD_REQUEST', chatApiError: { code: 138019, message: expect.any(String) } });
    expect((await api('GET', `/_emulator/calls/${wacid}`)).json.state).toBe('ringing');
    expect((await accept()).status).toBe(200);
    expect((await api('GET', `/_emulator/calls/${wacid}`)).json.state).toBe('active');
  });

  it('a code that is not a whole number is refused by the faults route', async () => {
    const emu = await startEmulator();
    cleanups.push(() => emu.close());
    const r = await emulatorApi(emu)('PATCH', '/_emulator/faults', { endpoints: { 'POST /chat/calls/accept': { kind: 'refuse', code: 'x' } } });
    expect(r.status).toBe(400);
    expect(r.json.error.message).toMatch(/code: a whole number/);
  });
});
