/**
 * Call media archive: handlers for `chat.call.recording.updated` and
 * `chat.call.transcription.updated` that download AVAILABLE assets through the Service
 * client into `<dir>/<wacid>/<mediaAssetId>.ogg|.json`.
 *
 * - Atomic: the client streams into a temp file beside the target and renames it, so a
 *   reader never sees a partial file, and a crash leaves no file (only a `.part`).
 * - Idempotent (events repeat): an asset already on disk is not downloaded again.
 * - 404 (missing, expired, not ours) is final: recorded as `<mediaAssetId>.missing.json`
 *   and the handler resolves; retrying cannot help. A FAILED result is recorded as
 *   `<kind>.failed.json`. Other errors (5xx, connection) throw, so the worker retries.
 * - Bounded: the worker's media lane gives each attempt a deadline; its abort signal is
 *   passed to the download (a hung download fails, is retried, then dead-lettered).
 * - Ids come from outside: each is one encoded path segment, never `.`/`..`, so an id
 *   cannot escape the archive directory.
 *
 * Wiring (main.ts): `handlers: { ...sb.handlers, ...createArchiveHandlers({ dir: config.archiveDir, calls: client.calls, log }) }`.
 */
import { mkdir, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseEvent } from '../../shared/events.ts';
import { NotFoundError, ServiceError } from '../service/errors.ts';
import type { Calls } from '../service/resources/calls.ts';

export type MediaKind = 'recording' | 'transcription';

export interface ArchiveLogger {
  info?(obj: object, msg?: string): void;
  warn?(obj: object, msg?: string): void;
}

export interface ArchiveOptions {
  /** ARCHIVE_DIR. */
  dir: string;
  calls: Pick<Calls, 'downloadMedia'>;
  log?: ArchiveLogger;
  now?: () => number;
}

export type ArchiveOutcome =
  | { kind: MediaKind; status: 'saved'; path: string; bytes: number }
  | { kind: MediaKind; status: 'already-archived'; path: string }
  | { kind: MediaKind; status: 'missing'; path: string }
  | { kind: MediaKind; status: 'failed'; path: string };

const EXTENSION: Record<MediaKind, string> = { recording: '.ogg', transcription: '.json' };
const TYPE_KIND: Record<string, MediaKind> = {
  'chat.call.recording.updated': 'recording',
  'chat.call.transcription.updated': 'transcription',
};

/** One safe path segment from an id given by the Service. */
export function segment(field: string, id: string): string {
  const s = encodeURIComponent(id);
  if (s.length === 0 || s === '.' || s === '..' || s.length > 200) throw new Error(`${field}: cannot be used as a file name`);
  return s;
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

/** Write small JSON records atomically too (temp + rename). */
async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  const tmp = `${path}.${randomBytes(6).toString('hex')}.part`;
  await writeFile(tmp, `${JSON.stringify(value, null, 2)}\n`);
  await rename(tmp, path);
}

export function createArchive(o: ArchiveOptions) {
  const now = o.now ?? Date.now;

  /**
   * Archive one media event (the raw envelope as received). `signal` (the worker's handler
   * deadline) aborts the download: the socket is closed and the temp file removed, so a
   * download that hangs at the Service holds neither for ever.
   */
  async function archive(event: unknown, opts: { signal?: AbortSignal } = {}): Promise<ArchiveOutcome | undefined> {
    const parsed = parseEvent(event);
    const kind = TYPE_KIND[parsed.type];
    if (!parsed.known || kind === undefined) return undefined;
    const media = parsed.payload as { wacid: string; result: 'AVAILABLE' | 'FAILED'; mediaAssetId?: string };
    const callDir = join(o.dir, segment('wacid', media.wacid));
    await mkdir(callDir, { recursive: true });

    if (media.result === 'FAILED') {
      const path = join(callDir, `${kind}.failed.json`);
      await writeJsonAtomic(path, { wacid: media.wacid, kind, result: 'FAILED', eventId: parsed.envelope.id, payload: media, recordedAt: new Date(now()).toISOString() });
      o.log?.warn?.({ wacid: media.wacid, kind }, 'call media FAILED at the Service; recorded');
      return { kind, status: 'failed', path };
    }

    const assetId = media.mediaAssetId!;
    const path = join(callDir, `${segment('mediaAssetId', assetId)}${EXTENSION[kind]}`);
    if (await exists(path)) return { kind, status: 'already-archived', path };
    try {
      const r = await o.calls.downloadMedia(assetId, { out: path, ...(opts.signal ? { signal: opts.signal } : {}) });
      o.log?.info?.({ wacid: media.wacid, kind, mediaAssetId: assetId, bytes: r.bytes }, 'call media archived');
      return { kind, status: 'saved', path, bytes: r.bytes };
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      const missing = join(callDir, `${segment('mediaAssetId', assetId)}.missing.json`);
      await writeJsonAtomic(missing, {
        wacid: media.wacid,
        kind,
        mediaAssetId: assetId,
        status: (err as ServiceError).status,
        code: (err as ServiceError).code,
        requestId: (err as ServiceError).requestId,
        recordedAt: new Date(now()).toISOString(),
      });
      o.log?.warn?.({ wacid: media.wacid, kind, mediaAssetId: assetId, requestId: (err as ServiceError).requestId }, 'call media missing (404); recorded');
      return { kind, status: 'missing', path: missing };
    }
  }

  const handler = async (event: unknown, _entry?: unknown, ctx?: { signal: AbortSignal }): Promise<void> => {
    await archive(event, ctx ? { signal: ctx.signal } : {});
  };
  return {
    archive,
    /** For `createWorkers({ handlers })`. */
    handlers: {
      'chat.call.recording.updated': handler,
      'chat.call.transcription.updated': handler,
    },
  };
}

/** The two webhook handlers, ready to spread into the worker registry. */
export function createArchiveHandlers(o: ArchiveOptions) {
  return createArchive(o).handlers;
}
