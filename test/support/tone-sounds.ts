/**
 * Stand-ins of the anchor's announcements for tests that tell by pitch what a caller hears:
 * the voicemail prompt, the closed greeting, queue audio's greeting and its position
 * announcements, each part one frequency (the bundled ones are speech:
 * scripts/make-spoken-sounds.ts). Ogg/Opus, 48 kHz mono, 20 ms packets, with the emulator's
 * encoder and muxer. `writeToneSounds(dir)` writes them; the bridge takes them as
 * VOICEMAIL_PROMPT_FILE, CLOSED_GREETING_FILE and QUEUE_AUDIO_FILE's `greetings` and
 * `positionDir`. The prompt ends with the bundled prompt's tone (BEEP_HZ).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FRAME_SAMPLES, OpusEncoder, ToneSource } from '../emulator/calls/audio.ts';
import { muxOggOpus } from '../emulator/calls/ogg.ts';
import { BEEP_HZ, MAX_SPOKEN_POSITION } from '../../server/anchor/sounds.ts';

/** The prompt's chime, the closed greeting, the queue greeting, the position pulses. */
export const PROMPT_HZ = 660;
export const CLOSED_HZ = 880;
export const GREETING_HZ = 1150;
export const POSITION_HZ = 1000;
/** The prompt: 2 s of chime, 0.4 s of quiet, 0.6 s of tone. */
const PROMPT_PARTS_MS = { chime: 2000, gap: 400, beep: 600 } as const;
/** The closed greeting before the prompt: 2.5 s, then 0.5 s of quiet. */
const CLOSED_PARTS_MS = { greeting: 2500, gap: 500 } as const;
const QUEUE_GREETING_MS = 2500;
/** Each pulse of a position announcement: on, then quiet. */
const POSITION_PULSE_MS = { on: 240, off: 160 } as const;

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

/** The files of the stand-ins, as the bridge's variables take them. */
export interface ToneSounds {
  prompt: string;
  closed: string;
  greeting: string;
  /** A folder with position-1.opus … position-9.opus and position-more.opus. */
  positionDir: string;
}

/** Write every stand-in into `dir`. */
export function writeToneSounds(dir: string): ToneSounds {
  const out: ToneSounds = { prompt: join(dir, 'voicemail.opus'), closed: join(dir, 'closed.opus'), greeting: join(dir, 'greeting.opus'), positionDir: dir };
  writeFileSync(out.prompt, voicemailPrompt());
  writeFileSync(out.closed, closedGreeting());
  writeFileSync(out.greeting, queueGreeting());
  for (let n = 1; n <= MAX_SPOKEN_POSITION; n++) writeFileSync(join(dir, `position-${n}.opus`), positionAnnouncement(n));
  writeFileSync(join(dir, 'position-more.opus'), positionAnnouncement('more'));
  return out;
}
