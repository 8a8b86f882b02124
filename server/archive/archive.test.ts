/**
 * The archive handlers against a real local HTTP server through the real Service client.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { copyFile, mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServiceClient, fullJitterBackoff } from '../service/index.ts';
import { json, serviceError, startServer, type TestServer } from '../../test/service/server.ts';
import { ArchiveConflictError, createArchive, INDEX_DIR, type MediaEvent } from './index.ts';
import { parseEvent } from '../../shared/events.ts';
import { listArchive } from './routes.ts';

let srv: TestServer;
const stalled: Array<{ destroy(): void }> = [];
let closedStalls = 0;
let dir: string;
const OGG = Buffer.concat([Buffer.from('OggS'), Buffer.alloc(50_000, 9)]);
const TRANSCRIPT = Buffer.from('{"segments":[{"speaker":"user","text":"hello"}]}');

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
