/**
 * Transfer from the agent page, end to end in real Chromium (anchor mode, real parts only:
 * a private Janus in a network namespace, the emulator's werift caller, the bridge serving the
 * pages; transfer-rig.ts). agent1's and agent2's pages run in two browsers, each fake
 * microphone playing that agent's tone (the rig's HZ), so at each step the caller's ear says
 * which page it hears. (One browser and one tone for both pages made the conference step a
 * coin toss: two copies of one tone mix in Janus with whatever phase the two captures have,
 * and now and then they cancel. CI: the caller heard 0.0003 of the pages' tone in a conference
 * both pages showed.)
 *
 * One test, several steps (one bridge): agent1 answers on its page, opens the Transfer dialog
 * (keyboard: Escape closes it, the focus returns), sees agent2 available and pickable, agent3
 * away and agent4 on a call listed with their state but not pickable, the number's queue with
 * its waiting count; sends a cold transfer to agent2 with a note; agent2's ringing card shows
 * "Transferred by agent1: …"; agent2 answers and the caller hears it. Then warm from agent2's
 * page: "Talk first" to agent1, whose ring says agent2 wants to talk first; both pages show the
 * consult, the caller hears music only, the supervisor's row lists both agents; Complete →
 * agent1 holds the call and the caller hears it, agent2's page is off the call. Then a conference
 * from agent1's page (Talk first, Conference): both pages list who is on the call, the caller
 * hears the pages again; agent2 leaves and agent1 talks on.
 * A second test: Close in the dialog sends nothing; "Talk first" declined by agent2 and then
 * cancelled by agent1 each bring the caller back to agent1; "Transfer now" declined by agent2
 * rings agent1 again, who takes the call back.
 * Screenshots (desktop, phone) of the dialog, the consult and the conference, with E2E_SHOTS: `agent-desk-transfer-*`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/chromium.ts';
import { wav } from '../support/tones.ts';
import { goAvailable, hookState, hookStats, loginAs, waitOnline } from '../web-agent/driver.ts';
import { shots } from './desk-page.ts';
import { emulatorRequest, login, PASSWORD, until } from './harness.ts';
import { HEARD, HZ, PHONE_ID, QUIET, transferRig } from './transfer-rig.ts';

/** The agents whose pages take part: each in its own browser, its microphone playing its tone. */
type PageAgent = 'agent1' | 'agent2';
/** A page's tone reaches the caller quieter than a werift agent's (the browser's audio processing): ~0.03 seen, absent ≤ 0.002. */
const PAGE_HEARD = 0.01;

// Rings last 20 s: a page on a loaded machine may take more than the programs' 4 s to show one and click Answer.
const rig = transferRig({ pages: true, ringTimeoutMs: 20_000 });
let dir: string;
const browsers = new Map<PageAgent, Browser>();
const pageErrors: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sb-transfer-page-'));
  // Autoplay without a click: a page plays the caller as soon as its leg is in.
  for (const name of ['agent1', 'agent2'] as const) {
    browsers.set(name, await launchChromium({ fakeAudioCapture: wav(join(dir, `${name}.wav`), HZ[name]), autoplayWithoutGesture: true }));
  }
}, 90_000);
afterAll(async () => {
  for (const b of browsers.values()) await b.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  expect(pageErrors).toEqual([]);
});

/** Each test's pages, closed after it (a page left open would still take the next test's rings). */
const opened: Page[] = [];
afterEach(async () => {
  for (const p of opened.splice(0)) await p.context().close();
});

async function open(name: string, path = '/'): Promise<Page> {
  // agent2 in its browser; agent1 and the supervisor (whose page sends no audio) in the other.
  const browser = browsers.get(name === 'agent2' ? 'agent2' : 'agent1')!;
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  opened.push(page);
  page.on('pageerror', (e) => pageErrors.push(`${name}: ${e.message}`));
  await loginAs(page, rig.bridge.url, name, PASSWORD);
  if (path !== '/') {
    await page.goto(`${rig.bridge.url}${path}`);
    await waitOnline(page);
  }
  return page;
}

/** What the caller hears: these pages' tones and no other page's, the music or not; the message names the step. */
async function callerHearsOnly(wacid: string, pages: readonly PageAgent[], music: boolean, what: string): Promise<void> {
  let last: unknown;
  await until(what, async () => {
    const l = await rig.callerHears(wacid, 400);
    last = l;
    const each = (['agent1', 'agent2'] as const).every((a) => (pages.includes(a) ? l[a] > PAGE_HEARD : l[a] < QUIET));
    return each && (music ? l.music > HEARD : l.music < QUIET);
  }, 15_000).catch((err: Error) => {
    throw new Error(`${err.message}; last heard ${JSON.stringify(last)}`);
  });
}

/** The page receives the caller: its inbound audio energy grows. */
async function pageHearsCaller(page: Page, what: string): Promise<void> {
  const energy = async () => ((await hookStats(page)) as { inbound?: { totalAudioEnergy?: number } } | null)?.inbound?.totalAudioEnergy ?? 0;
  const first = await until(`${what}: audio in`, async () => ((await energy()) > 0 ? energy() : undefined), 15_000);
  await until(`${what}: audio keeps coming`, async () => (await energy()) > first, 10_000);
}

/** axe-core's WCAG 2.1 A/AA rules over one part of the page: its serious and critical violations, named. */
async function axe(page: Page, selector: string): Promise<string[]> {
  const r = await new AxeBuilder({ page }).include(selector).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/**
 * agent1's page takes a call (the only agent available then), and agent2's page goes available
 * once agent1 holds it (so the call rang agent1 only).
 */
async function agent1TalkingAgent2Ready(): Promise<{ p1: Page; p2: Page; wacid: string }> {
  const p1 = await open('agent1');
  await goAvailable(p1);
  const wacid = (await emulatorRequest(rig.bridge.emu, 'POST', '/calls', {})).wacid as string;
  await p1.locator(`[data-testid="incoming-call"][data-wacid="${wacid}"]`).waitFor({ timeout: 30_000 });
  await p1.getByTestId('answer').click();
  await activeCall(p1, wacid).waitFor({ timeout: 20_000 });
  await callerHearsOnly(wacid, ['agent1'], false, 'the caller hears agent1');
  const p2 = await open('agent2');
  await goAvailable(p2);
  return { p1, p2, wacid };
}

const activeCall = (p: Page, wacid: string) => p.locator(`[data-testid="call-active"][data-wacid="${wacid}"] [data-testid="call-status"][data-state="connected"]`);

describe('transfer from the agent page (anchor mode, Chromium)', () => {
  it('cold with a note to an available agent (away and busy ones listed, not pickable), then warm with Complete, then a conference one leaves; who hears whom at each step', async () => {
    // agent4 (a program) on a call of its own: busy. agent3 (a program) away.
    const a4 = await rig.agent('agent4');
    const busy = await rig.talking(a4, 'agent4');
    await rig.agent('agent3', false);

    const { p1, p2, wacid } = await agent1TalkingAgent2Ready();
    // A direct-mode hint is never shown on an anchored call.
    expect(await p1.getByTestId('transfer-unavailable').count()).toBe(0);

    // ---- the dialog: keyboard reachable, Escape closes it and the focus comes back ----
    const opener = p1.getByTestId('transfer-open');
    await opener.focus();
    await p1.keyboard.press('Enter');
    const dialog = p1.getByTestId('transfer-dialog');
    await dialog.waitFor({ state: 'visible' });
    expect(await p1.evaluate(() => document.activeElement?.closest('dialog')?.dataset.testid)).toBe('transfer-dialog');
    await p1.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect(await p1.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.testid)).toBe('transfer-open');
    await opener.click();
    await dialog.waitFor({ state: 'visible' });

    // Targets with their state: agent2 pickable; agent3 away and agent4 on a call shown, in words, not pickable.
    const agent = (name: string) => dialog.locator(`[data-testid="transfer-agent"][data-name="${name}"]`);
    await agent('agent2').locator('input:not([disabled])').waitFor({ timeout: 10_000 });
    expect(await agent('agent2').getAttribute('data-pickable')).toBe('true');
    expect(await agent('agent3').getAttribute('data-status')).toBe('away');
    expect(await agent('agent3').locator('input').isDisabled()).toBe(true);
    expect(await agent('agent3').getByTestId('transfer-agent-state').textContent()).toBe('Away · cannot take it now');
    expect(await agent('agent4').getAttribute('data-status')).toBe('on-call');
    expect(await agent('agent4').locator('input').isDisabled()).toBe(true);
    expect(await agent('agent4').getByTestId('transfer-agent-state').textContent()).toBe('On a call · cannot take it now');
    const queue = dialog.locator(`[data-testid="transfer-queue"][data-phone-id="${PHONE_ID}"]`);
    expect(await queue.getAttribute('data-waiting')).toBe('0');
    expect(await queue.getByTestId('transfer-queue-waiting').textContent()).toBe('nobody waiting');
    expect(await dialog.getByTestId('transfer-cold').isDisabled()).toBe(true);
    await agent('agent2').locator('input').check();
    await dialog.getByTestId('transfer-note').fill('billing question, identity checked');
    expect(await dialog.getByTestId('transfer-warm').isEnabled()).toBe(true);
    expect(await axe(p1, '[data-testid="transfer-dialog"]')).toEqual([]);
    await shots(p1, 'transfer-dialog');

    // ---- cold: music at once, agent1's page off the call, agent2 rings with the note ----
    const tCold = Date.now();
    await dialog.getByTestId('transfer-cold').click();
    await dialog.waitFor({ state: 'hidden' });
    await callerHearsOnly(wacid, [], true, 'the caller hears music, no page');
    const musicMs = Date.now() - tCold;
    await p1.locator('[data-testid="call-idle"]').waitFor({ timeout: 10_000 }).catch(async (e) => {
      // What agent1's page still shows, to tell why.
      console.log('agent1 after the transfer:', await p1.locator('.callbox').getAttribute('data-testid'), JSON.stringify(await p1.evaluate(() => (window as typeof window & { __switchboard: { state(): unknown } }).__switchboard.state())).slice(0, 3000));
      throw e;
    });
    const ring = p2.locator(`[data-testid="incoming-call"][data-wacid="${wacid}"]`);
    await ring.waitFor({ timeout: 30_000 });
    expect(await ring.getByTestId('incoming-transfer').textContent()).toBe('Transferred by agent1: billing question, identity checked');
    const tAnswer = Date.now();
    await p2.getByTestId('answer').click();
    await activeCall(p2, wacid).waitFor({ timeout: 20_000 });
    await callerHearsOnly(wacid, ['agent2'], false, 'the caller hears agent2 alone, no music');
    const answerMs = Date.now() - tAnswer;
    await pageHearsCaller(p2, 'agent2 hears the caller');
    // agent1 is free again (WRAP_UP_MS off): its line says so.
    await p1.locator('[data-testid="agent-state"][data-status="available"]').waitFor({ timeout: 10_000 });

    // ---- warm from agent2's page: Talk first to agent1, then Complete ----
    const boss = await open('boss', '/supervisor');
    const row = boss.locator(`[data-testid="live-call"][data-wacid="${wacid}"]`);
    await row.waitFor({ timeout: 10_000 });
    await p2.getByTestId('transfer-open').click();
    const d2 = p2.getByTestId('transfer-dialog');
    await d2.locator('[data-testid="transfer-agent"][data-name="agent1"] input:not([disabled])').check({ timeout: 10_000 });
    await d2.getByTestId('transfer-note').fill('wants a refund');
    await d2.getByTestId('transfer-warm').click();
    await d2.waitFor({ state: 'hidden' });
    const ring1 = p1.locator(`[data-testid="incoming-call"][data-wacid="${wacid}"]`);
    await ring1.waitFor({ timeout: 30_000 }).catch(async (e) => {
      const st = (p: typeof p1) => p.evaluate(() => JSON.stringify((window as typeof window & { __switchboard: { state(): unknown } }).__switchboard.state())).then((x) => x.slice(0, 2500));
      console.log('consult ring missing; agent2 banner:', await p2.locator('[data-testid="error-banner"]').textContent().catch(() => '?'), '\nagent2:', await st(p2), '\nagent1:', await st(p1));
      throw e;
    });
    expect(await ring1.getByTestId('incoming-transfer').textContent()).toBe('agent2 wants to talk first: wants a refund');
    await p1.getByTestId('answer').click();
    await p2.locator('[data-testid="consult"][data-phase="talking"]').waitFor({ timeout: 20_000 });
    await p1.locator('[data-testid="consult"]').waitFor({ timeout: 10_000 });
    expect(await p2.getByTestId('consult-status').textContent()).toBe('Consult with agent1 in progress');
    expect(await p1.getByTestId('consult-status').textContent()).toBe('agent2 is talking to you before handing over this call');
    expect(await p1.getByTestId('consult-complete').count()).toBe(0); // only the agent who started it finishes it
    await callerHearsOnly(wacid, [], true, 'the caller hears music, never the consult');
    await until('the supervisor sees both agents on the call', async () => (await row.getByTestId('live-legs').getAttribute('data-legs')) === 'agent2,agent1', 10_000);
    expect(await row.getByTestId('live-legs').textContent()).toContain('on the call: agent2 and agent1');
    expect(await axe(p2, '[data-testid="consult"]')).toEqual([]);
    await shots(p2, 'transfer-consult');

    const tComplete = Date.now();
    await p2.getByTestId('consult-complete').click();
    await callerHearsOnly(wacid, ['agent1'], false, 'the caller hears agent1 alone, no music');
    const completeMs = Date.now() - tComplete;
    // Upper bounds: each includes the 400 ms window measured and the polling.
    console.log(`transfer from the page: "Transfer now" → the caller hears music (no page) ${musicMs} ms; agent2's Answer → the caller hears agent2 alone ${answerMs} ms; Complete → the caller hears agent1 alone ${completeMs} ms`);
    await p2.locator('[data-testid="call-idle"]').waitFor({ timeout: 10_000 });
    await activeCall(p1, wacid).waitFor();
    expect(await p1.getByTestId('consult').count()).toBe(0);
    await until('the supervisor sees agent1 alone on the call', async () => (await row.getByTestId('live-legs').getAttribute('data-legs')) === 'agent1', 10_000);
    await pageHearsCaller(p1, 'agent1 hears the caller');

    // ---- a conference from agent1's page: both agents with the caller, then agent2 leaves ----
    await p1.getByTestId('transfer-open').click();
    const d1 = p1.getByTestId('transfer-dialog');
    await d1.locator('[data-testid="transfer-agent"][data-name="agent2"] input:not([disabled])').check({ timeout: 10_000 });
    await d1.getByTestId('transfer-warm').click();
    await d1.waitFor({ state: 'hidden' });
    await p2.locator(`[data-testid="incoming-call"][data-wacid="${wacid}"]`).waitFor({ timeout: 30_000 });
    await p2.getByTestId('answer').click();
    await p1.locator('[data-testid="consult"][data-phase="talking"] [data-testid="consult-conference"]:not([disabled])').click({ timeout: 20_000 });
    for (const p of [p1, p2]) await p.locator('[data-testid="conference"] [data-testid="conference-member"][data-name="agent2"]').waitFor({ timeout: 10_000 });
    expect(await p2.locator('[data-testid="conference-member"]').evaluateAll((els) => els.map((e) => e.getAttribute('data-name')))).toEqual(['', 'agent1', 'agent2']);
    await callerHearsOnly(wacid, ['agent1', 'agent2'], false, 'the caller hears both agents, no music');
    await until('the supervisor sees the conference', async () => (await row.getByTestId('live-legs').getAttribute('data-legs')) === 'agent1,agent2', 10_000);
    await shots(p2, 'transfer-conference');
    await p2.getByTestId('conference-leave').click();
    await p2.locator('[data-testid="call-idle"]').waitFor({ timeout: 10_000 });
    await until('agent1 alone with the caller', async () => (await p1.getByTestId('conference').count()) === 0 && (await row.getByTestId('live-legs').getAttribute('data-legs')) === 'agent1', 10_000);
    await callerHearsOnly(wacid, ['agent1'], false, 'the caller still hears agent1');

    await p1.getByTestId('hangup').click();
    await until('the rooms are destroyed', async () => (await rig.rooms()) === 1, 15_000); // agent4's call is still on

    // ---- reports and the wallboard count the transfers: agent1's cold one and agent2's warm one completed; the conference is none ----
    const transfersOf = (testid: string, attr: string, value: string) => boss.locator(`[data-testid="${testid}"][${attr}="${value}"] [data-testid="reports-transfers"]`).textContent();
    const number = rig.bridge.emu.ctx.phoneNumbers.get(PHONE_ID)!.phoneNumber;
    // History is written behind the call (batched): wait for every count, not only the first one written.
    const counts = async () => ({
      agent1: await transfersOf('reports-agent', 'data-name', 'agent1').catch(() => ''),
      agent2: await transfersOf('reports-agent', 'data-name', 'agent2').catch(() => ''),
      number: await transfersOf('reports-number', 'data-number', number).catch(() => ''),
    });
    const want = { agent1: '1', agent2: '1', number: '2' };
    let seen = {};
    await until('the report counts the transfers', async () => {
      await boss.getByTestId('reports-show').click();
      seen = await counts();
      return JSON.stringify(seen) === JSON.stringify(want);
    }, 20_000, 500).catch(() => undefined);
    expect(seen).toEqual(want);
    const tile = boss.locator(`[data-testid="wb-number"][data-number="${number}"] [data-testid="wb-transfers"] .wb-value`);
    await until('the wallboard counts the transfers', async () => (await tile.textContent().catch(() => '')) === '2', 15_000);
    expect(await boss.locator('[data-testid="wb-agent"][data-name="agent2"] [data-testid="wb-agent-figures"]').textContent()).toContain('1 transfer');
    const cookie = await login(rig.bridge.url, 'boss');
    const csv = await (await fetch(`${rig.bridge.url}/api/reports.csv?by=agent`, { headers: { cookie } })).text();
    expect(csv.split('\r\n')[0]).toMatch(/,Transfers$/);
    expect(csv.split('\r\n').find((l) => l.startsWith('agent1,'))).toMatch(/,1$/);

    // agent4's call ends here. Left on, it outlived this test: the rig closes the programs after
    // each test, the call's agent went, anchor mode put the call back in the queue, and it rang the
    // next test's agent1, who missed it and went away (CI: "the ring back missing", agent1 away
    // with a missed call from this test's first caller).
    expect(await a4.request({ type: 'call.hangup', wacid: busy.wacid })).toMatchObject({ type: 'ack' });
    await until('no room left', async () => (await rig.rooms()) === 0, 15_000);
  }, 180_000);

  it('Close in the dialog changes nothing; a consult declined or cancelled brings the caller back to the first agent; a cold transfer declined rings the first agent again', async () => {
    // Nothing of the first test is live: a call of its own would ring this test's agents.
    expect(await rig.rooms()).toBe(0);
    const { p1, p2, wacid } = await agent1TalkingAgent2Ready();
    const dialog = p1.getByTestId('transfer-dialog');
    const pick = async () => {
      await p1.getByTestId('transfer-open').click();
      await dialog.locator('[data-testid="transfer-agent"][data-name="agent2"] input:not([disabled])').check({ timeout: 30_000 });
    };
    const ring2 = p2.locator(`[data-testid="incoming-call"][data-wacid="${wacid}"]`);

    // ---- Close: the dialog goes, nobody rings, the caller still hears agent1 ----
    await pick();
    await dialog.getByTestId('transfer-note').fill('not sent');
    await dialog.getByTestId('transfer-close').click();
    await dialog.waitFor({ state: 'hidden' });
    await callerHearsOnly(wacid, ['agent1'], false, 'the caller still hears agent1 after Close');
    expect(await ring2.count()).toBe(0);
    await activeCall(p1, wacid).waitFor();

    // ---- Talk first, agent2 declines: the consult ends, the caller is back with agent1 ----
    await pick();
    await dialog.getByTestId('transfer-warm').click();
    await dialog.waitFor({ state: 'hidden' });
    await ring2.waitFor({ timeout: 30_000 });
    await callerHearsOnly(wacid, [], true, 'the caller hears music while agent2 rings');
    await p2.getByTestId('decline').click();
    await ring2.waitFor({ state: 'detached', timeout: 15_000 });
    await until("agent1's consult ended", async () => (await p1.getByTestId('consult').count()) === 0, 15_000);
    await callerHearsOnly(wacid, ['agent1'], false, 'the caller back with agent1 after the decline');
    await activeCall(p1, wacid).waitFor();

    // ---- Talk first again (the same call rings agent2 again), agent2 answers, agent1 cancels ----
    await pick();
    await dialog.getByTestId('transfer-warm').click();
    await dialog.waitFor({ state: 'hidden' });
    await ring2.waitFor({ timeout: 30_000 });
    await p2.getByTestId('answer').click();
    // CI (run 5 of 29 Nov, once): not talking within 20 s. The phase comes with agent2's leg
    // being up in the consult room (`legReady` from the socket the consult recorded): say
    // which side was missing.
    await p1.locator('[data-testid="consult"][data-phase="talking"]').waitFor({ timeout: 20_000 }).catch(async (e: Error) => {
      const rec = await rig.bridge.store.getCall(wacid).catch(() => null);
      console.log('the consult not talking 20 s after agent2 answered; the call record:', JSON.stringify(rec).slice(0, 3000), '\nagent2:', JSON.stringify(await hookState(p2)).slice(0, 3000));
      throw e;
    });
    await p1.getByTestId('consult-cancel').click();
    await p2.locator('[data-testid="call-idle"]').waitFor({ timeout: 15_000 });
    await until("agent1's consult ended", async () => (await p1.getByTestId('consult').count()) === 0, 15_000);
    await callerHearsOnly(wacid, ['agent1'], false, 'the caller back with agent1 after Cancel');
    await pageHearsCaller(p1, 'agent1 hears the caller again');

    // ---- Transfer now, agent2 declines: the call rings agent1 again, who takes it back ----
    // This wait failed in 2 of 2 full runs on one machine, and once in 3 runs of this file with
    // CPU hogs beside it: say what agent2's page showed instead (a push lost, or a state left stuck).
    try {
      await p2.locator('[data-testid="agent-state"][data-status="available"]').waitFor({ timeout: 15_000 });
    } catch (e) {
      console.log('agent2 not available after the cancelled consult:', await p2.locator('[data-testid="agent-state"]').getAttribute('data-status'), await p2.locator('[data-testid="agent-state"]').textContent(), JSON.stringify(await hookState(p2)).slice(0, 3000));
      throw e;
    }
    await pick();
    await dialog.getByTestId('transfer-cold').click();
    await dialog.waitFor({ state: 'hidden' });
    await callerHearsOnly(wacid, [], true, 'the caller hears music after Transfer now');
    await ring2.waitFor({ timeout: 30_000 }).catch(async (e) => {
      const st = (p: Page) => p.evaluate(() => JSON.stringify((window as typeof window & { __switchboard: { state(): unknown } }).__switchboard.state())).then((x) => x.slice(0, 4000));
      console.log('the transfer ring missing; agent2:', await st(p2), '\nagent1:', await st(p1));
      throw e;
    });
    await p2.getByTestId('decline').click();
    const back = p1.locator(`[data-testid="incoming-call"][data-wacid="${wacid}"]`);
    await back.waitFor({ timeout: 30_000 }).catch(async (e) => {
      const st = (p: Page) => p.evaluate(() => JSON.stringify((window as typeof window & { __switchboard: { state(): unknown } }).__switchboard.state())).then((x) => x.slice(0, 4000));
      console.log('the ring back missing; agent2:', await st(p2), '\nagent1:', await st(p1));
      throw e;
    });
    await p1.getByTestId('answer').click();
    await activeCall(p1, wacid).waitFor({ timeout: 20_000 });
    await callerHearsOnly(wacid, ['agent1'], false, 'the caller back with agent1 after the declined transfer');
    await p1.getByTestId('hangup').click();
    await p1.locator('[data-testid="call-idle"]').waitFor({ timeout: 15_000 });
  }, 180_000);
});
