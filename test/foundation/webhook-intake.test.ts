/**
 * POST /webhooks/service against a real RedisStore on a private redis-server:
 * signature, envelope, size limit, dedupe, durable accept and 503.
 */
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { RedisStore } from '../../server/store/redis.ts';
import { WORKER_GROUP } from '../../server/webhooks/workers.ts';
import { sign, digest } from '../../server/webhooks/signature.ts';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.ts';
import { SECRET_A, SECRET_B, event, listen, signed, testApp, until } from './helpers.ts';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.close();
});

async function setup() {
  const store = new RedisStore({ url: redis.url, prefix: uniquePrefix() });
  const t = testApp(store);
  const post = (body: string | Uint8Array, headers: Record<string, string>) => t.app.request('/webhooks/service', { method: 'POST', body: body as BodyInit, headers });
  const stored = async () => {
    await store.ensureGroup('probe');
    return store.streamLag('probe');
  };
  return { store, post, stored, ...t };
}

describe('webhook signature at the receiver', () => {
  const now = () => Math.floor(Date.now() / 1000);
  const cases: Array<[string, (body: string) => Record<string, string>, ((body: string) => string)?]> = [
    ['header missing', () => ({ 'Content-Type': 'application/json' })],
    ['header empty', () => ({ 'Service-Signature': '' })],
    ['wrong format', (b) => ({ 'Service-Signature': `sha256=${digest(SECRET_A, now(), b)}` })],
    ['t not digits', (b) => ({ 'Service-Signature': `t=${now()}x,s=${digest(SECRET_A, now(), b)}` })],
    ['s not 64 hex characters', (b) => ({ 'Service-Signature': `t=${now()},s=${digest(SECRET_A, now(), b).slice(0, 63)}` })],
    ['wrong secret', (b) => signed(b, 'whsec_not_configured_secret_x')],
    ['body changed by one byte', (b) => signed(b), (b) => b.replace('"v2"', '"v3"')],
    ['body re-serialized from parsed JSON', (b) => signed(b), (b) => JSON.stringify(JSON.parse(b), null, 2)],
    // 305 s, not 301: the server reads its clock in whole seconds after this one, and when the
    // second turns in between, now + 301 is only 300 s ahead by its clock (accepted: a CI failure).
    ['t more than 300 s in the past', (b) => signed(b, SECRET_A, now() - 305)],
    ['t more than 300 s in the future', (b) => signed(b, SECRET_A, now() + 305)],
    ['a second s field', (b) => ({ 'Service-Signature': `${sign(SECRET_A, now(), b)},s=${digest(SECRET_A, now(), b)}` })],
    ['a second t field', (b) => ({ 'Service-Signature': `t=${now()},${sign(SECRET_A, now(), b)}` })],
  ];

  it.each(cases)('%s: 401 UNAUTHORIZED in the error shape, and nothing is stored', async (_name, headersFor, mutate) => {
    const { post, stored, store } = await setup();
    const e = event();
    const body = JSON.stringify(e);
    const res = await post(mutate ? mutate(body) : body, headersFor(body));
    expect(res.status).toBe(401);
    const json = (await res.json()) as { error: Record<string, unknown> };
    expect(json.error).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
    expect(typeof json.error.message).toBe('string');
    expect(json.error.requestId).toBe(res.headers.get('x-request-id'));
    expect(await stored()).toBe(0);
    // Not even the dedupe key: the same event correctly signed is accepted as new.
    const ok = await post(body, signed(body));
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ received: true, duplicate: false });
    await store.close();
  });

  it('either of two configured secrets verifies', async () => {
    const { post, stored, store } = await setup();
    for (const secret of [SECRET_A, SECRET_B]) {
      const body = JSON.stringify(event());
      expect((await post(body, signed(body, secret))).status).toBe(200);
    }
    expect(await stored()).toBe(2);
    await store.close();
  });
});

describe('webhook envelope and body', () => {
  it.each([
    ['malformed JSON', '{"id":"x",'],
    ['not UTF-8', new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d])],
    ['an envelope without id', JSON.stringify({ type: 'chat.call.connect', apiVersion: 'v2', createTime: 't' })],
    ['an envelope without type', JSON.stringify({ id: 'e1', apiVersion: 'v2', createTime: 't' })],
    ['an id that is not a string', JSON.stringify({ id: 5, type: 'x', apiVersion: 'v2', createTime: 't' })],
    ['a JSON array', '[]'],
  ])('400 BAD_REQUEST for %s (signed), nothing stored', async (_name, body: string | Uint8Array) => {
    const { post, stored, store } = await setup();
    const res = await post(body, { 'Content-Type': 'application/json', 'Service-Signature': sign(SECRET_A, Math.floor(Date.now() / 1000), body) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: unknown }).error).toMatchObject({ status: 400, code: 'BAD_REQUEST' });
    expect(await stored()).toBe(0);
    await store.close();
  });

  it('an unknown event type with unknown fields is accepted (2xx) and stored', async () => {
    const { post, store } = await setup();
    const body = JSON.stringify({ ...event('chat.from_the_future', undefined, { somethingNew: { a: 1 } }), extra: true });
    const res = await post(body, signed(body));
    expect(res.status).toBe(200);
    await store.ensureGroup('g');
    const [e] = await store.readGroup('g', 'c', 10, 0);
    expect(e).toMatchObject({ type: 'chat.from_the_future', body });
    await store.close();
  });

  it('a duplicate gets 2xx and is not appended again', async () => {
    const { post, stored, store } = await setup();
    const body = JSON.stringify(event());
    expect(await (await post(body, signed(body))).json()).toEqual({ received: true, duplicate: false });
    expect(await (await post(body, signed(body))).json()).toEqual({ received: true, duplicate: true });
    expect(await stored()).toBe(1);
    await store.close();
  });

  describe('1 MiB limit over a real socket', () => {
    const MiB = 1024 * 1024;
    // A signed envelope padded to exactly `size` bytes.
    const padded = (size: number) => {
      const base = JSON.stringify({ ...event(), pad: '' });
      return base.replace('"pad":""', `"pad":"${'x'.repeat(size - base.length)}"`);
    };

    it('exactly 1 MiB is accepted; 1 MiB + 1 byte is 413 with and without Content-Length', async () => {
      const { app, store, stored } = await setup();
      const srv = await listen(app.fetch);
      try {
        const exact = padded(MiB);
        expect(Buffer.byteLength(exact)).toBe(MiB);
        const ok = await request(`${srv.url}/webhooks/service`, { method: 'POST', body: exact, headers: signed(exact) });
        expect(ok.statusCode).toBe(200);
        await ok.body.dump();

        const over = padded(MiB + 1);
        const withLength = await request(`${srv.url}/webhooks/service`, { method: 'POST', body: over, headers: signed(over) });
        expect(withLength.statusCode).toBe(413);
        expect(((await withLength.body.json()) as { error: unknown }).error).toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE' });

        // Chunked, no Content-Length: a stream body.
        async function* chunks() {
          const buf = Buffer.from(over);
          for (let i = 0; i < buf.length; i += 64 * 1024) yield buf.subarray(i, i + 64 * 1024);
        }
        const chunked = await request(`${srv.url}/webhooks/service`, { method: 'POST', body: Readable.from(chunks()), headers: signed(over) });
        expect(chunked.statusCode).toBe(413);
        await chunked.body.dump();
        expect(await stored()).toBe(1);
      } finally {
        await srv.close();
        await store.close();
      }
    });

    it('a chunked body far over the limit is refused before it is read whole', async () => {
      const { app, store } = await setup();
      const srv = await listen(app.fetch);
      let sent = 0;
      try {
        async function* endless() {
          const chunk = Buffer.alloc(64 * 1024, 0x20);
          for (let i = 0; i < 1600; i++) {
            sent += chunk.length;
            yield chunk;
          }
        }
        const res = await request(`${srv.url}/webhooks/service`, { method: 'POST', body: Readable.from(endless()), headers: { 'Service-Signature': `t=${Math.floor(Date.now() / 1000)},s=${'0'.repeat(64)}` } }).catch(
          (err: Error) => err,
        );
        if (!(res instanceof Error)) {
          expect(res.statusCode).toBe(413);
          await res.body.dump();
        }
        // 100 MiB were offered; the server stopped long before.
        expect(sent).toBeLessThan(50 * MiB);
      } finally {
        await srv.close();
        await store.close();
      }
    });
  });
});

describe('durability: 503 while Redis is stopped, 2xx again after restart, nothing lost', () => {
  it('answers 503 while the store is down and keeps every accepted event across the restart', async () => {
    const durable = await startRedis({ durable: true });
    const store = new RedisStore({ url: durable.url, prefix: uniquePrefix() });
    const { app } = testApp(store);
    const post = (b: string) => app.request('/webhooks/service', { method: 'POST', body: b, headers: signed(b) });
    try {
      const before = JSON.stringify(event());
      expect((await post(before)).status).toBe(200);

      await durable.stop();
      const during = JSON.stringify(event());
      const t0 = Date.now();
      const refused = await post(during);
      expect(refused.status).toBe(503);
      expect(((await refused.json()) as { error: unknown }).error).toMatchObject({ status: 503, code: 'UNAVAILABLE' });
      expect(Date.now() - t0).toBeLessThan(3000);
      const ready = await app.request('/readyz');
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as { reason: string }).reason).toMatch(/^store: /);

      await durable.start();
      await until(async () => (await app.request('/readyz')).status === 200, 15_000, 'readyz after restart');
      // The Service delivers the refused event again; now it is accepted.
      expect((await post(during)).status).toBe(200);
      // And the one accepted before the stop is still a duplicate: its dedupe key survived.
      expect(await (await post(before)).json()).toEqual({ received: true, duplicate: true });

      await store.ensureGroup(WORKER_GROUP);
      const all = await store.readGroup(WORKER_GROUP, 'c', 10, 0);
      expect(all.map((e) => e.body)).toEqual([before, during]);
    } finally {
      await store.close();
      await durable.close();
    }
  });
});
