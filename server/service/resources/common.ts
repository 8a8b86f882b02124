/** Parameter checks shared by list methods. */
import { ValidationError } from '../errors.ts';
import { intRange } from '../validate.ts';

export interface PageParams {
  /** From 1. */
  page?: number;
  /** 1 to 100 (default 10). */
  limit?: number;
  includeTotal?: boolean;
}

export interface CursorParams {
  limit?: number;
  /** The previous page's `cursor.after`, unchanged. */
  pageAfter?: string;
}

/** Page-number params (part 4): page ≥ 1, limit 1..100. */
export function pageQuery(p: PageParams = {}): { page?: number; limit?: number; includeTotal?: boolean } {
  if (p.page !== undefined && (!Number.isInteger(p.page) || p.page < 1)) throw new ValidationError('page', 'must be an integer >= 1');
  intRange('limit', p.limit, 1, 100);
  return { page: p.page, limit: p.limit, includeTotal: p.includeTotal };
}

/** A positive integer limit where the interface gives no upper bound. */
export function positiveLimit(limit: number | undefined): void {
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1)) throw new ValidationError('limit', 'must be an integer >= 1');
}

/** Drop undefined entries; stringify the rest for the query string. */
export function q(o: Record<string, unknown>): Record<string, string | number | boolean | undefined> {
  const out: Record<string, string | number | boolean | undefined> = {};
  for (const [k, v] of Object.entries(o)) {
    if (v === undefined) continue;
    out[k] = typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? v : JSON.stringify(v);
  }
  return out;
}
