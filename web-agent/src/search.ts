/**
 * The archive's search page as pure logic: the filter form → the query of
 * `GET /api/history/calls` (and back, for the page's own URL), the results with their
 * cursor ("Load more"), and the call opened from them (its detail and transcript).
 * No DOM, no fetch: the page sends the request the state asks for and feeds the answer back
 * with the same `seq`, so a late answer to an older search is dropped here.
 */
import { CALL_DIRECTIONS, CALL_OUTCOMES, CALL_SEARCH_FIELDS, type CallDetail, type CallOutcome, type CallRecord, type CallSearchField, type MediaKind, type MediaRecord } from '../../shared/records.ts';
import { parseCallee } from './callback.ts';
import { locale, t, type MessageKey } from './i18n/index.ts';
import type { Transcript } from './transcript.ts';

/** The form as typed ('' = no filter). `from`/`to` are `datetime-local` values (local time, no zone). */
export type Filters = Record<CallSearchField, string>;
export const emptyFilters: Filters = { from: '', to: '', customer: '', agent: '', businessNumber: '', direction: '', outcome: '', q: '' };

export const PAGE_SIZE = 25;

export interface FieldError {
  field: CallSearchField;
  message: string;
}

/** A `datetime-local` value (local time) as ISO 8601 UTC; undefined when it is not a time. */
function localToIso(v: string): string | undefined {
  if (!/^\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d+)?)?$/.test(v)) return undefined;
  const t = new Date(v).getTime();
  return Number.isFinite(t) ? new Date(t).toISOString() : undefined;
}

/** ISO 8601 → the `datetime-local` value in this browser's zone (minutes). */
function isoToLocal(iso: string): string | undefined {
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return undefined;
  const d = new Date(t);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** Phone numbers may be typed with spaces, dashes, dots or brackets; ids are kept as typed. */
const compactNumber = (v: string) => (/^\+[\d\s\-().]+$/.test(v) ? v.replace(/[\s\-().]/g, '') : v);

/**
 * The search's query (`from=…&customer=…`, filters in the API's order, no limit or cursor),
 * or the first field that is wrong and why.
 */
export function filtersToQuery(f: Filters): { ok: true; query: string } | { ok: false; error: FieldError } {
  const q = new URLSearchParams();
  const times: Partial<Record<'from' | 'to', string>> = {};
  for (const field of CALL_SEARCH_FIELDS) {
    const raw = f[field].trim();
    if (raw === '') continue;
    let value = raw;
    if (field === 'from' || field === 'to') {
      const iso = localToIso(raw);
      if (!iso) return { ok: false, error: { field, message: t(field === 'from' ? 'archive.badFrom' : 'archive.badTo') } };
      value = times[field] = iso;
    } else if (field === 'customer') {
      const c = parseCallee(raw);
      if (!c.ok) return { ok: false, error: { field, message: t('archive.badCustomer', { why: c.message }) } };
      value = c.callee.value;
    } else if (field === 'businessNumber') {
      value = compactNumber(raw);
    } else if (field === 'direction' && !(CALL_DIRECTIONS as readonly string[]).includes(raw)) {
      return { ok: false, error: { field, message: t('archive.badDirection', { list: CALL_DIRECTIONS.join(', ') }) } };
    } else if (field === 'outcome' && !(CALL_OUTCOMES as readonly string[]).includes(raw)) {
      return { ok: false, error: { field, message: t('archive.badOutcome', { list: CALL_OUTCOMES.join(', ') }) } };
    } else if (field === 'q' && raw.length > 500) {
      return { ok: false, error: { field, message: t('archive.qTooLong', { max: 500 }) } };
    }
    q.set(field, value);
  }
  if (times.from && times.to && times.from > times.to) return { ok: false, error: { field: 'to', message: t('archive.toBeforeFrom') } };
  return { ok: true, query: q.toString() };
}

/** The API request for a page of results: the search's query plus `limit` and `cursor`. */
export function apiQuery(query: string, cursor?: string, limit = PAGE_SIZE): string {
  const q = new URLSearchParams(query);
  q.set('limit', String(limit));
  if (cursor) q.set('cursor', cursor);
  return q.toString();
}

/** The page's own URL query (`?from=…&call=<wacid>`) → the form and the call to open. */
export function filtersFromQuery(search: string): { filters: Filters; call?: string } {
  const q = new URLSearchParams(search);
  const filters = { ...emptyFilters };
  for (const field of CALL_SEARCH_FIELDS) {
    const v = q.get(field);
    if (v === null) continue;
    filters[field] = field === 'from' || field === 'to' ? (isoToLocal(v) ?? '') : v;
  }
  const call = q.get('call');
  return call ? { filters, call } : { filters };
}

// ---- state ---------------------------------------------------------------------------------

export type LoadState = 'none' | 'loading' | 'ready' | 'failed';

export interface SearchState {
  form: Filters;
  invalid?: FieldError;
  /** The query of the results shown (or being fetched); undefined before the first search. */
  applied?: string;
  /** `searching`: a new search is out; `more`: the next page is out. */
  phase: 'idle' | 'searching' | 'more' | 'done' | 'failed';
  /** Bumped per request; an answer with another seq is stale. */
  seq: number;
  results: CallRecord[];
  cursor?: string;
  error?: string;
  /** The call opened (`wacid`), its detail and its transcript. */
  selected?: string;
  detail: { state: LoadState; record?: CallDetail; error?: string };
  transcript: { state: LoadState; result?: Transcript; error?: string };
}

export const initialSearch: SearchState = {
  form: emptyFilters,
  phase: 'idle',
  seq: 0,
  results: [],
  detail: { state: 'none' },
  transcript: { state: 'none' },
};

export type SearchEvent =
  | { type: 'edit'; field: CallSearchField; value: string }
  | { type: 'search' }
  | { type: 'reset' }
  | { type: 'more' }
  | { type: 'results'; seq: number; items: CallRecord[]; cursor?: string | undefined }
  | { type: 'failed'; seq: number; message: string }
  | { type: 'open'; wacid: string }
  | { type: 'close' }
  | { type: 'detail'; wacid: string; record: CallDetail }
  | { type: 'detailFailed'; wacid: string; message: string }
  | { type: 'transcriptLoading'; wacid: string }
  | { type: 'transcript'; wacid: string; result: Transcript }
  | { type: 'transcriptFailed'; wacid: string; message: string };

export function reduceSearch(s: SearchState, ev: SearchEvent): SearchState {
  switch (ev.type) {
    case 'edit': {
      const form = { ...s.form, [ev.field]: ev.value };
      // A fixed field stops being flagged at once; other fields wait for the next search.
      return { ...s, form, ...(s.invalid?.field === ev.field ? { invalid: undefined } : {}) };
    }
    case 'search':
    case 'reset': {
      const form = ev.type === 'reset' ? emptyFilters : s.form;
      const q = filtersToQuery(form);
      if (!q.ok) return { ...s, form, invalid: q.error };
      return { ...s, form, invalid: undefined, applied: q.query, phase: 'searching', seq: s.seq + 1, error: undefined };
    }
    case 'more':
      if (!s.cursor || s.phase === 'searching' || s.phase === 'more' || s.applied === undefined) return s;
      return { ...s, phase: 'more', seq: s.seq + 1, error: undefined };
    case 'results': {
      if (ev.seq !== s.seq) return s;
      const results = s.phase === 'more' ? [...s.results, ...ev.items.filter((i) => !s.results.some((r) => r.wacid === i.wacid))] : ev.items;
      return { ...s, phase: 'done', results, cursor: ev.cursor };
    }
    case 'failed':
      if (ev.seq !== s.seq) return s;
      // A failed "more" keeps the cursor, so the button can try again.
      return { ...s, phase: 'failed', error: ev.message, ...(s.phase === 'searching' ? { results: [], cursor: undefined } : {}) };
    case 'open':
      if (s.selected === ev.wacid && s.detail.state !== 'failed') return s;
      return { ...s, selected: ev.wacid, detail: { state: 'loading' }, transcript: { state: 'none' } };
    case 'close':
      return { ...s, selected: undefined, detail: { state: 'none' }, transcript: { state: 'none' } };
    case 'detail':
      if (ev.wacid !== s.selected) return s;
      return { ...s, detail: { state: 'ready', record: ev.record } };
    case 'detailFailed':
      if (ev.wacid !== s.selected) return s;
      return { ...s, detail: { state: 'failed', error: ev.message } };
    case 'transcriptLoading':
      if (ev.wacid !== s.selected) return s;
      return { ...s, transcript: { state: 'loading' } };
    case 'transcript':
      if (ev.wacid !== s.selected) return s;
      return { ...s, transcript: { state: 'ready', result: ev.result } };
    case 'transcriptFailed':
      if (ev.wacid !== s.selected) return s;
      return { ...s, transcript: { state: 'failed', error: ev.message } };
  }
}

/** The page's own URL query for this state: the applied search and the open call. */
export function pageQuery(s: SearchState): string {
  const q = new URLSearchParams(s.applied ?? '');
  if (s.selected) q.set('call', s.selected);
  const text = q.toString();
  return text ? `?${text}` : '';
}

/** The summary of the open call: its full record once loaded, else its row in the results. */
export function openedCall(s: SearchState): CallRecord | CallDetail | undefined {
  if (!s.selected) return undefined;
  return s.detail.record ?? s.results.find((r) => r.wacid === s.selected);
}

/** The asset of one kind that can be fetched (on disk, with a URL). */
export function playable(media: readonly MediaRecord[], kind: MediaKind): (MediaRecord & { url: string }) | undefined {
  return media.find((m): m is MediaRecord & { url: string } => m.kind === kind && m.status === 'available' && !!m.url);
}

// ---- words ---------------------------------------------------------------------------------

const OUTCOME_WORDS: Record<CallOutcome, MessageKey> = {
  answered: 'archive.outcomeAnswered',
  missed: 'archive.outcomeMissed',
  abandoned: 'archive.outcomeAbandoned',
  rejected: 'archive.outcomeRejected',
  failed: 'archive.outcomeFailed',
  'no-answer': 'archive.outcomeNoAnswer',
  'no-audio': 'archive.outcomeNoAudio',
  'in-progress': 'archive.outcomeInProgress',
};
export const describeOutcome = (o: CallOutcome): string => (OUTCOME_WORDS[o] ? t(OUTCOME_WORDS[o]) : o);

export const describeDirection = (d: string): string => (d === 'outbound' ? t('archive.outbound') : d === 'inbound' ? t('archive.inbound') : d);

/** The customer as a person reads them: the number, else the user id. */
export function customerText(c: CallRecord['customer']): string {
  return c.phoneNumber ?? c.userId ?? '–';
}

/** A media asset's state in words, for a recording or transcription that cannot be fetched. */
export function describeMediaStatus(m: MediaRecord): string {
  const kind = m.kind === 'recording' ? 'recording' : 'transcription';
  switch (m.status) {
    case 'available': return t('archive.mediaAvailable', { kind });
    case 'announced': return t('archive.mediaAnnounced', { kind });
    case 'failed': return t('archive.mediaFailed', { kind });
    case 'missing': return t('archive.mediaMissing', { kind });
  }
}

/** Bytes as a person reads them (1 decimal from 1 KB). */
export function formatBytes(n: number | undefined): string {
  if (n === undefined) return '';
  const one = new Intl.NumberFormat(locale(), { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  if (n < 1000) return `${new Intl.NumberFormat(locale()).format(n)} B`;
  if (n < 1_000_000) return `${one.format(n / 1000)} kB`;
  return `${one.format(n / 1_000_000)} MB`;
}

/** A timeline entry's detail as short `key: value` text (long values clipped). */
export function describeDetail(detail: Record<string, unknown> | undefined): string {
  if (!detail) return '';
  return Object.entries(detail)
    .filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => {
      const text = typeof v === 'string' ? v : JSON.stringify(v);
      return `${k}: ${text.length > 80 ? `${text.slice(0, 79)}…` : text}`;
    })
    .join(' · ');
}

/** When a call came in, in the reader's zone: "Today 14:05", else "29 Nov 2026, 14:05". `timeZone` is for tests. */
export function callTime(iso: string, now: number, timeZone?: string): string {
  const at = Date.parse(iso);
  if (!Number.isFinite(at)) return iso;
  const tz = timeZone ? { timeZone } : {};
  const day = (x: number) => new Intl.DateTimeFormat('en-CA', { year: 'numeric', month: '2-digit', day: '2-digit', ...tz }).format(x);
  const time = new Intl.DateTimeFormat(locale(), { hour: '2-digit', minute: '2-digit', hourCycle: 'h23', ...tz }).format(at);
  if (day(at) === day(now)) return t('archive.today', { time });
  return t('archive.onDay', { date: new Intl.DateTimeFormat(locale(), { day: 'numeric', month: 'short', year: 'numeric', ...tz }).format(at), time });
}
