/**
 * The anchor's bundled announcements: Ogg/Opus, 48 kHz mono, spoken (English, eSpeak NG) by
 * scripts/make-spoken-sounds.ts; the build copies `sounds/` beside the compiled server. Janus
 * plays them by path (`play_file`), so Janus must see them there (it runs beside the bridge,
 * or docker-compose mounts the folder at the same path).
 *
 * - `voicemail.opus`: "Sorry, nobody can take your call right now. Please leave a message
 *   after the tone.", then the tone (BEEP_HZ). VOICEMAIL_PROMPT_FILE replaces it.
 * - `closed.opus`: "Thank you for calling. We are closed right now.", then the same prompt:
 *   out of hours the caller hears both, one file. CLOSED_GREETING_FILE replaces it.
 *   Their paths are the config's defaults (server/config/media.ts); the engine reads each
 *   one's length at start (the message kept starts where the prompt ends).
 * - Queue audio (server/calls/queueAudio.ts): `greeting.opus` ("Thank you for calling. All our
 *   agents are busy. …") plays once when the bridge answers a waiting caller, then the hold
 *   music; the place in the queue is `position-<n>.opus` ("You are number n in the queue.",
 *   n 1 … 9) or `position-more.opus` ("More than nine callers are ahead of you."). A number's
 *   own greetings per language and its own position folder: QUEUE_AUDIO_FILE.
 */
import { fileURLToPath } from 'node:url';

/** The tone that ends the voicemail prompt: recording starts after it (tests measure it at the caller). */
export const BEEP_HZ = 1250;

/** The last place said as a number; beyond it, `position-more.opus`. */
export const MAX_SPOKEN_POSITION = 9;
/** The bundled position announcement for a place in the queue (1-based), or the one in `dir`. */
export function positionFile(place: number, dir = fileURLToPath(new URL('./sounds/', import.meta.url))): string {
  return `${dir.replace(/\/?$/, '/')}position-${place > MAX_SPOKEN_POSITION ? 'more' : String(Math.max(1, Math.floor(place)))}.opus`;
}
