import { describe, expect, it } from 'vitest';
import { MjrError, mjrToOgg, readMjr } from './mjr.ts';
import { OpusDecoder, OpusEncoder, ToneSource, pitchHz } from '../../test/emulator/calls/audio.ts';

/** An RTP packet as Janus's recorder stores it (optionally with a one-byte header extension and padding). */
function rtp(seq: number, payload: Buffer, opts: { ext?: boolean; pad?: number } = {}): Buffer {
  const head = Buffer.alloc(12);
  head[0] = 0x80 | (opts.ext ? 0x10 : 0) | (opts.pad ? 0x20 : 0);
  head[1] = 111;
  head.writeUInt16BE(seq & 0xffff, 2);
  head.writeUInt32BE((seq * 960) >>> 0, 4);
  head.writeUInt32BE(0x1234, 8);
  const ext = opts.ext ? Buffer.from([0xbe, 0xde, 0x00, 0x01, 0x10, 0x7f, 0x00, 0x00]) : Buffer.alloc(0);
  const pad = opts.pad ? Buffer.concat([Buffer.alloc(opts.pad - 1), Buffer.from([opts.pad])]) : Buffer.alloc(0);
  return Buffer.concat([head, ext, payload, pad]);
}

function mjr(header: object, frames: Buffer[]): Buffer {
  const info = Buffer.from(JSON.stringify(header));
  const len = Buffer.alloc(2);
  len.writeUInt16BE(info.length);
  const parts: Buffer[] = [Buffer.from('MJR00002', 'latin1'), len, info];
  frames.forEach((f, i) => {
    const h = Buffer.alloc(10);
    h.write('MEET', 0, 'latin1');
    h.writeUInt32BE(i * 20, 4);
    h.writeUInt16BE(f.length, 8);
    parts.push(h, f);
  });
  return Buffer.concat(parts);
}

/** The packets of an Ogg/Opus file (page by page, lacing joined), headers included. */
function oggPackets(buf: Buffer): { packets: Buffer[]; lastGranule: bigint } {
  const packets: Buffer[] = [];
  let off = 0;
  let cur: Buffer[] = [];
  let lastGranule = 0n;
  while (off < buf.length) {
    expect(buf.toString('latin1', off, off + 4)).toBe('OggS');
    lastGranule = buf.readBigInt64LE(off + 6);
    const n = buf[off + 26]!;
    const lacing = [...buf.subarray(off + 27, off + 27 + n)];
    let p = off + 27 + n;
    for (const l of lacing) {
      cur.push(buf.subarray(p, p + l));
      p += l;
      if (l < 255) (packets.push(Buffer.concat(cur)), (cur = []));
    }
    off = p;
  }
  return { packets, lastGranule };
}

const HEADER = { t: 'a', c: 'opus', s: 1700000000000000, u: 1700000000000000 };

describe('Janus recordings (.mjr) to Ogg/Opus', () => {
  it('takes the Opus packets out of the RTP, in sequence order across the wrap, once each; the Ogg decodes to the tone', () => {
    const enc = new OpusEncoder();
    const tone = new ToneSource(660, 0.3);
    const opus = Array.from({ length: 50 }, () => enc.encode(tone.next()));
    enc.close();
    // Sequence numbers cross 65535 → 0; two arrive swapped, one twice; extensions and padding on some.
    const seqs = opus.map((_, i) => (65510 + i) & 0xffff);
    const frames = opus.map((p, i) => rtp(seqs[i]!, p, { ext: i % 3 === 0, pad: i % 7 === 0 ? 4 : 0 }));
    [frames[20], frames[21]] = [frames[21]!, frames[20]!];
    frames.splice(30, 0, frames[30]!);
    const file = mjr(HEADER, frames);

    const { packets } = readMjr(file);
    expect(packets.length).toBe(50);
    expect(packets.map((p) => p.toString('hex'))).toEqual(opus.map((p) => p.toString('hex')));

    const ogg = mjrToOgg(file, 'voicemail');
    const { packets: out, lastGranule } = oggPackets(ogg);
    expect(out[0]!.toString('latin1', 0, 8)).toBe('OpusHead');
    expect(out[1]!.toString('latin1', 0, 8)).toBe('OpusTags');
    expect(out.length).toBe(52);
    expect(lastGranule).toBe(BigInt(312 + 50 * 960));
    const dec = new OpusDecoder();
    const pitches = out.slice(12).map((p) => pitchHz(dec.decode(p)));
    dec.close();
    for (const hz of pitches) expect(Math.abs(hz - 660)).toBeLessThan(60);
  });

  it('skipMs leaves out what was written in the first ms (the frames are 20 ms apart here)', () => {
    const frames = Array.from({ length: 10 }, (_, i) => rtp(i, Buffer.from([0xf8, 0xff, 0xfe, i])));
    const { packets, times } = readMjr(mjr(HEADER, frames), 100);
    expect(times).toEqual([100, 120, 140, 160, 180]);
    expect(packets.map((p) => p[3])).toEqual([5, 6, 7, 8, 9]);
    expect(() => mjrToOgg(mjr(HEADER, frames), 'x', 1000)).toThrow(/holds no audio/);
  });

  it('a recording cut short keeps what came before the torn frame', () => {
    const frames = [rtp(1, Buffer.from([0xf8, 0xff, 0xfe])), rtp(2, Buffer.from([0xf8, 0xff, 0xfe]))];
    const file = mjr(HEADER, frames);
    expect(readMjr(file.subarray(0, file.length - 5)).packets.length).toBe(1);
  });

  it('refuses what is not an Opus audio recording, saying why', () => {
    expect(() => readMjr(Buffer.from('OggS not a recording'))).toThrow(MjrError);
    expect(() => readMjr(Buffer.from('OggS not a recording'))).toThrow(/no MJR00002 header/);
    expect(() => readMjr(mjr({ t: 'v', c: 'vp8' }, []))).toThrow(/not an audio recording/);
    expect(() => readMjr(mjr({ t: 'a', c: 'pcmu' }, []))).toThrow(/not Opus/);
    expect(() => mjrToOgg(mjr(HEADER, []), 'x')).toThrow(/holds no audio/);
  });
});
