/** The login page (`/login`, public): name + password → session cookie → the page for the role. */
import '../csp.ts'; // first: before any frame is parsed
import { ApiError, getMe, homeFor, login, safeNext } from '../api.ts';
import { el } from '../dom.ts';
import { t } from '../i18n/index.ts';
import { startLanguage } from '../language.ts';

const form = el<HTMLFormElement>('login-form');
const name = el<HTMLInputElement>('login-name');
const password = el<HTMLInputElement>('login-password');
const submit = el<HTMLButtonElement>('login-submit');
const error = el('login-error');
const next = safeNext(new URLSearchParams(location.search).get('next'));

// What this server offers: single sign-on, password login (or both).
void fetch('/api/auth/options', { credentials: 'same-origin', headers: { accept: 'application/json' } })
  .then((r) => (r.ok ? (r.json() as Promise<{ password?: boolean; sso?: boolean }>) : undefined))
  .then((o) => {
    if (!o) return;
    const box = el('login-sso-box');
    el<HTMLAnchorElement>('login-sso').href = `/auth/sso/start${next ? `?next=${encodeURIComponent(next)}` : ''}`;
    box.hidden = o.sso !== true;
    form.hidden = o.password === false;
  })
  .catch(() => undefined);

function fail(message: string): void {
  error.textContent = message;
  error.hidden = false;
}

form.addEventListener('submit', async (e) => {
  e.preventDefault();
  error.hidden = true;
  if (!name.value.trim() || !password.value) {
    fail(t('login.missing'));
    (name.value.trim() ? password : name).focus();
    return;
  }
  submit.disabled = true;
  try {
    await login(name.value.trim(), password.value);
    const me = await getMe();
    location.assign(next ?? homeFor(me?.roles ?? []));
  } catch (err) {
    fail(
      err instanceof ApiError && err.status === 401
        ? t('login.wrong')
        : err instanceof ApiError
          ? err.message
          : t('login.failed'),
    );
    password.select();
  } finally {
    submit.disabled = false;
  }
});

// After the form is ours: a Log in pressed while the catalogue loads must not submit the form
// natively (a reload that lost what was typed). English markup stays if the catalogue cannot load.
await startLanguage().catch(() => undefined);
