/** The search results: a table on a desktop, one card per call on a phone (CSS), newest first. */
import type { CallRecord } from '../../../../shared/records.ts';
import { formatCaller, formatDuration } from '../../format.ts';
import { t } from '../../i18n/index.ts';
import { callTime, customerText, describeDirection, describeOutcome, type SearchState } from '../../search.ts';

export interface ResultsProps {
  s: SearchState;
  now: number;
  onOpen(wacid: string): void;
  onMore(): void;
}

const span = (ms: number | undefined) => (ms === undefined ? '–' : formatDuration(ms / 1000));

function statusText(s: SearchState): string {
  if (s.phase === 'searching') return t('archive.searching');
  if (s.phase === 'idle') return '';
  return t(s.cursor ? 'archive.foundSoFar' : 'archive.found', { n: s.results.length });
}

function Row({ r, now, open, onOpen }: { r: CallRecord; now: number; open: boolean; onOpen(wacid: string): void }) {
  return (
    // data-label: on a phone each row is a card and each cell carries its heading.
    <tr data-testid="search-result" data-wacid={r.wacid} data-outcome={r.outcome} aria-current={open ? 'true' : undefined} onClick={() => onOpen(r.wacid)}>
      <td data-label={t('archive.time')} data-testid="result-time">
        <time dateTime={r.receivedAt}>{callTime(r.receivedAt, now)}</time>
      </td>
      <td data-label={t('archive.customer')} data-testid="result-customer">
        <button type="button" class="linklike" data-testid="result-open" onClick={(e) => (e.stopPropagation(), onOpen(r.wacid))}>
          {formatCaller(customerText(r.customer))}
        </button>
      </td>
      <td data-label={t('archive.businessNumber')} data-testid="result-business">{r.businessNumber ? formatCaller(r.businessNumber) : '–'}</td>
      <td data-label={t('archive.agent')} data-testid="result-agent">{r.agent ?? '–'}</td>
      <td data-label={t('archive.direction')} data-testid="result-direction">{describeDirection(r.direction)}</td>
      <td data-label={t('archive.wait')} data-testid="result-wait">{span(r.waitMs)}</td>
      <td data-label={t('archive.talk')} data-testid="result-talk">{span(r.talkMs)}</td>
      <td data-label={t('archive.outcome')} data-testid="result-outcome">
        <span class="outcome" data-outcome={r.outcome}>
          {describeOutcome(r.outcome)}
        </span>
      </td>
    </tr>
  );
}

export function SearchResults({ s, now, onOpen, onMore }: ResultsProps) {
  return (
    <>
      <h2 id="results-title" class="card-title">
        {t('archive.calls')}{' '}
        <span class="count" data-testid="search-count">
          {String(s.results.length)}
        </span>
      </h2>
      <p class="hint" data-testid="search-status" role="status" aria-live="polite">
        {statusText(s)}
      </p>
      <p class="form-error" data-testid="search-error" role="alert" hidden={!s.error}>
        {s.error ?? ''}
      </p>
      <div class="table-wrap" tabIndex={0} hidden={s.results.length === 0}>
        <table class="table results" data-testid="search-results">
          <thead>
            <tr>
              <th scope="col">{t('archive.time')}</th>
              <th scope="col">{t('archive.customer')}</th>
              <th scope="col">{t('archive.businessNumber')}</th>
              <th scope="col">{t('archive.agent')}</th>
              <th scope="col">{t('archive.direction')}</th>
              <th scope="col">{t('archive.wait')}</th>
              <th scope="col">{t('archive.talk')}</th>
              <th scope="col">{t('archive.outcome')}</th>
            </tr>
          </thead>
          <tbody>
            {s.results.map((r) => (
              <Row key={r.wacid} r={r} now={now} open={s.selected === r.wacid} onOpen={onOpen} />
            ))}
          </tbody>
        </table>
      </div>
      <div class="actions" hidden={!s.cursor}>
        <button type="button" class="btn" data-testid="search-more" disabled={s.phase === 'more' || s.phase === 'searching'} onClick={onMore}>
          {s.phase === 'more' ? t('archive.loading') : t('archive.loadMore')}
        </button>
      </div>
    </>
  );
}
