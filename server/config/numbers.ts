/** The per-number JSON files (`HOURS_FILE`, `QUEUE_AUDIO_FILE`): read and checked once at start. */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { HoursFileError, parseHoursFile, type HoursTable } from './hours.ts';
import { diskFiles, parseQueueAudioFile, QueueAudioFileError, type QueueAudioTable } from './queueAudio.ts';
import { read } from './schemas.ts';
import { ConfigError } from './variables.ts';

/** HOURS_FILE, read and checked once at start: a mistake stops the start naming the file's field. */
export function readHours(env: Record<string, string | undefined>): HoursTable | undefined {
  return readNumberFile(env, 'HOURS_FILE', parseHoursFile, HoursFileError);
}

/** A per-number JSON file's variable: undefined when unset; one that cannot be read or breaks a rule (`Rule` thrown by `parse`) stops the start naming it. */
function readNumberFile<T>(env: Record<string, string | undefined>, name: 'HOURS_FILE' | 'QUEUE_AUDIO_FILE', parse: (text: string) => T, Rule: new (message: string) => Error): T | undefined {
  const path = read(env, name);
  if (path === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(name, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}: ${JSON.stringify(path)})`);
  }
  try {
    return parse(text);
  } catch (err) {
    if (err instanceof Rule) throw new ConfigError(name, err.message);
    throw err;
  }
}

/** The bundled queue greeting (spoken: scripts/make-spoken-sounds.ts; the build copies it beside the compiled server). */
export const BUNDLED_QUEUE_GREETING = fileURLToPath(new URL('../anchor/sounds/greeting.opus', import.meta.url));

/** QUEUE_AUDIO_FILE, read and checked once at start (greetings' lengths included): a mistake stops the start naming the file's field. */
export function readQueueAudio(env: Record<string, string | undefined>): QueueAudioTable | undefined {
  return readNumberFile(env, 'QUEUE_AUDIO_FILE', (text) => parseQueueAudioFile(text, diskFiles(BUNDLED_QUEUE_GREETING)), QueueAudioFileError);
}
