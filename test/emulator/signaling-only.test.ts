/**
 * Signaling-only callers (`calls.start({ signalingOnly: true })`), which load benches use
 * where thousands of WebRTC users do not fit one machine: the same signaling rules as any
 * call (SDP checks, preAccept/accept identity, states, terminate events), no media rules.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../support/wait.ts';
import { emulatorApi, startEmulator, type Emulator } from './index.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** An answer the provider's SDP rules accept (Opus, a SHA-256 fingerprint). */
const ANSWER = ['v=0', 'o=- 2 1 IN IP4 127.0.0.1', 's=-', 't=0 0', 'm=audio 9 UDP/TLS/RTP/SAVPF 111', 'c=IN IP4 127.0.0.1', 'a=mid:0', `a=fingerprint:sha-256 ${Array(32).fill('AB').join(':')}`, 'a=setup:active', 'a=rtpmap:111 opus/48000/2', ''].join('\r\n');

async function emulator(options: Parameters<typeof startEmulator>[0] = {}): Promise<Emulator> {
  const emu = await startEmulator({ noMediaAtStartMs: 300, noMediaMidCallMs: 300, ...options });
  cleanups.push(() => emu.close());
  return emu;
}

describe('signaling-only callers', () => {
  it('ring, preAccept, accept and terminate like any call, with no media drop; the connect payload comes back undelivered when asked', async () => {
    const emu = await emulator();
    const api = emulatorApi(emu);
    const call = await emu.calls.start({ signalingOnly: true, deliverConnect: false });
    expect(call.state).toBe('ringing');
    expect(call.media).toBeUndefined();
    // The offer looks like the provider's and passes its own rules; nothing was emitted.
    expect(call.sdp).toMatch(/^v=0\r\n/);
    expect(call.sdp).toMatch(/^a=rtpmap:111 opus\/48000\/2$/m);
    expect(call.sdp).toMatch(/^a=fingerprint:sha-256 [0-9A-F:]{95}$/m);
    expect(call.connect).toMatchObject({ wacid: call.wacid, phoneId: call.phoneId, from: call.from, to: call.to, direction: 'USER_INITIATED', sdpType: 'offer', sdp: call.sdp });
    expect(emu.ctx.events.filter((e) => e.type === 'chat.call.connect')).toEqual([]);

    // The SDP rules still apply to the answer.
    const bad = await api('POST', '/chat/calls/preAccept', { phoneId: call.phoneId, wacid: call.wacid, sdpType: 'answer', sdp: ANSWER.replace('opus/48000/2', 'PCMU/8000') });
    expect(bad.status).toBe(400);
    expect(bad.json.error.message).toBe('sdp: Opus (opus/48000/2) is required');
    expect((await api('POST', '/chat/calls/preAccept', { phoneId: call.phoneId, wacid: call.wacid, sdpType: 'answer', sdp: ANSWER })).status).toBe(200);
    // accept must carry the preAccepted answer.
    const other = await api('POST', '/chat/calls/accept', { phoneId: call.phoneId, wacid: call.wacid, sdpType: 'answer', sdp: ANSWER.replace('o=- 2 1', 'o=- 3 1') });
    expect(other.status).toBe(400);
    expect((await api('POST', '/chat/calls/accept', { phoneId: call.phoneId, wacid: call.wacid, sdpType: 'answer', sdp: ANSWER })).status).toBe(200);
    expect(emu.calls.get(call.wacid)!.state).toBe('active');

    // No business media for well past both no-media limits: still active.
    await new Promise((r) => setTimeout(r, 1000));
    expect(emu.calls.get(call.wacid)!.state).toBe('active');

    expect((await api('POST', '/chat/calls/terminate', { phoneId: call.phoneId, wacid: call.wacid })).status).toBe(200);
    const ended = emu.calls.get(call.wacid)!;
    expect(ended.terminate).toMatchObject({ status: 'COMPLETED', reason: 'BUSINESS_HANGUP' });
    expect(emu.ctx.events.filter((e) => e.type === 'chat.call.terminate').map((e) => ((e.callingTerminate ?? e.callingConnect) as { wacid: string }).wacid)).toEqual([call.wacid]);
  });

  it('a media caller under the same short no-media limits is dropped (the contrast)', async () => {
    const emu = await emulator();
    const api = emulatorApi(emu);
    const started = await api('POST', '/_emulator/calls', { audio: 'silence' });
    const { wacid, phoneId, sdp: offer } = started.json as { wacid: string; phoneId: string; sdp: string };
    const { AudioPeer } = await import('./index.ts');
    const { peer, sdp } = await AudioPeer.answerer(offer);
    cleanups.push(() => peer.close());
    expect((await api('POST', '/chat/calls/accept', { phoneId, wacid, sdpType: 'answer', sdp })).status).toBe(200);
    await until('the no-media drop', () => (emu.calls.get(wacid)!.state === 'ended' ? true : undefined), 10_000);
    expect(emu.calls.get(wacid)!.terminate).toMatchObject({ status: 'FAILED', reason: 'MEDIA_TIMEOUT' });
  });

  it('a signaling-only caller hanging up while it rings ends the call USER_CANCELLED, delivered by default', async () => {
    const emu = await emulator();
    const call = await emu.calls.start({ signalingOnly: true });
    expect(emu.ctx.events.filter((e) => e.type === 'chat.call.connect').map((e) => ((e.callingTerminate ?? e.callingConnect) as { wacid: string }).wacid)).toEqual([call.wacid]);
    expect(emu.calls.hangup(call.wacid)).toBe(true);
    expect(emu.calls.get(call.wacid)!.terminate).toMatchObject({ status: 'FAILED', reason: 'USER_CANCELLED', duration: 0 });
  });
});
