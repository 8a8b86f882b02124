/**
 * The audit trail's vocabulary: the actions it records, one entry's shape, and the search
 * query with its rules (each broken rule is a 400 naming the field).
 *
 * An entry never holds a password, a secret or a session id: callers pass names, wacids,
 * file names and counts only, and `record` drops any detail key that looks like one
 * (`FORBIDDEN_DETAIL`) before the row is kept.
 */

import { z } from 'zod';
import { AUDIT_ACTIONS, type AuditAction } from '../../shared/audit.ts';
import { badRequest } from '../ops/validate.ts';
export { AUDIT_ACTIONS, type AuditAction };

/** What a feature hands to `record` (the id and time are the trail's). */
export interface AuditInput {
  action: AuditAction;
  /** Who acted: a user name; for a failed login the name tried; `system` for the server itself. */
  actor: string;
  /** Whose thing it was, when another user's (the agent monitored, the user whose sessions ended). */
  subject?: string | undefined;
  /** What it was done to: a wacid, a media file, a report range, stream ids. */
  target?: string | undefined;
  /** The client's address. */
  address?: string | undefined;
  detail?: Record<string, string | number | boolean | null | readonly string[]> | undefined;
}

/** One row as the API answers it. */
export interface AuditEntry {
  id: string;
  /** ISO time. */
  at: string;
  actor: string;
  action: AuditAction;
  subject?: string;
  target?: string;
  address?: string;
  detail?: Record<string, unknown>;
}

/** Detail keys that could carry a secret: never stored, whatever a caller passes. */
export const FORBIDDEN_DETAIL = /pass|secret|token|cookie|session|sid|credential|hash|key/i;

/** A broken rule of the search query: the route answers 400 with this message. */
export class AuditQueryError extends Error {
  override readonly name = 'AuditQueryError';
}

export interface AuditQuery {
  /** Rows where this user acted or was the subject. */
  user?: string;
  action?: AuditAction;
  /** ISO, inclusive. */
  from?: string;
  /** ISO, exclusive. */
  to?: string;
  limit: number;
  /** Keyset position (opaque): rows older than it. */
  cursor?: { at: string; id: string };
}

export const QUERY_FIELDS = ['user', 'action', 'from', 'to', 'limit', 'cursor'] as const;
export const LIMIT_DEFAULT = 50;
export const LIMIT_MAX = 500;

const shown = (v: string) => JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);

const ISO = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/;
const got = (i: { input?: unknown }) => `(got ${shown(String(i.input))})`;

/** An ISO 8601 date or time, as an ISO time. */
const isoTime = z
  .string()
  .refine((v) => ISO.test(v) && Number.isFinite(Date.parse(v)), { error: (i) => `must be an ISO 8601 date or time, e.g. 2026-01-01 or 2026-01-01T00:00:00Z ${got(i)}` })
  .transform((v) => new Date(Date.parse(v)).toISOString());

const cursor = z.string().transform((v, ctx) => {
  let c: unknown;
  try {
    c = JSON.parse(Buffer.from(v, 'base64url').toString('utf8'));
  } catch {
    c = undefined;
  }
  if (!Array.isArray(c) || c.length !== 2 || typeof c[0] !== 'string' || typeof c[1] !== 'string' || !Number.isFinite(Date.parse(c[0]))) {
    ctx.addIssue({ code: 'custom', message: 'must be the cursor a previous page answered' });
    return z.NEVER;
  }
  return { at: c[0], id: c[1] };
});

/** The search query (single values; unknown parameters refused), `limit` up to `maxLimit`. */
export const auditQuery = (maxLimit = LIMIT_MAX) =>
  z
    .strictObject({
      user: z.string().regex(/^[^\x00-\x1f]{1,200}$/, 'must be a user name of 1 to 200 characters').optional(),
      action: z.enum(AUDIT_ACTIONS, { error: (i) => `must be one of ${AUDIT_ACTIONS.join(', ')} ${got(i)}` }).optional(),
      from: isoTime.optional(),
      to: isoTime.optional(),
      limit: z
        .string()
        .refine((v) => /^\d{1,7}$/.test(v) && Number(v) >= 1 && Number(v) <= maxLimit, { error: (i) => `must be an integer from 1 to ${maxLimit} ${got(i)}` })
        .transform(Number)
        .optional(),
      cursor: cursor.optional(),
    })
    .superRefine((q, ctx) => {
      if (q.from && q.to && q.from >= q.to) ctx.addIssue({ code: 'custom', path: ['to'], message: 'must be later than from' });
    })
    .transform((q): AuditQuery => ({
      limit: q.limit ?? LIMIT_DEFAULT,
      ...(q.user !== undefined ? { user: q.user } : {}),
      ...(q.action !== undefined ? { action: q.action } : {}),
      ...(q.from !== undefined ? { from: q.from } : {}),
      ...(q.to !== undefined ? { to: q.to } : {}),
      ...(q.cursor !== undefined ? { cursor: q.cursor } : {}),
    }));

export function encodeCursor(e: { at: string; id: string }): string {
  return Buffer.from(JSON.stringify([e.at, e.id])).toString('base64url');
}

/** The search query from a URL's parameters (each at most once; unknown ones refused). */
export function parseAuditQuery(params: Record<string, string[]>, maxLimit = LIMIT_MAX): AuditQuery {
  const one: Record<string, string> = {};
  for (const [k, values] of Object.entries(params)) {
    if (values.length > 1) throw new AuditQueryError(`${k}: give it at most once`);
    one[k] = values[0]!;
  }
  const r = auditQuery(maxLimit).safeParse(one);
  if (!r.success) throw new AuditQueryError(badRequest(r.error, 'query', QUERY_FIELDS).message);
  return r.data;
}
