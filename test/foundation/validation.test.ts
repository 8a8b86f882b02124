/**
 * Every route that takes a body or a query reads it through zod (server/ops/validate.ts) and
 * refuses bad input with the one 400: `BAD_REQUEST`, `error.field` naming the field and a
 * message starting with it. One bad request per route, against a whole bridge (history on).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { login, startBridge, type Bridge } from '../e2e/harness.ts';

let b: Bridge;
const cookies = new Map<string, string>();
beforeAll(async () => {
  b = await startBridge({ history: true, agents: ['ann'], supervisors: ['boss'], admins: ['root'] });
  for (const u of ['ann', 'boss', 'ops', 'root']) cookies.set(u, await login(b.url, u));
}, 120_000);
afterAll(async () => {
  await b?.close();
});

const BIZ = '+15550100001';
const USER = '+15550100002';

/** [who, method, path, body (a string is sent as it is), the field named]. */
const cases: Array<[string | undefined, 'GET' | 'POST', string, unknown, string]> = [
  [undefined, 'POST', '/api/login', { name: 'ann' }, 'password'],
  [undefined, 'POST', '/api/login', 'not json', 'body'],
  ['boss', 'POST', '/api/messages', { from: '5550100001', to: USER, text: 'hi' }, 'from'],
  ['boss', 'POST', '/api/permissions/request', { from: BIZ, to: USER, bdy: 'typo' }, 'bdy'],
  ['boss', 'POST', '/api/permissions/request', { from: BIZ, to: USER, template: { name: 't', language: 'english please' } }, 'template.language'],
  ['boss', 'GET', `/api/permissions?from=${encodeURIComponent(BIZ)}`, undefined, 'user'],
  ['boss', 'GET', '/api/history/calls?limit=0', undefined, 'limit'],
  ['boss', 'GET', '/api/history/calls?nope=1', undefined, 'nope'],
  ['boss', 'GET', '/api/history/calls?customer=abc', undefined, 'customer'],
  ['ops', 'GET', '/api/ops/history-dead-letters?limit=x', undefined, 'limit'],
  ['ops', 'GET', '/api/ops/dead-letters?limit=0', undefined, 'limit'],
  ['ops', 'POST', '/api/ops/dead-letters/replay', { streamIds: ['1-0', 'bad'] }, 'streamIds[1]'],
  ['ops', 'POST', '/api/ops/dead-letters/replay', { all: false }, 'all'],
  ['root', 'GET', '/api/audit?action=nope', undefined, 'action'],
  ['root', 'GET', '/api/audit.csv?from=2026-01-01&from=2026-01-02', undefined, 'from'],
  ['boss', 'GET', '/api/reports?week=1', undefined, 'week'],
  ['boss', 'GET', '/api/reports.csv?by=team', undefined, 'by'],
  ['ann', 'GET', '/api/callbacks?state=nope', undefined, 'state'],
  ['ann', 'POST', '/api/callbacks/cb1/done', {}, 'outcome'],
  ['ann', 'GET', `/api/customers/${encodeURIComponent(USER)}?businessNumber=abc`, undefined, 'businessNumber'],
  ['ops', 'GET', '/api/archive/call1/rec.ogg?use=listen', undefined, 'use'],
];

describe('request validation: one 400 naming the field', () => {
  it.each(cases)('%s %s %s → 400 naming %s', async (who, method, path, body, field) => {
    const headers: Record<string, string> = { origin: b.url };
    if (who) headers.cookie = cookies.get(who)!;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const r = await fetch(`${b.url}${path}`, { method, headers, ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}) });
    const got = (await r.json()) as { error: { status: number; code: string; message: string; field?: string; requestId: string } };
    expect({ status: r.status, code: got.error.code, field: got.error.field }).toEqual({ status: 400, code: 'BAD_REQUEST', field });
    expect(got.error.message.startsWith(`${field}: `)).toBe(true);
    expect(got.error.requestId).toBe(r.headers.get('x-request-id'));
  });
});
