/**
 * The chrome every page but login shares, as one Preact component: the top bar (brand,
 * the pages this user may open, connection status, user, log out) and the error banner.
 * Pages call `renderShell(props)` whenever their state changes; Preact redraws what differs.
 */
import { render } from 'preact';
import { logout, type Me } from '../api.ts';
import { t, type MessageKey } from '../i18n/index.ts';
import type { Link, UiError } from '../reducer.ts';
import { LanguagePicker } from './language.tsx';

/** Pages and the roles that may open them (the server enforces the same table). */
export const PAGES: Array<{ path: string; label: MessageKey; id: string; roles: string[] }> = [
  { path: '/', label: 'nav.phone', id: 'agent', roles: ['agent'] },
  { path: '/supervisor', label: 'nav.supervisor', id: 'supervisor', roles: ['supervisor'] },
  { path: '/archive', label: 'nav.archive', id: 'ops', roles: ['ops', 'supervisor'] },
  { path: '/preflight', label: 'nav.preflight', id: 'preflight', roles: ['agent', 'supervisor', 'ops', 'admin'] },
  { path: '/admin', label: 'nav.admin', id: 'admin', roles: ['admin'] },
  { path: '/admin/audit', label: 'nav.audit', id: 'audit', roles: ['ops', 'admin'] },
  { path: '/account', label: 'nav.account', id: 'account', roles: ['agent', 'supervisor', 'ops', 'admin'] },
];

export const mayOpen = (me: Me, path: string): boolean => PAGES.some((p) => p.path === path && p.roles.some((r) => me.roles.includes(r)));

const LINK_TEXT: Record<Link, MessageKey> = {
  connecting: 'link.connecting',
  online: 'link.online',
  reconnecting: 'link.reconnecting',
  offline: 'link.offline',
};

export interface ShellProps {
  me?: Me | undefined;
  link: Link;
  error?: UiError | undefined;
  onDismissError(): void;
}

async function logOut(): Promise<void> {
  try {
    await logout();
  } finally {
    location.assign('/login');
  }
}

export function Shell({ me, link, error, onDismissError }: ShellProps) {
  return (
    <>
      <header class="topbar">
        <span class="brand">Switchboard</span>
        <nav class="nav" data-testid="nav" aria-label={t('nav.label')}>
          {me &&
            PAGES.filter((p) => mayOpen(me, p.path)).map((p) => (
              <a key={p.path} href={p.path} data-testid={`nav-${p.id}`} aria-current={location.pathname === p.path ? 'page' : undefined}>
                {t(p.label)}
              </a>
            ))}
        </nav>
        <span class="link-status" data-testid="connection-status" data-state={link} role="status" aria-live="polite">
          {t(LINK_TEXT[link])}
        </span>
        {me && <LanguagePicker testid="language-top" compact />}
        <span class="who" data-testid="user-name">
          {me?.name ?? ''}
        </span>
        <button type="button" class="btn btn-quiet" data-testid="logout" onClick={() => void logOut()}>
          {t('shell.logout')}
        </button>
      </header>
      <div class="banner" data-testid="error-banner" data-code={error?.code ?? ''} role="alert" hidden={!error}>
        <span class="banner-text" data-testid="error-message">
          {error?.message ?? ''}
        </span>
        <button type="button" class="btn btn-quiet" data-testid="error-dismiss" aria-label={t('shell.dismissError')} onClick={onDismissError}>
          {t('shell.dismiss')}
        </button>
      </div>
    </>
  );
}

/** Draw (or redraw) the shell into the page's `<div id="shell">`. */
export function renderShell(props: ShellProps): void {
  const root = document.getElementById('shell');
  if (root) render(<Shell {...props} />, root);
}
