/**
 * Archive (`/archive`): a search over the call history (`GET /api/history/calls`, filters
 * above, results newest first with "Load more"); opening a call shows its recording in an
 * audio player, the transcript beside it (a click on a line seeks), its timeline and the
 * downloads. Recordings announced by `media.available` while the page is open are listed
 * too, and refresh the open call. The search state is pure (src/search.ts); this file sends
 * the requests the state asks for and keeps the URL in step (`?…filters&call=<wacid>`), so a
 * search or a call can be linked and Back closes an opened call.
 */
import { onLanguageChange, t } from '../i18n/index.ts';
import { adoptUserLanguage, startLanguage } from '../language.ts';
import '../csp.ts'; // first: before any frame is parsed
import { render } from 'preact';
import { connectPage } from './connect-page.ts';
import { SearchFilters } from './archive/filters.tsx';
import { SearchResults } from './archive/results.tsx';
import { CallDetailView } from './archive/detail.tsx';
import { AnnouncedMedia } from './archive/announced.tsx';
import { getCall, getJson, getMe, goToLogin, searchCalls, type Me } from '../api.ts';
import { mayOpen, renderShell } from '../ui/shell.tsx';
import { initialState, reduce, type UiEvent, type UiState } from '../reducer.ts';
import { apiQuery, filtersFromQuery, initialSearch, openedCall, pageQuery, playable, reduceSearch, type SearchEvent, type SearchState } from '../search.ts';
import { readTranscript } from '../transcript.ts';

let state: UiState = initialState;
let search: SearchState = initialSearch;
let me: Me | undefined;
/** This page put the open call in the history (Back then closes it, staying on the page). */
let pushed = false;

function dispatch(ev: UiEvent): void {
  state = reduce(state, ev);
  draw();
  // A recording or transcription of the open call arrived: show it without a reload.
  if (ev.type === 'server' && ev.msg.type === 'media.available' && ev.msg.wacid === search.selected) void loadDetail(ev.msg.wacid, true);
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** Apply a search event, then send whatever request the new state asks for. */
function act(ev: SearchEvent, opts: { history?: 'push' | 'none' } = {}): void {
  const before = search;
  search = reduceSearch(search, ev);
  if (search.seq !== before.seq) void runSearch(search.seq, search.applied ?? '', search.phase === 'more' ? search.cursor : undefined);
  const opened = search.selected !== undefined && search.detail.state === 'loading' && (before.selected !== search.selected || before.detail.state !== 'loading');
  if (opened) void loadDetail(search.selected!);
  const url = location.pathname + pageQuery(search);
  if (opts.history !== 'none' && url !== location.pathname + location.search) {
    // Opening a call is a step Back undoes; a new search replaces the URL.
    if (before.selected !== search.selected && search.selected) {
      history.pushState(null, '', url);
      pushed = true;
    } else history.replaceState(null, '', url);
  }
  draw();
  if (opened) document.getElementById('detail')?.scrollIntoView({ block: 'start' });
}

async function runSearch(seq: number, query: string, cursor: string | undefined): Promise<void> {
  try {
    const page = await searchCalls(apiQuery(query, cursor));
    act({ type: 'results', seq, items: page.items, cursor: page.cursor });
  } catch (e) {
    act({ type: 'failed', seq, message: t('archive.searchFailed', { why: message(e) }) });
  }
}

/** Load the open call; then its transcript (once per opening, or again after a failure). */
async function loadDetail(wacid: string, refresh = false): Promise<void> {
  let record;
  try {
    record = await getCall(wacid);
  } catch (e) {
    if (!refresh) act({ type: 'detailFailed', wacid, message: message(e) });
    return;
  }
  act({ type: 'detail', wacid, record });
  const file = playable(record.media, 'transcription');
  if (!file || search.selected !== wacid || search.transcript.state === 'ready' || search.transcript.state === 'loading') return;
  act({ type: 'transcriptLoading', wacid });
  try {
    act({ type: 'transcript', wacid, result: readTranscript(await getJson(`${file.url}?use=view`)) });
  } catch (e) {
    act({ type: 'transcriptFailed', wacid, message: message(e) });
  }
}

function Page({ now }: { now: number }) {
  const call = openedCall(search);
  // Back closes a call this page opened; a call the URL came with closes in place.
  const close = () => (pushed ? history.back() : act({ type: 'close' }));
  return (
    <>
      <section class="card" id="search">
        <SearchFilters
          form={search.form}
          invalid={search.invalid}
          busy={search.phase === 'searching'}
          onEdit={(field, value) => act({ type: 'edit', field, value }, { history: 'none' })}
          onSearch={() => act({ type: 'search' })}
          onReset={() => act({ type: 'reset' })}
        />
      </section>
      {search.selected && (
        <section class="card detail-card" id="detail">
          {call ? (
            <CallDetailView key={call.wacid} s={search} call={call} now={now} onClose={close} onRetry={() => act({ type: 'open', wacid: call.wacid })} />
          ) : (
            <div data-testid="call-detail" data-wacid={search.selected} data-state={search.detail.state}>
              <p class={search.detail.state === 'failed' ? 'form-error' : 'hint'} role="status">
                {search.detail.state === 'failed' ? t('archive.callFailed', { wacid: search.selected, why: search.detail.error ?? '' }) : t('archive.callLoading', { wacid: search.selected })}
              </p>
              <button type="button" class="btn btn-quiet" data-testid="detail-close" onClick={close}>
                {t('archive.back')}
              </button>
            </div>
          )}
        </section>
      )}
      <section class="card" id="results" aria-labelledby="results-title">
        <SearchResults s={search} now={now} onOpen={(wacid) => act({ type: 'open', wacid })} onMore={() => act({ type: 'more' })} />
      </section>
      <section class="card" id="archive" aria-labelledby="archive-title">
        <AnnouncedMedia items={state.media} onOpen={(wacid) => act({ type: 'open', wacid })} />
      </section>
    </>
  );
}

function draw(): void {
  renderShell({ me, link: state.link, error: state.error, onDismissError: () => dispatch({ type: 'dismissError' }) });
  const root = document.getElementById('main');
  if (root && me && mayOpen(me, '/archive')) render(<Page now={Date.now()} />, root);
}

/** The URL (Back / Forward): open or close the call it names. */
function followUrl(): void {
  const { call } = filtersFromQuery(location.search);
  if (call && call !== search.selected) act({ type: 'open', wacid: call }, { history: 'none' });
  else if (!call && search.selected) {
    pushed = false;
    act({ type: 'close' }, { history: 'none' });
  }
}

async function boot(): Promise<void> {
  await startLanguage().catch(() => undefined);
  me = await getMe().catch(() => undefined);
  if (!me) return goToLogin();
  await adoptUserLanguage();
  onLanguageChange(draw);
  draw();
  if (!mayOpen(me, '/archive')) {
    dispatch({ type: 'error', message: t('archive.forbidden'), code: 'FORBIDDEN', now: Date.now() });
    return;
  }
  // A linked search and call (`?…filters&call=<wacid>`): fill the form, open the call, then
  // search (the newest calls when there are no filters).
  const { filters, call } = filtersFromQuery(location.search);
  for (const [field, value] of Object.entries(filters)) if (value) act({ type: 'edit', field: field as keyof typeof filters, value }, { history: 'none' });
  if (call) act({ type: 'open', wacid: call }, { history: 'none' });
  act({ type: 'search' });
  addEventListener('popstate', followUrl);
  connectPage(me, dispatch);
}

void boot();
