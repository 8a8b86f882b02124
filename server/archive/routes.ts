/**
 * The archive over HTTP, for ops and supervisors (and, for a voicemail message only, the agents
 * who may see its call-back task: `voicemailFor`, the number scope of the call's business number):
 * - `GET /api/archive` → `{ items: [{ wacid, kind, url, bytes, createdAt }] }`, newest first;
 * - `GET /api/archive/:call/:file` → the file as an attachment (`audio/ogg` or JSON); one
 *   byte range (`Range: bytes=a-b`, `a-`, `-n`) answers 206 so an <audio> element streams and
 *   seeks instead of fetching the whole file; a range outside the file answers 416.
 *
 * Only what the archive handlers wrote is listed or served: names are checked against the
 * directory listing itself, so no path built from the URL ever leaves `dir`, and a file
 * must be the asset the archive's index names for that call and kind (`isArchived`), so
 * one call's media is never served as another's. Records of
 * missing, failed or invalid media (`*.missing.json`, `*.failed.json`, `*.invalid.json`) and
 * partial or unchecked downloads (`*.part`, `*.staged`) are not media and are not served.
 */
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Hono } from 'hono';
import { clientAddress, type Auth, type AuthEnv } from '../auth/index.ts';
import type { Audit } from '../audit/trail.ts';
import type { Store } from '../store/store.ts';
import { HttpForbidden, HttpNotFound } from '../ops/errors.ts';
import { voicemailAssetId } from './voicemail.ts';
import { EXTENSION } from './files.ts';
import { archiveUrl, INDEX_DIR, isArchived, type MediaKind } from './index.ts';
import { z } from 'zod';
import { parseQuery } from '../ops/validate.ts';

export interface ArchiveItem {
  wacid: string;
  kind: MediaKind;
  url: string;
  bytes: number;
  /** Epoch ms the file was written. */
  createdAt: number;
}

/** The kind of a file in a call's folder, or undefined when it is not downloadable media. */
function mediaKind(file: string): MediaKind | undefined {
  if (file.endsWith('.part') || file.endsWith('.staged') || file.endsWith('.missing.json') || file.endsWith('.failed.json') || file.endsWith('.invalid.json')) return undefined;
  if (file.endsWith('.ogg')) return 'recording';
  if (file.endsWith('.json')) return 'transcription';
  return undefined;
}


const readdirOrEmpty = (p: string): Promise<string[]> => readdir(p).catch((err: NodeJS.ErrnoException) => (err.code === "ENOENT" ? ([] as string[]) : Promise.reject(err)));

export async function listArchive(dir: string): Promise<ArchiveItem[]> {
  const items: ArchiveItem[] = [];
  for (const callDir of await readdirOrEmpty(dir)) {
    if (callDir === INDEX_DIR) continue;
    for (const file of await readdirOrEmpty(join(dir, callDir))) {
      const kind = mediaKind(file);
      if (!kind || !(await isArchived(dir, callDir, file, kind))) continue;
      const st = await stat(join(dir, callDir, file)).catch(() => undefined);
      if (!st?.isFile()) continue;
      items.push({ wacid: decodeURIComponent(callDir), kind, url: archiveUrl(callDir, file), bytes: st.size, createdAt: st.mtimeMs });
    }
  }
  return items.sort((a, b) => b.createdAt - a.createdAt);
}

/**
 * The one range a `Range` header asks for, inclusive, within `size`; undefined: the whole
 * file (no header, another unit, several ranges, or a header that does not parse — RFC 9110
 * lets a server ignore those); 'unsatisfiable': starts past the end.
 */
export function byteRange(header: string | undefined, size: number): [number, number] | 'unsatisfiable' | undefined {
  const m = header ? /^bytes=(\d*)-(\d*)$/.exec(header.trim()) : null;
  if (!m || (m[1] === '' && m[2] === '')) return undefined;
  if (m[1] === '') {
    const n = Number(m[2]); // the last n bytes
    if (n === 0 || size === 0) return 'unsatisfiable';
    return [Math.max(0, size - n), size - 1];
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size) return 'unsatisfiable';
  if (end < start) return undefined;
  return [start, end];
}

/** One play (or transcript view) of a file by a user is one audit row for this long, however many range requests it makes. */
export const PLAY_AUDIT_WINDOW_MS = 10 * 60 * 1000;

/**
 * The audit action of one request for a file: `?use=play` (the page's player; a recording)
 * and `?use=view` (the page's transcript) are plays and views, no `use` a download (another is refused).
 * A range that does not start at 0 continues a fetch already recorded: none.
 */
export function auditAction(kind: MediaKind, use: string | undefined, rangeStart: number | undefined): 'recording.play' | 'recording.download' | 'transcript.view' | 'transcript.download' | undefined {
  if (rangeStart !== undefined && rangeStart > 0) return undefined;
  const inPage = use === 'play' || use === 'view';
  return kind === 'recording' ? (inPage ? 'recording.play' : 'recording.download') : inPage ? 'transcript.view' : 'transcript.download';
}

/** `use`: how the page opens the file (play, view; absent: a download). Other parameters are ignored (a range request's cache busters). */
const FileQuery = z.object({ use: z.enum(['play', 'view'], 'must be play or view').optional() });

export function createArchiveRoutes(o: {
  auth: Auth;
  dir: string;
  audit?: Audit | undefined;
  store?: Pick<Store, 'setNX'> | undefined;
  /** Whether an agent may play the voicemail message of call `wacid` (its task is theirs to call back); absent: ops and supervisors only. */
  voicemailFor?: ((user: { name: string; roles: readonly string[] }, wacid: string) => Promise<boolean>) | undefined;
}): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  const guard = o.auth.requireUser('ops', 'supervisor');
  // A voicemail message is the queue panel's to play: agents of its number too; any other file: ops and supervisors.
  const fileGuard = o.auth.requireUser('ops', 'supervisor', 'agent');
  const staffOnly = (roles: readonly string[]) => !roles.includes('ops') && !roles.includes('supervisor');

  app.get('/api/archive', guard, async (c) => c.json({ items: await listArchive(o.dir) }));

  app.get('/api/archive/:call/:file', fileGuard, async (c) => {
    const user = c.get('user');
    if (staffOnly(user.roles)) {
      let wacid: string;
      try {
        wacid = decodeURIComponent(c.req.param('call'));
      } catch {
        throw new HttpNotFound('no such archived file');
      }
      const ok = o.voicemailFor && c.req.param('file') === `${encodeURIComponent(voicemailAssetId(wacid))}${EXTENSION.recording}` && (await o.voicemailFor(user, wacid));
      if (!ok) throw new HttpForbidden('only supervisors and ops open the archive; an agent plays the voicemail messages of their own numbers');
    }
    const { use } = parseQuery(c, FileQuery);
    const callDir = c.req.param('call');
    const file = c.req.param('file');
    const kind = mediaKind(file);
    // Served only if both names are entries the archive itself holds.
    const known =
      kind !== undefined &&
      callDir !== INDEX_DIR &&
      (await readdirOrEmpty(o.dir)).includes(callDir) &&
      (await readdirOrEmpty(join(o.dir, callDir))).includes(file) &&
      (await isArchived(o.dir, callDir, file, kind));
    if (!known) throw new HttpNotFound('no such archived file');
    const path = join(o.dir, callDir, file);
    const st = await stat(path);
    const headers: Record<string, string> = {
      'content-type': kind === 'recording' ? 'audio/ogg' : 'application/json',
      'accept-ranges': 'bytes',
      'content-disposition': `attachment; filename="${file.replace(/[^\w.-]/g, '_')}"`,
      'cache-control': 'private, no-store',
    };
    const range = byteRange(c.req.header('range'), st.size);
    const action = auditAction(kind, use, Array.isArray(range) ? range[0] : undefined);
    if (o.audit && action && range !== 'unsatisfiable') {
      const user = c.get('user').name;
      const wacid = decodeURIComponent(callDir);
      // A play or a view is one row per window, not one per range request (seeks, the
      // page's whole-file fallback); a download is one row each.
      const once = action.endsWith('.download') || !o.store || (await o.store.setNX(`audit-once:${action}:${user}:${callDir}/${file}`, '1', PLAY_AUDIT_WINDOW_MS).catch(() => true));
      if (once) o.audit({ action, actor: user, target: wacid, address: clientAddress(c), detail: { file } });
    }
    if (range === 'unsatisfiable') return new Response(null, { status: 416, headers: { ...headers, 'content-range': `bytes */${st.size}` } });
    if (range) {
      const [start, end] = range;
      return new Response(Readable.toWeb(createReadStream(path, { start, end })) as ReadableStream, {
        status: 206,
        headers: { ...headers, 'content-length': String(end - start + 1), 'content-range': `bytes ${start}-${end}/${st.size}` },
      });
    }
    return new Response(Readable.toWeb(createReadStream(path)) as ReadableStream, { headers: { ...headers, 'content-length': String(st.size) } });
  });
  return app;
}
