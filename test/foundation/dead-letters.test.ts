/**
 * Dead letters end to end on a real RedisStore (private redis-server): a handler that keeps
 * failing dead-letters an event; ops lists it over HTTP (others get 401/403 in the API's
 * error shape); once the handler is fixed, a replay hands it to the workers again and it is
 * processed exactly once, the list is empty, and the replay is counted and logged.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { usersFromEntries, hashPassword } from '../../server/auth/users.ts';
import type { ServiceCalls } from '../../server/calls/engine.ts';
import { createLogger, memoryDestination } from '../../server/log/logger.ts';
import type { DeadLetterItem } from '../../server/webhooks/dead-letters.ts';
import { Metrics } from '../../server/ops/metrics.ts';
import { RedisStore } from '../../server/store/redis.ts';
import { workersLag, type HandlerRegistry } from '../../server/webhooks/workers.ts';
import { createSwitchboard } from '../../server/switchboard.ts';
import { freePort, startRedis, uniquePrefix, type TestRedis } from '../support/redis.ts';
import { API_KEY, SECRET_A, event, listen, signed, sleep, testConfig, until } from './helpers.ts';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.close();
});

const PASSWORD = 'correct horse battery';
const noService = new Proxy({}, { get: () => () => Promise.reject(new Error('no Service in this test')) }) as ServiceCalls;

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** The whole server on a real port (switchboard routes mounted like main.ts) and workers with `handlers`. */
async function setup(handlers: HandlerRegistry) {
  // PUBLIC_URL must name the port the browser (here: fetch) uses.
  const port = await freePort();
  const config = testConfig({ PUBLIC_URL: `http://127.0.0.1:${port}` });
  const store = new RedisStore({ url: redis.url, prefix: uniquePrefix() });
  const logs = memoryDestination();
  const log = createLogger({ level: 'debug', destination: logs, secrets: [config.serviceApiKey, config.sessionSecret, ...config.webhookSecrets] });
  const hash = await hashPassword(PASSWORD);
  const users = await usersFromEntries([
    { name: 'opsy', roles: ['ops'], passwordHash: hash },
    { name: 'agent1', roles: ['agent'], passwordHash: hash },
  ]);
  const metrics = new Metrics();
  const sb = await createSwitchboard({
    config,
    store,
    log,
    service: { calls: noService },
    users,
    metrics,
    assets: new Map(),
    handlers,
    workers: { maxAttempts: 3, concurrency: 1, blockMs: 100, retryDelayMs: 10, claimIdleMs: 300, claimEveryMs: 100 },
  });
  const workers = sb.workers;
  await workers.start();
  const server = await listen(sb.app.fetch, port);
  cleanups.push(async () => {
    await server.close();
    await workers.stop();
    await sb.close();
    await store.close();
  });

  const login = async (name: string): Promise<string> => {
    const res = await fetch(`${server.url}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name, password: PASSWORD }) });
    expect(res.status).toBe(200);
    return res.headers.get('set-cookie')!.split(';')[0]!;
  };
  const get = (path: string, cookie?: string) => fetch(`${server.url}${path}`, { headers: cookie ? { cookie } : {} });
  const post = (path: string, body: unknown, cookie?: string, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(cookie ? { cookie } : {}), ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  return { config, store, logs, server, login, get, post };
}

async function expectError(res: Response, status: number, code: string, message?: RegExp) {
  expect(res.status).toBe(status);
  const body = (await res.json()) as { error: { status: number; code: string; message: string; requestId: string } };
  expect(body.error).toMatchObject({ status, code });
  expect(body.error.requestId).toEqual(expect.any(String));
  expect(body.error.requestId.length).toBeGreaterThan(0);
  if (message) expect(body.error.message).toMatch(message);
}

type Item = DeadLetterItem;

describe('dead letters over HTTP (ops)', () => {
  it('a handler failing 3 times dead-letters the event; ops lists it, others cannot; after the fix a replay processes it exactly once and empties the list', async () => {
    let broken = true;
    let attempts = 0;
    const processed: string[] = [];
    const s = await setup({
      'chat.call.terminate': async (e) => {
        attempts++;
        if (broken) throw new Error('handler is broken');
        processed.push(e.id);
      },
    });

    const bad = event('chat.call.terminate', `evt_dl_${Date.now()}`, { callingTerminate: { wacid: 'w1', status: 'COMPLETED' } });
    const body = JSON.stringify(bad);
    const accepted = await fetch(`${s.server.url}/webhooks/service`, { method: 'POST', body, headers: signed(body) });
    expect(accepted.status).toBe(200);
    await until(async () => (await s.store.listDeadLetters(10)).length === 1, 10_000, 'dead letter');
    expect(attempts).toBe(3);

    // Who may look.
    await expectError(await s.get('/api/ops/dead-letters'), 401, 'UNAUTHORIZED');
    const agent = await s.login('agent1');
    await expectError(await s.get('/api/ops/dead-letters', agent), 403, 'FORBIDDEN', /ops/);
    const ops = await s.login('opsy');

    const listed = await s.get('/api/ops/dead-letters', ops);
    expect(listed.status).toBe(200);
    expect(listed.headers.get('cache-control')).toContain('no-store');
    const text = await listed.text();
    for (const secret of [SECRET_A, API_KEY, s.config.sessionSecret]) expect(text).not.toContain(secret);
    expect(text.toLowerCase()).not.toContain('service-signature');
    const { items } = JSON.parse(text) as { items: Item[] };
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ eventId: bad.id, type: 'chat.call.terminate', error: 'handler is broken', attempts: 3, body });
    expect(items[0]!.redacted).toBeUndefined();
    expect(Math.abs(items[0]!.at - Date.now())).toBeLessThan(60_000);

    // Replay is for ops too, and same-origin only.
    await expectError(await s.post('/api/ops/dead-letters/replay', { streamIds: [items[0]!.streamId] }, agent), 403, 'FORBIDDEN');
    await expectError(await s.post('/api/ops/dead-letters/replay', { all: true }), 401, 'UNAUTHORIZED');
    await expectError(await s.post('/api/ops/dead-letters/replay', { all: true }, ops, { origin: 'http://evil.example' }), 403, 'FORBIDDEN');
    expect(await s.store.listDeadLetters(10)).toHaveLength(1);
    await sleep(200);
    expect(attempts).toBe(3);

    // Fixed: replay it (and an id that is not there).
    broken = false;
    const res = await s.post('/api/ops/dead-letters/replay', { streamIds: [items[0]!.streamId, '1-0'] }, ops);
    expect(res.status).toBe(200);
    const out = (await res.json()) as { replayed: Array<{ streamId: string; newStreamId: string; eventId: string }>; notFound: string[] };
    expect(out.notFound).toEqual(['1-0']);
    expect(out.replayed.map((r) => [r.streamId, r.eventId])).toEqual([[items[0]!.streamId, bad.id]]);

    await until(() => processed.length >= 1, 10_000, 'processing of the replayed event');
    await until(async () => (await workersLag(s.store)) === 0, 5000, 'lag 0');
    await sleep(500);
    expect(processed).toEqual([bad.id]);
    expect(attempts).toBe(4);
    const after = (await (await s.get('/api/ops/dead-letters', ops)).json()) as { items: Item[] };
    expect(after.items).toEqual([]);

    // A second replay of the same id finds nothing and processes nothing.
    const again = (await (await s.post('/api/ops/dead-letters/replay', { streamIds: [items[0]!.streamId] }, ops)).json()) as { replayed: unknown[]; notFound: string[] };
    expect(again).toEqual({ replayed: [], notFound: [items[0]!.streamId] });
    await sleep(300);
    expect(processed).toEqual([bad.id]);

    // Counted and logged.
    const metrics = await (await fetch(`${s.server.url}/metrics`)).text();
    expect(metrics).toContain('switchboard_webhook_replayed_total{type="chat.call.terminate"} 1');
    const line = s.logs.records().find((r) => r.msg === 'dead letters replayed' && (r.replayed as unknown[]).length === 1);
    expect(line).toMatchObject({ user: 'opsy', notFound: ['1-0'], replayed: [{ streamId: items[0]!.streamId, eventId: bad.id }] });
  });

  it('limit: default 100, integer 1..1000; a bad value is a 400 naming the parameter and the rule', async () => {
    const s = await setup({});
    // Broken payloads are dead-lettered at once.
    for (let i = 0; i < 3; i++) {
      const e = event('chat.call.connect', `evt_lim_${i}_${Date.now()}`, { callingConnect: { wacid: `w${i}` } });
      await s.store.acceptEvent({ eventId: e.id, type: e.type, body: JSON.stringify(e), receivedAt: Date.now() }, 60_000);
      await until(async () => (await s.store.listDeadLetters(10)).length === i + 1, 5000, `dead letter ${i}`);
    }
    const ops = await s.login('opsy');
    const ids = async (q: string) => ((await (await s.get(`/api/ops/dead-letters${q}`, ops)).json()) as { items: Item[] }).items.map((x) => x.eventId);
    const all = await ids('');
    expect(all).toHaveLength(3);
    expect(all[0]).toMatch(/^evt_lim_2_/); // newest first
    expect(await ids('?limit=2')).toEqual(all.slice(0, 2));
    expect(await ids('?limit=1000')).toEqual(all);
    for (const bad of ['0', '1001', 'abc', '1.5', '-1', '', '99999999999']) {
      await expectError(await s.get(`/api/ops/dead-letters?limit=${encodeURIComponent(bad)}`, ops), 400, 'BAD_REQUEST', /^limit: must be an integer from 1 to 1000/);
    }
    await expectError(await s.get('/api/ops/dead-letters?limit=1&limit=2', ops), 400, 'BAD_REQUEST', /^limit:/);
  });

  it('replay: a bad body is a 400 saying what is expected; {"all": true} replays everything', async () => {
    const handled: string[] = [];
    let broken = true;
    const s = await setup({
      'chat.call.terminate': async (e) => {
        if (broken) throw new Error('down');
        handled.push(e.id);
      },
    });
    const evs = [0, 1].map((i) => event('chat.call.terminate', `evt_all_${i}_${Date.now()}`, { callingTerminate: { wacid: `w${i}`, status: 'COMPLETED' } }));
    for (const e of evs) await s.store.acceptEvent({ eventId: e.id, type: e.type, body: JSON.stringify(e), receivedAt: Date.now() }, 60_000);
    await until(async () => (await s.store.listDeadLetters(10)).length === 2, 10_000, 'dead letters');
    const ops = await s.login('opsy');
    const replay = '/api/ops/dead-letters/replay';
    await expectError(await s.post(replay, 'not json', ops), 400, 'BAD_REQUEST', /streamIds/);
    await expectError(await s.post(replay, {}, ops), 400, 'BAD_REQUEST', /\{"all": true\}/);
    await expectError(await s.post(replay, { all: false }, ops), 400, 'BAD_REQUEST', /^all: must be true/);
    await expectError(await s.post(replay, { streamIds: [] }, ops), 400, 'BAD_REQUEST', /^streamIds: must be an array of 1 to 1000/);
    await expectError(await s.post(replay, { streamIds: ['1-0', 'nope'] }, ops), 400, 'BAD_REQUEST', /^streamIds\[1\]: must be a stream id/);
    await expectError(await s.post(replay, { streamIds: ['1-0'], all: true }, ops), 400, 'BAD_REQUEST');
    const listed = await s.store.listDeadLetters(10); // newest first
    expect(listed).toHaveLength(2);

    broken = false;
    const res = (await (await s.post(replay, { all: true }, ops)).json()) as { replayed: Array<{ eventId: string }>; notFound: string[] };
    // Oldest dead letter first (which of the two failed for good first is up to the retries' jitter).
    expect(res.replayed.map((r) => r.eventId)).toEqual(listed.map((d) => d.entry.eventId).reverse());
    expect(res.notFound).toEqual([]);
    await until(() => handled.length === 2, 10_000, 'both handled');
    expect(handled.sort()).toEqual(evs.map((e) => e.id).sort());
    expect(await s.store.listDeadLetters(10)).toEqual([]);
  });

  it('a known secret value inside a dead-lettered body or error never reaches the answer', async () => {
    const s = await setup({});
    const e = event('chat.call.connect', `evt_secret_${Date.now()}`, { callingConnect: { wacid: 'w', note: `key ${API_KEY} and ${SECRET_A}` } });
    await s.store.acceptEvent({ eventId: e.id, type: e.type, body: JSON.stringify(e), receivedAt: Date.now() }, 60_000);
    await until(async () => (await s.store.listDeadLetters(10)).length === 1, 5000, 'dead letter');
    const ops = await s.login('opsy');
    const text = await (await s.get('/api/ops/dead-letters', ops)).text();
    expect(text).not.toContain(API_KEY);
    expect(text).not.toContain(SECRET_A);
    const [item] = (JSON.parse(text) as { items: Item[] }).items;
    expect(item!.redacted).toBe(true);
    expect(item!.body).toContain('key [redacted] and [redacted]');
  });
});
