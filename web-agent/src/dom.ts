/** Small DOM helpers shared by the pages (the chrome is the Preact `Shell`, ui/shell.tsx). */
import type { Quality } from './quality.ts';

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
