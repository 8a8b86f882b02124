/**
 * Screenshots to look at by eye, taken only when E2E_SHOTS is set: a directory, or `1` for
 * `screenshots/` (gitignored). They assert nothing, and each full-page picture costs Chromium
 * CPU (a desktop + phone pair about a second on a loaded machine), so `npm test` takes none.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';

/** Where screenshots go, or undefined when none are taken. */
export function shotsDir(): string | undefined {
  const v = process.env.E2E_SHOTS;
  if (!v) return undefined;
  const dir = v === '1' ? join(process.cwd(), 'screenshots') : v;
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** `page.screenshot` into `shotsDir()` as `file`, when E2E_SHOTS is set. */
export async function screenshot(page: Page, file: string, o: { fullPage?: boolean } = {}): Promise<void> {
  const dir = shotsDir();
  if (dir) await page.screenshot({ path: join(dir, file), fullPage: o.fullPage ?? false });
}
