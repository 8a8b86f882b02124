/**
 * `QUEUE_AUDIO_FILE`'s grammar: queue audio per business number (anchor mode only), read and
 * validated once at start by the config (`loadConfig`); the call engine (server/calls/queueAudio.ts)
 * plays it.
 *
 * ```json
 * {
 *   "+15550100001": { "greetings": { "en": "/srv/sounds/welcome-en.opus", "de": "/srv/sounds/welcome-de.opus" }, "language": "de", "positionEveryS": 30, "maxWaitS": 600 },
 *   "+15550100002": {},
 *   "*": { "enabled": false }
 * }
 * ```
 * A key is a business number (E.164) or the Service's phone id; `*` is every number not
 * listed. A number with an entry (not `"enabled": false`) has queue audio: the bridge answers
 * the caller at once, who hears the greeting, then the hold music, and every `positionEveryS`
 * (0 or absent: never) their place in the queue, until an agent answers. No entry: off.
 * - `greetings`: an Ogg/Opus file per language (a path Janus reads, and this process too: the
 *   greeting's length is read at start); `language` picks the one played (default: the first
 *   listed). Without `greetings`, the bundled greeting (server/anchor/sounds/greeting.opus).
 * - `positionDir`: a folder with `position-1.opus` … `position-9.opus` and `position-more.opus`
 *   (default: the bundled ones).
 * - `maxWaitS` (30 … 3600, default 600): a caller nobody answered by then is ended from our
 *   side (the Service's accept window no longer bounds an answered call).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { oggOpusDurationMs } from '../../shared/ogg.ts';
import { fieldOf, parseNumberFile } from './hours.ts';

/** Queue audio of one number, resolved at start. */
export interface QueueAudioSetting {
  readonly greetingFile: string;
  /** How long the greeting plays (its file's length): the music starts after it. */
  readonly greetingMs: number;
  /** Position announcements this often (ms, from the music's start); 0: none. */
  readonly positionEveryMs: number;
  /** The folder of the position announcements; undefined: the bundled ones. */
  readonly positionDir: string | undefined;
  readonly maxWaitMs: number;
}

/** `QUEUE_AUDIO_FILE` parsed: by business number or phone id (`*`: every other number); `null`: off for that number. */
export type QueueAudioTable = ReadonlyMap<string, QueueAudioSetting | null>;

/** Thrown for a file that breaks the grammar; the message names the field and the rule. */
export class QueueAudioFileError extends Error {
  override readonly name = 'QueueAudioFileError';
}

const FILE_RULE = 'must be an absolute path to an Ogg/Opus file (.opus or .ogg), readable here and by Janus at the same path';
const audioPath = z.string(FILE_RULE).regex(/^\/[^\0\n]{0,4095}$/, FILE_RULE).refine((p) => p.endsWith('.opus') || p.endsWith('.ogg'), FILE_RULE);
const LANGUAGE = /^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$/;

const entry = z
  .strictObject(
    {
      enabled: z.boolean('must be true or false').optional(),
      greetings: z
        .record(z.string().regex(LANGUAGE, 'each key must be a language code such as en or pt-BR'), audioPath, 'must be an object of language → file')
        .refine((g) => Object.keys(g).length > 0, 'must list at least one language')
        .optional(),
      language: z.string('must be a language code such as en').regex(LANGUAGE, 'must be a language code such as en or pt-BR').optional(),
      positionEveryS: z.number('must be a whole number of seconds').int('must be a whole number of seconds').min(0, 'must be 0 (none) … 600').max(600, 'must be 0 (none) … 600').optional(),
      positionDir: z.string('must be an absolute folder path').regex(/^\/[^\0\n]{0,4095}$/, 'must be an absolute folder path').optional(),
      maxWaitS: z.number('must be a whole number of seconds').int('must be a whole number of seconds').min(30, 'must be 30 … 3600').max(3600, 'must be 30 … 3600').optional(),
    },
    'must be {"enabled"?, "greetings"?, "language"?, "positionEveryS"?, "positionDir"?, "maxWaitS"?}',
  )
  .superRefine((e, ctx) => {
    if (e.language !== undefined && e.greetings !== undefined && !(e.language in e.greetings)) ctx.addIssue({ code: 'custom', path: ['language'], message: 'must be one of the languages of "greetings"' });
    if (e.language !== undefined && e.greetings === undefined) ctx.addIssue({ code: 'custom', path: ['language'], message: 'needs "greetings" (the bundled greeting has no language)' });
  });

const file = z.record(z.string(), entry, 'must be a JSON object of business numbers');

/** What reading a file needs (tests give their own). */
export interface QueueAudioFiles {
  /** The bundled greeting and its folder of position announcements. */
  bundledGreeting: string;
  read: (path: string) => Buffer;
  exists: (path: string) => boolean;
}

const POSITION_FILES = [...Array.from({ length: 9 }, (_, i) => `position-${i + 1}.opus`), 'position-more.opus'];

/** Parse the file's text; throws `QueueAudioFileError` naming the first broken field and its rule. */
export function parseQueueAudioFile(text: string, files: QueueAudioFiles): QueueAudioTable {
  const data = parseNumberFile(text, file, (m) => new QueueAudioFileError(m));
  const table = new Map<string, QueueAudioSetting | null>();
  for (const [key, e] of Object.entries(data)) {
    if (e.enabled === false) {
      table.set(key, null);
      continue;
    }
    const language = e.language ?? (e.greetings ? Object.keys(e.greetings)[0]! : undefined);
    const greetingFile = language !== undefined ? e.greetings![language]! : files.bundledGreeting;
    let greetingMs: number;
    try {
      greetingMs = oggOpusDurationMs(files.read(greetingFile));
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      throw new QueueAudioFileError(`${fieldOf(language !== undefined ? [key, 'greetings', language] : [key])}: ${FILE_RULE} (${why}: ${JSON.stringify(greetingFile)})`);
    }
    if (e.positionDir !== undefined) {
      const missing = POSITION_FILES.find((f) => !files.exists(join(e.positionDir!, f)));
      if (missing !== undefined) throw new QueueAudioFileError(`${fieldOf([key, 'positionDir'])}: must hold position-1.opus … position-9.opus and position-more.opus (${missing} is missing)`);
    }
    table.set(key, Object.freeze({ greetingFile, greetingMs, positionEveryMs: (e.positionEveryS ?? 0) * 1000, positionDir: e.positionDir, maxWaitMs: (e.maxWaitS ?? 600) * 1000 }));
  }
  return table;
}

/** The files as this machine has them. */
export const diskFiles = (bundledGreeting: string): QueueAudioFiles => ({ bundledGreeting, read: (p) => readFileSync(p), exists: (p) => existsSync(p) });

/** The queue audio of a call's number (by phone id, then number, then `*`); undefined: off. */
export function queueAudioOf(table: QueueAudioTable | undefined, phoneId: string, businessNumber: string): QueueAudioSetting | undefined {
  if (!table) return undefined;
  const hit = table.has(phoneId) ? table.get(phoneId) : table.has(businessNumber) ? table.get(businessNumber) : table.get('*');
  return hit ?? undefined;
}
