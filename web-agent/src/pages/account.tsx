/**
 * Account (`/account`, every signed-in user): your live sessions (device,
 * address, since; this one marked), ending one, and "Sign out everywhere" (every session,
 * this one too: their sockets close on every node). An admin also looks up any user's
 * sessions and ends them. Drawn from the shell's state and the pure sessions state
 * (src/sessions.ts).
 */
import { locale, onLanguageChange, t } from '../i18n/index.ts';
import { adoptUserLanguage, startLanguage } from '../language.ts';
import { LanguagePicker } from '../ui/language.tsx';
import '../csp.ts'; // first: before any frame is parsed
import { render } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError, getJson, getMe, goToLogin, type Me } from '../api.ts';
import { initialState, reduce, type UiEvent, type UiState } from '../reducer.ts';
import { SessionList, deviceWords, initialSessions, reduceSessions, type SessionInfo, type SessionsEvent, type SessionsState } from '../sessions.ts';
import { mayOpen, renderShell } from '../ui/shell.tsx';
import { connectPage } from './connect-page.ts';

let state: UiState = initialState;
let sessions: SessionsState = initialSessions;
let me: Me | undefined;

function dispatch(ev: UiEvent): void {
  state = reduce(state, ev);
  draw();
}

function act(ev: SessionsEvent): void {
  sessions = reduceSessions(sessions, ev);
  draw();
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** The server's session list, checked (an answer of another shape is worded, not zod's English). */
function sessionList(body: unknown): SessionInfo[] {
  const r = SessionList.safeParse(body);
  if (!r.success) throw new Error(t('error.BAD_RESPONSE'));
  return r.data.items;
}

async function send(method: 'POST' | 'DELETE', path: string): Promise<number> {
  const res = await fetch(path, { method, credentials: 'same-origin', headers: { accept: 'application/json' } });
  const body = (await res.json().catch(() => undefined)) as { ended?: number; error?: { message?: string; code?: string } } | undefined;
  if (!res.ok) throw new ApiError(res.status, body?.error?.code ?? 'HTTP', body?.error?.message ?? `The server answered ${res.status}.`);
  return body?.ended ?? 0;
}

async function loadMine(): Promise<void> {
  act({ type: 'busy' });
  try {
    act({ type: 'mine', items: sessionList(await getJson('/api/sessions')) });
  } catch (e) {
    act({ type: 'failed', message: t('account.readFailed', { why: message(e) }) });
  }
}

async function signOutEverywhere(): Promise<void> {
  act({ type: 'busy' });
  try {
    await send('POST', '/api/sessions/end-all');
    location.assign('/login');
  } catch (e) {
    act({ type: 'failed', message: message(e) });
  }
}

async function endOne(id: string): Promise<void> {
  act({ type: 'busy' });
  try {
    act({ type: 'ended', count: await send('DELETE', `/api/sessions/${encodeURIComponent(id)}`) });
    await loadMine();
  } catch (e) {
    act({ type: 'failed', message: message(e) });
  }
}

async function lookUp(name: string): Promise<void> {
  act({ type: 'busy' });
  try {
    act({ type: 'other', name, items: sessionList(await getJson(`/api/users/${encodeURIComponent(name)}/sessions`)) });
  } catch (e) {
    act({ type: 'failed', message: message(e) });
  }
}

async function endUser(name: string): Promise<void> {
  act({ type: 'busy' });
  try {
    act({ type: 'ended', count: await send('POST', `/api/users/${encodeURIComponent(name)}/sessions/end-all`), whose: name });
  } catch (e) {
    act({ type: 'failed', message: message(e) });
  }
}

const when = (ms: number) => new Date(ms).toLocaleString(locale(), { dateStyle: 'medium', timeStyle: 'short', hourCycle: 'h23' });

function SessionTable({ items, testid, onEnd }: { items: SessionInfo[]; testid: string; onEnd?: (id: string) => void }) {
  return (
    <div class="table-wrap" tabIndex={0}>
      <table class="table" data-testid={testid}>
        <thead>
          <tr>
            <th scope="col">{t('account.device')}</th>
            <th scope="col">{t('account.address')}</th>
            <th scope="col">{t('account.since')}</th>
            {onEnd && (
              <th scope="col">
                <span class="sr-only">{t('account.actions')}</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {items.map((s) => (
            <tr key={s.id} data-testid="session" data-current={s.current ? 'true' : 'false'}>
              <td>
                {deviceWords(s)}
                {s.current && <strong> {t('account.thisOne')}</strong>}
              </td>
              <td dir="ltr">{s.address}</td>
              <td>
                <time dateTime={new Date(s.since).toISOString()}>{when(s.since)}</time>
              </td>
              {onEnd && (
                <td>
                  {!s.current && (
                    <button type="button" class="btn btn-quiet" data-testid="session-end" onClick={() => onEnd(s.id)}>
                      {t('account.signOut')}
                    </button>
                  )}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function AdminLookup({ s }: { s: SessionsState }) {
  const [name, setName] = useState('');
  return (
    <section class="card" aria-labelledby="admin-sessions-title" data-testid="admin-sessions">
      <h2 id="admin-sessions-title" class="card-title">
        {t('account.lookupTitle')}
      </h2>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          if (name.trim()) void lookUp(name.trim());
        }}
      >
        <div class="filter">
          <label for="admin-user">{t('account.user')}</label>
          <input id="admin-user" data-testid="admin-user" value={name} onInput={(e) => setName(e.currentTarget.value)} autocomplete="off" />
        </div>
        <div class="filter">
          <button class="btn" type="submit" data-testid="admin-lookup" disabled={s.busy}>
            {t('account.show')}
          </button>
        </div>
      </form>
      {s.other && (
        <div data-testid="admin-user-sessions" data-user={s.other.name} data-count={s.other.items.length}>
          <p>{t('account.userSessions', { name: s.other.name, n: s.other.items.length })}</p>
          {s.other.items.length > 0 && <SessionTable items={s.other.items} testid="admin-session-list" />}
          <button type="button" class="btn btn-stop" data-testid="admin-end-all" disabled={s.busy || s.other.items.length === 0} onClick={() => void endUser(s.other!.name)}>
            {t('account.endUser', { name: s.other.name })}
          </button>
        </div>
      )}
    </section>
  );
}

function Page({ s, admin }: { s: SessionsState; admin: boolean }) {
  return (
    <>
      <section class="card" aria-labelledby="language-title" data-testid="account-language">
        <h2 id="language-title" class="card-title">
          {t('account.languageTitle')}
        </h2>
        <p class="hint">{t('account.languageHint')}</p>
        <LanguagePicker testid="language-account" />
      </section>
      <section class="card" aria-labelledby="sessions-title" data-testid="my-sessions" data-loaded={s.loaded ? 'true' : 'false'}>
        <h2 id="sessions-title" class="card-title">
          {t('account.title')}
        </h2>
        <p class="warn" role="alert" data-testid="sessions-error" hidden={!s.error}>
          {s.error}
        </p>
        <p role="status" data-testid="sessions-notice" hidden={!s.notice}>
          {s.notice}
        </p>
        <SessionTable items={s.mine} testid="session-list" onEnd={(id) => void endOne(id)} />
        <p>
          <button type="button" class="btn btn-stop" data-testid="sign-out-everywhere" disabled={s.busy} onClick={() => void signOutEverywhere()}>
            {t('account.signOutEverywhere')}
          </button>
        </p>
      </section>
      {admin && <AdminLookup s={s} />}
    </>
  );
}

function draw(): void {
  renderShell({ me, link: state.link, error: state.error, onDismissError: () => dispatch({ type: 'dismissError' }) });
  const root = document.getElementById('main');
  if (root && me && mayOpen(me, '/account')) render(<Page s={sessions} admin={me.roles.includes('admin')} />, root);
}

async function boot(): Promise<void> {
  await startLanguage().catch(() => undefined);
  me = await getMe().catch(() => undefined);
  if (!me) return goToLogin();
  await adoptUserLanguage();
  onLanguageChange(draw);
  draw();
  await loadMine();
  connectPage(me, dispatch);
}

void boot();
