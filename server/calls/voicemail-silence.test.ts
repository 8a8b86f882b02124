/**
 * The voicemail silence watch on real Opus: a growing Janus recording (`.mjr`) of a caller who
 * speaks (a 400 Hz tone, Opus-encoded) then sends silence frames; the tracker finds the last
 * voice by the frames' times, and the watch fires once after VOICEMAIL_SILENCE_S past it
 * (never before the prompt's end plus the silence), or not at all while the caller talks.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OpusEncoder, OPUS_SILENCE, ToneSource } from '../../test/emulator/calls/audio.ts';
import { VoiceTracker, watchSilence } from './voicemail-silence.ts';

const dir = mkdtempSync(join(tmpdir(), 'sb-vm-silence-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A recording as Janus writes it: header, then `MEET` frames (time ms, length, RTP). */
function mjr(frames: Array<{ ms: number; opus: Buffer }>): Buffer {
  const info = Buffer.from(JSON.stringify({ t: 'a', c: 'opus' }));
  const len = Buffer.alloc(2);
  len.writeUInt16BE(info.length);
  const parts: Buffer[] = [Buffer.from('MJR00002', 'latin1'), len, info];
  frames.forEach((f, i) => {
    const rtp = Buffer.alloc(12);
    rtp[0] = 0x80;
    rtp[1] = 111;
    rtp.writeUInt16BE(i & 0xffff, 2);
    const h = Buffer.alloc(10);
    h.write('MEET', 0, 'latin1');
    h.writeUInt32BE(f.ms, 4);
    h.writeUInt16BE(12 + f.opus.length, 8);
    parts.push(h, rtp, f.opus);
  });
  return Buffer.concat(parts);
}

/** `voiceMs` of the caller's tone from 0, then silence frames up to `totalMs`. */
function caller(voiceMs: number, totalMs: number): Array<{ ms: number; opus: Buffer }> {
  const enc = new OpusEncoder();
  const tone = new ToneSource(400, 0.3);
  const out = Array.from({ length: totalMs / 20 }, (_, i) => ({ ms: i * 20, opus: i * 20 < voiceMs ? enc.encode(tone.next()) : OPUS_SILENCE }));
  enc.close();
  return out;
}

describe('VoiceTracker', () => {
  it('the last frame loud enough to be a voice, fed as the file grows (only new packets decoded); the prompt counts as voice until its end', () => {
    const frames = caller(3_000, 6_000);
    const t = new VoiceTracker(1_000);
    expect(t.update(mjr(frames.slice(0, 50)))).toBe(1_000); // 1 s in: still the prompt; the message's silence counts from its end
    expect(t.update(mjr(frames.slice(0, 120)))).toBe(2_380);
    expect(t.update(mjr(frames))).toBeGreaterThanOrEqual(2_960); // the last voiced frame (Opus may carry a frame of tail)
    expect(t.lastVoiceMs).toBeLessThanOrEqual(3_040);
    t.close();
    // A caller silent from the start: the prompt's end is the last voice.
    const quiet = new VoiceTracker(1_000);
    expect(quiet.update(mjr(caller(0, 4_000)))).toBe(1_000);
    quiet.close();
  });
});

describe('watchSilence', () => {
  it('fires once, VOICEMAIL_SILENCE_S after the last voice; not while the caller talks; a missing file is silence', async () => {
    const path = join(dir, 'a-audio.mjr');
    let clock = 0;
    let fired = 0;
    const stop = watchSilence({ path, leadMs: 500, silenceMs: 1_000, onSilent: () => fired++, everyMs: 10, now: () => clock });
    const settle = () => new Promise((r) => setTimeout(r, 60));
    const frames = caller(2_000, 6_000);
    // Talking: the file holds what was said up to the clock.
    for (clock = 0; clock <= 2_000; clock += 250) {
      writeFileSync(path, mjr(frames.filter((f) => f.ms <= clock)));
      await settle();
    }
    expect(fired).toBe(0);
    clock = 2_900; // 0.9 s of silence after the last voice (~1.98 s)
    writeFileSync(path, mjr(frames.filter((f) => f.ms <= clock)));
    await settle();
    expect(fired).toBe(0);
    clock = 3_100;
    writeFileSync(path, mjr(frames.filter((f) => f.ms <= clock)));
    await settle();
    expect(fired).toBe(1);
    clock = 9_000;
    await settle();
    expect(fired).toBe(1); // once
    stop();

    // No recording at all yet (Janus has not written it): the prompt's end plus the silence, then it fires.
    let clock2 = 0;
    let fired2 = 0;
    const stop2 = watchSilence({ path: join(dir, 'none.mjr'), leadMs: 500, silenceMs: 1_000, onSilent: () => fired2++, everyMs: 10, now: () => clock2 });
    clock2 = 1_400;
    await settle();
    expect(fired2).toBe(0);
    clock2 = 1_500;
    await settle();
    expect(fired2).toBe(1);
    stop2();
  });
});
