/**
 * The anchor's bundled announcements (Ogg/Opus, 48 kHz mono, made from sine tones by
 * scripts/make-voicemail-sounds.ts; the build copies `sounds/` beside the compiled server).
 * Janus plays them by path (`play_file`), so Janus must see them there (it runs beside the
 * bridge, or docker-compose mounts the folder at the same path).
 *
 * - `voicemail.opus`: the voicemail prompt — a two-tone chime at PROMPT_HZ standing in for
 *   "leave a message after the tone", then the tone (BEEP_HZ). VOICEMAIL_PROMPT_MS long.
 * - `closed.opus`: the closed greeting (CLOSED_HZ, standing in for "we are closed") followed
 *   by the same prompt: out of hours the caller hears both, one file. CLOSED_GREETING_MS long.
 */
import { fileURLToPath } from 'node:url';

export const VOICEMAIL_PROMPT_FILE = fileURLToPath(new URL('./sounds/voicemail.opus', import.meta.url));
export const CLOSED_GREETING_FILE = fileURLToPath(new URL('./sounds/closed.opus', import.meta.url));

/** What tests measure at the caller: the prompt's chime, the tone, the closed greeting. */
export const PROMPT_HZ = 660;
export const BEEP_HZ = 1250;
export const CLOSED_HZ = 880;

/** The prompt: 2 s of chime, 0.4 s of quiet, 0.6 s of tone. */
export const PROMPT_PARTS_MS = { chime: 2000, gap: 400, beep: 600 } as const;
export const VOICEMAIL_PROMPT_MS = PROMPT_PARTS_MS.chime + PROMPT_PARTS_MS.gap + PROMPT_PARTS_MS.beep;
/** The closed greeting before the prompt: 2.5 s, then 0.5 s of quiet. */
export const CLOSED_PARTS_MS = { greeting: 2500, gap: 500 } as const;
export const CLOSED_GREETING_MS = CLOSED_PARTS_MS.greeting + CLOSED_PARTS_MS.gap + VOICEMAIL_PROMPT_MS;

/**
 * Queue audio (server/calls/queueAudio.ts): the bundled greeting (`greeting.opus`, GREETING_HZ,
 * standing in for "thank you for calling, an agent will be with you shortly") plays once when
 * the bridge answers a waiting caller, then the hold music; the place in the queue is
 * `position-<n>.opus` (n 1 … 9: n pulses at POSITION_HZ, standing in for "you are number n in
 * the queue") or `position-more.opus` (one long tone: "more than 9 callers are before you").
 */
export const QUEUE_GREETING_FILE = fileURLToPath(new URL('./sounds/greeting.opus', import.meta.url));
export const GREETING_HZ = 1150;
export const QUEUE_GREETING_MS = 2500;
export const POSITION_HZ = 1000;
/** Each pulse of a position announcement: on, then quiet. */
export const POSITION_PULSE_MS = { on: 240, off: 160 } as const;
/** The last place said as a number; beyond it, `position-more.opus`. */
export const MAX_SPOKEN_POSITION = 9;
/** The bundled position announcement for a place in the queue (1-based). */
export function positionFile(place: number, dir = fileURLToPath(new URL('./sounds/', import.meta.url))): string {
  return `${dir.replace(/\/?$/, '/')}position-${place > MAX_SPOKEN_POSITION ? 'more' : String(Math.max(1, Math.floor(place)))}.opus`;
}
