/**
 * The softphone end to end, in Debian Chromium with fake media: emulator caller (werift,
 * ice-lite) → signed webhooks → bridge → agent page rings → agent answers in the browser →
 * preAccept/accept → audio both ways → caller hangs up → the page shows the call ended.
 * Screenshots (idle, ringing, in call, ended) with E2E_SHOTS (test/support/shots.ts).
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { until, PASSWORD, sleep } from './harness.ts';
import { browserSuite } from './suite.ts';
import { mediaModes } from './media-modes.ts';
import { screenshot } from '../support/shots.ts';


const suite = browserSuite();
const modes = mediaModes();

/** Log in through the login page, pass the ready-check, become available. */
async function agentPage(name: string): Promise<Page> {
  const ctx = await suite.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => console.error(`[${name} page error]`, e.message));
  await page.goto(`${suite.bridge.url}/`);
  // Not logged in: the server sends the browser to the login page.
  await page.waitForURL(/\/login/);
  await page.getByTestId('login-name').fill(name);
  await page.getByTestId('login-password').fill(PASSWORD);
  await page.getByTestId('login-submit').click();
  await page.waitForURL(`${suite.bridge.url}/`);
  await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor();
  await page.getByTestId('ready-check').click();
  await page.locator('[data-testid="presence-available"]:not([disabled])').waitFor();
  await page.getByTestId('presence-available').click();
  await page.locator('[data-testid="agent-state"][data-status="available"]').waitFor();
  return page;
}

const ringing = (page: Page, wacid: string) => page.locator(`[data-testid="incoming-call"][data-wacid="${wacid}"]`);

async function inboundAudio(page: Page): Promise<{ packetsReceived: number; totalAudioEnergy: number }> {
  return page.evaluate(async () => {
    const s = await (window as typeof window & { __switchboard: { stats(): Promise<{ inbound?: { packetsReceived: number; totalAudioEnergy: number } } | null> } }).__switchboard.stats();
    return { packetsReceived: s?.inbound?.packetsReceived ?? 0, totalAudioEnergy: s?.inbound?.totalAudioEnergy ?? 0 };
  });
}

// One matrix: every case in browser-direct mode and in anchor mode (the caller held in a Janus room).
describe.each(modes.list)('softphone in Chromium (%s media)', (mode) => {
  it('a chat user calls, the agent answers in the browser, audio flows both ways, the caller hangs up, the page shows the call ended with its duration', async () => {
    await suite.startBridge({ agents: ['agent1'], env: await modes.env(mode) });
    const page = await agentPage('agent1');
    await screenshot(page, `${mode === 'direct' ? '' : 'anchor-'}1-idle.png`);

    const call = await suite.control('POST', '/calls', { audio: 'tone', toneHz: 440 });
    const wacid = call.wacid as string;
    const card = ringing(page, wacid);
    await card.waitFor({ timeout: 10_000 });
    await expect(card.getByTestId('incoming-caller').textContent()).resolves.toContain(String(call.from));
    await screenshot(page, `${mode === 'direct' ? '' : 'anchor-'}2-ringing.png`);

    await page.getByTestId('answer').click();
    await page.locator(`[data-testid="call-active"][data-wacid="${wacid}"]`).waitFor();
    await page.locator('[data-testid="call-status"][data-state="connected"]').waitFor({ timeout: 10_000 });

    // Audio both ways: the browser receives and plays the caller's tone; the caller receives ours.
    const inbound = await until('caller audio in the browser', async () => {
      const s = await inboundAudio(page);
      return s.packetsReceived > 25 && s.totalAudioEnergy > 0 ? s : undefined;
    });
    expect(inbound.totalAudioEnergy).toBeGreaterThan(0);
    const atCaller = await until('browser audio at the caller', async () => {
      const e = await suite.emuCall(wacid);
      return e.state === 'active' && (e.media?.packetsReceived ?? 0) > 25 ? e : undefined;
    });
    expect(atCaller.media!.packetsReceived).toBeGreaterThan(25);
    await screenshot(page, `${mode === 'direct' ? '' : 'anchor-'}3-in-call.png`);

    await sleep(1_200);
    await suite.control('POST', `/calls/${encodeURIComponent(wacid)}/hangup`);
    const ended = page.getByTestId('call-ended');
    await ended.waitFor({ timeout: 10_000 });
    await expect(page.getByTestId('call-ended-result').getAttribute('data-result')).resolves.toBe('COMPLETED');
    const duration = (await page.getByTestId('call-ended-duration').textContent())?.trim() ?? '';
    expect(duration).toMatch(/^\d+:\d\d$/);
    expect(duration).not.toBe('0:00');
    await expect(page.locator(`[data-testid="call-log-item"][data-wacid="${wacid}"]`).count()).resolves.toBe(1);
    await screenshot(page, `${mode === 'direct' ? '' : 'anchor-'}4-ended.png`);
  });

  it('a decline in the browser rings the next agent', async () => {
    await suite.startBridge({ agents: ['agent1', 'agent2'], env: await modes.env(mode) });
    const p1 = await agentPage('agent1');
    await sleep(50);
    const p2 = await agentPage('agent2');
    const wacid = (await suite.control('POST', '/calls', {})).wacid as string;
    await ringing(p1, wacid).waitFor();
    expect(await ringing(p2, wacid).count()).toBe(0);
    await p1.getByTestId('decline').click();
    await ringing(p2, wacid).waitFor({ timeout: 5_000 });
    await ringing(p1, wacid).waitFor({ state: 'detached' });
  });

  // One bridge and one page for two cases: the call the page answers after its socket was
  // killed is the call that is then muted past the emulator's (shortened) no-media limit.
  it("the socket is killed while ringing: the page reconnects, the offer is replayed, and the agent answers in time; muted for longer than the emulator's no-media limit, the call stays up (the muted sender keeps sending)", async () => {
    const b = await suite.startBridge({ agents: ['agent1'], emulator: { noMediaAtStartMs: 2_000, noMediaMidCallMs: 2_000 }, env: await modes.env(mode) });
    const page = await agentPage('agent1');
    const wacid = (await suite.control('POST', '/calls', {})).wacid as string;
    await ringing(page, wacid).waitFor();
    for (const c of b.sb.hub.connsOf('agent1')) c.kill();
    await page.locator('[data-testid="connection-status"]:not([data-state="online"])').waitFor({ timeout: 5_000 });
    await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor({ timeout: 10_000 });
    await ringing(page, wacid).waitFor();
    await page.getByTestId('answer').click();
    await page.locator('[data-testid="call-status"][data-state="connected"]').waitFor({ timeout: 10_000 });
    const e = await suite.emuCall(wacid);
    expect(e.state).toBe('active');
    expect(e.acceptedAt! - e.dialTime).toBeLessThan(30_000);

    // Muted for 2.5 × the no-media limit: the call stays up.
    await page.getByTestId('mute').click();
    await expect(page.getByTestId('mute').getAttribute('aria-pressed')).resolves.toBe('true');
    const before = (await suite.emuCall(wacid)).media!.packetsReceived;
    await sleep(5_000); // 2.5 × the no-media limit
    const m = await suite.emuCall(wacid);
    expect(m.state).toBe('active');
    expect(m.media!.packetsReceived).toBeGreaterThan(before + 100);
    const sender = await page.evaluate(() => (window as typeof window & { __switchboard: { state(): { media: { sender: { hasTrack: boolean } } } } }).__switchboard.state().media.sender);
    expect(sender.hasTrack).toBe(true);
    expect(await page.getByTestId('call-ended').isVisible()).toBe(false);
  }, 40_000);
});
