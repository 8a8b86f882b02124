/**
 * The agent desk in real Chromium against the real server and the emulator: what
 * agent-desk.test.ts and agent-desk-media.test.ts share — one bridge with history for the
 * file, an agent page per test (each test its own agent, so routing is never ambiguous),
 * calls placed at the emulator and answered on the page, and the desktop + phone screenshots.
 */
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { loginAs } from '../web-agent/driver.ts';
import { shotsDir } from '../support/shots.ts';
import { PASSWORD, emulatorRequest, type Bridge } from './harness.ts';

export const DESKTOP = { width: 1280, height: 800 };
export const PHONE = { width: 390, height: 844 };

/**
 * Screenshots of the page at desktop and phone size: `agent-desk-<what>-<desktop|phone>.png`,
 * only with E2E_SHOTS set, as the other e2e tests' (`test/support/shots.ts`).
 */
export async function shots(page: Page, what: string): Promise<void> {
  const dir = shotsDir();
  if (!dir) return;
  await page.setViewportSize(DESKTOP);
  await page.screenshot({ path: join(dir, `agent-desk-${what}-desktop.png`), fullPage: true });
  await page.setViewportSize(PHONE);
  await page.screenshot({ path: join(dir, `agent-desk-${what}-phone.png`), fullPage: true });
  await page.setViewportSize(DESKTOP);
}

/** Pages of one file: contexts closed after each test, page errors collected. */
export class DeskPages {
  readonly errors: string[] = [];
  private contexts: BrowserContext[] = [];

  constructor(
    private readonly browser: () => Browser,
    private readonly bridge: () => Bridge,
  ) {}

  /** A logged-in agent page (not yet available). `setup` runs on the context before the page opens. */
  async open(name: string, setup?: (ctx: BrowserContext) => Promise<void>): Promise<Page> {
    const ctx = await this.browser().newContext({ viewport: DESKTOP });
    this.contexts.push(ctx);
    await setup?.(ctx);
    const page = await ctx.newPage();
    page.on('pageerror', (e) => this.errors.push(`${name}: ${e.message}`));
    await loginAs(page, this.bridge().url, name, PASSWORD);
    return page;
  }

  async closeAll(): Promise<void> {
    for (const c of this.contexts.splice(0)) await c.close();
  }
}

/** Every caller still on the line hangs up (a failed test leaves no call queued for the next one). */
export async function hangUpAll(b: Bridge): Promise<void> {
  const { items } = (await emulatorRequest(b.emu, 'GET', '/calls')) as { items: Array<{ wacid: string; state: string }> };
  for (const c of items) if (c.state !== 'ended') await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(c.wacid)}/hangup`).catch(() => undefined);
}

/** A caller at the emulator (`audio`, `toneHz`, `from`...); returns its wacid. */
export async function placeCall(b: Bridge, body: Record<string, unknown> = {}): Promise<string> {
  return (await emulatorRequest(b.emu, 'POST', '/calls', { audio: 'tone', ...body })).wacid as string;
}

export const card = (page: Page, wacid: string) => page.locator(`[data-testid="incoming-call"][data-wacid="${wacid}"]`);
export const stateIs = (page: Page, status: string) => page.locator(`[data-testid="agent-state"][data-status="${status}"]`).waitFor({ timeout: 15_000 });

/** The call rings on the page, is answered there and connects. */
export async function answer(page: Page, wacid: string): Promise<void> {
  await card(page, wacid).waitFor({ timeout: 15_000 });
  await card(page, wacid).getByTestId('answer').click();
  await page.locator(`[data-testid="call-active"][data-wacid="${wacid}"]`).waitFor({ timeout: 15_000 });
  await page.locator('[data-testid="call-status"][data-state="connected"]').waitFor({ timeout: 15_000 });
}

/** Hang up on the page; after-call work opens with its form. */
export async function hangUp(page: Page, wacid: string): Promise<void> {
  await page.getByTestId('hangup').click();
  await page.locator(`[data-testid="wrapup"][data-wacid="${wacid}"][data-state="editing"]`).waitFor({ timeout: 15_000 });
}

/** Choose a disposition (and notes), then the one button that ends the wrap-up; waits until it is saved (the wrap-up leaves). */
export async function wrapUp(page: Page, disposition: string, notes?: string): Promise<void> {
  await page.getByTestId('wrapup-disposition').selectOption(disposition);
  if (notes) await page.getByTestId('wrapup-notes').fill(notes);
  await page.getByTestId('acw-ready').click();
  await page.locator('[data-testid="wrapup"]').waitFor({ state: 'detached', timeout: 10_000 });
}

/** The emulator's record of what its caller got (RTP counts, connection). */
export async function callerMedia(b: Bridge, wacid: string): Promise<{ state: string; media: { packetsReceived: number; packetsSent: number; lastReceivedAt?: number } }> {
  return (await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(wacid)}`)) as never;
}
