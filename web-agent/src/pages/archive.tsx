/**
 * Archive (`/archive`): recordings and transcriptions announced by `media.available`
 * frames, plus the server's listing (`GET /api/archive`). Preact, drawn from the reducer.
 */
import '../csp.ts'; // first: before any frame is parsed
import { render } from 'preact';
import { connectPage } from './shell.ts';
import { getMe, goToLogin, listArchive } from '../api.ts';
import { mayOpen, renderShell } from '../ui/shell.tsx';
import { initialState, reduce, type MediaItem, type UiEvent, type UiState } from '../reducer.ts';
import type { Me } from '../api.ts';

let state: UiState = initialState;
let listed: MediaItem[] = [];
let me: Me | undefined;

function dispatch(ev: UiEvent): void {
  state = reduce(state, ev);
  draw();
}

export function ArchiveList({ items }: { items: MediaItem[] }) {
  return (
    <>
      <h1 id="archive-title" class="card-title">
        Recordings and transcriptions
      </h1>
      <p class="empty" data-testid="archive-empty" hidden={items.length > 0}>
        Nothing yet. New recordings and transcriptions appear here as they become available.
      </p>
      <ul class="archive" data-testid="archive-list" aria-live="polite">
        {items.map((m) => (
          <li key={`${m.wacid}/${m.kind}`} data-testid="archive-item" data-wacid={m.wacid} data-kind={m.kind}>
            <span>{`${m.kind === 'recording' ? 'Recording' : 'Transcription'} · call ${m.wacid}`}</span>
            <a href={m.url} download="" data-testid="archive-download">
              {m.kind === 'recording' ? 'Download .ogg' : 'Download .json'}
            </a>
          </li>
        ))}
      </ul>
    </>
  );
}

/** Announced and listed items, each once. */
function items(): MediaItem[] {
  const seen = new Set<string>();
  return [...state.media, ...listed].filter((m) => {
    const key = `${m.wacid}/${m.kind}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function draw(): void {
  renderShell({ me, link: state.link, error: state.error, onDismissError: () => dispatch({ type: 'dismissError' }) });
  render(<ArchiveList items={items()} />, document.getElementById('archive')!);
}

async function boot(): Promise<void> {
  me = await getMe().catch(() => undefined);
  if (!me) return goToLogin();
  draw();
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
  draw();
}

void boot();
