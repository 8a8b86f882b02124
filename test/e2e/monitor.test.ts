/**
 * Monitoring end to end: the real server relay and the real pages. The
 * emulator's caller plays 440 Hz; the agent's Chromium (its own process: its fake
 * microphone plays 730 Hz) answers on the agent page; the supervisor's Chromium (1230 Hz)
 * monitors from the supervisor console's buttons. Who hears whom is told apart by
 * frequency: the supervisor page's meter, the agent page's "heard" meter, and what the
 * emulator's caller decoded (`GET /_emulator/calls/{wacid}/hears`).
 *
 * One matrix for both media modes (media-modes.ts): in direct mode the agent's tab relays
 * the call to the supervisor; in anchor mode the supervisor's own leg joins the call's room
 * on Janus (muted to listen and to whisper, unmuted to barge; whisper reaches the agent over
 * the whisper link between the two tabs, as the room has one mix). Where the modes differ
 * the case says so: the agent's tab closing does not end a monitor on the anchor (the call
 * outlives the tab).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { screenshot } from '../support/shots.ts';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildWebAgent } from '../../web-agent/build.ts';
import type { WebAsset } from '../../server/web/index.ts';
import { launchChromium } from '../support/chromium.ts';
import { wav } from '../support/tones.ts';
import { PASSWORD, emulatorRequest, sleep, startBridge, until, type Bridge } from './harness.ts';
import { mediaModes } from './media-modes.ts';
import { hookState, hookStats } from '../web-agent/driver.ts';

const CALLER_HZ = 440;
const AGENT_HZ = 730;
const SUPERVISOR_HZ = 1230;
const ALL = [CALLER_HZ, AGENT_HZ, SUPERVISOR_HZ];
/** The caller's raw tone arrives at ~0.3 after Opus and mixing. */
const HEARD = 0.05;
/**
 * The pages' microphones run the browser's voice processing (noise suppression damps a
 * steady tone to ~0.03, measured: the caller hears the agent at the same level); an absent
 * tone measures ≤ 0.002.
 */
const VOICE_HEARD = 0.015;
const SILENT = 0.01;

let dir: string;
let assets: Map<string, WebAsset>;
let agentBrowser: Browser;
let supBrowser: Browser;
let bridge: Bridge | undefined;
const pageErrors: string[] = [];
const modes = mediaModes();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sb-monitor-e2e-'));
  [assets, agentBrowser, supBrowser] = await Promise.all([
    buildWebAgent(),
    launchChromium({ fakeAudioCapture: wav(join(dir, 'agent.wav'), AGENT_HZ), autoplayWithoutGesture: true }),
    launchChromium({ fakeAudioCapture: wav(join(dir, 'supervisor.wav'), SUPERVISOR_HZ), autoplayWithoutGesture: true }),
  ]);
}, 60_000);
afterEach(async () => {
  await bridge?.close();
  bridge = undefined;
});
afterAll(async () => {
  await agentBrowser?.close();
  await supBrowser?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  expect(pageErrors).toEqual([]);
});

async function loggedIn(browser: Browser, name: string, path: '/' | '/supervisor', viewport = { width: 1280, height: 800 }): Promise<Page> {
  const ctx = await browser.newContext({ viewport });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => pageErrors.push(`${name}: ${e.message}`));
  await page.goto(`${bridge!.url}${path}`);
  await page.waitForURL(/\/login/);
  await page.getByTestId('login-name').fill(name);
  await page.getByTestId('login-password').fill(PASSWORD);
  await page.getByTestId('login-submit').click();
  await page.waitForURL(`${bridge!.url}${path}`);
  await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor();
  return page;
}

/** An agent page that answered a new emulator call; returns it and the call's id. */
async function agentOnCall(): Promise<{ agent: Page; wacid: string }> {
  const agent = await loggedIn(agentBrowser, 'agent1', '/');
  await agent.getByTestId('ready-check').click();
  await agent.locator('[data-testid="presence-available"]:not([disabled])').waitFor();
  await agent.getByTestId('presence-available').click();
  await agent.locator('[data-testid="agent-state"][data-status="available"]').waitFor();
  const wacid = (await emulatorRequest(bridge!.emu, 'POST', '/calls', { audio: 'tone', toneHz: CALLER_HZ })).wacid as string;
  await agent.locator(`[data-testid="incoming-call"][data-wacid="${wacid}"]`).waitFor({ timeout: 10_000 });
  await agent.getByTestId('answer').click();
  await agent.locator('[data-testid="call-status"][data-state="connected"]').waitFor({ timeout: 10_000 });
  // The call carries audio both ways before anything else happens: the caller hears the
  // agent, and the agent's tab plays the caller (what the monitor relays of the caller is
  // that track, and Chromium feeds it to WebAudio only while an element plays it).
  await until('the caller hears the agent', async () => ((await callerHears(wacid))[1]! > VOICE_HEARD ? true : undefined), 10_000);
  await until('the agent’s tab plays the caller', async () => {
    const m = await agentMedia(agent);
    return m.playing && (m.inbound?.audioLevel ?? 0) > HEARD ? true : undefined;
  }, 10_000).catch(async (err: Error) => {
    throw new Error(`${err.message}; the agent's tab: ${JSON.stringify(await agentMedia(agent))}`);
  });
  return { agent, wacid };
}

/** The agent's call media as its page sees it: the remote audio element playing, and the call's inbound RTP. */
async function agentMedia(agent: Page): Promise<{ playing: boolean; connection: unknown; inbound?: { packetsReceived: number; audioLevel?: number } }> {
  const media = ((await hookState(agent)) as { media: { remoteAudioPlaying: boolean; connectionState: unknown } | null }).media;
  const stats = (await hookStats(agent)) as { inbound?: { packetsReceived: number; audioLevel?: number } } | null;
  return { playing: media?.remoteAudioPlaying ?? false, connection: media?.connectionState ?? null, ...(stats?.inbound ? { inbound: stats.inbound } : {}) };
}

/** What the emulator's caller heard in the last second, per tone of ALL. */
async function callerHears(wacid: string): Promise<number[]> {
  const r = await emulatorRequest(bridge!.emu, 'GET', `/calls/${encodeURIComponent(wacid)}/hears?hz=${ALL.join(',')}&ms=1000`);
  expect(r.blocks as number).toBeGreaterThan(3);
  return r.levels as number[];
}

const supHears = (sup: Page, wacid: string) => sup.evaluate(([w, hz]) => (window as typeof window & { __switchboard: { monitor: { tones(w: string, hz: number[]): number[] } } }).__switchboard.monitor.tones(w, hz), [wacid, ALL] as const);
const agentHears = (agent: Page) => agent.evaluate((hz) => (window as typeof window & { __monitor: { heard(hz: number[]): number[] } }).__monitor.heard(hz), ALL);
const row = (sup: Page, wacid: string) => sup.locator(`[data-testid="live-call"][data-wacid="${wacid}"]`);

/** Click a mode (Listen / Whisper / Barge) in the call's row and wait until the monitor is live in it. */
async function mode(sup: Page, wacid: string, m: 'listen' | 'whisper' | 'barge'): Promise<void> {
  await row(sup, wacid).getByTestId(`monitor-${m}`).click();
  await row(sup, wacid).locator(`[data-testid="monitoring"][data-phase="live"][data-mode="${m}"]`).waitFor({ timeout: 15_000 });
  await sleep(1_200); // a second of audio in the new routing
}

/** Levels read until `ok` holds (10 s): what must be heard is waited for, never read once. */
async function heard(what: string, read: () => Promise<number[]>, ok: (h: number[]) => boolean): Promise<number[]> {
  let last: number[] = [];
  return until(what, async () => {
    last = await read();
    return ok(last) ? last : undefined;
  }, 10_000).catch((err: Error) => {
    throw new Error(`${err.message}; last levels ${fmt(last)}`);
  });
}

const fmt = (v: number[]) => v.map((x) => x.toFixed(3)).join(' / ');

/** Screenshots of the console and the monitored call, looked at by eye (E2E_SHOTS: test/support/shots.ts). */
const shot = (page: Page, name: string) => screenshot(page, `${name}.png`, { fullPage: true });

describe.each(modes.list)('monitoring through the server and the pages (%s media)', (media) => {
  it('listen → the supervisor hears caller and agent; whisper → the agent hears the supervisor, the caller does not; barge → the caller hears the supervisor; stop → the call goes on; the supervisor tab closing leaves the call up; the agent tab closing ends monitoring (direct) or not (anchor)', async () => {
    bridge = await startBridge({ assets, agents: ['agent1'], supervisors: ['boss'], history: true, env: await modes.env(media) });
    const { agent, wacid } = await agentOnCall();
    let sup = await loggedIn(supBrowser, 'boss', '/supervisor');
    await row(sup, wacid).getByTestId('monitor-listen').and(sup.locator(':not([disabled])')).waitFor();
    await expect(row(sup, wacid).textContent()).resolves.toContain('on call with agent1');
    // The console's wallboard shows the agent on the call (the page's side).
    await sup.locator('[data-testid="wb-agent"][data-name="agent1"][data-status="on-call"]').waitFor();

    // On a phone the console (wallboard, live calls with their buttons) fits the width.
    const phone = await loggedIn(supBrowser, 'boss', '/supervisor', { width: 375, height: 800 });
    await row(phone, wacid).getByTestId('monitor-listen').waitFor();
    await phone.locator('[data-testid="wb-agent"][data-name="agent1"]').waitFor();
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(375);
    if (media === 'direct') await shot(phone, 'supervisor-wallboard-phone');
    await phone.context().close();
    // A wall screen.
    const wall = await loggedIn(supBrowser, 'boss', '/supervisor', { width: 1920, height: 1080 });
    await wall.locator('[data-testid="wb-agent"][data-name="agent1"][data-status="on-call"]').waitFor();
    if (media === 'direct') await shot(wall, 'supervisor-wallboard-wall');
    await wall.context().close();
    if (media === 'direct') await shot(sup, 'supervisor-wallboard-desktop');

    // listen
    await mode(sup, wacid, 'listen');
    // Presence is waited for (a loaded machine's first window after a switch can read low); absence is read after it.
    const l = await heard('listen: the supervisor hears caller and agent', () => supHears(sup, wacid), (h) => h[0]! > HEARD && h[1]! > VOICE_HEARD).catch(async (err: Error) => {
      throw new Error(`${err.message}; the agent's tab meanwhile: ${JSON.stringify(await agentMedia(agent))}`);
    });
    const lc = await callerHears(wacid);
    console.log(`${media} listen: supervisor hears caller/agent/supervisor ${fmt(l)}; caller hears ${fmt(lc)}`);
    expect(l[0]).toBeGreaterThan(HEARD);
    expect(l[1]).toBeGreaterThan(VOICE_HEARD);
    expect(l[2]).toBeLessThan(SILENT);
    // MONITOR_SHOW_LISTENING defaults to true: the agent sees it.
    await agent.getByTestId('monitored').waitFor();
    if (media === 'direct') await shot(sup, 'monitor-supervisor-listen');
    if (media === 'direct') await shot(agent, 'monitor-agent-listen');
    expect(lc[2]).toBeLessThan(SILENT);

    // whisper
    // (On the anchor the supervisor's leg stays muted in the room; the whisper link carries it to the agent.)
    await mode(sup, wacid, 'whisper');
    const wa = await heard('whisper: the agent hears the supervisor', () => agentHears(agent), (h) => h[2]! > VOICE_HEARD);
    const wc = await heard('whisper: the caller hears the agent', () => callerHears(wacid), (h) => h[1]! > VOICE_HEARD);
    console.log(`${media} whisper: agent hears ${fmt(wa)}; caller hears ${fmt(wc)}`);
    expect(wa[2]).toBeGreaterThan(VOICE_HEARD);
    expect(wc[1]).toBeGreaterThan(VOICE_HEARD);
    expect(wc[2]).toBeLessThan(SILENT);

    // barge
    await mode(sup, wacid, 'barge');
    const bc = await heard('barge: the caller hears the supervisor and the agent', () => callerHears(wacid), (h) => h[2]! > VOICE_HEARD && h[1]! > VOICE_HEARD);
    console.log(`${media} barge: caller hears ${fmt(bc)}`);
    if (media === 'direct') await shot(sup, 'monitor-supervisor-barge');
    if (media === 'direct') await shot(agent, 'monitor-agent-barge');
    expect(bc[2]).toBeGreaterThan(VOICE_HEARD);
    expect(bc[1]).toBeGreaterThan(VOICE_HEARD);

    // stop: the call goes on, the caller hears the agent and no longer the supervisor
    await row(sup, wacid).getByTestId('monitor-stop').click();
    await row(sup, wacid).getByTestId('monitor-actions').waitFor();
    await agent.getByTestId('monitored').waitFor({ state: 'detached' });
    await sleep(1_200);
    const sc = await heard('after stop: the caller hears the agent', () => callerHears(wacid), (h) => h[1]! > VOICE_HEARD);
    console.log(`after stop: caller hears ${fmt(sc)}`);
    expect(sc[1]).toBeGreaterThan(VOICE_HEARD);
    expect(sc[2]).toBeLessThan(SILENT);
    expect((await bridge.store.getCall(wacid))?.state).toBe('active');

    // the supervisor's tab closing leaves the call up (and ends the monitor at the agent)
    await mode(sup, wacid, 'barge');
    await sup.context().close();
    await agent.getByTestId('monitored').waitFor({ state: 'detached', timeout: 10_000 });
    await sleep(1_200);
    const gc = await heard('supervisor tab closed: the caller hears the agent', () => callerHears(wacid), (h) => h[1]! > VOICE_HEARD);
    expect(gc[1]).toBeGreaterThan(VOICE_HEARD);
    expect(gc[2]).toBeLessThan(SILENT);
    expect((await bridge.store.getCall(wacid))?.state).toBe('active');
    await agent.locator(`[data-testid="call-active"][data-wacid="${wacid}"]`).waitFor();

    // the agent's tab closing ends monitoring in direct mode (the tab relayed it); on the
    // anchor the supervisor's leg is in the room, which outlives the tab: the monitor goes on
    sup = await loggedIn(supBrowser, 'boss', '/supervisor');
    await mode(sup, wacid, 'listen');
    await agent.context().close();
    if (media === 'direct') await row(sup, wacid).getByTestId('monitoring').waitFor({ state: 'detached', timeout: 10_000 });
    else {
      await sleep(2_000);
      expect(await row(sup, wacid).locator('[data-testid="monitoring"]').getAttribute('data-phase')).toBe('live');
      const ac = await heard('agent tab closed (anchor): the supervisor still hears the caller', () => supHears(sup, wacid), (h) => h[0]! > HEARD);
      expect(ac[0]).toBeGreaterThan(HEARD);
    }
    await sup.context().close();
  }, 240_000);
});
