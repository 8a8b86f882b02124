/**
 * HTTP conventions of the emulated Service v2 (parts 4, 5, 7 of the interface):
 * `Service-Request-ID` on every response, the part 7 error shape, `X-API-Key` auth,
 * and the two pagination styles. Every emulator route module uses these.
 */
import { randomUUID } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';

export type Env = { Variables: { requestId: string; apiKey: string } };

/** Sets `Service-Request-ID` on every response (errors included). */
export const requestId: MiddlewareHandler<Env> = async (c, next) => {
  const id = `req_${randomUUID()}`;
  c.set('requestId', id);
  c.header('Service-Request-ID', id);
  await next();
  c.res.headers.set('Service-Request-ID', id);
};

/** Part 7 error response. `message` names the field and the rule for validation errors. */
export function serviceError(
  c: Context<Env>,
  status: number,
  code: string,
  message: string,
  chatApiError?: Record<string, unknown>,
): Response {
  return c.json(
    { error: { status, code, message, requestId: c.get('requestId'), ...(chatApiError ? { chatApiError } : {}) } },
    status as ContentfulStatusCode,
  );
}

export const badRequest = (c: Context<Env>, message: string) => serviceError(c, 400, 'BAD_REQUEST', message);
export const notFound = (c: Context<Env>, what: string) => serviceError(c, 404, 'NOT_FOUND', `${what} not found`);

/**
 * `X-API-Key` check: the bare key, exactly (no `Bearer`, no spaces or quotes).
 * 401 `UNAUTHORIZED` otherwise. The key is never echoed back.
 */
export function apiKeyAuth(keys: readonly string[]): MiddlewareHandler<Env> {
  return async (c, next) => {
    const key = c.req.header('X-API-Key');
    if (key === undefined || !keys.includes(key)) {
      return serviceError(c, 401, 'UNAUTHORIZED', key === undefined ? 'missing X-API-Key header' : 'invalid API key');
    }
    c.set('apiKey', key);
    await next();
  };
}

/** Page-number style: `page` from 1, `limit` 1..100 (default 10), `includeTotal`. */
export function pageNumber<T>(
  c: Context<Env>,
  all: readonly T[],
  maxLimit = 100,
): Response {
  const page = intParam(c.req.query('page'), 1);
  const limit = intParam(c.req.query('limit'), 10);
  if (page === null || page < 1) return badRequest(c, 'page: must be an integer >= 1');
  if (limit === null || limit < 1 || limit > maxLimit) return badRequest(c, `limit: must be an integer from 1 to ${maxLimit}`);
  const offset = (page - 1) * limit;
  const items = all.slice(offset, offset + limit);
  const body: Record<string, unknown> = { items, offset, limit, length: items.length };
  if (c.req.query('includeTotal') === 'true') body.total = all.length;
  return c.json(body);
}

/**
 * Cursor style: `limit`, cursor param (`pageAfter` by default, `after` for groups).
 * `cursor.after` is present only when more results exist.
 */
export function cursorPage<T>(
  c: Context<Env>,
  all: readonly T[],
  opts: { maxLimit?: number; defaultLimit?: number; cursorParam?: string } = {},
): Response {
  const maxLimit = opts.maxLimit ?? 100;
  const limit = intParam(c.req.query('limit'), opts.defaultLimit ?? 10);
  if (limit === null || limit < 1 || limit > maxLimit) return badRequest(c, `limit: must be an integer from 1 to ${maxLimit}`);
  const param = opts.cursorParam ?? 'pageAfter';
  const after = c.req.query(param);
  let start = 0;
  if (after !== undefined) {
    const decoded = decodeCursor(after);
    if (decoded === null || decoded > all.length) return badRequest(c, `${param}: invalid or expired cursor`);
    start = decoded;
  }
  const items = all.slice(start, start + limit);
  const next = start + items.length;
  const body: Record<string, unknown> = { items, limit, length: items.length };
  if (next < all.length) body.cursor = { after: encodeCursor(next) };
  return c.json(body);
}

function intParam(v: string | undefined, dflt: number): number | null {
  if (v === undefined) return dflt;
  return /^\d+$/.test(v) ? Number(v) : null;
}
const encodeCursor = (n: number) => Buffer.from(`o:${n}`).toString('base64url');
function decodeCursor(s: string): number | null {
  const m = /^o:(\d+)$/.exec(Buffer.from(s, 'base64url').toString());
  return m ? Number(m[1]) : null;
}
