/**
 * Query values as routes read them, with the 400's message when one breaks its rule.
 */

/** A value as a message quotes it (at most 40 characters). */
export const shown = (v: string) => JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v);

/** Page sizes: `limit` when not given, and the most it may be. */
export const LIMIT_DEFAULT = 100;
export const LIMIT_MAX = 1000;

/** `limit` from the query (1 to LIMIT_MAX, LIMIT_DEFAULT when absent): the value, or the message of the 400. */
export function parseLimit(values: string[] | undefined): number | { error: string } {
  if (!values || values.length === 0) return LIMIT_DEFAULT;
  if (values.length > 1) return { error: 'limit: give it at most once' };
  const v = values[0]!;
  const rule = `limit: must be an integer from 1 to ${LIMIT_MAX} (got ${shown(v)})`;
  if (!/^\d{1,7}$/.test(v)) return { error: rule };
  const n = Number(v);
  return n >= 1 && n <= LIMIT_MAX ? n : { error: rule };
}

