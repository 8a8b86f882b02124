/**
 * The agent's first hour, in real Chromium against the real server with history
 * and the emulator's real WebRTC callers: log in → ready-check → available → calls answered,
 * held, muted, hung up, each with a wrap-up note typed at human speed (50 ms a key) while a
 * short WRAP_UP_MS runs (the countdown must stand still while the agent types; one wrap-up
 * survives a reload of the page with its notes) → 2 calls
 * declined → 1 call ringing out (the agent is set away) → logout and login (away again, the
 * ready-check first) → a task claimed in the queue pane → the page reloaded (the claimed task
 * is still there, the page goes away until its ready-check). After every step: the state line
 * agrees with the call box, nothing of a finished call is on screen but its own wrap-up, and
 * the softphone's controls are where they were in every state. At the end every note is in
 * history. Screenshots of every state, desktop 1366×768 and phone 390×844, with E2E_SHOTS
 * (test/support/shots.ts, e.g. `E2E_SHOTS=/tmp/desk34-shots`): they assert nothing, and the
 * sixteen pairs were a good part of this test's Chromium CPU in `npm test`.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { goAvailable } from '../web-agent/driver.ts';
import { until } from './harness.ts';
import { browserSuite } from './suite.ts';
import { screenshot, shotsDir } from '../support/shots.ts';

const DESK = { width: 1366, height: 768 };
const PHONE = { width: 390, height: 844 };
/** Short enough that typing a note outlasts it: only a countdown that stands still while the agent types keeps the note. */
const WRAP_UP_MS = 4_000;
/**
 * Short enough for the ring-out step, long enough for the checks made while a call rings
 * before Answer is pressed: with 3 s, at load 20 on this 2-core machine, a call rang out
 * between its card showing and the click (Answer disabled, the test failed on the old code too).
 */
const RING_TIMEOUT_MS = 6_000;
/** Calls answered in the hour (the ten); one of them is cut by a reload mid-call. */
const ANSWERED = 10;
const RELOADED_MID_CALL = 5;
const CONTROLS = ['answer', 'decline', 'mute', 'hold', 'hangup'] as const;

const suite = browserSuite();

type Box = [number, number, number, number];
interface Snapshot {
  line: string;
  lineText: string;
  mode: string;
  boxWacid: string | null;
  wraps: Array<string | null>;
  endedOutsideWrap: number;
  controls: Record<string, Box>;
}

async function snapshot(page: Page): Promise<Snapshot> {
  return page.evaluate((ids) => {
    const q = (s: string) => document.querySelector<HTMLElement>(s);
    const box = q('.callbox')!;
    const controls: Record<string, [number, number, number, number]> = {};
    for (const id of ids) {
      const r = q(`[data-testid="${id}"]`)!.getBoundingClientRect();
      controls[id] = [r.x, r.y + window.scrollY, r.width, r.height];
    }
    return {
      line: q('[data-testid="agent-state"]')!.dataset.status ?? '',
      lineText: q('[data-testid="agent-state"]')!.textContent ?? '',
      mode: box.dataset.mode ?? '',
      boxWacid: box.dataset.wacid ?? null,
      wraps: [...document.querySelectorAll<HTMLElement>('[data-testid="wrapup"]')].map((e) => e.dataset.wacid ?? null),
      endedOutsideWrap: [...document.querySelectorAll('[data-testid="call-ended"]')].filter((e) => !e.closest('[data-testid="wrapup"]')).length,
      controls,
    };
  }, [...CONTROLS]);
}

describe('the first hour', () => {
  it('calls answered, held, muted and wrapped up at typing speed, declines, a ring-out, logout and login, a task claimed and a reload: notes in history, no stale or contradictory state, controls that never move', async () => {
    const b = await suite.startBridge({
      history: true,
      agents: ['agent1'],
      env: { WRAP_UP_MS: String(WRAP_UP_MS), RING_TIMEOUT_MS: String(RING_TIMEOUT_MS) },
    });
    const page = await suite.loginPage('agent1', '/', { viewport: DESK });
    const finished = new Set<string>();
    let home: Record<string, Box> | undefined;
    let wrapOf: string | undefined; // the call whose wrap-up may be on screen

    /** Every step: one state line that agrees with the call box, nothing of a finished call but its wrap-up, controls in place. */
    async function check(step: string): Promise<Snapshot> {
      const s = await snapshot(page);
      const where = `${step}: ${JSON.stringify({ line: s.line, text: s.lineText, mode: s.mode, wacid: s.boxWacid, wraps: s.wraps })}`;
      const agrees: Record<string, string[]> = { idle: ['available', 'away', 'after-call-work'], incoming: ['ringing'], active: ['on-call'], elsewhere: ['on-call'] };
      expect(agrees[s.mode], where).toContain(s.line);
      expect(s.boxWacid !== null && finished.has(s.boxWacid), where).toBe(false);
      expect(s.wraps.length, where).toBeLessThanOrEqual(1);
      if (s.wraps[0]) expect(s.wraps[0], where).toBe(wrapOf);
      expect(s.endedOutsideWrap, where).toBe(0);
      home ??= s.controls;
      // The same place in every state (a sub-pixel difference of layout rounding is no move).
      const moved = CONTROLS.filter((id) => s.controls[id]!.some((v, k) => Math.abs(v - home![id]![k]!) > 1));
      expect(moved, `${where} ${JSON.stringify(s.controls)} vs ${JSON.stringify(home)}`).toEqual([]);
      return s;
    }
    async function shot(name: string): Promise<void> {
      if (!shotsDir()) return;
      await screenshot(page, `${name}-desktop.png`);
      await page.setViewportSize(PHONE);
      await screenshot(page, `${name}-phone.png`, { fullPage: true });
      await page.setViewportSize(DESK);
      await page.evaluate(() => window.scrollTo(0, 0));
    }
    const lineIs = (status: string, timeout = 15_000) => page.locator(`[data-testid="agent-state"][data-status="${status}"]`).waitFor({ timeout });
    const call = async (from: string) => (await suite.control('POST', '/calls', { from, audio: 'tone' })).wacid as string;
    const hangUpCaller = (wacid: string) => suite.control('POST', `/calls/${encodeURIComponent(wacid)}/hangup`).catch(() => undefined);

    await check('logged in');
    await shot('01-logged-in');
    await goAvailable(page);
    await lineIs('available');
    await check('available');
    await shot('02-available');

    // ---- calls answered, held, muted, wrapped up with a note typed at 50 ms a key ----
    const answered: Array<{ wacid: string; note: string; disposition: string }> = [];
    const DISPOSITIONS = ['Resolved', 'Follow-up needed', 'Escalated', 'Other'];
    for (let i = 0; i < ANSWERED; i++) {
      const from = `+1555034${String(i).padStart(4, '0')}`;
      const wacid = await call(from);
      const box = page.locator(`[data-testid="incoming-call"][data-wacid="${wacid}"]`);
      await box.waitFor({ timeout: 15_000 });
      await check(`call ${i} ringing`);
      // The agent's countdown is the ring timeout, not the accept window.
      const secs = Number(await page.getByTestId('incoming-countdown').getAttribute('data-seconds'));
      expect(secs).toBeLessThanOrEqual(RING_TIMEOUT_MS / 1000 + 1); // clock skew estimate: a second either way
      if (i === 0) await shot('03-ringing');
      await page.getByTestId('answer').click();
      await page.locator(`[data-testid="call-active"][data-wacid="${wacid}"] [data-testid="call-status"][data-state="connected"]`).waitFor({ timeout: 30_000 });
      await lineIs('on-call');
      await check(`call ${i} connected`);
      // The customer and the call are in view at 1366×768 without scrolling.
      if (i === 0) await shot('04-in-call');
      await page.getByTestId('hold').click();
      await page.locator('[data-testid="hold"][aria-pressed="true"]').waitFor();
      await check(`call ${i} held`);
      if (i === 0) await shot('05-held');
      await page.getByTestId('hold').click();
      await page.locator('[data-testid="hold"][aria-pressed="false"]').waitFor();
      await page.getByTestId('mute').click();
      await page.locator('[data-testid="mute"][aria-pressed="true"]').waitFor();
      await check(`call ${i} muted`);
      if (i === 0) await shot('06-muted');
      await page.getByTestId('mute').click();
      wrapOf = wacid;
      if (i === RELOADED_MID_CALL) {
        // A reload mid-call (direct mode): the call's audio lived in this page, so the call is
        // ended at once, the reloaded page says so in words, and its wrap-up follows.
        await page.reload();
        await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor({ timeout: 15_000 });
        const lost = page.getByTestId('call-lost');
        await lost.waitFor({ state: 'visible', timeout: 10_000 });
        expect(await lost.getAttribute('data-wacid')).toBe(wacid);
        expect(await lost.textContent()).toMatch(/lost its audio/);
        await page.locator('[data-testid="call-lost"][data-state="ended"]').waitFor({ timeout: 10_000 });
        await shot('07r-reloaded-mid-call');
      } else {
        await page.getByTestId('hangup').click();
      }
      await page.locator(`[data-testid="wrapup"][data-wacid="${wacid}"]`).waitFor({ timeout: 15_000 });
      finished.add(wacid);
      // The wrap-up and the customer are in view at 1366×768 without scrolling, as the wrap-up
      // appears (one read of both: the countdown runs until the first keystroke below).
      const [wrapBox, customerBox] = await page.evaluate(() =>
        ['[data-testid="wrapup"]', '[data-testid="customer"]'].map((sel) => {
          const r = document.querySelector(sel)!.getBoundingClientRect();
          return { y: r.y, height: r.height };
        }),
      );
      expect(wrapBox!.y + wrapBox!.height).toBeLessThanOrEqual(DESK.height);
      expect(customerBox!.y).toBeLessThan(DESK.height - 100);
      // A note longer than WRAP_UP_MS to type, begun at once (the countdown runs until the first
      // keystroke, whose draft the page sends at once: checks made before it ran it out on a
      // loaded machine): the countdown stands still while the agent types.
      const note = `Call ${i + 1}: asked about the invoice of March, wants a copy by email and a call back on Monday.`;
      expect(note.length * 50).toBeGreaterThan(WRAP_UP_MS);
      // At typing speed on the first two calls (the second one's wrap-up is reloaded) and the
      // one reloaded mid-call; pasted on the others (the same drafts, a shorter run: the
      // countdown standing still is shown by the typed ones).
      if (i < 2 || i === RELOADED_MID_CALL) await page.getByTestId('wrapup-notes').pressSequentially(note, { delay: 50 });
      else await page.getByTestId('wrapup-notes').fill(note);
      if (i === 0) await shot('07-wrap-up-typing');
      // Still in after-call work after typing for longer than WRAP_UP_MS: the countdown stood
      // still (read at once: the countdown runs again from the last keystroke).
      expect(await page.getByTestId('agent-state').getAttribute('data-status'), `call ${i}: the wrap-up ran out while typing`).toBe('after-call-work');
      expect(await page.getByTestId('wrapup').getAttribute('data-state')).toBe('editing');
      await check(`call ${i} wrap-up`);
      const disposition = DISPOSITIONS[i % DISPOSITIONS.length]!;
      await page.getByTestId('wrapup-disposition').selectOption(disposition);
      await check(`call ${i} typed`);
      if (i === 1) {
        // A reload in the middle of the wrap-up keeps what was typed (the server has the draft).
        await page.getByTestId('acw-more-time').click(); // the reload itself must not run the countdown out
        await page.locator('[data-testid="acw-more-time"][disabled]').waitFor();
        await page.waitForTimeout(800); // the last draft (sent at most every 0.6 s) reaches the server
        await page.reload();
        await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor({ timeout: 15_000 });
        const back = page.locator(`[data-testid="wrapup"][data-wacid="${wacid}"]`);
        await back.waitFor({ timeout: 10_000 });
        expect(await page.getByTestId('wrapup-notes').inputValue()).toBe(note);
        expect(await page.getByTestId('wrapup-disposition').inputValue()).toBe(disposition);
        expect(await page.getByTestId('wrapup-title').textContent()).toBe(`After-call work · ${from}`);
        await check(`call ${i} reloaded in wrap-up`);
      }
      await page.getByTestId('acw-ready').click();
      await page.locator('[data-testid="wrapup"]').waitFor({ state: 'detached', timeout: 10_000 });
      wrapOf = undefined;
      if (i === 1 || i === RELOADED_MID_CALL) {
        // The reloaded page could not ring: away until its ready-check.
        await lineIs('away');
        await goAvailable(page);
      }
      await lineIs('available');
      await check(`call ${i} done`);
      answered.push({ wacid, note, disposition });
    }
    await shot('08-after-calls');

    // ---- two calls declined (the callers then give up: call-back tasks) ----
    const declined: string[] = [];
    for (let i = 0; i < 2; i++) {
      const wacid = await call(`+1555035000${i}`);
      await page.locator(`[data-testid="incoming-call"][data-wacid="${wacid}"]`).waitFor({ timeout: 15_000 });
      await check(`decline ${i} ringing`);
      await page.getByTestId('decline').click();
      if (i === 0) await shot('08a-declined');
      await page.locator(`[data-testid="call-log-item"][data-wacid="${wacid}"]`).waitFor({ timeout: 10_000 });
      finished.add(wacid);
      await lineIs('available');
      await check(`decline ${i} declined`);
      await hangUpCaller(wacid);
      declined.push(wacid);
    }

    // ---- one call rings out: the agent is set away, "Missed a call" ----
    const rungOut = await call('+15550360000');
    await page.locator(`[data-testid="incoming-call"][data-wacid="${rungOut}"]`).waitFor({ timeout: 15_000 });
    await check('ring-out ringing');
    await lineIs('away', RING_TIMEOUT_MS + 10_000);
    finished.add(rungOut);
    await check('rung out');
    expect(await page.getByTestId('agent-state').textContent()).toContain('Missed a call');
    await shot('09-rung-out-away');
    await hangUpCaller(rungOut);

    // One call list: every call of this session in it, once (declined and missed included).
    for (const w of [...answered.map((a) => a.wacid), ...declined, rungOut]) {
      await page.locator(`[data-testid="call-log-item"][data-wacid="${w}"]`).waitFor({ timeout: 10_000 });
      expect(await page.locator(`[data-testid="call-log-item"][data-wacid="${w}"]`).count()).toBe(1);
    }

    // ---- logout and login: away, and the ready-check before Available ----
    await page.getByTestId('logout').click();
    await page.waitForURL(/\/login/);
    await page.getByTestId('login-name').fill('agent1');
    await page.getByTestId('login-password').fill('correct horse battery');
    await page.getByTestId('login-submit').click();
    await page.waitForURL(`${b.url}/`);
    await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor({ timeout: 15_000 });
    await lineIs('away');
    expect(await page.getByTestId('presence-available').isDisabled()).toBe(true);
    await check('logged in again');
    await shot('10-login-again');
    await goAvailable(page);
    await lineIs('available');

    // ---- a task claimed in the queue pane, the page reloaded ----
    const task = page.locator(`[data-testid="queue-task"][data-customer="+15550350000"]`);
    await task.waitFor({ timeout: 15_000 });
    // The permission is not known: it says so plainly and offers to ask.
    expect(await task.getByTestId('queue-permission').textContent()).toMatch(/Permission not known/);
    expect(await task.getByTestId('queue-ask').isVisible()).toBe(true);
    await task.getByTestId('queue-claim').click();
    await page.locator(`[data-testid="queue-task"][data-customer="+15550350000"][data-state="claimed"]`).waitFor({ timeout: 10_000 });
    await check('task claimed');
    await shot('11-task-claimed');
    // Call: the customer never allowed calls, so the Service refuses (138006): said on the task itself.
    await task.getByTestId('queue-call').click();
    const refused = task.getByTestId('queue-task-error');
    await refused.waitFor({ timeout: 15_000 });
    expect(await refused.textContent()).toMatch(/^Call back refused: .*138006/);
    await check('call back refused');
    await shot('11b-call-back-refused');
    await page.reload();
    await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor({ timeout: 15_000 });
    await page.locator(`[data-testid="queue-task"][data-customer="+15550350000"][data-state="claimed"][data-mine="true"]`).waitFor({ timeout: 10_000 });
    expect(await page.locator('[data-testid="queue-task"][data-customer="+15550350000"] [data-testid="queue-assignee"]').textContent()).toBe('Claimed by you');
    // A reloaded page cannot ring until its ready-check (the browser's audio is locked again): never Available.
    await lineIs('away');
    expect(await page.getByTestId('presence-available').isDisabled()).toBe(true);
    await check('reloaded');
    await goAvailable(page);
    await lineIs('available');
    await check('available again');
    await shot('12-reloaded-available');

    // ---- every note is in history, with its disposition ----
    const store = b.sb.history!.store;
    for (const a of answered) {
      const rec = await until(`the wrap-up of ${a.wacid} in history`, async () => {
        const r = await store.getCall(a.wacid);
        return r?.notes ? r : undefined;
      }, 10_000);
      expect(rec).toMatchObject({ notes: a.note, disposition: a.disposition, outcome: 'answered', agent: 'agent1' });
    }
    // After the reload the call list is history's: the answered calls with their disposition.
    for (const a of answered) {
      const row = page.locator(`[data-testid="call-log-item"][data-wacid="${a.wacid}"]`);
      await row.waitFor({ timeout: 10_000 });
      expect(await row.textContent()).toContain(a.disposition);
    }
  }, 300_000);
});
