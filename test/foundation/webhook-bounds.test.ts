/**
 * The webhook receiver before authentication:
 * the signature header is judged before the body is read, unauthenticated bodies are
 * bounded together, a deeply nested body is refused before it is parsed, and the HTTP
 * server cuts a body that never finishes. Real HTTP servers on loopback, raw requests.
 * The 300/1,200-connection case against a server process is test/faults/webhook-bodies.test.ts.
 */
import { request, type IncomingMessage } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config/config.ts';
import { startSwitchboard } from '../../server/main.ts';
import { MemoryStore } from '../../server/store/memory.ts';
import { BodyBudget, WEBHOOK_MAX_DEPTH } from '../../server/webhooks/receiver.ts';
import { digest, sign } from '../../server/webhooks/signature.ts';
import { tempDataDir } from '../support/data-dir.ts';
import { SECRET_A, event, listen, testApp } from './helpers.ts';
import { silentLogger } from '../../server/log/logger.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

interface Answer {
  status: number;
  body: string;
  headers: IncomingMessage['headers'];
  /** ms from the request's start to its answer. */
  ms: number;
}

/**
 * A POST whose headers go at once and whose body goes only as `send` says: the request's
 * answer (0 when the connection was cut without one).
 */
function post(url: string, headers: Record<string, string>, opts: { body?: Buffer; hold?: boolean } = {}): { answer: Promise<Answer>; send(b: Buffer): void; end(): void; destroy(): void } {
  const u = new URL(`${url}/webhooks/service`);
  const t0 = Date.now();
  const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent: false, headers });
  const answer = new Promise<Answer>((resolve) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), headers: res.headers, ms: Date.now() - t0 }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, body: '', headers: res.headers, ms: Date.now() - t0 }));
    });
    req.on('error', () => resolve({ status: 0, body: '', headers: {}, ms: Date.now() - t0 }));
  });
  req.flushHeaders();
  if (opts.body) req.write(opts.body);
  if (!opts.hold) req.end();
  cleanups.push(() => void req.destroy());
  return { answer, send: (b) => req.write(b), end: () => req.end(), destroy: () => req.destroy() };
}

/** Resolves with the answer, or 'none' when there is none within `ms`. */
const within = (p: Promise<Answer>, ms: number) => Promise.race([p, new Promise<'none'>((r) => setTimeout(() => r('none'), ms))]);

const now = () => Math.floor(Date.now() / 1000);

async function receiver(budget?: BodyBudget) {
  const store = new MemoryStore();
  const { app } = testApp(store, budget ? { webhookBudget: budget } : {});
  const http = await listen(app.fetch);
  cleanups.push(() => http.close());
  return { url: http.url, store };
}

describe('the signature header is judged before the body is read', () => {
  const MiB = String(1024 * 1024);
  const cases: Array<[string, Record<string, string>, string]> = [
    ['missing', {}, 'missing'],
    ['malformed', { 'service-signature': 'sha256=abc' }, 'malformed'],
    ['an hour old', { 'service-signature': `t=${now() - 3600},s=${'a'.repeat(64)}` }, 'timestamp out of range'],
    ['an hour ahead', { 'service-signature': `t=${now() + 3600},s=${'a'.repeat(64)}` }, 'timestamp out of range'],
  ];
  for (const [name, headers, reason] of cases) {
    it(`header ${name}: 401 naming it while the 1 MiB body has not been sent`, async () => {
      const { url } = await receiver();
      const r = post(url, { 'content-type': 'application/json', 'content-length': MiB, ...headers }, { hold: true });
      const a = await within(r.answer, 3_000);
      r.destroy();
      expect(a).not.toBe('none');
      expect((a as Answer).status).toBe(401);
      expect((a as Answer).body).toContain(reason);
    });
  }
});

describe('unauthenticated bodies are bounded together', () => {
  it('past the bytes for large bodies: 503 with Retry-After at once; a small delivery still gets in; the budget is free again afterwards', async () => {
    const budget = new BodyBudget({ bodies: 8, bytes: 256 * 1024, largeOver: 16 * 1024 });
    const { url } = await receiver(budget);
    const big = 64 * 1024;
    const header = { 'content-type': 'application/json', 'content-length': String(big), 'service-signature': `t=${now()},s=${'0'.repeat(64)}` };
    // Two large bodies arriving slowly hold the half of the bytes large bodies may use.
    const slow = [post(url, header, { hold: true, body: Buffer.alloc(1024, 0x20) }), post(url, header, { hold: true, body: Buffer.alloc(1024, 0x20) })];
    await new Promise((r) => setTimeout(r, 300));
    const third = await within(post(url, header, { hold: true }).answer, 3_000);
    expect(third).not.toBe('none');
    expect((third as Answer).status).toBe(503);
    expect((third as Answer).headers['retry-after']).toBe('1');
    // A small, correctly signed delivery is accepted meanwhile.
    const e = JSON.stringify(event());
    const small = await within(post(url, { 'content-type': 'application/json', 'service-signature': sign(SECRET_A, now(), e) }, { body: Buffer.from(e) }).answer, 3_000);
    expect((small as Answer).status).toBe(200);
    // The slow ones finish (a wrong digest: 401) and give their bytes back.
    for (const s of slow) {
      s.send(Buffer.alloc(big - 1024, 0x20));
      s.end();
    }
    for (const s of slow) expect((await s.answer).status).toBe(401);
    expect([budget.bodies, budget.bytes, budget.largeBytes]).toEqual([0, 0, 0]);
  });

  it('past the number of bodies at once: 503 at once; a body without Content-Length is counted as it arrives', async () => {
    const budget = new BodyBudget({ bodies: 3, bytes: 64 * 1024, largeOver: 16 * 1024 });
    const { url } = await receiver(budget);
    const header = { 'content-type': 'application/json', 'service-signature': `t=${now()},s=${'0'.repeat(64)}` };
    const held = [1, 2, 3].map(() => post(url, { ...header, 'content-length': '1000' }, { hold: true, body: Buffer.from('{') }));
    await new Promise((r) => setTimeout(r, 300));
    const fourth = await within(post(url, { ...header, 'content-length': '1000' }, { hold: true }).answer, 3_000);
    expect((fourth as Answer).status).toBe(503);
    for (const h of held) h.destroy();
    await new Promise((r) => setTimeout(r, 300));
    expect(budget.bodies).toBe(0);
    // Chunked (no Content-Length): refused once its bytes pass the budget, before the 1 MiB limit.
    const chunked = post(url, { ...header, 'transfer-encoding': 'chunked' }, { hold: true });
    for (let i = 0; i < 10; i++) chunked.send(Buffer.alloc(16 * 1024, 0x20));
    const a = await within(chunked.answer, 3_000);
    expect((a as Answer).status).toBe(503);
    chunked.destroy();
  });
});

describe('nesting', () => {
  it(`a signed body nested deeper than ${WEBHOOK_MAX_DEPTH} is refused (400 naming the rule) without being parsed; ${WEBHOOK_MAX_DEPTH} deep is accepted`, async () => {
    const { url } = await receiver();
    const envelope = (inner: string, id: string) => `{"id":"${id}","type":"contact.unsubscribe.created","apiVersion":"v2","createTime":"${new Date().toISOString()}","x":${inner}}`;
    // About 1 MB: 500,000 levels.
    const deep = envelope('['.repeat(500_000) + ']'.repeat(500_000), `evt_deep_${Date.now()}`);
    const a = await post(url, { 'content-type': 'application/json', 'service-signature': sign(SECRET_A, now(), deep) }, { body: Buffer.from(deep) }).answer;
    expect(a.status).toBe(400);
    expect(a.body).toContain(`more than ${WEBHOOK_MAX_DEPTH} deep`);
    // Brackets inside strings do not count; the envelope itself is one level.
    const ok = envelope(`${'['.repeat(WEBHOOK_MAX_DEPTH - 1)}"]]]\\"[[["${']'.repeat(WEBHOOK_MAX_DEPTH - 1)}`, `evt_ok_${Date.now()}`);
    const b = await post(url, { 'content-type': 'application/json', 'service-signature': sign(SECRET_A, now(), ok) }, { body: Buffer.from(ok) }).answer;
    expect(b.status).toBe(200);
  });
});

describe('HTTP timeouts', () => {
  it('a webhook whose body never finishes is cut by the request timeout, not after Node’s 300 s', async () => {
    const running = await startSwitchboard(loadConfig({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', DATA_DIR: tempDataDir() }), {
      log: silentLogger(),
      drainMs: 1000,
      history: null,
      timeouts: { requestMs: 1500, headersMs: 1000, checkMs: 200 },
    });
    cleanups.push(() => running.close());
    const body = '{"id":"x"}'.padEnd(10_000, ' ');
    const secret = running.config.webhookSecrets[0]!;
    const r = post(running.url, { 'content-type': 'application/json', 'content-length': String(body.length), 'service-signature': `t=${now()},s=${digest(secret, now(), body)}` }, { hold: true, body: Buffer.from(body.slice(0, 100)) });
    const a = await within(r.answer, 10_000);
    r.destroy();
    expect(a).not.toBe('none');
    // 408 from Node, or the connection closed without an answer.
    expect([408, 0]).toContain((a as Answer).status);
    expect((a as Answer).ms).toBeLessThan(5_000);
  }, 120_000);
});
