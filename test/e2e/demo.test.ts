/**
 * Demo mode as a newcomer meets it: the whole server from main.ts with the built-in
 * emulator, a demo user (password = name), the page's "simulate an incoming call" button.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { loadConfig } from '../../server/config/config.ts';
import { createLogger } from '../../server/log/logger.ts';
import { startSwitchboard, type Running } from '../../server/main.ts';
import { launchChromium } from '../support/chromium.ts';
import { tempDataDir } from '../support/data-dir.ts';

let running: Running;
let browser: Browser;
beforeAll(async () => {
  const config = loadConfig({ PORT: '0', LOG_LEVEL: 'silent', DATA_DIR: tempDataDir() });
  [running, browser] = await Promise.all([startSwitchboard(config, { log: createLogger({ level: 'silent' }) }), launchChromium()]);
});
afterAll(async () => {
  await browser?.close();
  await running?.close();
});

it('demo mode: agent1/agent1 logs in, presses "simulate an incoming call", it rings, and the answered call connects', async () => {
  const page = await browser.newPage();
  await page.goto(`${running.url}/login`);
  await page.getByTestId('login-name').fill('agent1');
  await page.getByTestId('login-password').fill('agent1');
  await page.getByTestId('login-submit').click();
  await page.waitForURL(`${running.url}/`);
  await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor();
  await page.getByTestId('ready-check').click();
  await page.locator('[data-testid="presence-available"]:not([disabled])').waitFor();
  await page.getByTestId('presence-available').click();
  await page.getByTestId('simulate-call').click();
  await page.getByTestId('incoming-call').waitFor({ timeout: 10_000 });
  await page.getByTestId('answer').click();
  await page.locator('[data-testid="call-status"][data-state="connected"]').waitFor({ timeout: 10_000 });
  await page.getByTestId('hangup').click();
  await page.getByTestId('call-ended').waitFor({ timeout: 10_000 });
  expect(await page.getByTestId('call-ended-result').getAttribute('data-result')).toBe('COMPLETED');
});

it('demo mode: the demo route needs an agent session', async () => {
  const r = await fetch(`${running.url}/api/demo/call`, { method: 'POST', headers: { origin: running.url } });
  expect(r.status).toBe(401);
});
