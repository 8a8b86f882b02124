/**
 * Driving the agent softphone from a test, through its TESTIDS.md contract only: log in,
 * pass the ready-check, go available, read the `window.__switchboard` hook. Used by this
 * folder's tests; the server's end-to-end tests can use it against the real server.
 */
import type { Page } from 'playwright-core';

/** Log in through `/login` and wait until the agent page is connected (`welcome` received). */
export async function loginAs(page: Page, baseUrl: string, name: string, password = name): Promise<void> {
  await page.goto(`${baseUrl}/login?next=%2F`);
  await page.getByTestId('login-name').fill(name);
  await page.getByTestId('login-password').fill(password);
  await page.getByTestId('login-submit').click();
  await page.waitForURL(`${baseUrl}/`);
  await waitOnline(page);
}

export async function waitOnline(page: Page, timeout = 10_000): Promise<void> {
  await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor({ timeout });
}

/** Click the ready-check (microphone + sound unlock), then go available if not already. */
export async function goAvailable(page: Page): Promise<void> {
  await page.getByTestId('ready-check').click();
  await page.locator('[data-testid="ready-mic-status"][data-ok="true"]').waitFor();
  await page.locator('[data-testid="ready-sound-status"][data-ok="true"]').waitFor();
  // The desk's one state line.
  const status = page.locator('[data-testid="agent-state"][data-status="available"]');
  if (!(await status.isVisible())) {
    await page.locator('[data-testid="presence-available"]:not([disabled])').click();
  }
  await status.waitFor();
}

/** `window.__switchboard.state()` (shape in web-agent/TESTIDS.md). */
export function hookState(page: Page): Promise<any> {
  return page.evaluate(() => (window as typeof window & { __switchboard: { state(): unknown } }).__switchboard.state());
}

/** `await window.__switchboard.stats()`: getStats of the call this tab holds, or null. */
export function hookStats(page: Page): Promise<any> {
  return page.evaluate(() => (window as typeof window & { __switchboard: { stats(): Promise<unknown> } }).__switchboard.stats());
}

/** Wait until `expr` (JavaScript over `s` = the hook's state) is truthy, e.g. `'s.media && s.media.started'`. */
export async function waitForState(page: Page, expr: string, timeout = 10_000): Promise<void> {
  await page.waitForFunction(`(() => { const s = window.__switchboard.state(); return ${expr}; })()`, undefined, { timeout, polling: 50 });
}
