/**
 * History routes in-process (`app.request`) on a real PGlite history, with real logins
 * (scrypt-checked demo users, sessions in a private redis-server).
 */
import { errorHandler } from '../app.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { openTestHistory, type TestHistory } from '../../test/support/history.ts';
import { startRedis, uniquePrefix, type TestRedis } from '../../test/support/redis.ts';
import { createAuth, demoUsers, Sessions, type AuthEnv } from '../auth/index.ts';
import { createLogger, memoryDestination } from '../log/logger.ts';
import { RedisStore } from '../store/redis.ts';
import type { HistoryFact } from './schema.ts';
import { createHistoryRoutes } from './routes.ts';
import { CallDetail, CallPage } from '../../shared/records.ts';

const T0 = Date.parse('2026-05-04T08:00:00.000Z');
const at = (min: number) => new Date(T0 + min * 60_000).toISOString();
const SHA = 'c'.repeat(64);

let redis: TestRedis;
let store: RedisStore;
let h: TestHistory;
let app: Hono<AuthEnv>;
let auth: ReturnType<typeof createAuth>;
const cookies: Record<string, string> = {};

const call = (wacid: string, min: number, extra: Record<string, unknown> = {}): HistoryFact =>
  ({
    type: 'call',
    wacid,
    phoneId: 'ph1',
    businessNumber: '+15550100001',
    customer: { phoneNumber: '+15550123456' },
    direction: 'inbound',
    outcome: 'answered',
    receivedAt: at(min),
    version: 3,
    ...extra,
  }) as HistoryFact;

beforeAll(async () => {
  redis = await startRedis();
  store = new RedisStore({ url: redis.url, prefix: uniquePrefix() });
  h = await openTestHistory();
  const log = createLogger({ level: 'warn', destination: memoryDestination() });
  auth = createAuth({ users: await demoUsers(), sessions: new Sessions(store, 'history_routes_session_secret'), store, log, origin: { publicUrl: 'http://sb.test' } });
  app = new Hono<AuthEnv>();
  app.onError(errorHandler(log));
  app.route('/', auth.routes);
  app.route('/', createHistoryRoutes({ auth, history: h, log }));

  const facts: HistoryFact[] = [
    call('c-in', 60, { agent: 'agent1', answeredAt: at(60.1), endedAt: at(65), waitMs: 6000, talkMs: 294_000 }),
    call('c-out', 120, { agent: 'agent2', direction: 'outbound', outcome: 'no-answer', customer: { userId: 'US.abc123' }, businessNumber: '+15550100002' }),
    call('c-missed', 180, { outcome: 'missed', customer: { phoneNumber: '+15550199999' } }),
    { type: 'timeline', wacid: 'c-in', key: 'connect:1', at: at(60), event: 'connect', detail: { state: 'queued' } },
    { type: 'timeline', wacid: 'c-in', key: 'acceptOk:1', at: at(60.1), event: 'acceptOk', detail: { state: 'active' } },
    { type: 'media', wacid: 'c-in', mediaAssetId: 'cma_r', kind: 'recording', status: 'available', bytes: 4096, sha256: SHA, path: '/srv/archive/c-in/cma_r.ogg', at: at(66) },
    { type: 'media', wacid: 'c-in', mediaAssetId: 'cma_t', kind: 'transcription', status: 'available', bytes: 80, sha256: SHA, path: '/srv/archive/c-in/cma_t.json', text: 'I would like a refund please', at: at(66.5) },
    { type: 'media', wacid: 'c-in', mediaAssetId: 'cma_gone', kind: 'recording', status: 'missing', at: at(67) },
  ];
  // 24 more answered calls of agent1, one a minute, for paging.
  for (let i = 0; i < 24; i++) facts.push(call(`c-page-${String(i).padStart(2, '0')}`, 300 + i, { agent: 'agent1' }));
  for (const f of facts) await h.store.record(f);

  for (const name of ['agent1', 'agent2', 'supervisor', 'ops']) {
    const res = await app.request('http://sb.test/api/login', { method: 'POST', headers: { 'content-type': 'application/json', host: 'sb.test', origin: 'http://sb.test' }, body: JSON.stringify({ name, password: name }) });
    expect(res.status).toBe(200);
    cookies[name] = res.headers.get('set-cookie')!.split(';')[0]!;
  }
}, 60_000);

afterAll(async () => {
  await store?.close();
  await redis?.close();
  await h?.close();
});

const get = (user: string | undefined, path: string) => app.request(`http://sb.test${path}`, { headers: { host: 'sb.test', ...(user ? { cookie: cookies[user]! } : {}) } });
const list = async (user: string, qs = '') => {
  const res = await get(user, `/api/history/calls${qs}`);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as { items: Array<Record<string, unknown>>; cursor?: string };
};
const wacids = async (user: string, qs = '') => (await list(user, qs)).items.map((c) => c.wacid);

describe('GET /api/history/calls', () => {
  it('401 without a session', async () => {
    const res = await get(undefined, '/api/history/calls');
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { status: 401, code: 'UNAUTHORIZED' } });
  });

  it('supervisor and ops: every call, newest first, 25 by default with a cursor', async () => {
    const page = await list('supervisor');
    expect(page.items).toHaveLength(25);
    expect(page.items[0]!.wacid).toBe('c-page-23');
    expect(page.cursor).toEqual(expect.any(String));
    expect(await wacids('ops', '?limit=100')).toHaveLength(27);
  });

  it.each([
    ['?customer=%2B15550199999', ['c-missed']],
    ['?customer=US.abc123', ['c-out']],
    ['?agent=agent2', ['c-out']],
    ['?businessNumber=%2B15550100002', ['c-out']],
    ['?direction=outbound', ['c-out']],
    ['?outcome=missed', ['c-missed']],
    ['?q=refund', ['c-in']],
    [`?from=${encodeURIComponent(at(60))}&to=${encodeURIComponent(at(180))}`, ['c-out', 'c-in']],
    ['?outcome=answered&direction=outbound', []],
  ])('filter %s', async (qs, want) => {
    expect(await wacids('supervisor', qs)).toEqual(want);
  });

  it('cursor pages walk every call once, newest first', async () => {
    const seen: unknown[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await list('supervisor', `?limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      seen.push(...page.items.map((c) => c.wacid));
      cursor = page.cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(4);
    expect(seen).toEqual(await wacids('supervisor', '?limit=100'));
    expect(new Set(seen).size).toBe(27);
  });

  it('an agent sees only their own calls, also through a cursor; asking for another agent is 403', async () => {
    expect(await wacids('agent2')).toEqual(['c-out']);
    const a1 = await wacids('agent1', '?limit=100');
    expect(a1).toHaveLength(25);
    expect(a1).not.toContain('c-out');
    expect(a1).not.toContain('c-missed');
    const first = await list('agent1', '?limit=20');
    const rest = await list('agent1', `?limit=20&cursor=${encodeURIComponent(first.cursor!)}`);
    expect(rest.items.map((c) => c.wacid)).toEqual(a1.slice(20));
    expect(await wacids('agent1', '?agent=agent1&outcome=answered&limit=1')).toEqual(['c-page-23']);
    const res = await get('agent2', '/api/history/calls?agent=agent1');
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ error: { status: 403, code: 'FORBIDDEN', message: 'agent: agents see only their own calls' } });
  });

  it.each([
    ['limit=0', /^limit: must be an integer from 1 to 100/],
    ['limit=101', /^limit: must be an integer from 1 to 100/],
    ['limit=ten', /^limit: /],
    ['from=yesterday', /^from: must be an ISO 8601 time/],
    [`from=${encodeURIComponent(at(10))}&to=${encodeURIComponent(at(5))}`, /^to: must be later than from/],
    ['direction=sideways', /^direction: /],
    ['outcome=lost', /^outcome: /],
    ['customer=0123', /^customer: must be an E\.164 phone number .* or a BSUID/],
    ['cursor=not-a-cursor', /^cursor: must be the cursor of a previous page/],
    ['sort=asc', /^sort: unknown query parameter/],
    ['agent=a&agent=b', /^agent: give it at most once/],
  ])('400 for %s, naming the field and the rule', async (qs, message) => {
    const res = await get('supervisor', `/api/history/calls?${qs}`);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { status: number; code: string; message: string; requestId: string } };
    expect(body.error).toMatchObject({ status: 400, code: 'BAD_REQUEST', requestId: expect.any(String) });
    expect(body.error.message).toMatch(message);
  });
});

describe('GET /api/history/calls/:wacid', () => {
  it('supervisor: the record with its timeline and media; download URLs of archived files, never a server path', async () => {
    const res = await get('supervisor', '/api/history/calls/c-in');
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ wacid: 'c-in', agent: 'agent1', outcome: 'answered', receivedAt: at(60), answeredAt: at(60.1), talkMs: 294_000, customer: { phoneNumber: '+15550123456' } });
    expect(body.timeline).toEqual([
      { at: at(60), event: 'connect', detail: { state: 'queued' } },
      { at: at(60.1), event: 'acceptOk', detail: { state: 'active' } },
    ]);
    expect(body.media).toEqual([
      { kind: 'recording', mediaAssetId: 'cma_r', status: 'available', bytes: 4096, sha256: SHA, url: '/api/archive/c-in/cma_r.ogg' },
      { kind: 'transcription', mediaAssetId: 'cma_t', status: 'available', bytes: 80, sha256: SHA, url: '/api/archive/c-in/cma_t.json' },
      { kind: 'recording', mediaAssetId: 'cma_gone', status: 'missing' },
    ]);
    expect(JSON.stringify(body)).not.toContain('/srv/archive');
  });

  it("an agent: their own call (no download URL: the archive serves ops and supervisors); another agent's is 404 like an unknown one", async () => {
    const own = await get('agent1', '/api/history/calls/c-in');
    expect(own.status).toBe(200);
    const body = (await own.json()) as { media: Array<Record<string, unknown>> };
    expect(body.media.map((m) => m.url)).toEqual([undefined, undefined, undefined]);
    for (const [user, wacid] of [
      ['agent2', 'c-in'],
      ['agent1', 'c-missed'],
      ['supervisor', 'nope'],
    ] as const) {
      const res = await get(user, `/api/history/calls/${wacid}`);
      expect(res.status, `${user} ${wacid}`).toBe(404);
      expect(await res.json()).toMatchObject({ error: { status: 404, code: 'NOT_FOUND' } });
    }
  });

  it('503 UNAVAILABLE when the history database does not answer', async () => {
    const down = await openTestHistory();
    await down.db.close();
    const app2 = new Hono<AuthEnv>();
    app2.onError(errorHandler(createLogger({ level: 'silent' })));
    app2.route('/', createHistoryRoutes({ auth, history: down }));
    for (const path of ['/api/history/calls', '/api/history/calls/c-in']) {
      const res = await app2.request(`http://sb.test${path}`, { headers: { host: 'sb.test', cookie: cookies.supervisor! } });
      expect(res.status, path).toBe(503);
      expect(await res.json()).toMatchObject({ error: { status: 503, code: 'UNAVAILABLE' } });
    }
    await down.close().catch(() => undefined);
  });
});

describe('search limits', () => {
  it('one user has at most 2 searches running: a third is 429 with Retry-After; other users are not held back; a statement timeout is 504 saying so', async () => {
    // The real store, with each search held open until the test lets it go (the slow search of the report).
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let timeoutNext = false;
    const slow = {
      store: {
        getCall: h.store.getCall.bind(h.store),
        searchCalls: async (q: Parameters<typeof h.store.searchCalls>[0]) => {
          if (timeoutNext) throw Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' });
          await gate;
          return h.store.searchCalls(q);
        },
      },
    };
    const app2 = new Hono<AuthEnv>();
    app2.onError(errorHandler(createLogger({ level: 'silent' })));
    app2.route('/', createHistoryRoutes({ auth, history: slow }));
    const req = (user: string, path: string) => app2.request(`http://sb.test${path}`, { headers: { host: 'sb.test', cookie: cookies[user]! } });
    const running = [req('supervisor', '/api/history/calls?q=nothing'), req('supervisor', '/api/history/calls?q=nothing+else')];
    await new Promise((r) => setTimeout(r, 50));
    const third = await req('supervisor', '/api/history/calls?q=more');
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('1');
    expect(await third.json()).toMatchObject({ error: { code: 'TOO_MANY_REQUESTS', message: expect.stringMatching(/2 searches/) } });
    // Another user searches meanwhile.
    const other = req('ops', '/api/history/calls?q=refund');
    release();
    expect((await Promise.all([...running, other])).map((r) => r.status)).toEqual([200, 200, 200]);
    // Done searches free their places.
    expect((await req('supervisor', '/api/history/calls?q=refund')).status).toBe(200);
    timeoutNext = true;
    const timedOut = await req('supervisor', '/api/history/calls?q=refund');
    expect(timedOut.status).toBe(504);
    expect(await timedOut.json()).toMatchObject({ error: { code: 'SEARCH_TIMEOUT', message: expect.stringMatching(/took too long/) } });
  });
});

describe('legs (anchor mode) in the API', () => {
  it('a transferred call’s record names each agent who talked, with talk, hold and who answered; the pages’ schema reads it', async () => {
    const legs = [
      { agent: 'agent1', talkMs: 7_000, holdMs: 2_000, answered: true },
      { agent: 'agent2', talkMs: 28_000, holdMs: 4_000, answered: false },
    ];
    await h.store.record(call('c-legs', 600, { agent: 'agent2', answeredAt: at(600.05), endedAt: at(601), talkMs: 38_000, holdMs: 6_000, mediaMode: 'anchor', legs }));
    const res = await get('supervisor', '/api/history/calls/c-legs');
    expect(res.status).toBe(200);
    const body = CallDetail.parse(await res.json());
    expect(body).toMatchObject({ agent: 'agent2', talkMs: 38_000, legs });
    const page = CallPage.parse(await (await get('supervisor', `/api/history/calls?from=${encodeURIComponent(at(600))}&to=${encodeURIComponent(at(602))}`)).json());
    expect(page.items.map((c) => [c.wacid, c.legs])).toEqual([['c-legs', legs]]);
    // A call without legs has none.
    expect(await (await get('supervisor', '/api/history/calls/c-in')).json()).not.toHaveProperty('legs');
  });

  it('an agent who had a leg of a call (answered it, then transferred it) finds it in their calls and opens it; a call they had no leg of stays unknown to them', async () => {
    const mine = { agent: 'agent1', talkMs: 5_000, holdMs: 0, answered: true };
    const theirs = { agent: 'agent2', talkMs: 9_000, holdMs: 0, answered: false };
    await h.store.record(call('c-handed', 700, { agent: 'agent2', answeredAt: at(700.05), endedAt: at(701), talkMs: 14_000, mediaMode: 'anchor', legs: [mine, theirs] }));
    await h.store.record(call('c-notmine', 710, { agent: 'agent2', answeredAt: at(710.05), endedAt: at(711), talkMs: 9_000, mediaMode: 'anchor', legs: [theirs] }));
    const range = `from=${encodeURIComponent(at(690))}&to=${encodeURIComponent(at(720))}`;
    expect(await wacids('agent1', `?${range}`)).toEqual(['c-handed']);
    expect(await wacids('agent2', `?${range}`)).toEqual(['c-notmine', 'c-handed']);
    expect(await wacids('supervisor', `?${range}&agent=agent1`)).toEqual(['c-handed']);
    expect((await get('agent1', '/api/history/calls/c-handed')).status).toBe(200);
    expect((await get('agent1', '/api/history/calls/c-notmine')).status).toBe(404);
  });
});
