/** Small DOM helpers shared by the pages (the chrome is the Preact `Shell`, ui/shell.tsx). */

/** The element with `data-testid="<id>"` (testids double as the page's stable hooks). */
export function el<T extends HTMLElement = HTMLElement>(id: string, root: ParentNode = document): T {
  const found = root.querySelector<T>(`[data-testid="${id}"]`);
  if (!found) throw new Error(`page is missing [data-testid="${id}"]`);
  return found;
}

/** Set text only when it changed (keeps screen readers from re-announcing live regions). */
export function setText(node: HTMLElement, text: string): void {
  if (node.textContent !== text) node.textContent = text;
}

export function wsUrl(): string {
  return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
}
