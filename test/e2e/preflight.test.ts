/**
 * The network check page (`/preflight`) in Debian Chromium against a private coturn
 * (test/support/coturn.ts): with coturn up it reports STUN, TURN over UDP and over TCP with
 * their allocation times and a loopback call relayed through it with round trip, jitter and
 * loss, and says "Calls will work"; with coturn stopped it says in words that calls will not
 * work and what to ask IT. Screenshots (desktop 1366×768, phone 390×844) with E2E_SHOTS
 * (test/support/shots.ts; looked at by eye).
 */
import { screenshot } from '../support/shots.ts';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTurn, type TestTurn } from '../support/coturn.ts';
import { browserSuite } from './suite.ts';

const DESKTOP = { width: 1366, height: 768 };
const PHONE = { width: 390, height: 844 };

const suite = browserSuite();
let turn: TestTurn;
beforeAll(async () => {
  turn = await startTurn();
});
afterAll(async () => {
  await turn?.close();
});

async function shots(page: Page, what: string): Promise<void> {
  await page.setViewportSize(DESKTOP);
  await screenshot(page, `preflight-${what}-desktop.png`, { fullPage: true });
  await page.setViewportSize(PHONE);
  await screenshot(page, `preflight-${what}-phone.png`, { fullPage: true });
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
  await page.setViewportSize(DESKTOP);
}

const done = (page: Page) => page.locator('[data-testid="preflight-verdict"]:not([data-level="running"])').waitFor({ timeout: 40_000 });
const status = (page: Page, name: string) => page.getByTestId(`preflight-${name}`).getAttribute('data-status');

describe('network check page', () => {
  it('coturn up: STUN, TURN over UDP and TCP with allocation times, a relayed test call with its figures, "Calls will work", copy as text', async () => {
    await suite.startBridge({ agents: ['agent1'], env: turn.env('all') });
    const page = await suite.loginPage('agent1', '/');
    // Linked from the ready-check.
    await page.getByTestId('ready-preflight').click();
    await page.waitForURL(/\/preflight$/);
    await done(page);
    for (const name of ['mic', 'speaker', 'stun', 'turnUdp', 'turnTcp', 'call']) expect(await status(page, name), name).toBe('ok');
    await expect(page.getByTestId('preflight-verdict-title').textContent()).resolves.toBe('Calls will work');
    const udpMs = Number((await page.getByTestId('preflight-turnUdp-ms').textContent())!.replace(/\D/g, ''));
    const tcpMs = Number((await page.getByTestId('preflight-turnTcp-ms').textContent())!.replace(/\D/g, ''));
    expect(udpMs).toBeLessThan(5_000);
    expect(tcpMs).toBeLessThan(5_000);
    await expect(page.getByTestId('preflight-path').textContent()).resolves.toBe('relayed (TURN/UDP)');
    await expect(page.getByTestId('preflight-rtt').textContent()).resolves.toMatch(/^\d+ ms$/);
    await expect(page.getByTestId('preflight-jitter').textContent()).resolves.toMatch(/^\d+ ms$/);
    await expect(page.getByTestId('preflight-loss').textContent()).resolves.toMatch(/^\d+\.\d %$/);
    const report = await page.getByTestId('preflight-report').inputValue();
    console.log(report);
    expect(report).toContain('Verdict: Calls will work');
    expect(report).toMatch(/TURN relay over UDP: OK \(\d+ ms\)/);
    expect(report).toMatch(/Test call: path relay-udp, round trip \d+ ms, jitter \d+ ms, loss \d+\.\d %/);
    expect(report).not.toContain(turn.secret);
    await page.getByTestId('preflight-copy').click();
    await page.locator('[data-testid="preflight-copied"]:not(:empty)').waitFor();
    expect(turn.allocations()).toBeGreaterThanOrEqual(3); // UDP, TCP, and the call's
    await shots(page, 'coturn-up');
  }, 90_000);

  it('coturn down: the check says in words that calls will not work and what to ask IT', async () => {
    await suite.startBridge({ supervisors: ['boss'], env: turn.env('all') });
    await turn.stop();
    try {
      const page = await suite.loginPage('boss', '/supervisor');
      // Linked from the supervisor page's top bar.
      await page.getByTestId('nav-preflight').click();
      await page.waitForURL(/\/preflight$/);
      await done(page);
      expect(await status(page, 'turnUdp')).toBe('failed');
      expect(await status(page, 'turnTcp')).toBe('failed');
      expect(await status(page, 'call')).toBe('failed');
      await expect(page.getByTestId('preflight-verdict').getAttribute('data-level')).resolves.toBe('bad');
      await expect(page.getByTestId('preflight-verdict-title').textContent()).resolves.toBe('Calls will not work from this network');
      await expect(page.getByTestId('preflight-advice').textContent()).resolves.toMatch(/relay server \(127\.0\.0\.1\) cannot be reached over UDP or TCP\. Ask your IT to allow UDP and TCP to 127\.0\.0\.1 port \d+ /);
      await shots(page, 'coturn-down');
    } finally {
      await turn.start();
    }
  }, 90_000);
});
