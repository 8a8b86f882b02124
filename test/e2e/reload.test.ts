/**
 * A reload mid-call, the page's half ("honest reload", direct mode), in real
 * Chromium against the real server and the emulator's WebRTC callers: a reload of the agent's
 * page mid-call ends the call at the Service at once (the page's socket closes as `page left`
 * on pagehide) and the reloaded page says the call's audio was lost — not "a call is open in
 * another tab"; a second tab of the same agent closing leaves the call alone; a crash of the
 * page's renderer ends the call within 5 s. The server's rules: page-lost.test.ts.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { buildWebAgent } from '../../web-agent/build.ts';
import type { WebAsset } from '../../server/web/index.ts';
import { launchChromium } from '../support/chromium.ts';
import { goAvailable, waitOnline } from '../web-agent/driver.ts';
import { emulatorRequest, sleep, startBridge, until, type Bridge } from './harness.ts';
import { DeskPages, answer, hangUpAll, placeCall, shots } from './desk-page.ts';

let assets: Map<string, WebAsset>;
let browser: Browser;
let b: Bridge;
const pages = new DeskPages(() => browser, () => b);

beforeAll(async () => {
  [assets, browser] = await Promise.all([buildWebAgent(), launchChromium()]);
  b = await startBridge({ assets, history: true, agents: ['agent1', 'agent2'] });
}, 90_000);
afterEach(async () => {
  await pages.closeAll();
  await hangUpAll(b);
  expect(pages.errors.splice(0)).toEqual([]);
});
afterAll(async () => {
  await b?.close();
  await browser?.close();
});

/** When the bridge's terminate for `wacid` reached the Service (epoch ms), if it did. */
async function terminatedAt(wacid: string): Promise<number | undefined> {
  const { items } = (await emulatorRequest(b.emu, 'GET', `/requests?path=${encodeURIComponent('/chat/calls/terminate')}&wacid=${encodeURIComponent(wacid)}`)) as { items: Array<{ at: number | string }> };
  const at = items[0]?.at;
  return at === undefined ? undefined : typeof at === 'number' ? at : Date.parse(at);
}

const callerState = async (wacid: string) => (await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(wacid)}`)).state as string;

/** A call answered on a fresh agent page; the caller hears the page (audio up) before it goes on. */
async function inCall(name: string): Promise<{ page: Page; wacid: string }> {
  const page = await pages.open(name);
  await goAvailable(page);
  const wacid = await placeCall(b);
  await answer(page, wacid);
  await until('the caller hears the page', async () => ((await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(wacid)}`)).media as { packetsReceived: number }).packetsReceived > 25, 15_000);
  return { page, wacid };
}

it('a reload mid-call: the call is ended at the Service at once and the reloaded page says its audio was lost (not "a call is open in another tab"); a second tab closing changed nothing', async () => {
  const { page, wacid } = await inCall('agent1');
  // A second tab of the same agent: it rightly shows the call as open in another tab...
  const second = await page.context().newPage();
  await second.goto(`${b.url}/`);
  await waitOnline(second);
  await second.locator(`[data-testid="call-elsewhere"][data-wacid="${wacid}"]`).waitFor({ state: 'visible', timeout: 10_000 });
  // ...and closing it leaves the call alone.
  await second.close();
  await sleep(3_000);
  expect(await terminatedAt(wacid)).toBeUndefined();
  expect(await callerState(wacid)).toBe('active');

  const t0 = Date.now();
  await page.reload();
  const at = await until('the terminate at the Service', () => terminatedAt(wacid), 5_000, 20);
  console.log(`figure reload: page reload → terminate at the Service ${at - t0} ms`);
  expect(at - t0).toBeLessThan(5_000);
  await waitOnline(page);
  const lost = page.getByTestId('call-lost');
  await lost.waitFor({ state: 'visible', timeout: 10_000 });
  expect(await lost.getAttribute('data-wacid')).toBe(wacid);
  expect(await lost.textContent()).toMatch(/lost its audio/);
  await page.locator('[data-testid="call-lost"][data-state="ended"]').waitFor({ timeout: 10_000 });
  expect(await page.getByTestId('call-elsewhere').isVisible()).toBe(false);
  await until('the caller hung up by the Service', async () => (await callerState(wacid)) === 'ended', 5_000);
  // The call log (history) has the call over, with why.
  const logged = page.locator(`[data-testid="call-log-item"][data-wacid="${wacid}"][data-outcome="answered"]`);
  await logged.waitFor({ timeout: 15_000 });
  expect(await logged.textContent()).toMatch(/page was reloaded or closed during the call/);
  await shots(page, 'reload-lost');
}, 90_000);

it('the page crashes mid-call: the call is ended at the Service within 5 s', async () => {
  const { page, wacid } = await inCall('agent2');
  const cdp = await page.context().newCDPSession(page);
  const t0 = Date.now();
  // The renderer dies: no pagehide, its socket just drops (the send itself is never answered).
  void cdp.send('Page.crash').catch(() => undefined);
  const at = await until('the terminate at the Service', () => terminatedAt(wacid), 6_000, 20);
  console.log(`figure reload: page crash → terminate at the Service ${at - t0} ms`);
  expect(at - t0).toBeLessThan(5_000);
  await page.close();
}, 60_000);
