import { describe, expect, it } from 'vitest';
import { FRAME_SAMPLES, LevelWindow, OpusDecoder, OpusEncoder, ToneSource, pitchHz, rms } from './calls/audio.ts';
import { muxOggOpus, oggCrc } from './calls/ogg.ts';
import { internal } from '../support/internals.ts';

describe('Opus codecs of the simulated users', () => {
  it('a tone survives encode → decode at its level (0.3 peak sine ≈ 0.21 RMS)', () => {
    const enc = new OpusEncoder();
    const dec = new OpusDecoder();
    const tone = new ToneSource(400, 0.3);
    let level = 0;
    for (let i = 0; i < 25; i++) level = rms(dec.decode(enc.encode(tone.next())));
    enc.close();
    dec.close();
    expect(level).toBeGreaterThan(0.19);
    expect(level).toBeLessThan(0.23);
  });

  it('an encoder keeps working after other instances grow the wasm heap (opusscript detaches old views)', () => {
    const enc = new OpusEncoder();
    const dec = new OpusDecoder();
    const others = Array.from({ length: 250 }, () => new OpusDecoder()); // measured: growth after ~160
    const tone = new ToneSource(400, 0.3);
    let level = 0;
    for (let i = 0; i < 25; i++) level = rms(dec.decode(enc.encode(tone.next())));
    for (const o of others) o.close();
    enc.close();
    dec.close();
    expect(level).toBeGreaterThan(0.19);
  });

  it('codecs of overlapping calls in one process never corrupt each other (opusscript writes PCM outside its blocks unless re-pointed)', () => {
    // A call is two to four codecs; calls come and go while others run, as in a load test.
    const live: Array<{ enc: OpusEncoder; dec: OpusDecoder; tone: ToneSource }> = [];
    const errors: string[] = [];
    let wrong = 0;
    for (let call = 0; call < 120; call++) {
      try {
        live.push({ enc: new OpusEncoder(), dec: new OpusDecoder(), tone: new ToneSource(400 + call, 0.3) });
        if (live.length > 6) {
          const done = live.shift()!;
          done.enc.close();
          done.dec.close();
        }
        for (const c of live) {
          let level = 0;
          for (let f = 0; f < 5; f++) level = rms(c.dec.decode(c.enc.encode(c.tone.next())));
          if (level < 0.19 || level > 0.23) wrong++;
        }
      } catch (err) {
        errors.push(`call ${call}: ${(err as Error).message}`);
      }
    }
    for (const c of live) {
      c.enc.close();
      c.dec.close();
    }
    expect(errors).toEqual([]);
    expect(wrong).toBe(0);
  });

  it('closing a codec whose wasm free fails does not throw (a hangup must not fail on it), and it is closed after', () => {
    const dec = new OpusDecoder();
    const inst = internal<{ delete(): void }>(dec, 'inst')!;
    inst.delete = () => {
      throw new Error('RuntimeError: memory access out of bounds');
    };
    expect(() => dec.close()).not.toThrow();
    expect(() => dec.decode(Buffer.from([0xf8, 0xff, 0xfe]))).toThrow(/codec closed/);
  });
});

describe('Ogg muxer', () => {
  it('CRC-32 is the Ogg one (poly 0x04C11DB7, no reflection): check value of "123456789" is 0x89A1897F', () => {
    expect(oggCrc(Buffer.from('123456789')).toString(16)).toBe('89a1897f');
  });

  it('packets are laced across pages; granule counts 48 kHz samples including pre-skip; last page has EOS', () => {
    const packets = Array.from({ length: 120 }, (_, i) => Buffer.alloc(i % 3 === 0 ? 300 : 40, i)); // some need 2 lacing values
    const ogg = muxOggOpus(packets);
    const pages: Array<{ flags: number; granule: bigint; seq: number }> = [];
    for (let off = 0; off < ogg.length; ) {
      expect(ogg.toString('ascii', off, off + 4)).toBe('OggS');
      const n = ogg[off + 26]!;
      const len = 27 + n + [...ogg.subarray(off + 27, off + 27 + n)].reduce((a, b) => a + b, 0);
      pages.push({ flags: ogg[off + 5]!, granule: ogg.readBigInt64LE(off + 6), seq: ogg.readUInt32LE(off + 18) });
      off += len;
    }
    expect(pages[0]!.flags).toBe(0x02);
    expect(pages.map((p) => p.seq)).toEqual(pages.map((_, i) => i));
    expect(pages.at(-1)!.flags & 0x04).toBe(0x04);
    expect(pages.at(-1)!.granule).toBe(BigInt(312 + 120 * 960));
  });
});

describe('listening window (hold music vs one tone vs silence)', () => {
  it('a tune of several notes through Opus shows several pitches, continuous; one tone shows one; silence none', () => {
    // A fresh codec pair per sound: a decoder's tail after a tone is not silence.
    const heard = (frames: Int16Array[]) => {
      const enc = new OpusEncoder();
      const dec = new OpusDecoder();
      const w = new LevelWindow();
      for (const f of frames) w.add(dec.decode(enc.encode(f)));
      enc.close();
      dec.close();
      return w.stats();
    };
    const notes = [392, 494, 587, 440].map((hz) => new ToneSource(hz, 0.25));
    const tune = Array.from({ length: 80 }, (_, i) => notes[Math.floor(i / 20)]!.next()); // 400 ms notes
    const t = heard(tune);
    expect(t.pitches.length).toBeGreaterThanOrEqual(4);
    expect(t.audibleFraction).toBeGreaterThan(0.9);
    const one = new ToneSource(1000, 0.25);
    expect(heard(Array.from({ length: 80 }, () => one.next())).pitches).toEqual([1000]);
    const quiet = heard(Array.from({ length: 20 }, () => new Int16Array(FRAME_SAMPLES)));
    expect(quiet).toMatchObject({ audibleFraction: 0, pitches: [] });
  });

  it('pitchHz reads a clean tone', () => {
    expect(Math.abs(pitchHz(new ToneSource(440, 0.3).next()) - 440)).toBeLessThanOrEqual(25);
    expect(pitchHz(new Int16Array(FRAME_SAMPLES))).toBe(0);
  });
});

