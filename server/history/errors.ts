/**
 * What a failed history statement means, for the writer and the routes on the database.
 *
 * - `isDataError`: the database refused the data itself, retrying cannot help (the writer
 *   sets such a fact aside).
 * - `isDbOutage`: the database is not answering, or not answering in time (the routes answer
 *   503 UNAVAILABLE, as the history routes do; the writer retries).
 */
import { HttpUnavailable } from '../ops/errors.ts';

/**
 * Data exceptions (class 22: invalid byte sequence 0x00, bad JSON escapes, values out of
 * range), program limits (54: an index row too large), not-null and check violations.
 */
export function isDataError(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && (/^(22|54)/.test(code) || code === '23502' || code === '23514');
}

const OUTAGE_CODES = /^(08|53|57P|55000$|57014$|HISTORY_NOT_OPEN$|E(CONNREFUSED|CONNRESET|TIMEDOUT|PIPE|HOSTUNREACH|NOTFOUND|AI_AGAIN)$)/;
const OUTAGE_MESSAGES = /connection terminated|timeout exceeded when trying to connect|connection error|not queryable|after calling end|database .* not open|terminating connection|server closed the connection|search pool busy/i;

/** The database (or the pool in front of it) is down, cut off, overloaded or too slow. */
export function isDbOutage(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown } | undefined;
  if (typeof e?.code === 'string' && OUTAGE_CODES.test(e.code)) return true;
  return typeof e?.message === 'string' && OUTAGE_MESSAGES.test(e.message);
}

/** The answer to a route whose history statement failed because the database is out. */
export const historyUnavailable = (): HttpUnavailable => new HttpUnavailable('the call history database is not answering; try again shortly');

/** Bad input to the search: names the field and the rule (the route answers 400). */
export class HistoryQueryError extends Error {
  override readonly name = 'HistoryQueryError';
  constructor(
    readonly field: string,
    readonly rule: string,
  ) {
    super(`${field}: ${rule}`);
  }
}
