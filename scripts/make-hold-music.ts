/**
 * Writes the media anchor's bundled hold music, `server/anchor/sounds/hold.opus`: an Ogg/Opus
 * file (48 kHz mono, 20 ms packets) that Janus's AudioBridge plays into a call's room
 * (`play_file`) while the caller waits — on hold, or while the agent's page is away. Made
 * here from sine tones (no one's recording: free to use), so it can be made again:
 *
 *   npx tsx scripts/make-hold-music.ts [out.opus]
 *
 * The tune: a soft bed at BED_HZ under a slow melody, 8 s, looped by Janus. The bed never
 * stops, so a test can tell by its energy that the caller hears the music.
 */
import { writeFileSync } from 'node:fs';
import { FRAME_SAMPLES, OpusEncoder, SAMPLE_RATE, ToneSource } from '../test/emulator/calls/audio.ts';

/** The bed's frequency: always in the music (what tests measure at the caller). */
export const BED_HZ = 330;
const MELODY_HZ = [523, 587, 659, 784, 659, 587, 523, 440];
const NOTE_FRAMES = 50; // 1 s a note
const PRE_SKIP = 312;

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let j = 0; j < 8; j++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    t[i] = r >>> 0;
  }
  return t;
})();

function crc(buf: Buffer): number {
  let c = 0;
  for (const b of buf) c = ((c << 8) ^ CRC_TABLE[((c >>> 24) ^ b) & 0xff]!) >>> 0;
  return c;
}

/** One Ogg page holding whole packets (each under 255 × 255 bytes). */
function page(packets: Buffer[], granule: bigint, seq: number, flags: number): Buffer {
  const lacing: number[] = [];
  for (const p of packets) {
    let n = p.length;
    while (n >= 255) (lacing.push(255), (n -= 255));
    lacing.push(n);
  }
  const head = Buffer.alloc(27 + lacing.length);
  head.write('OggS', 0, 'ascii');
  head[4] = 0;
  head[5] = flags;
  head.writeBigInt64LE(granule, 6);
  head.writeUInt32LE(0x5b4e4c53, 14); // stream serial
  head.writeUInt32LE(seq, 18);
  head[26] = lacing.length;
  lacing.forEach((l, i) => (head[27 + i] = l));
  const out = Buffer.concat([head, ...packets]);
  out.writeUInt32LE(crc(out), 22);
  return out;
}

export function holdMusic(): Buffer {
  const enc = new OpusEncoder();
  const bed = new ToneSource(BED_HZ, 0.12);
  const notes = MELODY_HZ.map((hz) => new ToneSource(hz, 0.12));
  const head = Buffer.alloc(19);
  head.write('OpusHead', 0, 'ascii');
  head[8] = 1; // version
  head[9] = 1; // channels
  head.writeUInt16LE(PRE_SKIP, 10);
  head.writeUInt32LE(SAMPLE_RATE, 12);
  const vendor = 'switchboard';
  const tags = Buffer.alloc(8 + 4 + vendor.length + 4);
  tags.write('OpusTags', 0, 'ascii');
  tags.writeUInt32LE(vendor.length, 8);
  tags.write(vendor, 12, 'ascii');
  const pages = [page([head], 0n, 0, 0x02), page([tags], 0n, 1, 0)];
  const frames = MELODY_HZ.length * NOTE_FRAMES;
  let batch: Buffer[] = [];
  for (let f = 0; f < frames; f++) {
    const a = bed.next();
    const b = notes[Math.floor(f / NOTE_FRAMES)]!.next();
    // A short fade at each note's edges: no click between notes.
    const k = f % NOTE_FRAMES;
    const fade = Math.min(1, (k + 1) / 3, (NOTE_FRAMES - k) / 3);
    const pcm = new Int16Array(FRAME_SAMPLES);
    for (let i = 0; i < FRAME_SAMPLES; i++) pcm[i] = Math.round(a[i]! + b[i]! * fade);
    batch.push(enc.encode(pcm));
    const last = f === frames - 1;
    if (batch.length === 50 || last) {
      pages.push(page(batch, BigInt((f + 1) * FRAME_SAMPLES + PRE_SKIP), pages.length, last ? 0x04 : 0));
      batch = [];
    }
  }
  enc.close();
  return Buffer.concat(pages);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const out = process.argv[2] ?? new URL('../server/anchor/sounds/hold.opus', import.meta.url).pathname;
  writeFileSync(out, holdMusic());
  console.log(`wrote ${out}`);
}
