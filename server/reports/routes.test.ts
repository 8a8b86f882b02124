/**
 * Reports over HTTP in-process (`app.request`) on a real PGlite history, with real logins
 * (sessions in a private redis-server): the figures of a scripted set of calls, today by
 * default and over a range, the CSV text, and the refusals.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { errorHandler } from '../app.ts';
import { openTestHistory, type TestHistory } from '../../test/support/history.ts';
import { startRedis, uniquePrefix, type TestRedis } from '../../test/support/redis.ts';
import { createAuth, demoUsers, Sessions, type AuthEnv } from '../auth/index.ts';
import { createLogger, memoryDestination } from '../log/logger.ts';
import { RedisStore } from '../store/redis.ts';
import type { HistoryFact } from '../history/schema.ts';
import { createReports } from './index.ts';

// The clock: 5 May 2026, 12:00 server time. Calls on the 4th, the 5th and the 6th (local).
const NOW = new Date(2026, 4, 5, 12, 0).getTime();
const at = (day: number, hour: number, plusSec = 0) => new Date(new Date(2026, 4, day, hour).getTime() + plusSec * 1000).toISOString();
const A = '+15550100001';
const B = '+15550100002';

let redis: TestRedis;
let store: RedisStore;
let h: TestHistory;
let app: Hono<AuthEnv>;
const cookies: Record<string, string> = {};

const call = (wacid: string, receivedAt: string, extra: Record<string, unknown>): HistoryFact =>
  ({ type: 'call', wacid, phoneId: 'ph1', businessNumber: A, customer: { phoneNumber: '+15550123456' }, direction: 'inbound', outcome: 'answered', receivedAt, version: 3, ...extra }) as HistoryFact;
const step = (wacid: string, when: string, event: string, detail: Record<string, unknown>): HistoryFact => ({ type: 'timeline', wacid, key: `${event}:${when}`, at: when, event, detail: { state: 'active', ...detail } });
const answered = (day: number, hour: number, waitS: number, talkS: number, extra: Record<string, unknown> = {}) => ({
  answeredAt: at(day, hour, waitS),
  endedAt: at(day, hour, waitS + talkS),
  waitMs: waitS * 1000,
  talkMs: talkS * 1000,
  ...extra,
});

beforeAll(async () => {
  redis = await startRedis();
  store = new RedisStore({ url: redis.url, prefix: uniquePrefix() });
  h = await openTestHistory();
  const log = createLogger({ level: 'warn', destination: memoryDestination() });
  const auth = createAuth({ users: await demoUsers(), sessions: new Sessions(store, 'reports_routes_session_secret'), store, log, origin: { publicUrl: 'http://sb.test' } });
  app = new Hono<AuthEnv>();
  app.onError(errorHandler(log));
  app.route('/', auth.routes);
  app.route('/', createReports({ auth, history: h, slaSeconds: 20, log, now: () => NOW }));

  const facts: HistoryFact[] = [
    // Yesterday (4 May): one answered on A by agent1 (wait 10 s, talk 100 s), one abandoned on A.
    call('y-1', at(4, 9), { agent: 'agent1', ...answered(4, 9, 10, 100) }),
    call('y-2', at(4, 10), { outcome: 'abandoned', waitMs: 40_000, endedAt: at(4, 10, 40) }),
    // Today (5 May): A answered by agent1 within SLA (wait 20 s, talk 60 s, hold 30 s), by agent2
    // outside it (wait 50 s, talk 200 s); B missed (agent2 rang), B callback answered by agent2.
    call('t-1', at(5, 8), { agent: 'agent1', ...answered(5, 8, 20, 60, { holdMs: 30_000 }) }),
    call('t-2', at(5, 9), { agent: 'agent2', ...answered(5, 9, 50, 200) }),
    call('t-3', at(5, 10), { businessNumber: B, outcome: 'missed', agent: 'agent2', waitMs: 30_000, endedAt: at(5, 10, 30) }),
    call('t-4', at(5, 11), { businessNumber: B, direction: 'outbound', customer: { userId: 'US.abc123' }, agent: 'agent2', ...answered(5, 11, 5, 50) }),
    // 2 May: webhooks' `to` that a spreadsheet would run as formulas.
    call('f-1', at(2, 9), { businessNumber: '=HYPERLINK("http://evil.example","x")', outcome: 'rejected' }),
    call('f-2', at(2, 9, 5), { businessNumber: '@SUM(1+1)', outcome: 'rejected' }),
    call('f-3', at(2, 9, 10), { businessNumber: '\t-2+3', outcome: 'rejected' }),
    call('f-4', at(2, 9, 15), { businessNumber: '+1+cmd|x', outcome: 'rejected' }),
    // Tomorrow (6 May, e.g. a clock ahead): in no report that ends on the 5th.
    call('n-1', at(6, 0, 1), { agent: 'agent1', ...answered(6, 0, 1, 1) }),
    // Transfers (the timeline): a cold one by agent1 yesterday and today (old entries name no mode:
    // cold); today agent2 consults and completes on t-2 (one transfer: the completion), cancels a
    // second consult (none); agent3 sends t-3 on (B) without handling a call of their own.
    step('y-1', at(4, 9, 50), 'transfer', { agent: 'agent1', to: { agent: 'agent2' } }),
    step('t-1', at(5, 8, 40), 'transfer', { agent: 'agent1', mode: 'cold', to: { queue: 'ph1' } }),
    step('t-2', at(5, 9, 60), 'transfer', { agent: 'agent2', mode: 'warm', to: { agent: 'agent1' } }),
    step('t-2', at(5, 9, 90), 'transferAction', { agent: 'agent2', action: 'complete' }),
    step('t-2', at(5, 9, 100), 'transfer', { agent: 'agent2', mode: 'warm', to: { agent: 'agent3' } }),
    step('t-2', at(5, 9, 110), 'transferAction', { agent: 'agent2', action: 'cancel' }),
    step('t-3', at(5, 10, 10), 'transfer', { agent: 'agent3', mode: 'cold', to: { agent: 'agent2' } }),
  ];
  for (const f of facts) await h.store.record(f);

  for (const name of ['agent1', 'supervisor']) {
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
const json = async (path: string) => {
  const res = await get('supervisor', path);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as Record<string, unknown>;
};

describe('GET /api/reports', () => {
  it('today by default: the wallboard figures per number and per agent', async () => {
    expect(await json('/api/reports')).toEqual({
      from: '2026-05-05',
      to: '2026-05-05',
      fromAt: new Date(2026, 4, 5).toISOString(),
      toAt: new Date(2026, 4, 6).toISOString(),
      days: 1,
      // The server's zone, which its days are in (the page says so).
      timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
      slaSeconds: 20,
      numbers: [
        { businessNumber: A, offered: 2, answered: 2, abandoned: 0, missed: 0, serviceLevel: 0.5, asaMs: 35_000, ahtMs: 145_000, transfers: 2 }, // (90 + 200) / 2
        { businessNumber: B, offered: 1, answered: 0, abandoned: 0, missed: 1, serviceLevel: 0, asaMs: 0, ahtMs: 0, transfers: 1 },
      ],
      agents: [
        { name: 'agent1', callsHandled: 1, inbound: 1, outbound: 0, talkMs: 60_000, holdMs: 30_000, ahtMs: 90_000, transfers: 1 },
        { name: 'agent2', callsHandled: 2, inbound: 1, outbound: 1, talkMs: 250_000, holdMs: 0, ahtMs: 125_000, transfers: 1 },
        { name: 'agent3', callsHandled: 0, inbound: 0, outbound: 0, talkMs: 0, holdMs: 0, ahtMs: 0, transfers: 1 },
      ],
    });
  });

  it('a range of days includes both ends and nothing after', async () => {
    const r = await json('/api/reports?from=2026-05-04&to=2026-05-05');
    expect(r).toMatchObject({ from: '2026-05-04', to: '2026-05-05', days: 2 });
    expect(r.numbers).toEqual([
      { businessNumber: A, offered: 4, answered: 3, abandoned: 1, missed: 0, serviceLevel: 0.5, asaMs: 26_667, ahtMs: 130_000, transfers: 3 }, // (10+20+50)/3 s; (100+90+200)/3 s
      { businessNumber: B, offered: 1, answered: 0, abandoned: 0, missed: 1, serviceLevel: 0, asaMs: 0, ahtMs: 0, transfers: 1 },
    ]);
    expect(r.agents).toMatchObject([{ name: 'agent1', callsHandled: 2, ahtMs: 95_000, transfers: 2 }, { name: 'agent2', callsHandled: 2, transfers: 1 }, { name: 'agent3', transfers: 1 }]);
    expect((await json('/api/reports?from=2026-05-06')).agents).toMatchObject([{ name: 'agent1', callsHandled: 1 }]);
    expect(await json('/api/reports?from=2026-05-07')).toMatchObject({ numbers: [], agents: [] });
  });

  it('401 without a session, 403 for an agent', async () => {
    expect((await get(undefined, '/api/reports')).status).toBe(401);
    const res = await get('agent1', '/api/reports.csv');
    expect(res.status).toBe(403);
    expect(await res.json()).toMatchObject({ error: { status: 403, code: 'FORBIDDEN' } });
  });

  it.each([
    ['/api/reports?from=5%2F5%2F2026', 'from: must be a calendar date as YYYY-MM-DD'],
    ['/api/reports?from=2026-05-05&to=2026-05-04', 'to: must be the same day as from or later'],
    ['/api/reports?from=2026-01-01&to=2026-05-05', 'to: the range must be at most 92 days (from 2026-01-01 to 2026-05-05 is 125)'],
    ['/api/reports?from=2026-05-01&from=2026-05-02', 'from: give it at most once'],
    ['/api/reports?by=agent', 'by: unknown query parameter; known: from, to'],
    ['/api/reports.csv?by=day', 'by: must be number or agent'],
    ['/api/reports.csv?to=2026-02-29', 'to: must be a calendar date as YYYY-MM-DD'],
  ])('400 %s', async (path, message) => {
    const res = await get('supervisor', path);
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { status: 400, code: 'BAD_REQUEST', message } });
  });
});

describe('GET /api/reports.csv', () => {
  it('per number (the default): a download of the same figures', async () => {
    const res = await get('supervisor', '/api/reports.csv?from=2026-05-04&to=2026-05-05');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="switchboard-numbers-2026-05-04_2026-05-05.csv"');
    expect(await res.text()).toBe(
      ['Business number,Offered,Answered,Abandoned,Missed,Service level (20 s) %,Avg. answer (s),Avg. handle (s),Transfers', `${A},4,3,1,0,50,26.7,130,3`, `${B},1,0,0,1,0,0,0,1`, ''].join('\r\n'),
    );
  });

  it('a value a spreadsheet would run as a formula (= + - @, tab, CR first) is written with a leading quote (OWASP); E.164 numbers stay as they are', async () => {
    const res = await get('supervisor', '/api/reports.csv?from=2026-05-02&to=2026-05-02');
    const lines = (await res.text()).split('\r\n').slice(1, -1).map((l) => l.split(',')[0]).sort();
    expect(lines).toEqual([`"'=HYPERLINK(""http://evil.example""`, "'+1+cmd|x", "'@SUM(1+1)", "'\t-2+3"].sort());
  });

  it('per agent, today', async () => {
    const res = await get('supervisor', '/api/reports.csv?by=agent');
    expect(res.headers.get('content-disposition')).toBe('attachment; filename="switchboard-agents-2026-05-05_2026-05-05.csv"');
    expect(await res.text()).toBe(['Agent,Calls handled,Inbound,Outbound,Talk time (s),Hold time (s),Avg. handle (s),Transfers', 'agent1,1,1,0,60,30,90,1', 'agent2,2,1,1,250,0,125,1', 'agent3,0,0,0,0,0,0,1', ''].join('\r\n'));
  });
});

describe('legs: a transferred call split between the agents who talked (anchor mode)', () => {
  it('per agent, the CSV shows each agent’s own talk and hold; per number the call counts once, with its own', async () => {
    // 3 May: agent1 answers, holds 2 s, cold-transfers after 7 s; agent3 talks 28 s (4 s of it on hold). The call: 38 s, 6 s hold.
    const w = 'legs-1';
    await h.store.record(call(w, at(3, 9), { agent: 'agent3', mediaMode: 'anchor', ...answered(3, 9, 4, 38, { holdMs: 6_000 }), legs: [{ agent: 'agent1', talkMs: 7_000, holdMs: 2_000, answered: true }, { agent: 'agent3', talkMs: 28_000, holdMs: 4_000, answered: false }] }));
    await h.store.record(step(w, at(3, 9, 11), 'transfer', { agent: 'agent1', mode: 'cold', to: { agent: 'agent3' } }));
    const res = await get('supervisor', '/api/reports.csv?by=agent&from=2026-05-03&to=2026-05-03');
    expect(res.status).toBe(200);
    expect(await res.text()).toBe(['Agent,Calls handled,Inbound,Outbound,Talk time (s),Hold time (s),Avg. handle (s),Transfers', 'agent1,1,1,0,7,2,9,1', 'agent3,1,1,0,28,4,32,0', ''].join('\r\n'));
    const numbers = await get('supervisor', '/api/reports.csv?from=2026-05-03&to=2026-05-03');
    expect((await numbers.text()).split('\r\n')[1]).toBe(`${A},1,1,0,0,100,4,44,1`);
  });
});

describe('business numbers the API key does not have', () => {
  it('a webhook\'s `to` that is not one of the known business numbers is no row of its own: its calls are counted under "unknown number"', async () => {
    const log = createLogger({ level: 'silent' });
    const known = new Hono<AuthEnv>();
    known.onError(errorHandler(log));
    known.route('/', createReports({ auth: { requireUser: () => async (c, next) => (c.set('user', { name: 'supervisor', roles: ['supervisor'] } as never), next()) }, history: h, slaSeconds: 20, log, now: () => NOW, businessNumbers: async () => [A, B] }));
    const res = await known.request('http://sb.test/api/reports?from=2026-05-02&to=2026-05-05');
    const r = (await res.json()) as { numbers: Array<{ businessNumber: string; offered: number }> };
    expect(r.numbers.map((n) => n.businessNumber)).toEqual([A, B, 'unknown number']);
    expect(r.numbers.find((n) => n.businessNumber === 'unknown number')!.offered).toBe(4);
    const csv = await (await known.request('http://sb.test/api/reports.csv?from=2026-05-02&to=2026-05-05')).text();
    expect(csv).not.toMatch(/HYPERLINK|cmd|SUM/);
  });
});
