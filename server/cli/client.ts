/**
 * The CLI's side of a running Switchboard: log in (`POST /api/login` with SWITCHBOARD_USER
 * and SWITCHBOARD_PASSWORD, kept only in memory; the session cookie is never printed),
 * then read JSON and download files; or, with `--database`, the history database itself.
 * Errors are `SwitchboardError(code, message)`, printed `CODE: message`.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { openHistoryDb } from '../history/index.ts';
import { HistoryQueryError, HistoryStore } from '../history/store.ts';
import type { CallDetail, CallPage, CallSearch, MediaRecord } from '../history/schema.ts';
import { AuditQueryError, AuditStore, auditCsv, parseAuditQuery, type AuditEntry } from '../audit/index.ts';

/** The audit trail's columns, as `/api/audit.csv` has them. */

export class SwitchboardError extends Error {
  override readonly name = 'SwitchboardError';
  constructor(
    readonly code: string,
    message: string,
    readonly status?: number,
    readonly requestId?: string,
  ) {
    super(message);
  }
}

export interface SwitchboardConfig {
  /** SWITCHBOARD_URL, e.g. http://127.0.0.1:8080 */
  url?: string | undefined;
  /** SWITCHBOARD_USER / SWITCHBOARD_PASSWORD */
  user?: string | undefined;
  password?: string | undefined;
  /** DATABASE_URL / DATA_DIR, for `--database` */
  databaseUrl?: string | undefined;
  dataDir?: string | undefined;
}

/** What the history commands need, over HTTP or from the database. */
export interface HistorySource {
  searchCalls(q: CallSearch): Promise<CallPage>;
  getCall(wacid: string): Promise<CallDetail | null>;
  /**
   * The audit trail (ops, admin): `query` as `/api/audit` takes it (user, action, from, to,
   * limit, cursor); `csv`: the CSV `/api/audit.csv` answers.
   */
  audit(query: Record<string, string>, csv: boolean): Promise<{ items: AuditEntry[]; cursor?: string } | string>;
  /** Save one media file of a call into `dir`; resolves its path and size. */
  saveMedia(call: CallDetail, m: MediaRecord, dir: string): Promise<{ path: string; bytes: number; sha256: string }>;
  close(): Promise<void>;
}

/** Stream `from` into `<dir>/<name>` (temp + rename), hashing as it goes. */
async function saveStream(from: NodeJS.ReadableStream | Readable, dir: string, name: string): Promise<{ path: string; bytes: number; sha256: string }> {
  await mkdir(dir, { recursive: true });
  const target = join(dir, name);
  const tmp = `${target}.part`;
  const hash = createHash('sha256');
  let bytes = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _e, cb) {
      hash.update(chunk);
      bytes += chunk.length;
      cb(null, chunk);
    },
  });
  try {
    await pipeline(from, tap, createWriteStream(tmp));
    await rename(tmp, target);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  return { path: target, bytes, sha256: hash.digest('hex') };
}

/** The file name of a media record: the last segment of its URL, or its asset id. */
function fileName(m: MediaRecord): string {
  const ext = m.kind === 'recording' ? '.ogg' : '.json';
  const fromUrl = m.url ? decodeURIComponent(m.url.split('/').pop() ?? '') : '';
  const name = basename(fromUrl || `${encodeURIComponent(m.mediaAssetId)}${ext}`);
  return name === '' || name === '.' || name === '..' ? `media${ext}` : name;
}

function checkHash(m: MediaRecord, got: { sha256: string }) {
  if (m.sha256 && m.sha256 !== got.sha256) {
    throw new SwitchboardError('CHECKSUM_MISMATCH', `${m.mediaAssetId}: the file's SHA-256 is ${got.sha256}, the history says ${m.sha256}`);
  }
}

/** A logged-in session with a running Switchboard. */
export async function connectServer(cfg: SwitchboardConfig, fetchImpl: typeof fetch = fetch): Promise<HistorySource> {
  const missing = !cfg.url ? 'SWITCHBOARD_URL' : !cfg.user ? 'SWITCHBOARD_USER' : !cfg.password ? 'SWITCHBOARD_PASSWORD' : undefined;
  if (missing) throw new SwitchboardError('CONFIG_ERROR', `${missing} is not set`);
  let base: URL;
  try {
    base = new URL(cfg.url!);
  } catch {
    throw new SwitchboardError('CONFIG_ERROR', 'SWITCHBOARD_URL: must be a URL such as http://127.0.0.1:8080');
  }
  const origin = base.origin;
  const call = async (path: string, init: RequestInit = {}): Promise<Response> => {
    try {
      return await fetchImpl(new URL(path, `${origin}/`), init);
    } catch (err) {
      throw new SwitchboardError('CONNECTION_ERROR', `${origin}: ${(err as Error).message}`);
    }
  };
  const fail = async (res: Response): Promise<never> => {
    const body = (await res.json().catch(() => undefined)) as { error?: { code?: string; message?: string; requestId?: string } } | undefined;
    const e = body?.error;
    throw new SwitchboardError(e?.code ?? `HTTP_${res.status}`, e?.message ?? res.statusText, res.status, e?.requestId);
  };

  // The login is a write: the server checks it comes from its own origin.
  const login = await call('/api/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin },
    body: JSON.stringify({ name: cfg.user, password: cfg.password }),
  });
  if (!login.ok) await fail(login);
  const cookie = (login.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const headers = { cookie };
  const getJson = async <T>(path: string): Promise<T> => {
    const res = await call(path, { headers });
    if (!res.ok) await fail(res);
    return (await res.json()) as T;
  };

  return {
    searchCalls: (q) => {
      const qs = new URLSearchParams();
      for (const [k, v] of Object.entries(q)) if (v !== undefined) qs.set(k, String(v));
      return getJson<CallPage>(`/api/history/calls${qs.size ? `?${qs}` : ''}`);
    },
    async getCall(wacid) {
      try {
        return await getJson<CallDetail>(`/api/history/calls/${encodeURIComponent(wacid)}`);
      } catch (err) {
        if (err instanceof SwitchboardError && err.status === 404) return null;
        throw err;
      }
    },
    async audit(query, csv) {
      const qs = new URLSearchParams(query);
      const path = `/api/audit${csv ? '.csv' : ''}${qs.size ? `?${qs}` : ''}`;
      if (!csv) return getJson<{ items: AuditEntry[]; cursor?: string }>(path);
      const res = await call(path, { headers });
      if (!res.ok) await fail(res);
      return res.text();
    },
    async saveMedia(_call, m, dir) {
      if (!m.url) throw new SwitchboardError('NOT_AVAILABLE', `${m.mediaAssetId}: no download URL (not archived, or your role may not download)`);
      const res = await call(m.url, { headers });
      if (!res.ok || !res.body) await fail(res);
      const got = await saveStream(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), dir, fileName(m));
      checkHash(m, got);
      return got;
    },
    async close() {
      await call('/api/logout', { method: 'POST', headers: { ...headers, origin } }).catch(() => undefined);
    },
  };
}

/**
 * The history database itself (DATABASE_URL, else PGlite under DATA_DIR/history). PGlite
 * is single-process: only while the server using that DATA_DIR is stopped.
 */
export async function connectDatabase(cfg: SwitchboardConfig): Promise<HistorySource> {
  let store: HistoryStore;
  try {
    store = new HistoryStore(await openHistoryDb({ databaseUrl: cfg.databaseUrl, dataDir: cfg.dataDir ?? './data' }));
  } catch (err) {
    throw new SwitchboardError('DATABASE_ERROR', `history database: ${(err as Error).message}`);
  }
  return {
    async searchCalls(q) {
      try {
        return await store.searchCalls(q);
      } catch (err) {
        if (err instanceof HistoryQueryError) throw new SwitchboardError('BAD_REQUEST', err.message);
        throw err;
      }
    },
    getCall: (wacid) => store.getCall(wacid),
    async audit(query, csv) {
      let q;
      try {
        q = parseAuditQuery(Object.fromEntries(Object.entries(query).map(([k, v]) => [k, [v]])), csv ? 10_000 : undefined);
      } catch (err) {
        if (err instanceof AuditQueryError) throw new SwitchboardError('BAD_REQUEST', err.message);
        throw err;
      }
      if (csv && query.limit === undefined) q.limit = 10_000;
      const page = await new AuditStore(store.db).search(q);
      return csv ? auditCsv(page.items) : page;
    },
    async saveMedia(_call, m, dir) {
      if (m.status !== 'available' || !m.path) throw new SwitchboardError('NOT_AVAILABLE', `${m.mediaAssetId}: not in the archive (${m.status})`);
      const got = await saveStream(createReadStream(m.path), dir, fileName(m)).catch((err: NodeJS.ErrnoException) => {
        throw err.code === 'ENOENT' ? new SwitchboardError('NOT_FOUND', `${m.mediaAssetId}: the file ${m.path} is gone`) : err;
      });
      checkHash(m, got);
      return got;
    },
    close: () => store.close(),
  };
}
