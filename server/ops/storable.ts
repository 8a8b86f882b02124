/**
 * The HTTP half of `shared/storable.ts`: a request whose path, query or
 * JSON body holds text PostgreSQL cannot store (NUL, an unpaired surrogate) is refused
 * with 400 naming the field, before any route sees it. Mounted once, in `server/app.ts`.
 */
import type { MiddlewareHandler } from 'hono';
import { findUnstorable, unstorableRule } from '../../shared/storable.ts';
import { HttpBadRequest } from './errors.ts';

/** The path's segments decoded as the router decodes them (a segment that is not valid UTF-8 stays as it is). */
function decodeSegment(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

export const refuseUnstorable: MiddlewareHandler = async (c, next) => {
  const url = new URL(c.req.url);
  const segments = url.pathname.split('/');
  for (let i = 1; i < segments.length; i++) {
    const rule = unstorableRule(decodeSegment(segments[i]!));
    if (rule) throw new HttpBadRequest(`path: segment ${i} ${rule}`);
  }
  for (const [k, v] of url.searchParams) {
    const rule = unstorableRule(k) ?? unstorableRule(v);
    if (rule) throw new HttpBadRequest(`${unstorableRule(k) ? `query parameter name ${JSON.stringify(k)}` : k}: ${rule}`);
  }
  if (c.req.raw.body !== null && /json/i.test(c.req.header('content-type') ?? '')) {
    let parsed: unknown;
    try {
      parsed = await c.req.json();
    } catch {
      return next(); // not JSON: the route says so in its own words
    }
    const bad = findUnstorable(parsed);
    if (bad) throw new HttpBadRequest(`${bad.path === '(root)' ? 'body' : bad.path}: ${bad.rule}`);
  }
  return next();
};
