/**
 * The chrome every page but login shares, as one Preact component: the top bar (brand,
 * the pages this user may open, connection status, user, log out) and the error banner.
 * Pages call `renderShell(props)` whenever their state changes; Preact redraws what differs.
 */
import { render } from 'preact';
import { logout, type Me } from '../api.ts';
import type { Link, UiError } from '../reducer.ts';

/** Pages and the roles that may open them (the server enforces the same table). */
export const PAGES: Array<{ path: string; label: string; id: string; roles: string[] }> = [
  { path: '/', label: 'Phone', id: 'agent', roles: ['agent'] },
  { path: '/supervisor', label: 'Supervisor', id: 'supervisor', roles: ['supervisor'] },
  { path: '/archive', label: 'Archive', id: 'ops', roles: ['ops', 'supervisor'] },
  { path: '/preflight', label: 'Network check', id: 'preflight', roles: ['agent', 'supervisor', 'ops', 'admin'] },
  { path: '/admin', label: 'Admin', id: 'admin', roles: ['admin'] },
  { path: '/admin/audit', label: 'Audit', id: 'audit', roles: ['ops', 'admin'] },
  { path: '/account', label: 'Account', id: 'account', roles: ['agent', 'supervisor', 'ops', 'admin'] },
];

export const mayOpen = (me: Me, path: string): boolean => PAGES.some((p) => p.path === path && p.roles.some((r) => me.roles.includes(r)));

const LINK_TEXT: Record<Link, string> = {
  connecting: 'Connecting…',
  online: 'Connected',
  reconnecting: 'Reconnecting…',
  offline: 'Offline',
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
        <nav class="nav" data-testid="nav" aria-label="Pages">
          {me &&
            PAGES.filter((p) => mayOpen(me, p.path)).map((p) => (
              <a key={p.path} href={p.path} data-testid={`nav-${p.id}`} aria-current={location.pathname === p.path ? 'page' : undefined}>
                {p.label}
              </a>
            ))}
        </nav>
        <span class="link-status" data-testid="connection-status" data-state={link} role="status" aria-live="polite">
          {LINK_TEXT[link]}
        </span>
        <span class="who" data-testid="user-name">
          {me?.name ?? ''}
        </span>
        <button type="button" class="btn btn-quiet" data-testid="logout" onClick={() => void logOut()}>
          Log out
        </button>
      </header>
      <div class="banner" data-testid="error-banner" data-code={error?.code ?? ''} role="alert" hidden={!error}>
        <span class="banner-text" data-testid="error-message">
          {error?.message ?? ''}
        </span>
        <button type="button" class="btn btn-quiet" data-testid="error-dismiss" aria-label="Dismiss the error" onClick={onDismissError}>
          Dismiss
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
