/** Small DOM helpers and the page chrome (nav, user, link status, error banner) shared by every page. */
import { logout, type Me } from './api.ts';
import type { Quality } from './quality.ts';
import type { Link, UiError } from './reducer.ts';

/** The element with `data-testid="<id>"` (testids double as the page's stable hooks). */
export function el<T extends HTMLElement = HTMLElement>(id: string, root: ParentNode = document): T {
  const found = root.querySelector<T>(`[data-testid="${id}"]`);
  if (!found) throw new Error(`page is missing [data-testid="${id}"]`);
  return found;
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string> = {},
  ...children: Array<Node | string>
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === 'class') node.className = v;
    else node.setAttribute(k, v);
  }
  node.append(...children);
  return node;
}

/** Set text only when it changed (keeps screen readers from re-announcing live regions). */
export function setText(node: HTMLElement, text: string): void {
  if (node.textContent !== text) node.textContent = text;
}

/** Pages and the roles that may open them (the server enforces the same table). */
export const PAGES: Array<{ path: string; label: string; id: string; roles: string[] }> = [
  { path: '/', label: 'Phone', id: 'agent', roles: ['agent'] },
  { path: '/supervisor', label: 'Supervisor', id: 'supervisor', roles: ['supervisor'] },
  { path: '/archive', label: 'Archive', id: 'ops', roles: ['ops', 'supervisor'] },
];

export const mayOpen = (me: Me, path: string): boolean =>
  PAGES.some((p) => p.path === path && p.roles.some((r) => me.roles.includes(r)));

/** Fill the top bar for this user and wire the logout button. */
export function setupChrome(me: Me): void {
  const nav = el('nav');
  nav.replaceChildren(
    ...PAGES.filter((p) => mayOpen(me, p.path)).map((p) => {
      const a = h('a', { href: p.path, 'data-testid': `nav-${p.id}` }, p.label);
      if (location.pathname === p.path) a.setAttribute('aria-current', 'page');
      return a;
    }),
  );
  setText(el('user-name'), me.name);
  el('logout').addEventListener('click', async () => {
    try {
      await logout();
    } finally {
      location.assign('/login');
    }
  });
}

const LINK_TEXT: Record<Link, string> = {
  connecting: 'Connecting…',
  online: 'Connected',
  reconnecting: 'Reconnecting…',
  offline: 'Offline',
};

export function renderLink(link: Link): void {
  const node = el('connection-status');
  node.dataset.state = link;
  setText(node, LINK_TEXT[link]);
}

/** The error banner; `onDismiss` is wired once by the page. */
export function renderError(error: UiError | undefined): void {
  const banner = el('error-banner');
  banner.hidden = !error;
  if (error) {
    banner.dataset.code = error.code ?? '';
    setText(el('error-message'), error.message);
  }
}

/**
 * The line-quality box whose testids start with `prefix` (`quality`, `callback-quality`):
 * level, label and warnings (the list is rebuilt only when its text changes).
 */
export function renderQuality(prefix: string, quality: Quality | undefined): void {
  el(prefix).dataset.level = quality?.level ?? 'unknown';
  setText(el(`${prefix}-label`), quality?.label ?? 'Checking the line…');
  const warnings = quality?.warnings ?? [];
  const list = el(`${prefix}-warnings`);
  if (list.childElementCount !== warnings.length || warnings.some((w, i) => list.children[i]?.textContent !== w)) {
    list.replaceChildren(...warnings.map((w) => h('li', {}, w)));
  }
}

export function wsUrl(): string {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
}
