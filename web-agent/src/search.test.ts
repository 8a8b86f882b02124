import { describe, expect, test } from 'vitest';
import type { CallDetail, CallRecord } from '../../shared/records.ts';
import {
  apiQuery,
  callTime,
  describeDetail,
  emptyFilters,
  filtersFromQuery,
  filtersToQuery,
  initialSearch,
  openedCall,
  pageQuery,
  playable,
  reduceSearch,
  type SearchEvent,
  type SearchState,
} from './search.ts';
import { inLanguage } from './i18n/testing.ts';

// The pages' words in English (the catalogue the server serves).
inLanguage('en');

const rec = (wacid: string, extra: Partial<CallRecord> = {}): CallRecord => ({
  wacid,
  phoneId: 'p1',
  businessNumber: '+15550001000',
  customer: { phoneNumber: '+15551234567' },
  direction: 'inbound',
  outcome: 'answered',
  receivedAt: '2026-11-24T10:00:00.000Z',
  media: [],
  ...extra,
});
const run = (events: SearchEvent[], from: SearchState = initialSearch) => events.reduce(reduceSearch, from);

describe('filters → query', () => {
  test('only the filled fields, in the API order, trimmed; numbers compacted; a BSUID kept as typed', () => {
    const r = filtersToQuery({ ...emptyFilters, q: '  refund please ', customer: '+1 555-123 4567', agent: ' agent1 ', businessNumber: '+1 (555) 000-1000', outcome: 'missed', direction: 'inbound' });
    expect(r).toEqual({ ok: true, query: 'customer=%2B15551234567&agent=agent1&businessNumber=%2B15550001000&direction=inbound&outcome=missed&q=refund+please' });
    expect(filtersToQuery({ ...emptyFilters, customer: 'US.13491208655302741918' })).toEqual({ ok: true, query: 'customer=US.13491208655302741918' });
    expect(filtersToQuery(emptyFilters)).toEqual({ ok: true, query: '' });
  });
  test('from / to: the local datetime-local value goes out as ISO 8601 UTC', () => {
    const r = filtersToQuery({ ...emptyFilters, from: '2026-11-24T09:30', to: '2026-11-24T18:00' });
    expect(r.ok).toBe(true);
    const q = new URLSearchParams(r.ok ? r.query : '');
    expect(q.get('from')).toBe(new Date('2026-11-24T09:30').toISOString());
    expect(q.get('to')).toBe(new Date('2026-11-24T18:00').toISOString());
  });
  test('wrong input names the field and the rule; nothing is sent', () => {
    expect(filtersToQuery({ ...emptyFilters, from: 'yesterday' })).toEqual({ ok: false, error: { field: 'from', message: 'From: not a date and time.' } });
    expect(filtersToQuery({ ...emptyFilters, from: '2026-11-25T00:00', to: '2026-11-24T00:00' })).toEqual({ ok: false, error: { field: 'to', message: 'To: must not be before From.' } });
    const c = filtersToQuery({ ...emptyFilters, customer: '5551234567' });
    expect(c).toMatchObject({ ok: false, error: { field: 'customer' } });
    expect(!c.ok && c.error.message).toMatch(/^Customer: Start the number with \+/);
    expect(filtersToQuery({ ...emptyFilters, outcome: 'won' })).toMatchObject({ ok: false, error: { field: 'outcome' } });
    expect(filtersToQuery({ ...emptyFilters, direction: 'sideways' })).toMatchObject({ ok: false, error: { field: 'direction' } });
    expect(filtersToQuery({ ...emptyFilters, q: 'x'.repeat(501) })).toMatchObject({ ok: false, error: { field: 'q' } });
  });
  test('apiQuery adds limit and cursor', () => {
    expect(apiQuery('agent=a1')).toBe('agent=a1&limit=25');
    expect(apiQuery('', 'abc', 10)).toBe('limit=10&cursor=abc');
  });
  test('the page URL round-trips: filters (times back in local time) and the open call', () => {
    const typed = { ...emptyFilters, from: '2026-11-24T09:30', customer: '+15551234567', outcome: 'missed' };
    const s = run([...Object.entries(typed).map(([field, value]) => ({ type: 'edit', field, value }) as SearchEvent), { type: 'search' }, { type: 'open', wacid: 'w 1' }]);
    const back = filtersFromQuery(pageQuery(s));
    expect(back).toEqual({ filters: typed, call: 'w 1' });
    expect(filtersFromQuery('?from=garbage').filters.from).toBe('');
    expect(pageQuery(initialSearch)).toBe('');
  });
});

describe('search state', () => {
  test('a search asks for a request (seq bumps); its answer fills the results and the cursor', () => {
    const s1 = run([{ type: 'edit', field: 'agent', value: 'agent1' }, { type: 'search' }]);
    expect(s1).toMatchObject({ phase: 'searching', seq: 1, applied: 'agent=agent1' });
    const s2 = reduceSearch(s1, { type: 'results', seq: 1, items: [rec('w1'), rec('w2')], cursor: 'c1' });
    expect(s2).toMatchObject({ phase: 'done', cursor: 'c1' });
    expect(s2.results.map((r) => r.wacid)).toEqual(['w1', 'w2']);
  });
  test('Load more appends the next page (a repeated call once) and takes its cursor; the last page has none', () => {
    let s = run([{ type: 'search' }, { type: 'results', seq: 1, items: [rec('w1'), rec('w2')], cursor: 'c1' }, { type: 'more' }]);
    expect(s).toMatchObject({ phase: 'more', seq: 2, applied: '' });
    s = reduceSearch(s, { type: 'results', seq: 2, items: [rec('w2'), rec('w3')] });
    expect(s.results.map((r) => r.wacid)).toEqual(['w1', 'w2', 'w3']);
    expect(s.cursor).toBeUndefined();
    expect(reduceSearch(s, { type: 'more' })).toBe(s); // nothing more to load
  });
  test('a late answer to an older search is dropped', () => {
    let s = run([{ type: 'search' }, { type: 'edit', field: 'agent', value: 'b' }, { type: 'search' }]);
    expect(s.seq).toBe(2);
    s = reduceSearch(s, { type: 'results', seq: 1, items: [rec('old')] });
    expect(s.results).toEqual([]);
    expect(s.phase).toBe('searching');
    s = reduceSearch(s, { type: 'results', seq: 2, items: [rec('new')] });
    expect(s.results.map((r) => r.wacid)).toEqual(['new']);
  });
  test('an invalid form flags the field and sends nothing; fixing that field clears the flag', () => {
    let s = run([{ type: 'edit', field: 'customer', value: '12' }, { type: 'search' }]);
    expect(s.seq).toBe(0);
    expect(s.invalid?.field).toBe('customer');
    s = reduceSearch(s, { type: 'edit', field: 'customer', value: '+15551234567' });
    expect(s.invalid).toBeUndefined();
  });
  test('a failed search shows why and clears the results; a failed Load more keeps them and its cursor', () => {
    const done = run([{ type: 'search' }, { type: 'results', seq: 1, items: [rec('w1')], cursor: 'c1' }]);
    const moreFailed = run([{ type: 'more' }, { type: 'failed', seq: 2, message: 'boom' }], done);
    expect(moreFailed).toMatchObject({ phase: 'failed', error: 'boom', cursor: 'c1' });
    expect(moreFailed.results).toHaveLength(1);
    expect(reduceSearch(moreFailed, { type: 'more' }).phase).toBe('more');
    const searchFailed = run([{ type: 'search' }, { type: 'failed', seq: 2, message: 'down' }], done);
    expect(searchFailed).toMatchObject({ phase: 'failed', error: 'down', results: [] });
  });
  test('Clear filters empties the form and searches again', () => {
    const s = run([{ type: 'edit', field: 'q', value: 'hello' }, { type: 'search' }, { type: 'reset' }]);
    expect(s.form).toEqual(emptyFilters);
    expect(s).toMatchObject({ seq: 2, applied: '' });
  });
  test('opening a call: the row shows at once, the detail replaces it; answers for another call are ignored', () => {
    const base = run([{ type: 'search' }, { type: 'results', seq: 1, items: [rec('w1'), rec('w2')] }]);
    let s = reduceSearch(base, { type: 'open', wacid: 'w1' });
    expect(s.detail.state).toBe('loading');
    expect(openedCall(s)?.wacid).toBe('w1');
    expect(reduceSearch(s, { type: 'open', wacid: 'w1' })).toBe(s); // already loading: no second request
    const detail: CallDetail = { ...rec('w1'), timeline: [{ at: '2026-11-24T10:00:00.000Z', event: 'connect' }] };
    expect(reduceSearch(s, { type: 'detail', wacid: 'w2', record: { ...detail, wacid: 'w2' } })).toBe(s);
    s = reduceSearch(s, { type: 'detail', wacid: 'w1', record: detail });
    expect(openedCall(s)).toEqual(detail);
    s = run([{ type: 'transcriptLoading', wacid: 'w1' }, { type: 'transcript', wacid: 'w1', result: { ok: true, lines: [{ text: 'hi' }] } }], s);
    expect(s.transcript).toMatchObject({ state: 'ready' });
    s = reduceSearch(s, { type: 'close' });
    expect(s).toMatchObject({ selected: undefined, detail: { state: 'none' }, transcript: { state: 'none' } });
    expect(s.results).toHaveLength(2);
  });
  test('a failed detail can be opened again (retry)', () => {
    const s = run([{ type: 'open', wacid: 'w9' }, { type: 'detailFailed', wacid: 'w9', message: 'not found' }]);
    expect(s.detail).toEqual({ state: 'failed', error: 'not found' });
    expect(openedCall(s)).toBeUndefined();
    expect(reduceSearch(s, { type: 'open', wacid: 'w9' }).detail.state).toBe('loading');
  });
});

describe('helpers', () => {
  test('playable: only an available asset with a URL', () => {
    const media = [
      { kind: 'recording', mediaAssetId: 'a', status: 'announced' },
      { kind: 'transcription', mediaAssetId: 'b', status: 'available', url: '/api/archive/w/b.json' },
      { kind: 'recording', mediaAssetId: 'c', status: 'available' },
    ] as const;
    expect(playable([...media], 'recording')).toBeUndefined();
    expect(playable([...media], 'transcription')?.url).toBe('/api/archive/w/b.json');
  });
  test('callTime: today in short, other days with the date', () => {
    const now = Date.parse('2026-11-24T15:00:00Z');
    expect(callTime('2026-11-24T10:05:00Z', now, 'UTC')).toBe('Today 10:05');
    expect(callTime('2026-11-20T10:05:00Z', now, 'UTC')).toBe('20 Nov 2026, 10:05');
  });
  test('describeDetail: short key/value text, long values clipped', () => {
    expect(describeDetail({ reason: 'USER_HANGUP', agent: 'a1', skip: undefined })).toBe('reason: USER_HANGUP · agent: a1');
    expect(describeDetail({ sdp: 'x'.repeat(200) })).toMatch(/^sdp: x{79}…$/);
  });
});
