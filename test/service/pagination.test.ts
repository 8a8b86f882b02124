/**
 * Pagination traversals stop exactly as part 4 says, against a real local server:
 * page-number continues while length == limit; cursor stops when length is 0 or
 * cursor.after is absent. Filters are sent unchanged on every page.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createServiceClient, type ServiceClient } from '../../server/service/index.ts';
import { json, startServer, type TestServer } from './server.ts';

let srv: TestServer;
let c: ServiceClient;
let total = 0;
/** Cursor as the server writes it: opaque, with characters that must round-trip unchanged. */
const cursorFor = (n: number) => `c+/=${n}`;

beforeAll(async () => {
  srv = await startServer((req, res) => {
    const limit = Number(req.query.get('limit') ?? 10);
    const all = Array.from({ length: total }, (_, i) => ({ id: `i${i}`, phoneNumber: `+1415555${String(i).padStart(4, '0')}` }));
    if (req.path === '/contact/contacts') {
      const page = Number(req.query.get('page') ?? 1);
      const items = all.slice((page - 1) * limit, page * limit);
      return json(res, 200, { items, offset: (page - 1) * limit, limit, length: items.length });
    }
    // Cursor style (unsubscribers use pageAfter, groups use after).
    const after = req.query.get('pageAfter') ?? req.query.get('after');
    const start = after ? Number(after.slice(4)) : 0;
    const items = all.slice(start, start + limit);
    const next = start + items.length;
    json(res, 200, { items, limit, length: items.length, ...(next < all.length ? { cursor: { after: cursorFor(next) } } : {}) });
  });
  c = createServiceClient({ baseUrl: srv.baseUrl, apiKey: 'k_pages' });
});
afterAll(() => srv.close());
beforeEach(() => {
  srv.seen.length = 0;
});

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

const LIMIT = 5;

describe('page-number traversal (continue while length == limit)', () => {
  it.each([
    [0, 0, 1],
    [1, 1, 1],
    [LIMIT, LIMIT, 2],
    [LIMIT + 1, LIMIT + 1, 2],
    [3 * LIMIT, 3 * LIMIT, 4],
  ])('%i items → yields %i items in %i requests', async (n, items, requests) => {
    total = n;
    const got = await collect(c.contacts.iterate({ limit: LIMIT, tag: 'vip', sort: 'createTime' }));
    expect(got).toHaveLength(items);
    expect(got.map((x) => x.id)).toEqual(Array.from({ length: n }, (_, i) => `i${i}`));
    expect(srv.seen).toHaveLength(requests);
    expect(srv.seen.map((s) => s.query.get('page'))).toEqual(Array.from({ length: requests }, (_, i) => String(i + 1)));
    // Filters and sort unchanged across the traversal.
    for (const s of srv.seen) {
      expect(s.query.get('tag')).toBe('vip');
      expect(s.query.get('sort')).toBe('createTime');
      expect(s.query.get('limit')).toBe(String(LIMIT));
    }
  });
});

describe('cursor traversal (stop when length is 0 or cursor.after is absent)', () => {
  it.each([
    [0, 1],
    [1, 1],
    [LIMIT, 1],
    [LIMIT + 1, 2],
    [2 * LIMIT + 1, 3],
  ])('%i items → all yielded in %i requests, cursor passed back unchanged', async (n, requests) => {
    total = n;
    const got = await collect(c.unsubscribers.iterate({ limit: LIMIT, channel: 'sms' }));
    expect(got).toHaveLength(n);
    expect(srv.seen).toHaveLength(requests);
    expect(srv.seen[0]!.query.has('pageAfter')).toBe(false);
    srv.seen.slice(1).forEach((s, i) => {
      expect(s.query.get('pageAfter')).toBe(cursorFor((i + 1) * LIMIT));
      expect(s.query.get('channel')).toBe('sms');
    });
  });

  it('groups use the after parameter, with the same stop rules', async () => {
    total = LIMIT + 2;
    const got = await collect(c.groups.iterate('+4930123456', { limit: LIMIT }));
    expect(got).toHaveLength(LIMIT + 2);
    expect(srv.seen.map((s) => s.query.get('after'))).toEqual([null, cursorFor(LIMIT)]);
    expect(srv.seen[0]!.path).toBe('/chat/%2B4930123456/groups');
  });

  it('a page with length 0 stops the traversal even if it carries a cursor', async () => {
    srv.setHandler((_req, res) => json(res, 200, { items: [], limit: 5, length: 0, cursor: { after: 'more?' } }));
    expect(await collect(c.unsubscribers.iterate({ limit: 5 }))).toEqual([]);
    expect(srv.seen).toHaveLength(1);
  });
});
