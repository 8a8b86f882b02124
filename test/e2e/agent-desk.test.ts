/**
 * The agent desk end to end: the real agent page in Chromium, the real server
 * with history, the emulator's real WebRTC callers. The agent's states and their pushes to
 * a supervisor, the customer panel from the emulator's contact and from history, the
 * wrap-up that holds the next call back until a disposition, the call log after a reload,
 * and the notification of a ring in a hidden tab. Media (hold music, devices, no audio,
 * failures) is in agent-desk-media.test.ts.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ServerMsg } from '../../shared/protocol.ts';
import { buildWebAgent } from '../../web-agent/build.ts';
import type { WebAsset } from '../../server/web/index.ts';
import { launchChromium } from '../support/chromium.ts';
import { goAvailable } from '../web-agent/driver.ts';
import { agentClient, emulatorRequest, sleep, startBridge, until, type Bridge, type ProtocolClient } from './harness.ts';
import { DeskPages, answer, card, hangUp, hangUpAll, placeCall, shots, stateIs, wrapUp } from './desk-page.ts';

const WRAP_UP_MS = 20_000;
const RING_TIMEOUT_MS = 4_000;
let assets: Map<string, WebAsset>;
let browser: Browser;
let b: Bridge;
let boss: ProtocolClient;
const pages = new DeskPages(() => browser, () => b);

beforeAll(async () => {
  [assets, browser] = await Promise.all([buildWebAgent(), launchChromium()]);
  b = await startBridge({
    assets,
    history: true,
    agents: ['agent1', 'agent2', 'agent3', 'agent4', 'agent5'],
    reconnectGraceMs: 1_000,
    env: { WRAP_UP_MS: String(WRAP_UP_MS), RING_TIMEOUT_MS: String(RING_TIMEOUT_MS), CONTACT_NOTES: 'on' },
  });
  boss = await agentClient(b.url, 'boss', { available: false });
}, 90_000);
afterEach(async () => {
  await pages.closeAll();
  await hangUpAll(b);
  expect(pages.errors.splice(0)).toEqual([]);
});
afterAll(async () => {
  boss?.close();
  await b?.close();
  await browser?.close();
});

type AgentsState = Extract<ServerMsg, { type: 'agents.state' }>;
/** What the supervisor was told about `name` since `from` (status, with the reason when away). */
const bossSaw = (name: string, from: number) =>
  boss.received
    .slice(from)
    .filter((m): m is AgentsState => m.type === 'agents.state' && m.name === name)
    .map((m) => (m.reason ? `${m.status}:${m.reason}` : m.extended ? `${m.status}+` : m.status));
const bossSees = (name: string, from: number, state: string) => until(`the supervisor sees ${name} ${state}`, () => (bossSaw(name, from).includes(state) ? true : undefined), 10_000);

/** A contact at the emulator (the Service's contact store the customer panel reads). */
const contact = (phoneNumber: string, remarkName: string, tags: string[]) => emulatorRequest(b.emu, 'POST', `${b.emu.baseUrl}/contact/contacts`, { phoneNumber, remarkName, tags });

/** A whole call on the page: ring, answer, hang up, wrap up. */
async function callAndWrap(page: Page, from: string, disposition: string, notes?: string): Promise<string> {
  const wacid = await placeCall(b, { from });
  await answer(page, wacid);
  await hangUp(page, wacid);
  await wrapUp(page, disposition, notes);
  await stateIs(page, 'available');
  return wacid;
}

describe('the agent desk against the real server', () => {
  it('states: available → ringing → on a call → after-call work (countdown, More time once, Ready now) → available; away with a reason; a ring-out sets away "Missed a call"; the supervisor is told each change', async () => {
    const j = boss.received.length;
    const page = await pages.open('agent1');
    await goAvailable(page);
    await stateIs(page, 'available');
    const wacid = await placeCall(b, { from: '+15550301001' });
    await stateIs(page, 'ringing');
    await answer(page, wacid);
    await stateIs(page, 'on-call');
    expect(await page.getByTestId('agent-state-status').textContent()).toBe('On a call');
    await hangUp(page, wacid);
    await stateIs(page, 'after-call-work');
    const countdown = page.getByTestId('acw-countdown');
    const seconds = Number(await countdown.getAttribute('data-seconds'));
    expect(seconds).toBeGreaterThan(10);
    expect(seconds).toBeLessThanOrEqual(WRAP_UP_MS / 1000);
    expect(await countdown.textContent()).toMatch(/^Next call can ring in \d+ s\. Your notes are saved as you type\.$/);
    expect(await page.getByTestId('acw-ready').isDisabled()).toBe(true); // no disposition yet
    await page.getByTestId('acw-more-time').click();
    await page.locator('[data-testid="acw-more-time"][disabled]').waitFor();
    await until('the countdown grew', async () => (Number(await countdown.getAttribute('data-seconds')) > WRAP_UP_MS / 1000 ? true : undefined), 5_000);
    await wrapUp(page, 'Resolved');
    await stateIs(page, 'available');
    await bossSees('agent1', j, 'after-call-work+');
    await until('the supervisor sees agent1 available again', () => (bossSaw('agent1', j).lastIndexOf('available') > bossSaw('agent1', j).indexOf('after-call-work+') ? true : undefined), 10_000);
    // (It saw agent1 away when the page connected, before the ready-check.)
    const seen = bossSaw('agent1', j);
    expect(seen.slice(seen.indexOf('available'))).toEqual(['available', 'ringing', 'on-call', 'after-call-work', 'after-call-work+', 'available']);

    // Away with a reason from AWAY_REASONS; the time in the state counts up.
    const k = boss.received.length;
    await page.getByTestId('away-reason').selectOption('Lunch');
    await page.getByTestId('presence-away').click();
    await stateIs(page, 'away');
    expect(await page.getByTestId('agent-state-detail').textContent()).toBe(' · Lunch');
    await bossSees('agent1', k, 'away:Lunch');
    await until('time in state counts', async () => (/for 0:0[2-9]/.test((await page.getByTestId('agent-state-time').textContent()) ?? '') ? true : undefined), 8_000);
    await shots(page, 'away-reason');

    // A ring nobody answers: after RING_TIMEOUT_MS the server sets the agent away, "Missed a call".
    await page.locator('[data-testid="presence-available"]:not([disabled])').click();
    await stateIs(page, 'available');
    const missed = await placeCall(b, { from: '+15550301002' });
    await card(page, missed).waitFor({ timeout: 15_000 });
    await until('away: Missed a call', async () => ((await page.getByTestId('agent-state-detail').textContent().catch(() => '')) === ' · Missed a call' ? true : undefined), RING_TIMEOUT_MS + 10_000);
    await stateIs(page, 'away');
    expect(await page.getByTestId('presence-reason').textContent()).toMatch(/rang .*unanswered/);
    await bossSees('agent1', k, 'away:Missed a call');
    expect(bossSaw('agent1', k)).toEqual(['away:Lunch', 'available', 'ringing', 'away:Missed a call']);
    await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(missed)}/hangup`); // the caller gives up
  }, 120_000);

  it('customer panel on ring and in the call: the emulator contact and past calls from history (disposition, notes); "New customer" when there is none', async () => {
    const from = '+15550302001';
    await contact(from, 'Ann Example', ['vip', 'billing']);
    const page = await pages.open('agent2');
    await goAvailable(page);
    const past = await callAndWrap(page, from, 'Follow-up needed', 'Wants the invoice resent.');
    await until('the past call is in history', async () => ((await b.sb.history!.store.getCall(past))?.disposition === 'Follow-up needed' ? true : undefined), 10_000);

    const wacid = await placeCall(b, { from });
    await card(page, wacid).waitFor({ timeout: 15_000 });
    const panel = page.locator(`[data-testid="customer"][data-id="${from}"][data-state="ready"]`);
    await panel.waitFor({ timeout: 10_000 });
    expect(await page.getByTestId('customer-name').textContent()).toBe('Ann Example');
    expect(await page.getByTestId('customer-tag').allTextContents()).toEqual(['vip', 'billing']);
    // Past calls from history; the ringing call itself is not one of them.
    const calls = await page.getByTestId('customer-call').allTextContents();
    expect(calls.filter((t) => t.includes('In progress'))).toEqual([]);
    const before = calls.find((t) => t.includes('Follow-up needed'));
    expect(before, calls.join(' | ')).toBeDefined();
    expect(before).toContain('agent2');
    expect(before).toContain('Wants the invoice resent.');
    await shots(page, 'ringing');
    await answer(page, wacid);
    await panel.waitFor(); // kept during the call
    expect(await page.getByTestId('customer-name').textContent()).toBe('Ann Example');
    await shots(page, 'in-call');
    await hangUp(page, wacid);
    await wrapUp(page, 'Resolved');
    await stateIs(page, 'available');

    const stranger = '+15550302999';
    const other = await placeCall(b, { from: stranger });
    await card(page, other).waitFor({ timeout: 15_000 });
    await page.locator(`[data-testid="customer"][data-id="${stranger}"][data-state="ready"]`).waitFor({ timeout: 10_000 });
    expect(await page.getByTestId('customer-name').textContent()).toBe('New customer');
    expect(await page.getByTestId('customer-call').allTextContents()).toEqual([]);
    expect(await page.getByTestId('customer-calls-empty').textContent()).toBe('No calls before.');
    await card(page, other).getByTestId('decline').click();
    await card(page, other).waitFor({ state: 'detached' });
  }, 120_000);

  it('wrap-up: a call placed during after-call work is not offered until the disposition is chosen; the disposition and notes are in history and a note on the contact', async () => {
    const from = '+15550303001';
    await contact(from, 'Bo Example', []);
    const page = await pages.open('agent3');
    await goAvailable(page);
    const first = await placeCall(b, { from });
    await answer(page, first);
    await hangUp(page, first);
    await stateIs(page, 'after-call-work');
    const second = await placeCall(b, { from: '+15550303002' });
    await sleep(3_000); // the second caller waits: nothing rings here
    expect(await card(page, second).count()).toBe(0);
    expect((await b.store.getCall(second))?.agent).toBeUndefined();
    await page.getByTestId('wrapup-notes').fill('Wants a manager.');
    expect(await page.getByTestId('acw-ready').isDisabled()).toBe(true);
    await shots(page, 'after-call-work');
    await page.getByTestId('wrapup-disposition').selectOption('Escalated');
    await sleep(1_000); // chosen but not saved: still held back
    expect(await card(page, second).count()).toBe(0);
    await page.getByTestId('acw-ready').click();
    await card(page, second).waitFor({ timeout: 15_000 }); // now it rings (the saved wrap-up has left the screen)
    expect(await page.locator('[data-testid="wrapup"]').count()).toBe(0);
    await card(page, second).getByTestId('decline').click();

    const store = b.sb.history!.store;
    await until('the wrap-up in history', async () => ((await store.getCall(first))?.disposition === 'Escalated' ? true : undefined), 10_000);
    expect(await store.getCall(first)).toMatchObject({ disposition: 'Escalated', notes: 'Wants a manager.', agent: 'agent3', outcome: 'answered' });
    const notes = await until('the contact note', async () => {
      const r = (await emulatorRequest(b.emu, 'GET', `${b.emu.baseUrl}/contact/contacts/${encodeURIComponent(from)}/notes`)) as { items?: Array<{ content: string; username?: string }> };
      return r.items?.length ? r.items : undefined;
    }, 10_000);
    expect(notes[0]).toMatchObject({ content: `Call ${first}: Escalated\nWants a manager.`, username: 'agent3' });
  }, 120_000);

  it('call log after a reload: rows from history with outcome and disposition; a click opens the customer panel', async () => {
    const from = '+15550304001';
    await contact(from, 'Cy Example', ['new']);
    const page = await pages.open('agent4');
    await goAvailable(page);
    const answered = await callAndWrap(page, from, 'Wrong number', 'Asked for a taxi.');
    await until('the call in history', async () => ((await b.sb.history!.store.getCall(answered))?.disposition === 'Wrong number' ? true : undefined), 10_000);
    await page.reload();
    await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor({ timeout: 15_000 });
    await page.locator('[data-testid="call-log"][data-state="ready"]').waitFor({ timeout: 10_000 });
    const row = page.locator(`[data-testid="call-log-item"][data-wacid="${answered}"]`);
    await row.waitFor();
    expect(await row.getAttribute('data-outcome')).toBe('answered');
    const text = await row.textContent();
    expect(text).toContain('Answered');
    expect(text).toContain('Wrong number');
    await row.getByTestId('call-log-open').click();
    await page.locator(`[data-testid="customer"][data-id="${from}"][data-state="ready"]`).waitFor({ timeout: 10_000 });
    expect(await page.getByTestId('customer-name').textContent()).toBe('Cy Example');
    await shots(page, 'call-log');
  }, 90_000);

  it('a ring in a hidden tab shows a desktop notification and a flashing title', async () => {
    const page = await pages.open('agent5', (ctx) => ctx.grantPermissions(['notifications'], { origin: b.url }));
    await page.evaluate(() => {
      // Record what the page shows (the real Notification still runs).
      const w = window as typeof window & { Notification: typeof Notification; __notes: string[] };
      const Real = w.Notification;
      w.__notes = [];
      w.Notification = class extends Real {
        constructor(title: string, opts?: NotificationOptions) {
          super(title, opts);
          w.__notes.push(`${title}|${opts?.body ?? ''}`);
        }
      };
      Object.defineProperty(w.Notification, 'permission', { get: () => Real.permission });
    });
    await goAvailable(page);
    expect(await page.evaluate(() => Notification.permission)).toBe('granted');
    // Headless Chromium reports every tab visible: the page is told it is hidden the way
    // the browser would (the property and the event), as test/web-agent/desk.test.ts does.
    await page.evaluate(() => {
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
      Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
      document.dispatchEvent(new Event('visibilitychange'));
    });
    const from = '+15550305001';
    const wacid = await placeCall(b, { from });
    await card(page, wacid).waitFor({ timeout: 15_000 });
    await until('a notification', async () => ((await page.evaluate(() => (window as typeof window & { __notes: string[] }).__notes.length)) > 0 ? true : undefined), 10_000);
    const note = await page.evaluate(() => (window as typeof window & { __notes: string[] }).__notes[0]!);
    expect(note).toMatch(/^Incoming call\|/);
    expect(note).toContain('5550305001');
    // The title flashes between two texts while it rings (sampled until both are seen: the
    // ring lasts RING_TIMEOUT_MS, and a slow machine may have used some of it by now).
    const FLASH = ['☎ Incoming call · Switchboard', '☎☎☎ ANSWER · Switchboard'];
    const titles = new Set<string>();
    for (let i = 0; i < 12 && !FLASH.every((t) => titles.has(t)); i++) {
      titles.add(await page.title());
      await sleep(250);
    }
    expect([...titles].sort()).toEqual(FLASH);
    // Declined, unless it rang out meanwhile; either way the card goes.
    await card(page, wacid).getByTestId('decline').click({ timeout: 1000 }).catch(() => undefined);
    await card(page, wacid).waitFor({ state: 'detached', timeout: 15_000 });
  }, 60_000);
});
