/**
 * Writes the anchor's voicemail prompt and closed greeting, and queue audio's greeting and
 * position announcements (server/anchor/sounds.ts says what each is): Ogg/Opus, 48 kHz mono, 20 ms packets, made from sine tones (no one's voice: free
 * to use) with the emulator's encoder and Ogg/Opus muxer, as the hold music is:
 *
 *   npx tsx scripts/make-voicemail-sounds.ts [out-dir]
 *
 * Each part is one frequency, so a test tells by energy what the caller hears.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FRAME_SAMPLES, OpusEncoder, ToneSource } from '../test/emulator/calls/audio.ts';
import { muxOggOpus } from '../test/emulator/calls/ogg.ts';
import { BEEP_HZ, CLOSED_HZ, CLOSED_PARTS_MS, GREETING_HZ, MAX_SPOKEN_POSITION, POSITION_HZ, POSITION_PULSE_MS, PROMPT_HZ, PROMPT_PARTS_MS, QUEUE_GREETING_MS } from '../server/anchor/sounds.ts';

const FRAME_MS = 20;

/** `ms` of a tone (`hz` 0: quiet), faded in and out over 3 frames: no clicks. */
function tone(hz: number, ms: number, amplitude = 0.25): Int16Array[] {
  const src = new ToneSource(hz || 1, hz ? amplitude : 0);
  const n = Math.round(ms / FRAME_MS);
  return Array.from({ length: n }, (_, f) => {
    const fade = Math.min(1, (f + 1) / 3, (n - f) / 3);
    const pcm = src.next();
    for (let i = 0; i < FRAME_SAMPLES; i++) pcm[i] = Math.round(pcm[i]! * fade);
    return pcm;
  });
}

/** The prompt: a chime of PROMPT_HZ (two pulses), a pause, the tone. */
function prompt(): Int16Array[] {
  const half = PROMPT_PARTS_MS.chime / 2;
  return [...tone(PROMPT_HZ, half), ...tone(PROMPT_HZ, half, 0.18), ...tone(0, PROMPT_PARTS_MS.gap), ...tone(BEEP_HZ, PROMPT_PARTS_MS.beep)];
}

function encode(frames: Int16Array[], title: string): Buffer {
  const enc = new OpusEncoder();
  const packets = frames.map((pcm) => enc.encode(pcm));
  enc.close();
  return muxOggOpus(packets, { vendor: 'switchboard', comments: [`TITLE=${title}`] });
}

export function voicemailPrompt(): Buffer {
  return encode(prompt(), 'voicemail prompt (sine tones)');
}

export function closedGreeting(): Buffer {
  return encode([...tone(CLOSED_HZ, CLOSED_PARTS_MS.greeting), ...tone(0, CLOSED_PARTS_MS.gap), ...prompt()], 'closed greeting and voicemail prompt (sine tones)');
}

export function queueGreeting(): Buffer {
  return encode(tone(GREETING_HZ, QUEUE_GREETING_MS), 'queue greeting (sine tone)');
}

/** The place in the queue: `place` pulses (1 … 9), or one long tone (`more`: beyond 9). */
export function positionAnnouncement(place: number | 'more'): Buffer {
  const pulses = place === 'more' ? [...tone(POSITION_HZ, 1600)] : Array.from({ length: place }, () => [...tone(POSITION_HZ, POSITION_PULSE_MS.on), ...tone(0, POSITION_PULSE_MS.off)]).flat();
  return encode(pulses, `queue position ${place} (sine tones)`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const dir = process.argv[2] ?? new URL('../server/anchor/sounds/', import.meta.url).pathname;
  writeFileSync(join(dir, 'voicemail.opus'), voicemailPrompt());
  writeFileSync(join(dir, 'closed.opus'), closedGreeting());
  writeFileSync(join(dir, 'greeting.opus'), queueGreeting());
  for (let n = 1; n <= MAX_SPOKEN_POSITION; n++) writeFileSync(join(dir, `position-${n}.opus`), positionAnnouncement(n));
  writeFileSync(join(dir, 'position-more.opus'), positionAnnouncement('more'));
  console.log(`wrote the voicemail, closed, greeting and position sounds in ${dir}`);
}
