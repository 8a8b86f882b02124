/** The archive's filter form: what `GET /api/history/calls` can filter on. */
import { CALL_DIRECTIONS, CALL_OUTCOMES, type CallSearchField } from '../../../../shared/records.ts';
import { t, type MessageKey } from '../../i18n/index.ts';
import { describeDirection, describeOutcome, type FieldError, type Filters } from '../../search.ts';

export interface FiltersProps {
  form: Filters;
  invalid?: FieldError | undefined;
  busy: boolean;
  onEdit(field: CallSearchField, value: string): void;
  onSearch(): void;
  onReset(): void;
}

const TEXT_FIELDS: Array<{ field: CallSearchField; label: MessageKey; type: 'datetime-local' | 'text'; placeholder?: MessageKey | undefined }> = [
  { field: 'from', label: 'archive.from', type: 'datetime-local' },
  { field: 'to', label: 'archive.to', type: 'datetime-local' },
  { field: 'customer', label: 'archive.customer', type: 'text', placeholder: 'archive.customerPlaceholder' },
  { field: 'agent', label: 'archive.agent', type: 'text', placeholder: 'archive.agentPlaceholder' },
  { field: 'businessNumber', label: 'archive.businessNumber', type: 'text' },
];

export function SearchFilters({ form, invalid, busy, onEdit, onSearch, onReset }: FiltersProps) {
  const errorFor = (f: CallSearchField) => (invalid?.field === f ? invalid.message : undefined);
  const field = (f: CallSearchField, label: string, control: preact.JSX.Element) => (
    <div class="filter" key={f}>
      <label for={`search-${f}`}>{label}</label>
      {control}
    </div>
  );
  const input = (f: CallSearchField, type: 'datetime-local' | 'text' | 'search', placeholder?: string) => (
    <input
      id={`search-${f}`}
      name={f}
      // Preact types each input type's attributes apart; a union of types does not narrow.
      type={type as 'text'}
      data-testid={`search-${f}`}
      value={form[f]}
      placeholder={placeholder}
      aria-invalid={errorFor(f) ? 'true' : 'false'}
      aria-describedby={errorFor(f) ? 'search-invalid' : undefined}
      onInput={(e) => onEdit(f, (e.currentTarget as HTMLInputElement).value)}
    />
  );
  return (
    <form
      class="search-form"
      data-testid="search-form"
      role="search"
      aria-labelledby="search-title"
      onSubmit={(e) => {
        e.preventDefault();
        onSearch();
      }}
    >
      <h1 id="search-title" class="card-title">
        {t('archive.title')}
      </h1>
      <div class="filters">
        {TEXT_FIELDS.map((f) => field(f.field, t(f.label), input(f.field, f.type, f.placeholder ? t(f.placeholder) : f.field === 'businessNumber' ? '+15550001000' : undefined)))}
        {field(
          'direction',
          t('archive.direction'),
          <select id="search-direction" data-testid="search-direction" value={form.direction} onChange={(e) => onEdit('direction', (e.currentTarget as HTMLSelectElement).value)}>
            <option value="">{t('archive.any')}</option>
            {CALL_DIRECTIONS.map((d) => (
              <option key={d} value={d}>
                {describeDirection(d)}
              </option>
            ))}
          </select>,
        )}
        {field(
          'outcome',
          t('archive.outcome'),
          <select id="search-outcome" data-testid="search-outcome" value={form.outcome} onChange={(e) => onEdit('outcome', (e.currentTarget as HTMLSelectElement).value)}>
            <option value="">{t('archive.any')}</option>
            {CALL_OUTCOMES.map((o) => (
              <option key={o} value={o}>
                {describeOutcome(o)}
              </option>
            ))}
          </select>,
        )}
        <div class="filter filter-wide">
          <label for="search-q">{t('archive.q')}</label>
          {input('q', 'search', t('archive.qPlaceholder'))}
        </div>
      </div>
      <p class="field-error" id="search-invalid" data-testid="search-invalid" role="alert" hidden={!invalid}>
        {invalid?.message ?? ''}
      </p>
      <div class="actions">
        <button type="submit" class="btn btn-go" data-testid="search-submit" disabled={busy}>
          {busy ? t('archive.searching') : t('archive.search')}
        </button>
        <button type="button" class="btn" data-testid="search-reset" onClick={onReset}>
          {t('archive.reset')}
        </button>
      </div>
    </form>
  );
}
