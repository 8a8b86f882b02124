/**
 * Async iterators for the two pagination styles of part 4, with its stop rules:
 * - page-number: continue while `length` equals the requested `limit`; stop when smaller.
 * - cursor: stop when `length` is 0 or `cursor.after` is absent; pass `cursor.after`
 *   back unchanged.
 * Filters and sort are captured once and sent unchanged on every page of a traversal.
 */
import type { CursorPage, Page } from './schemas.ts';
import { ValidationError } from './errors.ts';

export const DEFAULT_PAGE_LIMIT = 10;

/** Items of every page from `startPage`, page-number style. */
export async function* iteratePageNumber<T>(
  fetchPage: (page: number, limit: number) => Promise<Page<T>>,
  opts: { page?: number | undefined; limit?: number | undefined } = {},
): AsyncGenerator<T, void, undefined> {
  const limit = opts.limit ?? DEFAULT_PAGE_LIMIT;
  for (let page = opts.page ?? 1; ; page++) {
    const p = await fetchPage(page, limit);
    yield* p.items;
    if (p.length !== limit) return;
  }
}

/** Items of every page, cursor style; `after` is the cursor to start from (usually none). */
export async function* iterateCursor<T>(
  fetchPage: (after: string | undefined) => Promise<CursorPage<T>>,
  opts: { after?: string | undefined } = {},
): AsyncGenerator<T, void, undefined> {
  let after = opts.after;
  for (;;) {
    const p = await fetchPage(after);
    yield* p.items;
    const next = p.cursor?.after;
    if (p.length === 0 || next === undefined || next === '') return;
    after = next;
  }
}

/**
 * Reconciliation after `OutcomeUnknownError`: look for the record our request carried
 * `externalId` in (part 2: a caller reference, not an idempotency key: there may be
 * several, so all are returned). Stops after `maxItems` to bound the scan.
 */
export async function findByExternalId<T extends { externalId?: string | undefined }>(
  items: AsyncIterable<T>,
  externalId: string,
  opts: { maxItems?: number } = {},
): Promise<T[]> {
  if (!externalId) throw new ValidationError('externalId', 'is required to reconcile');
  const found: T[] = [];
  let n = 0;
  for await (const it of items) {
    if (it.externalId === externalId) found.push(it);
    if (++n >= (opts.maxItems ?? 10_000)) break;
  }
  return found;
}
