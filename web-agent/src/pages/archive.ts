/**
 * Archive (`/archive`), a first shell: recordings and transcriptions announced by
 * `media.available` frames, plus the server's listing when it offers `GET /api/archive`.
 */
import '../csp.ts'; // first: before any frame is parsed
import { connectPage } from './shell.ts';
import { getMe, goToLogin, listArchive } from '../api.ts';
import { el, h, mayOpen, renderError, renderLink, setupChrome } from '../dom.ts';
import { initialState, reduce, type MediaItem, type UiEvent, type UiState } from '../reducer.ts';

let state: UiState = initialState;
let listed: MediaItem[] = [];

function dispatch(ev: UiEvent): void {
  state = reduce(state, ev);
  render();
}

function render(): void {
  renderLink(state.link);
  renderError(state.error);
  const seen = new Set<string>();
  const items = [...state.media, ...listed].filter((m) => {
    const key = `${m.wacid}/${m.kind}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  el('archive-empty').hidden = items.length > 0;
  el('archive-list').replaceChildren(
    ...items.map((m) =>
      h(
        'li',
        { 'data-testid': 'archive-item', 'data-wacid': m.wacid, 'data-kind': m.kind },
        h('span', {}, `${m.kind === 'recording' ? 'Recording' : 'Transcription'} · call ${m.wacid}`),
        h('a', { href: m.url, download: '', 'data-testid': 'archive-download' }, m.kind === 'recording' ? 'Download .ogg' : 'Download .json'),
      ),
    ),
  );
}

async function boot(): Promise<void> {
  const me = await getMe().catch(() => undefined);
  if (!me) return goToLogin();
  setupChrome(me);
  el('error-dismiss').addEventListener('click', () => dispatch({ type: 'dismissError' }));
  if (!mayOpen(me, '/archive')) {
    dispatch({ type: 'error', message: 'This page is for ops and supervisors. Use the links above.', code: 'FORBIDDEN', now: Date.now() });
    return;
  }
  try {
    listed = ((await listArchive()) ?? []).map((i) => ({ wacid: i.wacid, kind: i.kind, url: i.url, at: 0 }));
  } catch (e) {
    dispatch({ type: 'error', message: `Could not list the archive: ${(e as Error).message}`, code: 'ARCHIVE', now: Date.now() });
  }
  connectPage(me, dispatch);
  render();
}

void boot();
