/**
 * Audit (`/admin/audit`, ops and admins): the audit trail searched by user,
 * action and dates (`GET /api/audit`), newest first with "Load more", and "Download CSV" of
 * the same search (`GET /api/audit.csv`). Drawn from the shell's state and the pure audit
 * state (src/audit.ts); this file sends the requests the state asks for.
 */
import { locale, onLanguageChange, t } from '../i18n/index.ts';
import { adoptUserLanguage, startLanguage } from '../language.ts';
import '../csp.ts'; // first: before any frame is parsed
import { render } from 'preact';
import { AUDIT_ACTIONS } from '../../../shared/audit.ts';
import { getJson, getMe, goToLogin, type Me } from '../api.ts';
import { AuditPage, actionKey, describeAuditDetail, initialAudit, reduceAudit, type AuditEvent, type AuditForm, type AuditState } from '../audit.ts';
import { initialState, reduce, type UiEvent, type UiState } from '../reducer.ts';
import { mayOpen, renderShell } from '../ui/shell.tsx';
import { connectPage } from './connect-page.ts';

let state: UiState = initialState;
let audit: AuditState = initialAudit;
let me: Me | undefined;

function dispatch(ev: UiEvent): void {
  state = reduce(state, ev);
  draw();
}

function act(ev: AuditEvent): void {
  const before = audit;
  audit = reduceAudit(audit, ev);
  if (audit.seq !== before.seq) void run(audit.seq, audit.applied, audit.phase === 'more' ? audit.cursor : undefined);
  draw();
}

async function run(seq: number, query: string, cursor: string | undefined): Promise<void> {
  const q = new URLSearchParams(query);
  q.set('limit', '100');
  if (cursor) q.set('cursor', cursor);
  try {
    const r = AuditPage.safeParse(await getJson(`/api/audit?${q.toString()}`));
    if (!r.success) throw new Error(t('error.BAD_RESPONSE'));
    act({ type: 'results', seq, page: r.data });
  } catch (e) {
    act({ type: 'failed', seq, message: t('audit.searchFailed', { why: e instanceof Error ? e.message : String(e) }) });
  }
}

function Filters({ s }: { s: AuditState }) {
  const edit = (field: keyof AuditForm) => (e: Event) => act({ type: 'edit', field, value: (e.currentTarget as HTMLInputElement).value });
  return (
    <form
      class="filters"
      data-testid="audit-form"
      onSubmit={(e) => {
        e.preventDefault();
        act({ type: 'search' });
      }}
    >
      <div class="filter">
        <label for="audit-user">{t('audit.user')}</label>
        <input id="audit-user" data-testid="audit-user" value={s.form.user} onInput={edit('user')} autocomplete="off" />
      </div>
      <div class="filter">
        <label for="audit-action">{t('audit.action')}</label>
        <select id="audit-action" data-testid="audit-action" value={s.form.action} onChange={edit('action')}>
          <option value="">{t('audit.any')}</option>
          {AUDIT_ACTIONS.map((a) => (
            <option key={a} value={a}>
              {words(a)}
            </option>
          ))}
        </select>
      </div>
      <div class="filter">
        <label for="audit-from">{t('audit.from')}</label>
        <input id="audit-from" type="date" data-testid="audit-from" value={s.form.from} onInput={edit('from')} />
      </div>
      <div class="filter">
        <label for="audit-to">{t('audit.to')}</label>
        <input id="audit-to" type="date" data-testid="audit-to" value={s.form.to} min={s.form.from} onInput={edit('to')} />
      </div>
      <div class="filter">
        <button class="btn" type="submit" data-testid="audit-search" disabled={s.phase === 'searching'}>
          {t('audit.search')}
        </button>
      </div>
    </form>
  );
}

/** An action in the user's language (as recorded when the page does not know it). */
function words(action: string): string {
  const key = actionKey(action);
  return key ? t(key) : action;
}

function Rows({ s }: { s: AuditState }) {
  return (
    <>
      <h2 id="audit-results-title" class="card-title">
        {t('audit.title')}{' '}
        <a class="btn btn-quiet" data-testid="audit-csv" href={`/api/audit.csv${s.applied ? `?${s.applied}` : ''}`} download>
          {t('audit.csv')}
        </a>
      </h2>
      <p class="warn" role="alert" data-testid="audit-error" hidden={!s.error}>
        {s.error}
      </p>
      <p class="empty" data-testid="audit-empty" hidden={s.phase !== 'idle' || s.items.length > 0}>
        {t('audit.empty')}
      </p>
      <div class="table-wrap" tabIndex={0} hidden={s.items.length === 0}>
        <table class="table" data-testid="audit-rows" data-phase={s.phase}>
          <thead>
            <tr>
              <th scope="col">{t('audit.when')}</th>
              <th scope="col">{t('audit.who')}</th>
              <th scope="col">{t('audit.action')}</th>
              <th scope="col">{t('audit.whose')}</th>
              <th scope="col">{t('audit.what')}</th>
              <th scope="col">{t('audit.address')}</th>
              <th scope="col">{t('audit.detail')}</th>
            </tr>
          </thead>
          <tbody>
            {s.items.map((e) => (
              <tr key={e.id} data-testid="audit-row" data-action={e.action} data-actor={e.actor}>
                <td>
                  <time dateTime={e.at}>{new Date(e.at).toLocaleString(locale(), { dateStyle: 'medium', timeStyle: 'medium', hourCycle: 'h23' })}</time>
                </td>
                <td>{e.actor}</td>
                <td title={e.action}>{words(e.action)}</td>
                <td>{e.subject ?? ''}</td>
                <td class="mono">{e.target ?? ''}</td>
                <td dir="ltr">{e.address ?? ''}</td>
                <td dir="ltr">{describeAuditDetail(e.detail)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p hidden={!s.cursor}>
        <button type="button" class="btn btn-quiet" data-testid="audit-more" disabled={s.phase !== 'idle'} onClick={() => act({ type: 'more' })}>
          {t('audit.loadMore')}
        </button>
      </p>
    </>
  );
}

function draw(): void {
  renderShell({ me, link: state.link, error: state.error, onDismissError: () => dispatch({ type: 'dismissError' }) });
  const root = document.getElementById('main');
  if (root && me && mayOpen(me, '/admin/audit'))
    render(
      <>
        <section class="card" id="audit-search" aria-label={t('audit.searchLabel')}>
          <Filters s={audit} />
        </section>
        <section class="card" id="audit-results" aria-labelledby="audit-results-title">
          <Rows s={audit} />
        </section>
      </>,
      root,
    );
}

async function boot(): Promise<void> {
  await startLanguage().catch(() => undefined);
  me = await getMe().catch(() => undefined);
  if (!me) return goToLogin();
  await adoptUserLanguage();
  onLanguageChange(draw);
  draw();
  if (!mayOpen(me, '/admin/audit')) {
    dispatch({ type: 'error', message: t('audit.forbidden'), code: 'FORBIDDEN', now: Date.now() });
    return;
  }
  act({ type: 'search' });
  connectPage(me, dispatch);
}

void boot();
