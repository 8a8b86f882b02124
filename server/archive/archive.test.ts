/**
 * The archive handlers against a real local HTTP server through the real Service client.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServiceClient, fullJitterBackoff } from '../service/index.ts';
import { json, serviceError, startServer, type TestServer } from '../../test/service/server.ts';
import { ArchiveConflictError, createArchive, INDEX_DIR, type MediaEvent } from './index.ts';
import { parseEvent } from '../../shared/events.ts';
import { listArchive } from './routes.ts';
import { createHash } from 'node:crypto';
import { muxOggOpus } from '../../test/emulator/calls/ogg.ts';
import { oggProblem, transcriptText } from './media.ts';

let srv: TestServer;
const stalled: Array<{ destroy(): void }> = [];
let closedStalls = 0;
let flaky = 0;
let dir: string;
// A real Ogg Opus file (OpusHead, OpusTags, then audio pages) of about 50 KB.
const OGG = muxOggOpus(Array.from({ length: 500 }, (_, i) => Buffer.alloc(100, i % 251)));
const TRANSCRIPT = Buffer.from('{"segments":[{"speaker":"user","text":"hello"}]}');
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
// Ogg but not Opus: the first page carries a Vorbis header.
const VORBIS = Buffer.concat([Buffer.from('OggS'), Buffer.alloc(22, 0), Buffer.from([1, 30]), Buffer.from('\x01vorbis'), Buffer.alloc(2000, 7)]);

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sb-archive-'));
  srv = await startServer((req, res) => {
    if (req.path === '/chat/calls/media/cma_rec') {
      res.writeHead(200, { 'content-type': 'audio/ogg', 'content-length': String(OGG.length) });
      res.end(OGG);
      return;
    }
    if (req.path === '/chat/calls/media/cma_tr') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(TRANSCRIPT);
      return;
    }
    if (req.path === '/chat/calls/media/cma_cut') {
      res.writeHead(200, { 'content-type': 'audio/ogg', 'content-length': String(OGG.length) });
      res.write(OGG.subarray(0, 1000));
      setTimeout(() => res.socket?.destroy(), 20);
      return;
    }
    if (req.path === '/chat/calls/media/cma_stall') {
      // Headers and the first bytes, then nothing: a download hung mid-body.
      res.writeHead(200, { 'content-type': 'audio/ogg', 'content-length': String(OGG.length) });
      res.write(OGG.subarray(0, 1000));
      stalled.push(res);
      res.once('close', () => closedStalls++);
      return;
    }
    if (req.path === '/chat/calls/media/cma_notogg' || req.path === '/chat/calls/media/cma_vorbis' || req.path === '/chat/calls/media/cma_badjson') {
      const body = req.path.endsWith('notogg') ? Buffer.from('<html>error page</html>') : req.path.endsWith('vorbis') ? VORBIS : Buffer.from('{"segments": [');
      res.writeHead(200, { 'content-length': String(body.length) });
      res.end(body);
      return;
    }
    if (req.path === '/chat/calls/media/cma_flaky') {
      // The first body breaks midway; the second is whole: the digest must be of the second only.
      flaky++;
      res.writeHead(200, { 'content-type': 'audio/ogg', 'content-length': String(OGG.length) });
      if (flaky === 1) {
        res.write(OGG.subarray(0, 20_000));
        setTimeout(() => res.socket?.destroy(), 20);
      } else res.end(OGG);
      return;
    }
    if (req.path === '/chat/calls/media/cma_down') return serviceError(res, 503, 'UNAVAILABLE', 'try later');
    serviceError(res, 404, 'NOT_FOUND', 'media not found');
  });
});
afterEach(async () => {
  for (const r of stalled.splice(0)) r.destroy();
  await srv.close();
});

const archive = () =>
  createArchive({ dir, calls: createServiceClient({ baseUrl: srv.baseUrl, apiKey: 'k_archive', retry: fullJitterBackoff({ maxAttempts: 2, baseMs: 10 }) }).calls });

let n = 0;
/** A media event as the workers hand it on: the envelope parsed and validated once. */
const event = (type: string, payload: Record<string, unknown>): MediaEvent => {
  const e = parseEvent({ id: `evt_${++n}`, type, apiVersion: 'v2', createTime: new Date().toISOString(), callingMedia: payload });
  if (!e.known || (e.type !== 'chat.call.recording.updated' && e.type !== 'chat.call.transcription.updated')) throw new Error(`not a media event: ${type}`);
  return e;
};
const rec = (wacid: string, mediaAssetId: string) => event('chat.call.recording.updated', { wacid, phoneId: 'p1', result: 'AVAILABLE', mediaAssetId });

describe('call media archive', () => {
  it('an AVAILABLE recording is saved as <dir>/<wacid>/<mediaAssetId>.ogg, whole, with no temp file left', async () => {
    const r = await archive().archive(rec('wacid.A1', 'cma_rec'));
    expect(r).toMatchObject({ status: 'saved', bytes: OGG.length });
    expect((await readFile(join(dir, 'wacid.A1', 'cma_rec.ogg'))).equals(OGG)).toBe(true);
    expect(await readdir(join(dir, 'wacid.A1'))).toEqual(['cma_rec.ogg']);
    expect(srv.seen[0]!.headers.range).toBeUndefined();
  });

  it('the result carries the size and SHA-256 of the bytes as they streamed', async () => {
    const r = await archive().archive(rec('wacid.D1', 'cma_rec'));
    expect(r).toEqual({ kind: 'recording', status: 'saved', wacid: 'wacid.D1', mediaAssetId: 'cma_rec', path: join(dir, 'wacid.D1', 'cma_rec.ogg'), bytes: OGG.length, sha256: sha(OGG) });
  });

  it('a body fetched again after breaking midway is hashed afresh (not the broken bytes plus the whole)', async () => {
    flaky = 0;
    const r = await archive().archive(rec('wacid.D2', 'cma_flaky'));
    expect(flaky).toBe(2);
    expect(r).toMatchObject({ status: 'saved', bytes: OGG.length, sha256: sha(OGG) });
  });

  it('a repeated event describes the archived file the same way (size and hash read back from disk)', async () => {
    const a = archive();
    const first = await a.archive(rec('wacid.D3', 'cma_rec'));
    const again = await a.archive(rec('wacid.D3', 'cma_rec'));
    expect(again).toMatchObject({ status: 'already-archived', bytes: first!.bytes, sha256: first!.sha256, mediaAssetId: 'cma_rec' });
  });

  it.each([
    ['cma_notogg', /does not start with "OggS"/],
    ['cma_vorbis', /"OpusHead"/],
  ])('a recording that is not Ogg Opus (%s) is recorded as invalid, never archived nor listed', async (id, why) => {
    const r = await archive().archive(rec('wacid.D4', id));
    expect(r).toMatchObject({ status: 'invalid', mediaAssetId: id, reason: expect.stringMatching(why) });
    expect(await readdir(join(dir, 'wacid.D4'))).toEqual([`${id}.invalid.json`]);
    expect(JSON.parse(await readFile(join(dir, 'wacid.D4', `${id}.invalid.json`), 'utf8'))).toMatchObject({ mediaAssetId: id, sha256: r!.sha256, bytes: r!.bytes });
    expect(await listArchive(dir)).toEqual([]);
  });

  it('a transcription is parsed: its text comes back for search; one that is not JSON is invalid', async () => {
    const a = archive();
    const ok = await a.archive(event('chat.call.transcription.updated', { wacid: 'wacid.D5', result: 'AVAILABLE', mediaAssetId: 'cma_tr' }));
    expect(ok).toMatchObject({ status: 'saved', text: 'hello', bytes: TRANSCRIPT.length, sha256: sha(TRANSCRIPT) });
    const bad = await a.archive(event('chat.call.transcription.updated', { wacid: 'wacid.D5', result: 'AVAILABLE', mediaAssetId: 'cma_badjson' }));
    expect(bad).toMatchObject({ status: 'invalid', reason: expect.stringMatching(/^not a JSON transcription/) });
    expect((await readdir(join(dir, 'wacid.D5'))).sort()).toEqual(['cma_badjson.invalid.json', 'cma_tr.json']);
  });

  it('the handlers tell onArchived every result', async () => {
    const seen: unknown[] = [];
    const h = createArchive({ dir, calls: createServiceClient({ baseUrl: srv.baseUrl, apiKey: 'k_archive' }).calls, onArchived: (r) => seen.push(r) }).handlers;
    await h['chat.call.recording.updated'](rec('wacid.D6', 'cma_rec'));
    await h['chat.call.recording.updated'](rec('wacid.D6', 'cma_gone'));
    expect(seen).toMatchObject([
      { status: 'saved', wacid: 'wacid.D6', mediaAssetId: 'cma_rec', sha256: sha(OGG) },
      { status: 'missing', wacid: 'wacid.D6', mediaAssetId: 'cma_gone' },
    ]);
  });

  it('oggProblem and transcriptText', () => {
    expect(oggProblem(OGG.subarray(0, 300))).toBeUndefined();
    expect(oggProblem(Buffer.from('Ogg'))).toMatch(/OggS/);
    expect(oggProblem(OGG.subarray(0, 30))).toMatch(/OpusHead/);
    expect(transcriptText({ text: 'whole' })).toBe('whole');
    expect(transcriptText({ segments: [{ text: 'a' }, { speaker: 'x' }, { text: ' ' }, { text: 'b' }] })).toBe('a\nb');
    expect(transcriptText([1, 2])).toBeUndefined();
  });

  it('an AVAILABLE transcription is saved as .json', async () => {
    await archive().handlers['chat.call.transcription.updated'](event('chat.call.transcription.updated', { wacid: 'wacid.A1', result: 'AVAILABLE', mediaAssetId: 'cma_tr' }));
    expect(await readFile(join(dir, 'wacid.A1', 'cma_tr.json'), 'utf8')).toBe(TRANSCRIPT.toString());
  });

  it('a repeated event does not download again', async () => {
    const a = archive();
    await a.archive(rec('wacid.A2', 'cma_rec'));
    expect(await a.archive(rec('wacid.A2', 'cma_rec'))).toMatchObject({ status: 'already-archived' });
    expect(srv.seen).toHaveLength(1);
  });

  it('404 is recorded as missing and the handler resolves (no retry can help)', async () => {
    await archive().handlers['chat.call.recording.updated'](rec('wacid.A3', 'cma_gone'));
    expect(await readdir(join(dir, 'wacid.A3'))).toEqual(['cma_gone.missing.json']);
    const record = JSON.parse(await readFile(join(dir, 'wacid.A3', 'cma_gone.missing.json'), 'utf8'));
    expect(record).toMatchObject({ mediaAssetId: 'cma_gone', kind: 'recording', status: 404, code: 'NOT_FOUND', requestId: 'req_body_1' });
  });

  it('a 5xx makes the handler throw (the worker retries) and leaves no file', async () => {
    await expect(archive().handlers['chat.call.recording.updated'](rec('wacid.A4', 'cma_down'))).rejects.toMatchObject({ status: 503 });
    expect(await readdir(join(dir, 'wacid.A4'))).toEqual([]);
  });

  it('a download cut midway throws and leaves neither the file nor a temp file', async () => {
    await expect(archive().archive(rec('wacid.A5', 'cma_cut'))).rejects.toThrow();
    expect(await readdir(join(dir, 'wacid.A5'))).toEqual([]);
  });

  it('a download hung mid-body is given up when the handler signal aborts (the worker deadline): socket closed, no file, no temp file', async () => {
    const ctl = new AbortController();
    const closedBefore = closedStalls;
    const run = archive().handlers['chat.call.recording.updated'](rec('wacid.A9', 'cma_stall'), undefined, { signal: ctl.signal });
    const settled = run.then(
      () => 'resolved',
      (err: Error) => err.message,
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(await Promise.race([settled, 'pending'])).toBe('pending');
    ctl.abort(new Error('handler deadline exceeded (test)'));
    const t0 = Date.now();
    expect(await settled).toMatch(/handler deadline exceeded \(test\)|download broke/);
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(await readdir(join(dir, 'wacid.A9'))).toEqual([]);
    for (let i = 0; i < 50 && closedStalls === closedBefore; i++) await new Promise((r) => setTimeout(r, 20));
    expect(closedStalls).toBe(closedBefore + 1);
  });

  it('a FAILED result is recorded without any request', async () => {
    const r = await archive().archive(event('chat.call.recording.updated', { wacid: 'wacid.A6', result: 'FAILED' }));
    expect(r).toMatchObject({ status: 'failed' });
    expect(await readdir(join(dir, 'wacid.A6'))).toEqual(['recording.failed.json']);
    expect(srv.seen).toHaveLength(0);
  });

  it('ids cannot escape the archive directory', async () => {
    await archive().archive(rec('../../escape', 'cma_rec'));
    // Beside the call's folder only the archive's own asset index.
    expect((await readdir(dir)).sort()).toEqual([INDEX_DIR, '..%2F..%2Fescape'].sort());
    await expect(archive().archive(rec('..', 'cma_rec'))).rejects.toThrow(/wacid/);
  });
});

describe('one asset, one call', () => {
  it('the same mediaAssetId announced for another call is refused: nothing is written for it, the first call keeps its file', async () => {
    const a = archive();
    await a.archive(rec('wacid.B1', 'cma_rec'));
    const err = await a.archive(rec('wacid.B2', 'cma_rec')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArchiveConflictError);
    expect((err as Error).message).toBe('mediaAssetId cma_rec: already archived as the recording of call wacid.B1; not archived as the recording of call wacid.B2');
    expect(srv.seen).toHaveLength(1); // not downloaded for B2
    expect(await readdir(join(dir, 'wacid.B2'))).toEqual([]);
    expect((await readFile(join(dir, 'wacid.B1', 'cma_rec.ogg'))).equals(OGG)).toBe(true);
    expect((await listArchive(dir)).map((i) => [i.wacid, i.kind])).toEqual([['wacid.B1', 'recording']]);
  });

  it('the same id as another kind is refused too', async () => {
    const a = archive();
    await a.archive(rec('wacid.B3', 'cma_rec'));
    await expect(a.archive(event('chat.call.transcription.updated', { wacid: 'wacid.B3', result: 'AVAILABLE', mediaAssetId: 'cma_rec' }))).rejects.toThrow(/already archived as the recording of call wacid\.B3/);
  });

  it('a file the index does not name for its folder is neither listed nor treated as archived', async () => {
    await archive().archive(rec('wacid.B4', 'cma_rec'));
    // Copied under another call's folder, or left by an older layout without an index entry.
    await mkdir(join(dir, 'wacid.B5'));
    await copyFile(join(dir, 'wacid.B4', 'cma_rec.ogg'), join(dir, 'wacid.B5', 'cma_rec.ogg'));
    await mkdir(join(dir, 'wacid.B6'));
    await writeFile(join(dir, 'wacid.B6', 'cma_old.ogg'), OGG);
    expect((await listArchive(dir)).map((i) => i.wacid)).toEqual(['wacid.B4']);
  });
});

describe('a disk that cannot be written', () => {
  const entry = (id: string) => ({ streamId: `1-${id}`, eventId: id, type: 'chat.call.recording.updated', body: '{}', receivedAt: Date.now(), deliveries: 1 });

  it('the handler resolves and the event waits; once the disk is back it is archived and told (no worker retry needed)', async () => {
    const blocker = join(dir, 'volume');
    await writeFile(blocker, 'a file, not a directory');
    const seen: unknown[] = [];
    const a = createArchive({ dir: join(blocker, 'archive'), calls: createServiceClient({ baseUrl: srv.baseUrl, apiKey: 'k_archive' }).calls, onArchived: (r) => seen.push(r), retry: { minMs: 50, maxMs: 100 } });
    const e = rec('wacid.W1', 'cma_rec');
    await a.handlers['chat.call.recording.updated'](e, entry(e.id));
    expect(a.downloadsWaiting()).toBe(1);
    await expect(a.health()).rejects.toThrow(/cannot write to ARCHIVE_DIR \(ENOTDIR/);
    await new Promise((r) => setTimeout(r, 300));
    expect(seen).toEqual([]);
    await rm(blocker);
    await mkdir(blocker);
    for (let i = 0; i < 50 && seen.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(seen).toMatchObject([{ status: 'saved', wacid: 'wacid.W1', mediaAssetId: 'cma_rec', sha256: sha(OGG) }]);
    expect(a.downloadsWaiting()).toBe(0);
    await expect(a.health()).resolves.toBeUndefined();
    await a.close();
  });

  it('what still waits when the node stops, or past giveUpMs, goes to the webhook dead letters', async () => {
    const blocker = join(dir, 'volume2');
    await writeFile(blocker, 'a file');
    const dead: Array<{ streamId: string; error: string }> = [];
    const mk = (giveUpMs?: number) =>
      createArchive({ dir: join(blocker, 'archive'), calls: createServiceClient({ baseUrl: srv.baseUrl, apiKey: 'k_archive' }).calls, retry: { minMs: 30, maxMs: 30, ...(giveUpMs !== undefined ? { giveUpMs } : {}) }, deadLetter: async (en, error) => void dead.push({ streamId: en.streamId, error }) });
    const stopping = mk();
    const e1 = rec('wacid.W2', 'cma_rec');
    await stopping.handlers['chat.call.recording.updated'](e1, entry('a'));
    await stopping.close();
    expect(dead).toEqual([{ streamId: '1-a', error: expect.stringMatching(/^archive: the node stopped while ARCHIVE_DIR was not writable \(ENOTDIR/) }]);
    const impatient = mk(100);
    await impatient.handlers['chat.call.recording.updated'](rec('wacid.W3', 'cma_rec'), entry('b'));
    for (let i = 0; i < 40 && dead.length < 2; i++) await new Promise((r) => setTimeout(r, 50));
    expect(dead[1]).toEqual({ streamId: '1-b', error: expect.stringMatching(/not writable for/) });
    expect(impatient.downloadsWaiting()).toBe(0);
    await impatient.close();
  });
});
