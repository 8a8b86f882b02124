/**
 * Request validation for the messaging surface. Bodies are checked with zod at the
 * boundary; the first issue becomes a part 7 `BAD_REQUEST` whose message is
 * `<field path>: <rule>`, so a client can tell which field to fix without parsing prose.
 */
import type { Context } from 'hono';
import { z } from 'zod';
import { badRequest, type Env } from '../http.ts';

/** E.164: a plus, a non-zero leading digit, 7 to 15 digits in all. */
export const E164_RE = /^\+[1-9]\d{6,14}$/;
/** BSUID: two uppercase letters, a period, then up to 128 alphanumerics (parent BSUIDs hold `.ENT.`). */
export const BSUID_RE = /^[A-Z]{2}\.(?:ENT\.)?[A-Za-z0-9]{1,128}$/;
export const EMAIL_RE = /^[^\s@<>,]+@[^\s@<>,]+\.[^\s@<>,]+$/;
export const COUNTRY_RE = /^[A-Z]{2}$/;

export const isE164 = (v: unknown): v is string => typeof v === 'string' && E164_RE.test(v);
export const isBsuid = (v: unknown): v is string => typeof v === 'string' && BSUID_RE.test(v);
export const isParentBsuid = (v: string) => v.includes('.ENT.');

export const e164 = () => z.string().regex(E164_RE, 'must be an E.164 number such as +14155550100');

/** A decimal written as a string (`"0.05"`), as the interface types money and multipliers. */
export function decimalString(opts: { max?: number; maxDecimals?: number } = {}) {
  return z
    .string()
    .regex(/^\d+(\.\d+)?$/, 'must be a decimal string such as "1.5"')
    .refine((s) => Number(s) > 0, 'must be greater than 0')
    .refine((s) => opts.max === undefined || Number(s) <= opts.max, `must be at most ${opts.max}`)
    .refine(
      (s) => opts.maxDecimals === undefined || (s.split('.')[1]?.length ?? 0) <= opts.maxDecimals,
      `must have at most ${opts.maxDecimals} decimals`,
    );
}

/** Turns a zod issue into `field: rule`; "received undefined" becomes "is required". */
function describeIssue(issue: z.core.$ZodIssue): string {
  const field = issue.path.length ? issue.path.map(String).join('.') : 'body';
  if (issue.code === 'invalid_type') {
    return issue.message.endsWith('received undefined') ? `${field}: is required` : `${field}: must be ${article(issue.expected)}`;
  }
  if (issue.code === 'invalid_value' && 'values' in issue) {
    return `${field}: must be one of ${(issue.values as unknown[]).map(String).join(', ')}`;
  }
  if (issue.code === 'unrecognized_keys') return `${field}: unknown field ${issue.keys.join(', ')}`;
  return `${field}: ${issue.message}`;
}
const article = (t: string) => (/^[aeiou]/.test(t) ? `an ${t}` : `a ${t}`);

export type Parsed<T> = { ok: true; data: T } | { ok: false; res: Response };

/** Reads the JSON body and validates it; a missing or non-JSON body is a `body:` error. */
export async function parseBody<S extends z.ZodType>(c: Context<Env>, schema: S): Promise<Parsed<z.infer<S>>> {
  let raw: unknown;
  try {
    raw = await c.req.json();
  } catch {
    return { ok: false, res: badRequest(c, 'body: must be a JSON object') };
  }
  return check(c, schema, raw);
}

export function check<S extends z.ZodType>(c: Context<Env>, schema: S, raw: unknown): Parsed<z.infer<S>> {
  const r = schema.safeParse(raw);
  if (r.success) return { ok: true, data: r.data };
  return { ok: false, res: badRequest(c, describeIssue(r.error.issues[0]!)) };
}

/** `+` in a path segment may arrive raw or as %2B; Hono decodes either. Add it when missing. */
export function phoneParam(v: string): string {
  const s = v.trim();
  return s.startsWith('+') ? s : `+${s}`;
}
