/**
 * The audit trail's vocabulary: the actions it records, one entry's shape, and the search
 * query with its rules (each broken rule is a 400 naming the field).
 *
 * An entry never holds a password, a secret or a session id: callers pass names, wacids,
 * file names and counts only, and `record` drops any detail key that looks like one
 * (`FORBIDDEN_DETAIL`) before the row is kept.
 */

import { AUDIT_ACTIONS, type AuditAction } from '../../shared/audit.ts';
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

function isoTime(field: string, v: string): string {
  const t = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})?)?$/.test(v) ? Date.parse(v) : NaN;
  if (!Number.isFinite(t)) throw new AuditQueryError(`${field}: must be an ISO 8601 date or time, e.g. 2026-01-01 or 2026-01-01T00:00:00Z (got ${shown(v)})`);
  return new Date(t).toISOString();
}

export function encodeCursor(e: { at: string; id: string }): string {
  return Buffer.from(JSON.stringify([e.at, e.id])).toString('base64url');
}

/** The search query from a URL's parameters (each at most once; unknown ones refused). */
export function parseAuditQuery(params: Record<string, string[]>, maxLimit = LIMIT_MAX): AuditQuery {
  const one: Record<string, string> = {};
  for (const [k, values] of Object.entries(params)) {
    if (!(QUERY_FIELDS as readonly string[]).includes(k)) throw new AuditQueryError(`${k}: unknown query parameter; known: ${QUERY_FIELDS.join(', ')}`);
    if (values.length > 1) throw new AuditQueryError(`${k}: give it at most once`);
    one[k] = values[0]!;
  }
  const q: AuditQuery = { limit: LIMIT_DEFAULT };
  if (one.user !== undefined) {
    if (!/^[^\x00-\x1f]{1,200}$/.test(one.user)) throw new AuditQueryError('user: must be a user name of 1 to 200 characters');
    q.user = one.user;
  }
  if (one.action !== undefined) {
    if (!(AUDIT_ACTIONS as readonly string[]).includes(one.action)) throw new AuditQueryError(`action: must be one of ${AUDIT_ACTIONS.join(', ')} (got ${shown(one.action)})`);
    q.action = one.action as AuditAction;
  }
  if (one.from !== undefined) q.from = isoTime('from', one.from);
  if (one.to !== undefined) q.to = isoTime('to', one.to);
  if (q.from && q.to && q.from >= q.to) throw new AuditQueryError('to: must be later than from');
  if (one.limit !== undefined) {
    const n = /^\d{1,7}$/.test(one.limit) ? Number(one.limit) : NaN;
    if (!(n >= 1 && n <= maxLimit)) throw new AuditQueryError(`limit: must be an integer from 1 to ${maxLimit} (got ${shown(one.limit)})`);
    q.limit = n;
  }
  if (one.cursor !== undefined) {
    let c: unknown;
    try {
      c = JSON.parse(Buffer.from(one.cursor, 'base64url').toString('utf8'));
    } catch {
      c = undefined;
    }
    if (!Array.isArray(c) || c.length !== 2 || typeof c[0] !== 'string' || typeof c[1] !== 'string' || !Number.isFinite(Date.parse(c[0]))) {
      throw new AuditQueryError('cursor: must be the cursor a previous page answered');
    }
    q.cursor = { at: c[0], id: c[1] };
  }
  return q;
}
