/**
 * Per-request basics shared by the generic middleware (server/app.ts) and the webhook
 * route, which does the same work inline because it is the hot path.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Context } from 'hono';

export const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** A request header, from Node's parsed headers when running under the Node adapter. */
export function requestHeader(c: Context, name: string): string | undefined {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (incoming?.headers) {
    const v = incoming.headers[name];
    return Array.isArray(v) ? v.join(', ') : v;
  }
  return c.req.header(name);
}

/** The request's id: a well-formed incoming `X-Request-ID` is kept, else a new one. */
export function requestIdOf(c: Context): string {
  const given = requestHeader(c, 'x-request-id');
  return given && REQUEST_ID.test(given) ? given : `req_${randomUUID()}`;
}
