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
