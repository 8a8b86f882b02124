import { afterEach, describe, expect, it } from 'vitest';
import createRequire from 'node:module';
import { parseEvent } from '../../shared/events.ts';
import { AudioPeer, emulatorApi, startEmulator, startReceiver } from './index.ts';
import { until } from '../support/wait.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function setup(opts: Parameters<typeof startEmulator>[0] = {}) {
  const rx = await startReceiver();
  const emu = await startEmulator({ timeScale: 0.001, ...opts, webhookEndpoints: [{ url: rx.url, secret: 'whsec_calls_test' }] });
  cleanups.push(() => rx.close(), () => emu.close());
  const api = emulatorApi(emu);
  const event = async (type: string, wacid?: string) => {
    const got = await rx.waitFor((r) => r.some((d) => d.event.type === type && (!wacid || JSON.stringify(d.event).includes(wacid))), 15_000);
    return got.find((d) => d.event.type === type && (!wacid || JSON.stringify(d.event).includes(wacid)))!.event as any;
  };
  return { emu, rx, api, event };
}

const PHONE_ID = '100000000000001';
const BUSINESS = '+15550100001';
const WABA = '200000000000001';

describe('user-initiated call, end to end with a werift business peer over REST', () => {
  it('audio flows both ways, the terminate event arrives and the recording is valid Ogg Opus of the call length', async () => {
    const ctxOf = await setup();
    const { emu, api, event } = ctxOf;
    const settings = await api('POST', `/chat/phoneNumbers/${WABA}/${encodeURIComponent(BUSINESS)}/settings`, {
      capture: { recordingEnabled: true, transcriptionEnabled: true, purpose: 'quality assurance', announcementLanguage: 'en_GB' },
    });
    expect(settings.status).toBe(200);

    const started = await api('POST', '/_emulator/calls', {});
    expect(started.status).toBe(200);
    const connect = await event('chat.call.connect');
    const cc = connect.callingConnect;
    expect(cc).toMatchObject({ wacid: started.json.wacid, phoneId: PHONE_ID, to: BUSINESS, direction: 'USER_INITIATED', sdpType: 'offer' });
    expect(cc.sdp).toContain('a=ice-lite');
    expect(cc.sdp).toMatch(/a=candidate:.* 127\.0\.0\.1 /);
    expect(cc.sdp).toContain('a=end-of-candidates');

    // The business: a second werift peer, answering over REST only.
    const { peer: business, sdp: answer } = await AudioPeer.answerer(cc.sdp);
    cleanups.push(() => business.close());
    expect((await api('POST', '/chat/calls/preAccept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp: answer })).json).toEqual({ wacid: cc.wacid, success: true });
    const accepted = await api('POST', '/chat/calls/accept', { phoneId: cc.phoneId, wacid: cc.wacid, sdpType: 'answer', sdp: answer });
    expect(accepted.json).toEqual({ wacid: cc.wacid, success: true });
    business.startSending({ kind: 'tone', hz: 600 }); // only after accept returned 200

    // Talk until each side has heard 1.5 s of the other (waiting on the media, not on a
    // fixed time, keeps this right on a loaded 2-core machine), then the caller hangs up.
    const heardEnough = async () => {
      const v = (await api('GET', `/_emulator/calls/${cc.wacid}`)).json;
      return v.media.packetsReceived >= 75 && business.mediaStats().packetsReceived >= 75 ? v : undefined;
    };
    await until('75 packets each way', heardEnough, 30_000);
    expect((await api('POST', `/_emulator/calls/${cc.wacid}/hangup`)).status).toBe(200);

    const term = (await event('chat.call.terminate', cc.wacid)).callingTerminate;
    expect(term).toMatchObject({ wacid: cc.wacid, phoneId: PHONE_ID, status: 'COMPLETED', reason: 'USER_HANGUP', direction: 'USER_INITIATED' });
    expect(term.duration).toBe(Math.round((term.endTime - term.startTime) / 1000));
    expect(term.endTime - term.startTime).toBeGreaterThanOrEqual(1500);

    // What the caller received from the business, and the reverse: the tones, decoded.
    const caller = (await api('GET', `/_emulator/calls/${cc.wacid}`)).json;
    expect(caller.media.packetsReceived).toBeGreaterThanOrEqual(75);
    expect(caller.earlyPackets).toBe(0); // the business started only after accept's 200
    expect(caller.media.meanLevel).toBeGreaterThan(0.1); // a 0.3-peak tone is ~0.21 RMS; silence is 0
    expect(caller.media.packetsSent).toBeGreaterThanOrEqual(75);
    const heard = business.mediaStats();
    expect(heard.packetsReceived).toBeGreaterThanOrEqual(75);
    expect(heard.meanLevel).toBeGreaterThan(0.1);

    const rec = (await event('chat.call.recording.updated', cc.wacid)).callingMedia;
    expect(rec).toMatchObject({ wacid: cc.wacid, phoneId: PHONE_ID, result: 'AVAILABLE', type: 'recording' });
    const res = await fetch(`${emu.baseUrl}/chat/calls/media/${rec.mediaAssetId}`, { headers: { 'X-API-Key': emu.apiKey } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename=".+\.ogg"$/);
    const ogg = Buffer.from(await res.arrayBuffer());
    const parsed = parseOggOpus(ogg);
    expect(parsed.crcOk).toBe(true);
    const callSeconds = (term.endTime - term.startTime) / 1000;
    expect(Math.abs(parsed.durationS - callSeconds) / callSeconds).toBeLessThan(0.1);
    // The recording holds sound, not silence: decode its packets with an independent decoder.
    expect(decodeLevel(parsed.packets)).toBeGreaterThan(0.05);

    const tr = (await event('chat.call.transcription.updated', cc.wacid)).callingMedia;
    expect(tr.result).toBe('AVAILABLE');
    const trRes = await fetch(`${emu.baseUrl}/chat/calls/media/${tr.mediaAssetId}`, { headers: { 'X-API-Key': emu.apiKey } });
    const transcript = (await trRes.json()) as { wacid: string; language: string; segments: Array<{ speaker: string; startMs: number; endMs: number; text: string }> };
    expect(transcript).toMatchObject({ wacid: cc.wacid, language: 'en_GB' });
    expect(new Set(transcript.segments.map((s) => s.speaker))).toEqual(new Set(['system', 'user', 'business']));
    // capture on: the user side opened with the recording announcement (default 1.5 s)
    const announcement = transcript.segments.find((s) => s.speaker === 'system')!;
    expect(announcement.endMs - announcement.startMs).toBe(1500);
    expect(announcement.text).toContain('en_GB');

    // Contract with the bridge: every call event parses with the bridge's own schemas.
    const { rx } = ctxOf;
    for (const d of rx.received) expect(parseEvent(JSON.parse(d.rawBody)), d.event.type).toMatchObject({ known: true });
    // (deduplicated by event id, as any receiver must: a slow answer on a loaded machine is retried)
    const unique = new Map(rx.received.map((d) => [d.event.id, d.event.type]));
    expect([...unique.values()].sort()).toEqual(['chat.call.connect', 'chat.call.recording.updated', 'chat.call.terminate', 'chat.call.transcription.updated']);
  }, 60_000);
});

/** Independent Ogg reader: page CRCs, OpusHead, packets, duration from the last granule. */
function parseOggOpus(buf: Buffer) {
  const table = new Uint32Array(256).map((_, i) => {
    let r = i << 24;
    for (let j = 0; j < 8; j++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    return r >>> 0;
  });
  const crc = (b: Buffer) => {
    let c = 0;
    for (const x of b) c = ((c << 8) ^ table[((c >>> 24) ^ x) & 0xff]!) >>> 0;
    return c;
  };
  let off = 0;
  let crcOk = true;
  let lastGranule = 0n;
  const packets: Buffer[] = [];
  let pending: Buffer[] = [];
  while (off < buf.length) {
    expect(buf.toString('ascii', off, off + 4)).toBe('OggS');
    const nseg = buf[off + 26]!;
    const lacing = [...buf.subarray(off + 27, off + 27 + nseg)];
    const len = 27 + nseg + lacing.reduce((a, b) => a + b, 0);
    const page = Buffer.from(buf.subarray(off, off + len));
    const stored = page.readUInt32LE(22);
    page.writeUInt32LE(0, 22);
    if (crc(page) !== stored) crcOk = false;
    lastGranule = buf.readBigInt64LE(off + 6);
    let p = off + 27 + nseg;
    for (const l of lacing) {
      pending.push(buf.subarray(p, p + l));
      p += l;
      if (l < 255) {
        packets.push(Buffer.concat(pending));
        pending = [];
      }
    }
    off += len;
  }
  const head = packets[0]!;
  expect(head.toString('ascii', 0, 8)).toBe('OpusHead');
  expect(packets[1]!.toString('ascii', 0, 8)).toBe('OpusTags');
  const preSkip = head.readUInt16LE(10);
  return { crcOk, packets: packets.slice(2), durationS: Number(lastGranule - BigInt(preSkip)) / 48000 };
}

function decodeLevel(packets: Buffer[]): number {
  const O = createRequire.createRequire(import.meta.url)('opusscript');
  const dec = new O(48000, 1);
  let sum = 0;
  let n = 0;
  for (const p of packets) {
    const pcm = dec.decode(p) as Buffer;
    for (let i = 0; i + 1 < pcm.length; i += 2) {
      const s = pcm.readInt16LE(i) / 32768;
      sum += s * s;
      n++;
    }
  }
  dec.delete();
  return Math.sqrt(sum / Math.max(1, n));
}
