/**
 * The transport against a real local HTTP server: auth header, error mapping, 429 and
 * Retry-After, RateLimit-* tolerance, retries and their bounds, outcome-unknown POSTs,
 * deadlines, and the API key never leaking.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  BadRequestError,
  ConnectionError,
  createServiceClient,
  ForbiddenError,
  fullJitterBackoff,
  NotFoundError,
  OutcomeUnknownError,
  RateLimitedError,
  ServerError,
  ServiceError,
  TimeoutError,
  UnauthorizedError,
  UnexpectedResponseError,
  ValidationError,
  type ServiceClientOptions,
} from '../../server/service/index.ts';
import { Agent } from 'undici';
import { json, serviceError, startServer, type TestServer } from './server.ts';

const KEY = 'sk_live_SECRET_abc123';
let srv: TestServer;
beforeEach(async () => {
  srv = await startServer((_req, res) => json(res, 200, { amount: 12.5, currency: 'EUR' }));
});
afterEach(() => srv.close());

const client = (o: Partial<ServiceClientOptions> = {}) => createServiceClient({ baseUrl: srv.baseUrl, apiKey: KEY, ...o });
const fail = (p: Promise<unknown>) => p.then(() => { throw new Error('expected a rejection'); }, (e: unknown) => e as ServiceError);

describe('authentication', () => {
  it('sends exactly one X-API-Key header with the bare key and no Authorization header', async () => {
    expect(await client().balance.get()).toEqual({ amount: 12.5, currency: 'EUR' });
    const raw = srv.seen[0]!.rawHeaders;
    const names = raw.filter((_, i) => i % 2 === 0);
    expect(names.filter((n) => n === 'x-api-key' || n === 'X-API-Key')).toHaveLength(1);
    expect(srv.seen[0]!.headers['x-api-key']).toBe(KEY);
    expect(srv.seen[0]!.headers.authorization).toBeUndefined();
    expect(srv.seen[0]!.url).toBe('/v2/balance');
  });

  it('refuses a key with "Bearer ", quotes or spaces before any request, without echoing the key', () => {
    for (const bad of [`Bearer ${KEY}`, `"${KEY}"`, ` ${KEY}`]) {
      let err: unknown;
      try {
        client({ apiKey: bad });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field).toBe('apiKey');
      expect(String((err as Error).message)).not.toContain(KEY);
    }
    expect(srv.seen).toHaveLength(0);
  });

  it('the key never appears in URLs, log lines or error messages, even when the server echoes it', async () => {
    const lines: string[] = [];
    const logger = { debug: (o: object, m?: string) => lines.push(JSON.stringify(o) + m), warn: (o: object, m?: string) => lines.push(JSON.stringify(o) + m) };
    srv.setHandler((_req, res) => serviceError(res, 401, 'UNAUTHORIZED', `invalid API key ${KEY}`));
    const err = await fail(client({ logger }).balance.get());
    expect(err).toBeInstanceOf(UnauthorizedError);
    expect(err.message).not.toContain(KEY);
    expect(err.message).toContain('[redacted]');
    expect(JSON.stringify({ ...err, message: err.message, stack: err.stack })).not.toContain(KEY);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('\n')).not.toContain(KEY);
    expect(srv.seen.every((s) => !s.url.includes(KEY))).toBe(true);
  });
});

describe('error factory (part 7)', () => {
  it.each([
    [400, 'BAD_REQUEST', BadRequestError],
    [401, 'UNAUTHORIZED', UnauthorizedError],
    [403, 'FORBIDDEN', ForbiddenError],
    [404, 'NOT_FOUND', NotFoundError],
  ] as const)('HTTP %i maps to its class with status, code, requestId and provider details', async (status, code, Cls) => {
    srv.setHandler((_req, res) => serviceError(res, status, code, 'nope', {}, { code: 138006, message: 'no permission' }));
    const err = await fail(client().balance.get());
    expect(err).toBeInstanceOf(Cls);
    expect(err).toMatchObject({ status, code, requestId: 'req_body_1', details: { code: 138006 } });
    expect(err.message).toBe('nope');
    expect(srv.seen).toHaveLength(1);
  });

  it('the requestId falls back to the Service-Request-ID header when the body has none', async () => {
    srv.setHandler((_req, res) => {
      res.writeHead(403, { 'service-request-id': 'req_hdr_9', 'content-type': 'text/plain' });
      res.end('forbidden');
    });
    const err = await fail(client().balance.get());
    expect(err).toBeInstanceOf(ForbiddenError);
    expect(err).toMatchObject({ status: 403, code: 'FORBIDDEN', requestId: 'req_hdr_9' });
  });

  it('a 2xx body that does not fit the schema is UnexpectedResponseError; unknown fields are fine', async () => {
    srv.setHandler((_req, res) => json(res, 200, { amount: 1, currency: 'EUR', brandNew: { x: 1 } }));
    expect(await client().balance.get()).toMatchObject({ amount: 1, brandNew: { x: 1 } });
    srv.setHandler((_req, res) => json(res, 200, { amount: 'lots' }));
    const err = await fail(client().balance.get());
    expect(err).toBeInstanceOf(UnexpectedResponseError);
    expect(err.message).toContain('amount');
  });
});

describe('429 and Retry-After', () => {
  it('429 with Retry-After: 1 → the retry comes at least 1 s later and succeeds', async () => {
    let n = 0;
    srv.setHandler((_req, res) => (n++ === 0 ? serviceError(res, 429, 'RATE_LIMITED', 'slow', { 'retry-after': '1' }) : json(res, 200, { amount: 1, currency: 'EUR' })));
    expect(await client().balance.get()).toEqual({ amount: 1, currency: 'EUR' });
    expect(srv.seen).toHaveLength(2);
    expect(srv.seen[1]!.at - srv.seen[0]!.at).toBeGreaterThanOrEqual(1000);
  });

  it('429 on a POST is retried too (the Service did not act), after Retry-After', async () => {
    let n = 0;
    srv.setHandler((req, res) => (n++ === 0 ? serviceError(res, 429, 'RATE_LIMITED', 'slow', { 'retry-after': '0.3' }) : json(res, 200, { id: 'sms1', externalId: req.json.externalId })));
    const r = await client().sms.send({ to: '+14155550100', text: 'hi', externalId: 'e1' });
    expect(r.id).toBe('sms1');
    expect(srv.seen).toHaveLength(2);
    expect(srv.seen[1]!.at - srv.seen[0]!.at).toBeGreaterThanOrEqual(300);
  });

  it('Retry-After as an HTTP date is honoured', async () => {
    let n = 0;
    srv.setHandler((_req, res) => {
      if (n++ > 0) return json(res, 200, { amount: 1, currency: 'EUR' });
      // HTTP dates have 1 s resolution: 2 s ahead guarantees at least ~1 s of wait.
      serviceError(res, 429, 'RATE_LIMITED', 'slow', { 'retry-after': new Date(Math.ceil(Date.now() / 1000) * 1000 + 2000).toUTCString() });
    });
    await client().balance.get();
    expect(srv.seen).toHaveLength(2);
    expect(srv.seen[1]!.at - srv.seen[0]!.at).toBeGreaterThanOrEqual(1000);
  });

  it('a 429 pauses every request sharing the quota, not just the one that got it', async () => {
    let n = 0;
    srv.setHandler((req, res) => {
      if (req.path === '/balance' && n++ === 0) return serviceError(res, 429, 'RATE_LIMITED', 'slow', { 'retry-after': '1' });
      json(res, 200, req.path === '/balance' ? { amount: 1, currency: 'EUR' } : { items: [], length: 0 });
    });
    const c = client();
    const first = c.balance.get();
    // Once the 429 has come back, another request on the same (management) quota...
    while (c.transport.limiter.pausedUntil('management') === 0) await new Promise((r) => setTimeout(r, 5));
    await c.templates.list();
    await first;
    // ...reaches the server no earlier than a second after the 429 was answered.
    const listAt = srv.seen.find((s) => s.path === '/chat/templates')!.at;
    expect(listAt - srv.seen[0]!.at).toBeGreaterThanOrEqual(1000);
  });

  it('Retry-After on a 2xx pauses the next request of that quota', async () => {
    let n = 0;
    srv.setHandler((_req, res) => json(res, 200, { amount: 1, currency: 'EUR' }, n++ === 0 ? { 'retry-after': '1' } : {}));
    const c = client();
    await c.balance.get();
    await c.balance.get();
    expect(srv.seen[1]!.at - srv.seen[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('malformed RateLimit-* headers are ignored: the request succeeds and nothing is paused', async () => {
    srv.setHandler((_req, res) =>
      json(res, 200, { amount: 1, currency: 'EUR' }, {
        'ratelimit-limit': 'lots;;w=',
        'ratelimit-remaining': '-3, what',
        'ratelimit-reset': 'soon',
        'ratelimit-policy': '200;w=1;burst=50;algorithm="gcra";level=x;weird, ;;, abc;w=1',
      }),
    );
    const c = client();
    const t = Date.now();
    await c.balance.get();
    await c.balance.get();
    // A pause would be >= 1 s; two plain requests take a few ms.
    expect(Date.now() - t).toBeLessThan(900);
    expect(srv.seen).toHaveLength(2);
  });

  it('RateLimit-Remaining: 0 with RateLimit-Reset pauses the quota until the reset', async () => {
    let n = 0;
    srv.setHandler((_req, res) => json(res, 200, { amount: 1, currency: 'EUR' }, n++ === 0 ? { 'ratelimit-remaining': '0', 'ratelimit-reset': '1', 'ratelimit-limit': '200' } : {}));
    const c = client();
    await c.balance.get();
    await c.balance.get();
    expect(srv.seen[1]!.at - srv.seen[0]!.at).toBeGreaterThanOrEqual(950);
  });

  it('retries after 429 are bounded by attempts', async () => {
    srv.setHandler((_req, res) => serviceError(res, 429, 'RATE_LIMITED', 'slow', { 'retry-after': '0' }));
    const err = await fail(client({ retry: fullJitterBackoff({ maxAttempts: 3, baseMs: 10 }) }).balance.get());
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(srv.seen).toHaveLength(3);
  });

  it('retries are bounded by time (maxElapsedMs)', async () => {
    srv.setHandler((_req, res) => serviceError(res, 503, 'UNAVAILABLE', 'down'));
    const t = Date.now();
    const err = await fail(client({ retry: fullJitterBackoff({ maxAttempts: 100, baseMs: 100, capMs: 100, maxElapsedMs: 600, random: () => 1 }) }).balance.get());
    expect(err).toBeInstanceOf(ServerError);
    expect(Date.now() - t).toBeLessThan(3000);
    expect(srv.seen.length).toBeGreaterThanOrEqual(2);
    expect(srv.seen.length).toBeLessThan(10);
  });
});

describe('retries without duplicates', () => {
  it('GET 503 twice then 200 → succeeds after three requests', async () => {
    let n = 0;
    srv.setHandler((_req, res) => (n++ < 2 ? serviceError(res, 503, 'UNAVAILABLE', 'down') : json(res, 200, { amount: 3, currency: 'EUR' })));
    expect(await client().balance.get()).toEqual({ amount: 3, currency: 'EUR' });
    expect(srv.seen).toHaveLength(3);
  });

  it('DELETE is retried on 5xx', async () => {
    let n = 0;
    srv.setHandler((_req, res) => (n++ < 1 ? serviceError(res, 502, 'BAD_GATEWAY', 'x') : json(res, 200, { success: true, deleted: true })));
    expect(await client().phoneNumbers.deleteContactBookEntry({ wabaId: 'w', phoneNumber: '+4930123456' }, 'US.abc')).toEqual({ success: true, deleted: true });
    expect(srv.seen).toHaveLength(2);
  });

  it('a GET whose connection is cut is retried', async () => {
    let n = 0;
    srv.setHandler((_req, res) => {
      if (n++ === 0) res.socket?.destroy();
      else json(res, 200, { amount: 1, currency: 'EUR' });
    });
    expect(await client().balance.get()).toEqual({ amount: 1, currency: 'EUR' });
    expect(srv.seen).toHaveLength(2);
  });

  it('a POST answered 503 is not retried', async () => {
    srv.setHandler((_req, res) => serviceError(res, 503, 'UNAVAILABLE', 'down'));
    const err = await fail(client().sms.send({ to: '+14155550100', text: 'x' }));
    expect(err).toBeInstanceOf(ServerError);
    expect(srv.seen).toHaveLength(1);
  });

  it('a POST whose response never comes → OutcomeUnknownError, and the server saw exactly one request', async () => {
    srv.setHandler(() => {
      /* hang */
    });
    const err = await fail(client({ timeoutMs: 300 }).messages.sendText({ from: '+4930123456', to: '+14155550100', body: 'x', externalId: 'ord-77' }));
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    expect((err as OutcomeUnknownError).externalId).toBe('ord-77');
    expect(err.code).toBe('OUTCOME_UNKNOWN');
    await new Promise((r) => setTimeout(r, 300));
    expect(srv.seen).toHaveLength(1);
  });

  it('a POST whose connection is cut after sending → OutcomeUnknownError after one request', async () => {
    srv.setHandler((_req, res) => {
      res.socket?.destroy();
    });
    const err = await fail(client().sms.send({ to: '+14155550100', text: 'x' }));
    expect(err).toBeInstanceOf(OutcomeUnknownError);
    expect(srv.seen).toHaveLength(1);
  });

  it('a refused connection is ConnectionError (nothing was sent)', async () => {
    const dead = await startServer(() => undefined);
    const url = dead.baseUrl;
    await dead.close();
    const err = await fail(createServiceClient({ baseUrl: url, apiKey: KEY, retry: fullJitterBackoff({ maxAttempts: 2, baseMs: 10 }) }).sms.send({ to: '+14155550100', text: 'x' }));
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err.code).toBe('CONNECTION_ERROR');
  });
});

describe('the caller deadline caps retries', () => {
  /** A retry every 100 ms, as many as the deadline allows. */
  const every100ms = () => fullJitterBackoff({ maxAttempts: 1000, baseMs: 100, capMs: 100, maxElapsedMs: 60_000, random: () => 1 });

  it('retries stop at the deadline: the last request starts before it and the call ends by it', async () => {
    srv.setHandler((_req, res) => serviceError(res, 503, 'UNAVAILABLE', 'down'));
    // When each attempt starts, seen by the client: the server's own receipt time comes a
    // loop turn later, and under load that turn can fall past the deadline.
    const starts: number[] = [];
    const dispatcher = new Agent().compose((dispatch) => (o, handler) => {
      starts.push(Date.now());
      return dispatch(o, handler);
    });
    const t0 = Date.now();
    const deadline = t0 + 700;
    const err = await fail(
      client({ dispatcher, retry: every100ms() }).balance.get({ deadline }),
    );
    await dispatcher.close();
    // The last answer's error when the retries ran out first; DEADLINE_EXCEEDED when the last
    // attempt was still waiting for its answer at the deadline (CI, a loaded machine: a retry
    // started a few ms before it). Either way nothing goes on past it.
    if (err instanceof TimeoutError) expect(err.code).toBe('DEADLINE_EXCEEDED');
    else expect(err).toBeInstanceOf(ServerError);
    // The call ends at the deadline (plus timer lateness on a busy machine), not after another backoff.
    expect(Date.now()).toBeLessThanOrEqual(deadline + 300);
    expect(starts.length).toBeGreaterThanOrEqual(2);
    expect(starts.every((at) => at <= deadline)).toBe(true);
  });

  it('an attempt still waiting at the deadline is cut there: DEADLINE_EXCEEDED, and no attempt after it', async () => {
    // 503 at once for 300 ms, then answers that would come long after the deadline.
    const t0 = Date.now();
    const late: NodeJS.Timeout[] = [];
    srv.setHandler((_req, res) => {
      if (Date.now() - t0 < 300) serviceError(res, 503, 'UNAVAILABLE', 'down');
      else late.push(setTimeout(() => serviceError(res, 503, 'UNAVAILABLE', 'down'), 2_000));
    });
    const deadline = t0 + 1_000;
    const err = await fail(
      client({ retry: every100ms() }).balance.get({ deadline }),
    );
    late.forEach(clearTimeout);
    expect(err).toBeInstanceOf(TimeoutError);
    expect(err.code).toBe('DEADLINE_EXCEEDED');
    expect(Date.now()).toBeLessThanOrEqual(deadline + 300);
    expect(srv.seen.filter((s) => s.at - t0 >= 300)).toHaveLength(1);
  });

  it('a hanging GET is cut at the deadline with TimeoutError', async () => {
    srv.setHandler(() => undefined);
    const t0 = Date.now();
    const err = await fail(client().balance.get({ deadline: t0 + 400 }));
    expect(err).toBeInstanceOf(TimeoutError);
    expect(err.code).toBe('DEADLINE_EXCEEDED');
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('a deadline already past sends nothing', async () => {
    const err = await fail(client().balance.get({ deadline: Date.now() - 1 }));
    expect(err).toBeInstanceOf(TimeoutError);
    expect(srv.seen).toHaveLength(0);
  });
});

describe('injected transport', () => {
  it('every request goes through the injected undici dispatcher', async () => {
    const seenByDispatcher: string[] = [];
    const agent = new Agent().compose((dispatch) => (o, handler) => {
      seenByDispatcher.push(`${o.method} ${o.path}`);
      return dispatch(o, handler);
    });
    await client({ dispatcher: agent }).balance.get();
    expect(seenByDispatcher).toEqual(['GET /v2/balance']);
    await agent.close();
  });
});

describe('paths', () => {
  it('path parameters are encoded: a leading + becomes %2B, ids stay one segment and exact', async () => {
    srv.setHandler((_req, res) => json(res, 200, { groupId: 'x' }));
    await client().groups.get('+4930123456', 'AbC/d+e==');
    expect(srv.seen[0]!.url).toBe('/v2/chat/%2B4930123456/groups/AbC%2Fd%2Be%3D%3D');
  });
});
