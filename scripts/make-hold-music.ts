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
import { FRAME_SAMPLES, OpusEncoder, ToneSource } from '../test/emulator/calls/audio.ts';
import { muxOggOpus } from '../test/emulator/calls/ogg.ts';

/** The bed's frequency: always in the music (what tests measure at the caller). */
export const BED_HZ = 330;
const MELODY_HZ = [523, 587, 659, 784, 659, 587, 523, 440];
const NOTE_FRAMES = 50; // 1 s a note
export function holdMusic(): Buffer {
  const enc = new OpusEncoder();
  const bed = new ToneSource(BED_HZ, 0.12);
  const notes = MELODY_HZ.map((hz) => new ToneSource(hz, 0.12));
  const packets: Buffer[] = [];
  const frames = MELODY_HZ.length * NOTE_FRAMES;
  for (let f = 0; f < frames; f++) {
    const a = bed.next();
    const b = notes[Math.floor(f / NOTE_FRAMES)]!.next();
    // A short fade at each note's edges: no click between notes.
    const k = f % NOTE_FRAMES;
    const fade = Math.min(1, (k + 1) / 3, (NOTE_FRAMES - k) / 3);
    const pcm = new Int16Array(FRAME_SAMPLES);
    for (let i = 0; i < FRAME_SAMPLES; i++) pcm[i] = Math.round(a[i]! + b[i]! * fade);
    packets.push(enc.encode(pcm));
  }
  enc.close();
  return muxOggOpus(packets, { vendor: 'switchboard', comments: ['TITLE=hold music (sine tones)'] });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const out = process.argv[2] ?? new URL('../server/anchor/sounds/hold.opus', import.meta.url).pathname;
  writeFileSync(out, holdMusic());
  console.log(`wrote ${out}`);
}
