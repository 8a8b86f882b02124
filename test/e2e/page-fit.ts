/**
 * Whether a page fits the window: it never scrolls sideways at desktop width, on a phone (390
 * and 360 px) or at 200 % zoom (WCAG 1.4.10 reflow). Used by the language and accessibility
 * e2e (i18n-a11y.test.ts).
 */
import type { Page } from 'playwright-core';
import { DESKTOP, PHONE } from './desk-page.ts';

/** A 1280×800 window at 200 % zoom: half as many CSS pixels each way. */
const ZOOM_200 = { width: DESKTOP.width / 2, height: DESKTOP.height / 2 };
/** The smallest phones in use. */
const SMALL_PHONE = { width: 360, height: 740 };

/** The outermost elements that reach past the window's sides (what makes a page scroll sideways). */
function overflowing(page: Page): Promise<string> {
  return page.evaluate(() => {
    const w = document.documentElement.clientWidth;
    const past = [...document.body.querySelectorAll<HTMLElement>('*')].filter((e) => {
      const r = e.getBoundingClientRect();
      return r.width > 0 && (r.right > w + 1 || r.left < -1);
    });
    const outer = past.filter((e) => !past.includes(e.parentElement!));
    const inner = past.filter((e) => !past.some((o) => o !== e && e.contains(o)));
    return [...outer.slice(0, 2), ...inner.slice(0, 3)].map((e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}${e.dataset.testid ? `[${e.dataset.testid}]` : ''}.${[...e.classList].join('.')} ${Math.round(e.getBoundingClientRect().width)} px`).join(', ');
  });
}

/**
 * The page never scrolls sideways at desktop width, on a phone (390 and 360 px) or at 200 %
 * zoom (a mirrored layout that overflows would, and so would a table or a row of buttons that
 * does not wrap); back to desktop.
 */
export async function fits(page: Page, name: string): Promise<string[]> {
  const wide = () => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  const out: string[] = [];
  for (const [what, v] of [['', DESKTOP], ['', PHONE], ['', SMALL_PHONE], [' (200 % zoom)', ZOOM_200]] as const) {
    await page.setViewportSize(v);
    if ((await wide()) > 0) out.push(`${name} scrolls sideways at ${v.width} px${what}: ${await overflowing(page)}`);
  }
  await page.setViewportSize(DESKTOP);
  return out;
}
