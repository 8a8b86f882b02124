/**
 * Recordings and transcriptions announced (`media.available`) while the page is open: the
 * search shows what history holds; this shows what just arrived, each with its download
 * and a way to open its call.
 */
import { t } from '../../i18n/index.ts';
import type { MediaItem } from '../../reducer.ts';

export function AnnouncedMedia({ items, onOpen }: { items: MediaItem[]; onOpen(wacid: string): void }) {
  return (
    <>
      <h2 id="archive-title" class="card-title">
        {t('archive.newTitle')}
      </h2>
      <p class="empty" data-testid="archive-empty" hidden={items.length > 0}>
        {t('archive.newEmpty')}
      </p>
      <ul class="archive" data-testid="archive-list" aria-live="polite">
        {items.map((m) => (
          <li key={`${m.wacid}/${m.kind}`} data-testid="archive-item" data-wacid={m.wacid} data-kind={m.kind}>
            <span>{t('archive.newItem', { kind: m.kind, wacid: m.wacid })}</span>
            <span class="archive-links">
              <button type="button" class="linklike" data-testid="archive-open" onClick={() => onOpen(m.wacid)}>
                {t('archive.openCall')}
              </button>
              <a href={m.url} download="" data-testid="archive-download">
                {m.kind === 'recording' ? t('archive.downloadOgg') : t('archive.downloadJson')}
              </a>
            </span>
          </li>
        ))}
      </ul>
    </>
  );
}
