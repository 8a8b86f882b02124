import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Writable } from 'node:stream';
import { ConnectionError, createServiceClient, fullJitterBackoff, noRetry, NotFoundError, OutcomeUnknownError, RateLimitedError, TimeoutError, ValidationError } from '../../server/service/index.ts';
import { json, serviceError, startServer, type TestServer } from './server.ts';

const API_KEY = 'sk_test_calls_0123456789';
const SDP = 'v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n';

let srv: TestServer;
beforeEach(async () => {
  srv = await startServer((req, res) => json(res, 200, { wacid: req.json?.wacid ?? 'wacid.NEW', success: true }));
});
afterEach(() => srv.close());

const client = () => createServiceClient({ baseUrl: srv.baseUrl, apiKey: API_KEY });

describe('calls resource', () => {
  it('preAccept and accept POST {phoneId, wacid, sdpType:"answer", sdp} with the SDP byte-exact', async () => {
    const c = client();
    const input = { phoneId: 'ph1', wacid: 'wacid.ABC', sdpType: 'answer' as const, sdp: SDP };
    expect(await c.calls.preAccept(input)).toEqual({ wacid: 'wacid.ABC', success: true });
    expect(await c.calls.accept(input)).toEqual({ wacid: 'wacid.ABC', success: true });
    expect(srv.seen.map((s) => `${s.method} ${s.path}`)).toEqual(['POST /chat/calls/preAccept', 'POST /chat/calls/accept']);
    expect(srv.seen[1]!.json).toEqual({ phoneId: 'ph1', wacid: 'wacid.ABC', sdpType: 'answer', sdp: SDP });
    expect(srv.seen[1]!.headers['x-api-key']).toBe(API_KEY);
  });

  it('reject and terminate POST only {phoneId, wacid}', async () => {
    const c = client();
    await c.calls.reject({ phoneId: 'ph1', wacid: 'wacid.R' });
    await c.calls.terminate({ phoneId: 'ph1', wacid: 'wacid.T' });
    expect(srv.seen.map((s) => [s.path, s.json])).toEqual([
      ['/chat/calls/reject', { phoneId: 'ph1', wacid: 'wacid.R' }],
      ['/chat/calls/terminate', { phoneId: 'ph1', wacid: 'wacid.T' }],
    ]);
  });

  it('connect sends from, the addressee and sdpType "offer", and returns the wacid', async () => {
    const r = await client().calls.connect({ from: '+4930123456', to: '+14155550100', sdp: SDP });
    expect(r.wacid).toBe('wacid.NEW');
    expect(srv.seen[0]!.json).toEqual({ from: '+4930123456', to: '+14155550100', sdpType: 'offer', sdp: SDP });
  });

  it('a timed-out accept is OutcomeUnknownError after exactly one request (never retried)', async () => {
    srv.setHandler(() => {
      /* never answer */
    });
    const c = createServiceClient({ baseUrl: srv.baseUrl, apiKey: API_KEY, timeoutMs: 300 });
    await expect(c.calls.accept({ phoneId: 'p', wacid: 'w', sdpType: 'answer', sdp: SDP })).rejects.toBeInstanceOf(OutcomeUnknownError);
    await new Promise((r) => setTimeout(r, 200));
    expect(srv.seen).toHaveLength(1);
  });

  it('accept with a deadline gives up on a 429 whose Retry-After passes the deadline', async () => {
    srv.setHandler((_req, res) => serviceError(res, 429, 'RATE_LIMITED', 'slow down', { 'retry-after': '10' }));
    const t0 = Date.now();
    const err = await client()
      .calls.accept({ phoneId: 'p', wacid: 'w', sdpType: 'answer', sdp: SDP }, { deadline: t0 + 3000 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect((err as RateLimitedError).retryAfterMs).toBe(10_000);
    // Fails at once: waiting 10 s could only end after the accept window.
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(srv.seen).toHaveLength(1);
  });
});

describe('call media download', () => {
  it('streams the whole file to a path, without a Range header, reporting progress', async () => {
    const payload = Buffer.alloc(256 * 1024, 7);
    srv.setHandler((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/ogg', 'content-length': String(payload.length) });
      // Several chunks, so progress is reported more than once.
      res.write(payload.subarray(0, 100_000));
      setTimeout(() => res.end(payload.subarray(100_000)), 20);
    });
    const dir = await mkdtemp(join(tmpdir(), 'sb-media-'));
    const progress: number[] = [];
    const r = await client().calls.downloadMedia('asset/1+x', { out: join(dir, 'a.ogg'), onProgress: (p) => progress.push(p.bytes) });
    expect(r.bytes).toBe(payload.length);
    expect((await readFile(join(dir, 'a.ogg'))).equals(payload)).toBe(true);
    expect(srv.seen[0]!.url).toBe('/v2/chat/calls/media/asset%2F1%2Bx');
    expect(srv.seen[0]!.headers.range).toBeUndefined();
    expect(progress.length).toBeGreaterThan(1);
    expect(progress.at(-1)).toBe(payload.length);
    expect(await readdir(dir)).toEqual(['a.ogg']);
  });

  it('streams with backpressure: a slow sink holds the server back instead of the body piling up in memory', async () => {
    const TOTAL = 64 * 1024 * 1024;
    const chunk = Buffer.alloc(64 * 1024, 1);
    let written = 0;
    srv.setHandler((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/ogg', 'content-length': String(TOTAL) });
      const pump = () => {
        while (written < TOTAL) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
    let received = 0;
    let gate: (() => void) | undefined;
    const gateOpen = new Promise<void>((r) => (gate = r));
    const sink = new Writable({
      highWaterMark: 64 * 1024,
      write(c: Buffer, _e, cb) {
        received += c.length;
        // Hold the first chunk until the test has looked at the server.
        if (received === c.length) void gateOpen.then(() => cb());
        else cb();
      },
    });
    const done = client().calls.downloadMedia('big', { out: sink });
    while (received === 0) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 300));
    // Socket buffers take a few MB; a client that buffered the body would have let the server write all 64.
    expect(written).toBeLessThan(TOTAL / 2);
    gate!();
    expect((await done).bytes).toBe(TOTAL);
    expect(received).toBe(TOTAL);
  });

  it('streams into a Writable', async () => {
    srv.setHandler((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"transcript":"hi"}');
    });
    const sink = new PassThrough();
    const chunks: Buffer[] = [];
    sink.on('data', (c: Buffer) => chunks.push(c));
    await client().calls.downloadMedia('t1', { out: sink });
    expect(Buffer.concat(chunks).toString()).toBe('{"transcript":"hi"}');
  });

  it('a download to a file that breaks midway is fetched again whole (no Range) and lands complete', async () => {
    const payload = Buffer.alloc(200_000, 5);
    let n = 0;
    srv.setHandler((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/ogg', 'content-length': String(payload.length) });
      if (n++ === 0) {
        res.write(payload.subarray(0, 50_000));
        setTimeout(() => res.socket?.destroy(), 20);
        return;
      }
      res.end(payload);
    });
    const dir = await mkdtemp(join(tmpdir(), 'sb-media-'));
    const r = await client().calls.downloadMedia('m1', { out: join(dir, 'm1.ogg') });
    expect(r.bytes).toBe(payload.length);
    expect((await readFile(join(dir, 'm1.ogg'))).equals(payload)).toBe(true);
    expect(srv.seen).toHaveLength(2);
    expect(srv.seen.every((s) => s.headers.range === undefined)).toBe(true);
    expect(await readdir(dir)).toEqual(['m1.ogg']);
  });

  it('no headers in time: the GET is retried, then a TimeoutError; no file left (Node http carries downloads)', async () => {
    srv.setHandler(() => undefined); // never answers
    const dir = await mkdtemp(join(tmpdir(), 'sb-media-'));
    const c = createServiceClient({ baseUrl: srv.baseUrl, apiKey: API_KEY, timeoutMs: 200, retry: fullJitterBackoff({ maxAttempts: 2, baseMs: 10, capMs: 20 }) });
    const err = await c.calls.downloadMedia('slow', { out: join(dir, 'x.ogg') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TimeoutError);
    expect((err as TimeoutError).message).toMatch(/no answer within 200 ms/);
    expect(srv.seen).toHaveLength(2);
    expect(await readdir(dir)).toEqual([]);
  });

  it('a body that stops mid-way fails the download after the timeout (no byte for timeoutMs), leaving no file', async () => {
    srv.setHandler((_req, res) => {
      res.writeHead(200, { 'content-type': 'audio/ogg', 'content-length': '100000' });
      res.write(Buffer.alloc(1000, 1)); // then nothing
    });
    const dir = await mkdtemp(join(tmpdir(), 'sb-media-'));
    const c = createServiceClient({ baseUrl: srv.baseUrl, apiKey: API_KEY, timeoutMs: 300, retry: noRetry });
    const t0 = Date.now();
    const err = await c.calls.downloadMedia('stall', { out: join(dir, 'x.ogg') }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as ConnectionError).message).toMatch(/download broke after 1000 bytes/);
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(await readdir(dir)).toEqual([]);
  });

  it('503 before the body is retried (GET rule) and the second answer is streamed whole', async () => {
    let n = 0;
    srv.setHandler((_req, res) => {
      if (n++ === 0) return serviceError(res, 503, 'UNAVAILABLE', 'try later');
      res.writeHead(200, { 'content-type': 'audio/ogg', 'content-length': '5' });
      res.end('OggS!');
    });
    const c = createServiceClient({ baseUrl: srv.baseUrl, apiKey: API_KEY, retry: fullJitterBackoff({ maxAttempts: 3, baseMs: 10, capMs: 20 }) });
    const sink = new PassThrough();
    const chunks: Buffer[] = [];
    sink.on('data', (d: Buffer) => chunks.push(d));
    expect((await c.calls.downloadMedia('m', { out: sink })).bytes).toBe(5);
    expect(Buffer.concat(chunks).toString()).toBe('OggS!');
    expect(srv.seen).toHaveLength(2);
  });

  it('404 is NotFoundError and leaves no file behind', async () => {
    srv.setHandler((_req, res) => serviceError(res, 404, 'NOT_FOUND', 'media not found'));
    const dir = await mkdtemp(join(tmpdir(), 'sb-media-'));
    await expect(client().calls.downloadMedia('gone', { out: join(dir, 'x.ogg') })).rejects.toBeInstanceOf(NotFoundError);
    expect(await readdir(dir)).toEqual([]);
  });
});

describe('calls validation (nothing is sent)', () => {
  it('preAccept / accept refuse sdpType other than "answer", naming sdpType', async () => {
    const c = client();
    for (const fn of [c.calls.preAccept.bind(c.calls), c.calls.accept.bind(c.calls)]) {
      const err = await fn({ phoneId: 'p', wacid: 'w', sdpType: 'offer' as 'answer', sdp: SDP }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe('sdpType');
    }
    expect(srv.seen).toHaveLength(0);
  });
});
