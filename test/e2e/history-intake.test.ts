/**
 * Text PostgreSQL cannot store, refused at every intake and set aside by the writer, against a bridge with Redis and a real PostgreSQL
 * database of its own:
 * - text PostgreSQL cannot store (NUL, lone surrogates) is refused at every intake with a
 *   400 (or an error frame) naming the field: query, path, JSON body, WebSocket frame,
 *   webhook payload; a fact that still reaches the writer is set aside (listed for ops,
 *   counted) and history keeps writing;
 * - during a database outage `/api/callbacks` and `/api/messages` answer 503 UNAVAILABLE,
 *   like the history routes, not 500.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts';
import { startRedis, type TestRedis } from '../support/redis.ts';
import { agentClient, login, postEvent, until, type Bridge } from './harness.ts';
import { programSuite } from './suite.ts';

const BUSINESS = '+15550100001';

let redis: TestRedis;
let pgdb: TestDatabase;
beforeAll(async () => {
  [redis, pgdb] = await Promise.all([startRedis(), createTestDatabase()]);
}, 30_000);
afterAll(async () => {
  await pgdb?.reopen().catch(() => undefined);
  await pgdb?.drop();
  await redis?.close();
});
const suite = programSuite();

async function api(b: Bridge, cookie: string, method: string, path: string, body?: string) {
  const r = await fetch(`${b.url}${path}`, {
    method,
    headers: { cookie, origin: b.url, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body } : {}),
  });
  const text = await r.text();
  return { status: r.status, body: (text ? JSON.parse(text) : {}) as { error?: { code: string; message: string } } & Record<string, unknown> };
}

const start = () => suite.startBridge({ agents: ['agent1'], supervisors: ['boss'], redisUrl: redis.url, history: true, env: { DATABASE_URL: pgdb.url } });

describe('text the database cannot store', () => {
  it('is refused with a 400 (or an error frame) naming the field at every intake; one that reaches the writer anyway is set aside and history goes on', async () => {
    const b = await start();
    const boss = await login(b.url, 'boss');
    const ops = await login(b.url, 'ops');

    // The tester's requests: 503, 500 and 500 before.
    const q = await api(b, boss, 'GET', '/api/history/calls?q=%00');
    expect(q.status).toBe(400);
    expect(q.body.error?.message).toMatch(/^q: must not contain NUL/);
    const message = await api(b, boss, 'GET', '/api/messages/%00');
    expect(message.status).toBe(400);
    expect(message.body.error?.message).toMatch(/path.*must not contain NUL/);
    const claim = await api(b, boss, 'POST', '/api/callbacks/%00/claim');
    expect(claim.status).toBe(400);
    expect(claim.body.error?.message).toMatch(/path.*must not contain NUL/);
    // JSON bodies: the field's path.
    const send = await api(b, boss, 'POST', '/api/messages', JSON.stringify({ from: BUSINESS, to: '+15550123456', text: 'hi\u0000' }));
    expect(send.status).toBe(400);
    expect(send.body.error?.message).toBe('text: must not contain NUL (U+0000)');
    const done = await api(b, boss, 'POST', '/api/callbacks/cb1/done', JSON.stringify({ outcome: 'x\ud800' }));
    expect(done.status).toBe(400);
    expect(done.body.error?.message).toBe('outcome: must not contain an unpaired UTF-16 surrogate');

    // A WebSocket frame: the wrap-up note of the report.
    const agent = suite.track(await agentClient(b.url, 'agent1'));
    const wrap = await agent.request({ type: 'call.wrapup', wacid: 'wacid.none', disposition: 'Resolved', notes: 'hello\u0000world' });
    expect(wrap).toMatchObject({ type: 'error', code: 'BAD_REQUEST', message: 'notes: must not contain NUL (U+0000)' });

    // A webhook whose strings would become history facts.
    const status = await postEvent(b, 'chat.inbound_message.received', 'message', { id: `wamid.${randomBytes(4).toString('hex')}`, from: '+15550123456', to: BUSINESS, type: 'text', text: { body: 'a\u0000b' } });
    expect(status).toBe(400);

    // Defence in depth: a fact that reaches the writer all the same is set aside, not retried for ever.
    const history = b.sb.history!;
    const wacid = `wacid.${randomBytes(4).toString('hex')}`;
    const T = new Date().toISOString();
    history.enqueue({ type: 'disposition', wacid, disposition: 'Resolved', notes: 'hello\u0000world', at: T });
    history.enqueue({ type: 'call', wacid, phoneId: 'ph1', businessNumber: BUSINESS, customer: { phoneNumber: '+15550123456' }, direction: 'inbound', outcome: 'answered', agent: 'agent1', receivedAt: T, version: 1 });
    await until('the call after the poisoned fact to be written', async () => (await api(b, boss, 'GET', `/api/history/calls/${wacid}`)).status === 200, 15_000);
    const dead = await until('the dead letter to be listed', async () => {
      const r = await api(b, ops, 'GET', '/api/ops/history-dead-letters');
      return r.status === 200 && (r.body.total as number) >= 1 ? r.body : undefined;
    });
    const item = (dead.items as Array<{ body: string; error: string }>)[0]!;
    expect(JSON.parse(item.body)).toMatchObject({ type: 'disposition', wacid });
    expect(item.error).toMatch(/0x00|22021/);
    expect((await api(b, boss, 'GET', '/api/ops/history-dead-letters')).status).toBe(403);
    const metrics = await (await fetch(`${b.url}/metrics`)).text();
    expect(metrics).toMatch(/^switchboard_history_facts_dead_lettered_total 1$/m);
    expect(metrics).toMatch(/^switchboard_history_writer_healthy 1$/m);
    const ready = (await (await fetch(`${b.url}/readyz`)).json()) as { checks: Record<string, string> };
    expect(ready.checks.history).toBe('ok');
  }, 60_000);
});

describe('a history database outage', () => {
  it('/api/callbacks and /api/messages answer 503 UNAVAILABLE, as the history routes do', async () => {
    const b = await start();
    const boss = await login(b.url, 'boss');
    expect((await api(b, boss, 'GET', '/api/callbacks')).status).toBe(200);
    await pgdb.cutOff();
    try {
      for (const [method, path, body] of [
        ['GET', '/api/history/calls', undefined],
        ['GET', '/api/callbacks', undefined],
        ['POST', '/api/callbacks/cb-none/claim', undefined],
        ['GET', '/api/messages/wamid.none', undefined],
        ['POST', '/api/messages', JSON.stringify({ from: BUSINESS, to: '+15550123456', text: 'hello' })],
      ] as const) {
        const r = await api(b, boss, method, path, body);
        expect({ path, method, status: r.status, code: r.body.error?.code }).toEqual({ path, method, status: 503, code: 'UNAVAILABLE' });
      }
    } finally {
      await pgdb.reopen();
    }
  }, 60_000);
});
