/**
 * The archive's files: where a call's media goes (segments, URLs), the asset index that
 * claims each media asset once across nodes, atomic writes, and which errors mean the disk
 * cannot be written.
 */
import { randomBytes } from 'node:crypto';
import { link, mkdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export type MediaKind = 'recording' | 'transcription';

/** A media file's extension by kind. */
export const EXTENSION: Record<MediaKind, string> = { recording: '.ogg', transcription: '.json' };

export const DISK_ERRORS = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'EDQUOT', 'ENOTDIR', 'EIO', 'ENOENT', 'EISDIR', 'EMFILE', 'ENFILE']);
export function isDiskError(err: unknown): boolean {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const code = typeof e?.code === 'string' ? e.code : e?.cause?.code;
  return typeof code === 'string' && DISK_ERRORS.has(code);
}
export const diskErrorText = (err: unknown) => {
  const e = err as { code?: unknown; message?: unknown; cause?: { code?: unknown; message?: unknown } };
  const c = typeof e.code === 'string' ? e : (e.cause ?? e);
  return `${String(c.code)}: ${String(c.message ?? err)}`;
};

/** URL of one archived file (folder and file names are already URL-safe segments). */
export function archiveUrl(callDir: string, file: string): string {
  return `/api/archive/${encodeURIComponent(callDir)}/${encodeURIComponent(file)}`;
}

/** The media events the archive handles. */

/**
 * The asset index folder. Its name cannot be a call's folder: `encodeURIComponent` writes
 * `%` only before two hex digits, and `as` is not hex.
 */
export const INDEX_DIR = '%assets';

/** Who an archived asset belongs to, as claimed when it was first archived. */
export interface AssetIdentity {
  mediaAssetId: string;
  wacid: string;
  kind: MediaKind;
}

/** Another call (or kind) already holds this media asset id: nothing was written. */
export class ArchiveConflictError extends Error {
  override readonly name = 'ArchiveConflictError';
}

/** The identity recorded for an asset (by its file-name segment), or undefined. */
export async function readIdentity(dir: string, assetSegment: string): Promise<AssetIdentity | undefined> {
  try {
    const v = JSON.parse(await readFile(join(dir, INDEX_DIR, `${assetSegment}.json`), 'utf8')) as Partial<AssetIdentity>;
    return typeof v.mediaAssetId === 'string' && typeof v.wacid === 'string' && (v.kind === 'recording' || v.kind === 'transcription') ? (v as AssetIdentity) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether `<callDir>/<file>` is what the index says: the asset of that call, of that kind.
 * The one rule for listing and serving.
 */
export async function isArchived(dir: string, callDir: string, file: string, kind: MediaKind): Promise<boolean> {
  const ext = EXTENSION[kind];
  if (!file.endsWith(ext)) return false;
  const assetSegment = file.slice(0, -ext.length);
  const id = await readIdentity(dir, assetSegment);
  return id !== undefined && id.kind === kind && encodeURIComponent(id.wacid) === callDir && encodeURIComponent(id.mediaAssetId) === assetSegment;
}

/**
 * Claim a media asset id for a call and kind: exclusively (a hard link of a complete temp
 * file, so a reader never sees half a claim and two claimants cannot both win). A claim
 * already held by the same call and kind is ours (events repeat); any other is a conflict.
 */
export async function claimAsset(dir: string, want: AssetIdentity): Promise<void> {
  const assetSegment = segment('mediaAssetId', want.mediaAssetId);
  const index = join(dir, INDEX_DIR);
  await mkdir(index, { recursive: true });
  const path = join(index, `${assetSegment}.json`);
  const tmp = `${path}.${randomBytes(6).toString('hex')}.part`;
  await writeFile(tmp, `${JSON.stringify(want)}\n`);
  try {
    await link(tmp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
  const held = await readIdentity(dir, assetSegment);
  if (!held || held.wacid !== want.wacid || held.kind !== want.kind || held.mediaAssetId !== want.mediaAssetId) {
    throw new ArchiveConflictError(
      `mediaAssetId ${want.mediaAssetId}: already archived as the ${held?.kind ?? 'unknown'} of call ${held?.wacid ?? '(unreadable index entry)'}; not archived as the ${want.kind} of call ${want.wacid}`,
    );
  }
}

/** One safe path segment from an id given by the Service. */
export function segment(field: string, id: string): string {
  const s = encodeURIComponent(id);
  if (s.length === 0 || s === '.' || s === '..' || s.length > 200) throw new Error(`${field}: cannot be used as a file name`);
  return s;
}

export async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

/** Write small JSON records atomically too (temp + rename). */
export async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  const tmp = `${path}.${randomBytes(6).toString('hex')}.part`;
  await writeFile(tmp, `${JSON.stringify(value, null, 2)}\n`);
  await rename(tmp, path);
}
