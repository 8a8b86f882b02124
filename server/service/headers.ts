/**
 * Tolerant parsing of the part 8 rate limit headers. `RateLimit-*` are beta and follow an
 * IETF draft that has changed shape between revisions, so anything we don't understand
 * (extra parameters, unknown keys, garbage) is ignored rather than thrown on: a bad header
 * must never fail a request that otherwise succeeded.
 */

export type HeaderValue = string | string[] | undefined;
export type Headers = Record<string, HeaderValue>;

export function header(h: Headers, name: string): string | undefined {
  const v = h[name.toLowerCase()];
  if (Array.isArray(v)) return v.join(', ');
  return v;
}

/** `Retry-After`: delta seconds (integer or decimal) or an HTTP date. ms from `now`, or undefined. */
export function parseRetryAfter(value: string | undefined, now: number): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  // An HTTP date has a weekday and a GMT zone; Date.parse also takes ISO strings, which
  // some proxies send. Anything else is ignored.
  if (!/[a-z]/i.test(v)) return undefined;
  const t = Date.parse(v);
  if (Number.isNaN(t)) return undefined;
  return Math.max(0, t - now);
}

export interface RateLimitPolicy {
  quota: number;
  windowSeconds?: number;
  params: Record<string, string>;
}

export interface RateLimitInfo {
  limit?: number;
  remaining?: number;
  /** Seconds until the window resets. */
  reset?: number;
  policies: RateLimitPolicy[];
}

/** First list member's leading integer (`"100, 100;w=60"` → 100); undefined when malformed. */
function firstInt(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const first = value.split(',')[0]!.split(';')[0]!.trim();
  return /^\d+$/.test(first) ? Number(first) : undefined;
}

export function parseRateLimitHeaders(h: Headers): RateLimitInfo {
  const info: RateLimitInfo = { policies: [] };
  const limit = firstInt(header(h, 'ratelimit-limit'));
  const remaining = firstInt(header(h, 'ratelimit-remaining'));
  const reset = firstInt(header(h, 'ratelimit-reset'));
  if (limit !== undefined) info.limit = limit;
  if (remaining !== undefined) info.remaining = remaining;
  if (reset !== undefined) info.reset = reset;
  const policy = header(h, 'ratelimit-policy');
  if (policy !== undefined) {
    for (const item of policy.split(',')) {
      const [q, ...params] = item.split(';').map((s) => s.trim());
      if (q === undefined || !/^\d+$/.test(q)) continue;
      const p: RateLimitPolicy = { quota: Number(q), params: {} };
      for (const kv of params) {
        const m = /^([a-z][a-z0-9_-]*)=("?)([^"]*)\2$/i.exec(kv);
        if (!m) continue;
        p.params[m[1]!.toLowerCase()] = m[3]!;
      }
      const w = p.params.w;
      if (w !== undefined && /^\d+$/.test(w)) p.windowSeconds = Number(w);
      info.policies.push(p);
    }
  }
  return info;
}
