/** The archive's filter form: what `GET /api/history/calls` can filter on. */
import { CALL_DIRECTIONS, CALL_OUTCOMES, type CallSearchField } from '../../../../shared/records.ts';
import { describeDirection, describeOutcome, type FieldError, type Filters } from '../../search.ts';

export interface FiltersProps {
  form: Filters;
  invalid?: FieldError | undefined;
  busy: boolean;
  onEdit(field: CallSearchField, value: string): void;
  onSearch(): void;
  onReset(): void;
}

const TEXT_FIELDS: Array<{ field: CallSearchField; label: string; type: 'datetime-local' | 'text'; placeholder?: string }> = [
  { field: 'from', label: 'From', type: 'datetime-local' },
  { field: 'to', label: 'To', type: 'datetime-local' },
  { field: 'customer', label: 'Customer', type: 'text', placeholder: '+15550123456 or user id' },
  { field: 'agent', label: 'Agent', type: 'text', placeholder: 'agent name' },
  { field: 'businessNumber', label: 'Business number', type: 'text', placeholder: '+15550001000' },
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
        Call archive
      </h1>
      <div class="filters">
        {TEXT_FIELDS.map((t) => field(t.field, t.label, input(t.field, t.type, t.placeholder)))}
        {field(
          'direction',
          'Direction',
          <select id="search-direction" data-testid="search-direction" value={form.direction} onChange={(e) => onEdit('direction', (e.currentTarget as HTMLSelectElement).value)}>
            <option value="">Any</option>
            {CALL_DIRECTIONS.map((d) => (
              <option key={d} value={d}>
                {describeDirection(d)}
              </option>
            ))}
          </select>,
        )}
        {field(
          'outcome',
          'Outcome',
          <select id="search-outcome" data-testid="search-outcome" value={form.outcome} onChange={(e) => onEdit('outcome', (e.currentTarget as HTMLSelectElement).value)}>
            <option value="">Any</option>
            {CALL_OUTCOMES.map((o) => (
              <option key={o} value={o}>
                {describeOutcome(o)}
              </option>
            ))}
          </select>,
        )}
        <div class="filter filter-wide">
          <label for="search-q">Words in the transcript</label>
          {input('q', 'search', 'e.g. refund')}
        </div>
      </div>
      <p class="field-error" id="search-invalid" data-testid="search-invalid" role="alert" hidden={!invalid}>
        {invalid?.message ?? ''}
      </p>
      <div class="actions">
        <button type="submit" class="btn btn-go" data-testid="search-submit" disabled={busy}>
          {busy ? 'Searching…' : 'Search'}
        </button>
        <button type="button" class="btn" data-testid="search-reset" onClick={onReset}>
          Clear filters
        </button>
      </div>
    </form>
  );
}
