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
 * - One asset, one call: before anything is written, the asset id is claimed for its call
 *   and kind in an index (`<dir>/%assets/<mediaAssetId>.json`, created exclusively). The
 *   same id announced for another call (or kind) is refused (`ArchiveConflictError`: the
 *   worker dead-letters it), so the first call's file is never overwritten nor shown as
 *   the second's; and a file is listed or served only when the index names its folder's
 *   call and its kind (`isArchived`). A restarted emulator that reused ids served an old
 *   call's recording to a new call; this rule refuses that whenever the ids differ in
 *   anything (the emulator now salts its ids per start).
 *
 * - Checked as it streams (`media.ts`): size and SHA-256 of the bytes; a recording must be
 *   Ogg Opus (`OggS`, then `OpusHead`), a transcription JSON (its text is returned for
 *   search). Anything else is recorded as `<mediaAssetId>.invalid.json`, never archived.
 * - Announced: once a file is on disk (saved now or before), `media.available` goes to the
 *   call's agent, supervisors and ops through the hub (when one is given), and every
 *   handler result goes to `onArchived` (the wiring turns it into history facts).
 * - A disk that cannot be written (EACCES, EROFS, ENOSPC, ENOTDIR, …) is not the event's
 *   fault, and the worker's few quick retries would dead-letter it in seconds: the handler
 *   resolves and the event waits in the archive (`downloadsWaiting()`), retried with
 *   backoff (1 s doubling to 30 s; each round first writes a probe file) for up to
 *   `retry.giveUpMs` (6 h); then, or when the node stops first, it goes to the webhook
 *   dead letters (`deadLetter`) for ops to replay. Meanwhile `health()` (readiness) and
 *   `switchboard_archive_writable 0` say the archive cannot write.
 */
import { mkdir, rename, rm, unlink, writeFile } from 'node:fs/promises';
import type { Metrics } from '../ops/metrics.ts';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { EventOf } from '../../shared/events.ts';
import type { Hub } from '../push/hub.ts';
import type { Store, StreamEntry } from '../store/store.ts';
import { NotFoundError, ServiceError } from '../service/errors.ts';
import type { Calls } from '../service/resources/calls.ts';
import { digestFile, MediaDigest, oggProblem, readTranscript } from './media.ts';
import { retrier } from '../../shared/backoff.ts';
import { EXTENSION, isDiskError, diskErrorText, archiveUrl, ArchiveConflictError, claimAsset, segment, exists, writeJsonAtomic, type MediaKind } from './files.ts';
export { isDiskError, archiveUrl, INDEX_DIR, ArchiveConflictError, readIdentity, isArchived, segment, type AssetIdentity, type MediaKind } from './files.ts';


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
  /**
   * Told every result of the webhook handlers (not of direct `archive()` calls), after
   * the file and its records are in place: the wiring turns it into history facts
   * (`factsOfMedia`). Must not throw (history's `enqueue` never does).
   */
  onArchived?: (r: ArchiveOutcome) => void;
  /** With both: each archived file is announced (`media.available`) to who may see its call. */
  announce?: { hub: Pick<Hub, 'toUser' | 'toRole'>; store: Pick<Store, 'getCall'> };
  /** While the disk cannot be written: how events wait and are retried. */
  retry?: { minMs?: number; maxMs?: number; giveUpMs?: number; maxWaiting?: number };
  /** Where an event goes that waited too long (or is still waiting when the node stops): the webhook dead letters. */
  deadLetter?: (entry: StreamEntry, error: string) => Promise<void>;
  /** `switchboard_archive_writable`, `switchboard_archive_downloads_waiting`. */
  metrics?: Metrics;
}

/** Errors of the disk itself (retrying the download later can succeed once it is fixed). */
export type MediaEvent = EventOf<'chat.call.recording.updated' | 'chat.call.transcription.updated'>;

/**
 * What one media event led to (and what history records of it: `factsOfMedia`).
 * - `saved` / `already-archived`: the file is at `path`; `bytes` and `sha256` are the
 *   file's; a transcription's `text` (when it has any) is for full-text search.
 * - `missing`: the Service answered 404 (final); `path` is the record of that.
 * - `failed`: the Service reported FAILED; `path` is the record of that.
 * - `invalid`: the bytes were not what the kind promises (a recording that is not Ogg
 *   Opus, a transcription that is not JSON): not put in the archive; `path` is the record
 *   of why, with the size and hash of what came.
 */
export interface ArchiveOutcome {
  kind: MediaKind;
  status: 'saved' | 'already-archived' | 'missing' | 'failed' | 'invalid';
  wacid: string;
  /** Absent only for a FAILED result that named no asset. */
  mediaAssetId?: string;
  path: string;
  bytes?: number;
  sha256?: string;
  text?: string;
  /** Why it is missing, failed or invalid (no secrets: the Service's words or ours). */
  reason?: string;
}

const TYPE_KIND: Record<MediaEvent['type'], MediaKind> = {
  'chat.call.recording.updated': 'recording',
  'chat.call.transcription.updated': 'transcription',
};

export function createArchive(o: ArchiveOptions) {
  const now = o.now ?? Date.now;

  /**
   * Archive one media event (as the workers validated it). `signal` (the worker's handler
   * deadline) aborts the download: the socket is closed and the temp file removed, so a
   * download that hangs at the Service holds neither for ever.
   */
  async function archive(event: MediaEvent, opts: { signal?: AbortSignal } = {}): Promise<ArchiveOutcome> {
    const kind = TYPE_KIND[event.type];
    const media = event.payload;
    const callDir = join(o.dir, segment('wacid', media.wacid));
    await mkdir(callDir, { recursive: true });

    if (media.result === 'FAILED') {
      const path = join(callDir, `${kind}.failed.json`);
      await writeJsonAtomic(path, { wacid: media.wacid, kind, result: 'FAILED', eventId: event.id, payload: media, recordedAt: new Date(now()).toISOString() });
      o.log?.warn?.({ wacid: media.wacid, kind }, 'call media FAILED at the Service; recorded');
      return { kind, status: 'failed', wacid: media.wacid, ...(media.mediaAssetId ? { mediaAssetId: media.mediaAssetId } : {}), path, reason: 'the Service reported FAILED' };
    }

    const assetId = media.mediaAssetId!;
    const file = `${segment('mediaAssetId', assetId)}${EXTENSION[kind]}`;
    const path = join(callDir, file);
    const base = { kind, wacid: media.wacid, mediaAssetId: assetId };
    await claimAsset(o.dir, { mediaAssetId: assetId, wacid: media.wacid, kind });
    if (await exists(path)) {
      // Archived before (a repeated event, or a restart after the download): the same
      // description as then, so history gets a whole fact whichever copy it keeps.
      const d = await digestFile(path);
      const text = kind === 'transcription' ? (await readTranscript(path)).text : undefined;
      return { ...base, status: 'already-archived', path, bytes: d.bytes, sha256: d.sha256(), ...(text !== undefined ? { text } : {}) };
    }
    // Downloaded under a name nothing lists or serves (a dot file ending in `.staged`), and
    // checked, before it takes its place.
    const staged = join(callDir, `.${file}.staged`);
    const digest = new MediaDigest();
    try {
      await o.calls.downloadMedia(assetId, {
        out: staged,
        onBody: () => digest.reset(),
        onChunk: (chunk) => digest.update(chunk),
        ...(opts.signal ? { signal: opts.signal } : {}),
      });
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
      return { ...base, status: 'missing', path: missing, reason: `the Service answered ${(err as ServiceError).status} ${(err as ServiceError).code}` };
    }
    const sha256 = digest.sha256();
    let text: string | undefined;
    let problem: string | undefined;
    if (kind === 'recording') problem = oggProblem(digest.head());
    else ({ text, problem } = await readTranscript(staged));
    if (problem !== undefined) {
      // Fetching again gives the same bytes: recorded (with what came), not retried.
      await rm(staged, { force: true });
      const invalid = join(callDir, `${segment('mediaAssetId', assetId)}.invalid.json`);
      await writeJsonAtomic(invalid, { wacid: media.wacid, kind, mediaAssetId: assetId, reason: problem, bytes: digest.bytes, sha256, recordedAt: new Date(now()).toISOString() });
      o.log?.warn?.({ wacid: media.wacid, kind, mediaAssetId: assetId, reason: problem }, 'call media is not what its kind promises; recorded, not archived');
      return { ...base, status: 'invalid', path: invalid, bytes: digest.bytes, sha256, reason: problem };
    }
    await rename(staged, path);
    o.log?.info?.({ wacid: media.wacid, kind, mediaAssetId: assetId, bytes: digest.bytes }, 'call media archived');
    return { ...base, status: 'saved', path, bytes: digest.bytes, sha256, ...(text !== undefined ? { text } : {}) };
  }

  /** Tell who may see the call that a file is on disk: its agent, supervisors, ops. */
  async function announce(out: ArchiveOutcome): Promise<void> {
    if (!o.announce || (out.status !== 'saved' && out.status !== 'already-archived')) return;
    const { hub, store } = o.announce;
    const callDir = basename(dirname(out.path));
    const wacid = decodeURIComponent(callDir);
    const msg = { type: 'media.available', wacid, kind: out.kind, url: archiveUrl(callDir, basename(out.path)) } as const;
    const agent = (await store.getCall(wacid))?.agent;
    if (typeof agent === 'string') hub.toUser(agent, msg);
    hub.toRole('supervisor', msg);
    hub.toRole('ops', msg);
  }

  // ---- a disk that cannot be written: events wait, retried with backoff ------------------
  const minMs = o.retry?.minMs ?? 1000;
  const maxMs = o.retry?.maxMs ?? 30_000;
  const delays = retrier({ baseMs: minMs * 2, maxMs, minMs });
  const giveUpMs = o.retry?.giveUpMs ?? 6 * 3600_000;
  const maxWaiting = o.retry?.maxWaiting ?? 10_000;
  let writable = true;
  let diskError: string | undefined;
  let probedAt = 0;
  let probing: Promise<boolean> | undefined;
  const waiting = new Map<string, { event: MediaEvent; entry: StreamEntry | undefined; since: number; failures: number }>();
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let retrying = false;

  const diskFailed = (err: unknown) => {
    const text = diskErrorText(err);
    if (writable || diskError !== text) o.log?.warn?.({ err: text, dir: o.dir, waiting: waiting.size }, 'archive cannot write to ARCHIVE_DIR; media downloads wait and are retried');
    writable = false;
    diskError = text;
  };
  const diskOk = () => {
    const was = writable;
    writable = true;
    diskError = undefined;
    if (was) return;
    o.log?.info?.({ dir: o.dir, waiting: waiting.size }, 'archive can write again');
    // A probe (readiness, metrics) saw the disk back: the waiting events go now, not at the next backoff.
    if (timer && !retrying) {
      clearTimeout(timer);
      timer = undefined;
      delays.reset();
      setImmediate(() => void retryWaiting().finally(schedule));
    }
  };

  /** Write and remove a probe file in ARCHIVE_DIR: can the archive write now? */
  function probe(): Promise<boolean> {
    probing ??= (async () => {
      try {
        await mkdir(o.dir, { recursive: true });
        const p = join(o.dir, `.probe-${randomBytes(6).toString('hex')}`);
        await writeFile(p, '');
        await unlink(p);
        diskOk();
        return true;
      } catch (err) {
        diskFailed(err);
        return false;
      } finally {
        probedAt = Date.now();
        probing = undefined;
      }
    })();
    return probing;
  }

  function schedule(): void {
    if (timer || stopped || waiting.size === 0) return;
    const delay = delays.next();
    timer = setTimeout(() => {
      timer = undefined;
      void retryWaiting().finally(schedule);
    }, delay);
    timer.unref();
  }

  async function giveUp(key: string, why: string): Promise<void> {
    const w = waiting.get(key)!;
    waiting.delete(key);
    o.log?.warn?.({ wacid: w.event.payload.wacid, eventId: w.event.id, why }, 'archive gave up waiting for the disk: event dead-lettered');
    if (w.entry && o.deadLetter) await o.deadLetter(w.entry, `archive: ${why}`).catch(() => undefined);
  }

  async function retryWaiting(): Promise<void> {
    if (retrying) return;
    retrying = true;
    try {
      await retryRound();
    } finally {
      retrying = false;
    }
  }

  async function retryRound(): Promise<void> {
    if (!(await probe())) {
      for (const [key, w] of waiting) if (Date.now() - w.since > giveUpMs) await giveUp(key, `ARCHIVE_DIR not writable for ${giveUpMs >= 60_000 ? `${Math.round(giveUpMs / 60_000)} min` : `${giveUpMs} ms`} (${diskError})`);
      return;
    }
    for (const [key, w] of [...waiting]) {
      if (stopped) return;
      try {
        const out = await archive(w.event, { signal: AbortSignal.timeout(60_000) });
        waiting.delete(key);
        o.onArchived?.(out);
        await announce(out).catch(() => undefined);
      } catch (err) {
        if (isDiskError(err)) return diskFailed(err);
        // The Service (5xx, timeout) or a conflict: a few more rounds, then the dead letters as the worker would.
        if (++w.failures >= 5 || err instanceof ArchiveConflictError) await giveUp(key, (err as Error).message);
      }
    }
    delays.reset();
  }

  function park(event: MediaEvent, entry: StreamEntry | undefined, err: unknown): void {
    diskFailed(err);
    const key = entry?.streamId ?? event.id;
    if (!waiting.has(key)) {
      if (waiting.size >= maxWaiting) throw err; // bounded: past it, the worker's own retries and dead letter
      waiting.set(key, { event, entry, since: Date.now(), failures: 0 });
    }
    schedule();
  }

  const handler = async (event: MediaEvent, entry?: StreamEntry, ctx?: { signal: AbortSignal }): Promise<void> => {
    let out: ArchiveOutcome;
    try {
      // The worker's deadline signal: a download that hangs at the Service is abandoned.
      out = await archive(event, ctx ? { signal: ctx.signal } : {});
    } catch (err) {
      if (!isDiskError(err)) throw err;
      return park(event, entry, err);
    }
    o.onArchived?.(out);
    await announce(out);
  };

  /** For readiness: rejects while ARCHIVE_DIR cannot be written (probed at most every 5 s). */
  async function health(): Promise<void> {
    const ok = Date.now() - probedAt < 5000 && !probing ? writable : await probe();
    if (!ok) throw new Error(`archive cannot write to ARCHIVE_DIR (${diskError ?? 'unknown error'}); ${waiting.size} media download(s) waiting`);
  }

  o.metrics?.gauge('switchboard_archive_writable', '1 while ARCHIVE_DIR can be written, 0 while it cannot (media downloads wait).', async () => {
    if (Date.now() - probedAt >= 5000) await probe();
    return writable ? 1 : 0;
  });
  o.metrics?.gauge('switchboard_archive_downloads_waiting', 'Media events waiting for ARCHIVE_DIR to be writable again.', () => waiting.size);

  return {
    archive,
    health,
    downloadsWaiting: () => waiting.size,
    /** Stop retrying; what still waits goes to the webhook dead letters (ops replay it). */
    async close(): Promise<void> {
      stopped = true;
      clearTimeout(timer);
      timer = undefined;
      for (const key of [...waiting.keys()]) await giveUp(key, `the node stopped while ARCHIVE_DIR was not writable (${diskError ?? 'unknown'})`);
    },
    /** For `createWorkers({ handlers })`. */
    handlers: {
      'chat.call.recording.updated': handler,
      'chat.call.transcription.updated': handler,
    },
  };
}
