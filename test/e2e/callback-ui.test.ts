/**
 * The supervisor's "Call back" panel end to end, in Debian Chromium with fake media, against
 * the real bridge and the Service emulator: pick the business number, type the user, see
 * the calling permission, ask for it (the emulator's user replies per its `permissionReply`
 * knob; the page learns it live from `permission.updated`), call from the browser (a real
 * offer; the emulator's user answers with a werift peer and plays a tone), audio both ways,
 * mute, hang up, and the call in the recent list; the microphone and speaker chosen in the
 * panel (the dial opens exactly that microphone, a change mid-call replaces the track, the
 * choice is remembered). Screenshots (desktop and phone width) with E2E_SHOTS
 * (test/support/shots.ts); the phone width's check (nothing scrolls sideways) runs in any case.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { until, PASSWORD, sleep, type Bridge } from './harness.ts';
import { browserSuite } from './suite.ts';
import { screenshot } from '../support/shots.ts';
import { mediaModes, type MediaMode } from './media-modes.ts';


/** The emulator's default business number. */
const BUSINESS = '+15550100001';
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 375, height: 800 };

const suite = browserSuite();
/**
 * Call back stays direct in anchor mode (the page's offer goes to the Service): the media
 * case runs on a bridge in each mode (one matrix) to show anchor mode leaves the panel's
 * call as it is. The other cases are the panel's words and devices, the same in both
 * modes: direct only, to keep the suite's time.
 */
const modes = mediaModes();

/** A bridge whose emulator's user reads and answers a permission request in about 2 s. */
async function bridge(mode: MediaMode = 'direct'): Promise<Bridge> {
  const br = await suite.startBridge({ agents: ['agent1'], supervisors: ['boss'], env: await modes.env(mode) });
  await suite.control('PATCH', '/messaging/knobs', { stepDelayMs: 500 });
  return br;
}

/**
 * Records every getUserMedia constraint the page asks for in `window.__gum` (the page is not
 * changed otherwise): with fake devices this is how a test sees which microphone was asked for.
 */
function spyOnGetUserMedia(): void {
  const asked: unknown[] = [];
  Object.defineProperty(window, '__gum', { value: asked });
  const md = navigator.mediaDevices;
  const real = md.getUserMedia.bind(md);
  md.getUserMedia = (c?: MediaStreamConstraints) => {
    asked.push(JSON.parse(JSON.stringify(c ?? {})));
    return real(c);
  };
}
const askedAudio = (page: Page) =>
  page.evaluate(() => (window as typeof window & { __gum: Array<{ audio?: { deviceId?: { exact?: string } } }> }).__gum.map((c) => c.audio ?? null));

/** Log in as the supervisor through the login page and open the Call back panel with `user` typed in. */
async function supervisorPage(user: string): Promise<Page> {
  const ctx = await suite.newContext({ viewport: DESKTOP });
  await ctx.addInitScript(spyOnGetUserMedia);
  const page = await ctx.newPage();
  page.on('pageerror', (e) => console.error('[supervisor page error]', e.message));
  // What the page's sockets and console did, printed if it never comes online (CI, once: the
  // anchor-mode supervisor page was not online 15 s after login, and nothing said why).
  const seen: string[] = [];
  const at = Date.now();
  const note = (what: string) => seen.push(`+${Date.now() - at} ms ${what}`);
  page.on('console', (m) => note(`console.${m.type()} ${m.text().slice(0, 300)}`));
  page.on('requestfailed', (r) => note(`request failed ${r.url()} ${r.failure()?.errorText ?? ''}`));
  page.on('response', (r) => void (r.status() >= 400 && note(`${r.status()} ${r.request().method()} ${r.url()}`)));
  page.on('websocket', (ws) => {
    note(`socket opened ${ws.url()}`);
    let frames = 0;
    ws.on('framereceived', () => void (frames++ === 0 && note('socket: first frame received')));
    ws.on('socketerror', (e) => note(`socket error ${e}`));
    ws.on('close', () => note(`socket closed after ${frames} frames`));
  });
  await page.goto(`${suite.bridge.url}/supervisor`);
  await page.waitForURL(/\/login/);
  await page.getByTestId('login-name').fill('boss');
  await page.getByTestId('login-password').fill(PASSWORD);
  await page.getByTestId('login-submit').click();
  await page.waitForURL(`${suite.bridge.url}/supervisor`);
  await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor({ timeout: 15_000 }).catch(async (err: Error) => {
    const status = page.getByTestId('connection-status');
    throw new Error(`${err.message}\nthe page's link: ${await status.getAttribute('data-state').catch(() => '?')} "${await status.textContent().catch(() => '?')}"\n${seen.join('\n')}`);
  });
  await page.locator(`[data-testid="callback-from"] option[value="${BUSINESS}"]`).waitFor({ state: 'attached', timeout: 15_000 });
  await page.getByTestId('callback-from').selectOption(BUSINESS);
  await page.getByTestId('callback-user').fill(user);
  return page;
}

const permissionState = (page: Page, state: string, timeout = 15_000) =>
  page.locator(`[data-testid="callback-permission"][data-state="${state}"]`).waitFor({ timeout });
const phase = (page: Page, p: string, timeout = 15_000) => page.locator(`[data-testid="callback-call-box"][data-phase="${p}"]`).waitFor({ timeout });

interface Hook {
  state(): { call?: { wacid?: string }; media: null | { sender: { hasTrack: boolean; enabled: boolean | null }; micDeviceId: string | null } };
  stats(): Promise<null | { inbound?: { packetsReceived: number; totalAudioEnergy?: number }; outbound?: { packetsSent: number }; connectionState: string }>;
}
const hookState = (page: Page) => page.evaluate(() => (window as typeof window & { __switchboard: { callback: Hook } }).__switchboard.callback.state());
const hookStats = (page: Page) => page.evaluate(() => (window as typeof window & { __switchboard: { callback: Hook } }).__switchboard.callback.stats());

async function shots(page: Page, name: string): Promise<void> {
  await screenshot(page, `callback-${name}.png`, { fullPage: true });
  await page.setViewportSize(PHONE);
  await sleep(100);
  await screenshot(page, `callback-${name}-phone.png`, { fullPage: true });
  // At phone width nothing scrolls sideways.
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
  await page.setViewportSize(DESKTOP);
}

describe.each(modes.list)('Call back panel in Chromium, media both ways (%s media)', (mode) => {
  it('ask permission → granted live → Call → the user answers → audio both ways → mute keeps sending → hang up → ended with a duration, in the recent list', async () => {
    await bridge(mode);
    const user = '+15550123501';
    // The user's phone rings for 2.5 s before they pick up (the page shows "Ringing…").
    await suite.control('PATCH', '/callee', { user, action: 'answer', answerAfterMs: 2_500 });
    const page = await supervisorPage(user);

    await permissionState(page, 'unknown');
    await expect(page.getByTestId('callback-permission-text').textContent()).resolves.toMatch(/No permission on record: ask the user first/);
    expect(await page.getByTestId('callback-call').isEnabled()).toBe(true); // unknown does not block
    if (mode === 'direct') await shots(page, '1-unknown');

    await page.getByTestId('callback-message').fill('May we call you back about your order?');
    await page.getByTestId('callback-ask').click();
    await permissionState(page, 'requested', 5_000);
    await expect(page.getByTestId('callback-permission-text').textContent()).resolves.toMatch(/^Asked by boss just now — waiting for the user’s reply\.$/);
    await expect(page.getByTestId('callback-ask-note').textContent()).resolves.toMatch(/Request sent/);
    if (mode === 'direct') await shots(page, '2-requested');

    // The user's reply reaches the page as permission.updated: no action on the page.
    await permissionState(page, 'granted', 20_000);
    await expect(page.getByTestId('callback-permission-text').textContent()).resolves.toMatch(/^Permission granted until \d{1,2} [A-Z][a-z]{2}, \d\d:\d\d\.$/);
    if (mode === 'direct') await shots(page, '3-granted');

    await page.getByTestId('callback-call').click();
    await phase(page, 'ringing', 20_000);
    await expect(page.getByTestId('callback-status').textContent()).resolves.toBe('Ringing…');
    expect(await page.getByTestId('callback-call').isDisabled()).toBe(true);
    await expect(page.getByTestId('callback-call-reason').textContent()).resolves.toBe('');
    if (mode === 'direct') await shots(page, '4-ringing');
    const wacid = (await page.getByTestId('callback-call-box').getAttribute('data-wacid'))!;
    expect(wacid).toMatch(/^wacid\./);

    await phase(page, 'active', 20_000);
    // Audio both ways: the page receives the user's tone; the user receives the page's microphone.
    const inbound = await until('the user\'s audio in the browser', async () => {
      const s = await hookStats(page);
      return (s?.inbound?.packetsReceived ?? 0) > 25 && (s?.inbound?.totalAudioEnergy ?? 0) > 0 ? s : undefined;
    });
    expect(inbound!.connectionState).toBe('connected');
    const atUser = await until('the browser\'s audio at the user', async () => {
      const e = await suite.emuCall(wacid);
      return e.state === 'active' && (e.media?.packetsReceived ?? 0) > 25 && (e.media?.audibleFrames ?? 0) > 0 ? e : undefined;
    });
    expect(atUser.direction).toBe('BUSINESS_INITIATED');
    expect(atUser.to).toBe(user);
    await page.locator('[data-testid="callback-quality"]:not([data-level="unknown"])').waitFor({ timeout: 10_000 });
    if (mode === 'direct') await shots(page, '5-in-call');

    // Mute: the track is disabled, never removed, and packets keep reaching the user.
    await page.getByTestId('callback-mute').click();
    await expect(page.getByTestId('callback-mute').getAttribute('aria-pressed')).resolves.toBe('true');
    const muted = (await hookState(page)).media!.sender;
    expect(muted).toEqual({ hasTrack: true, enabled: false, readyState: 'live' });
    const before = (await suite.emuCall(wacid)).media!.packetsReceived;
    await expect.poll(async () => (await suite.emuCall(wacid)).media!.packetsReceived - before, { timeout: 10_000 }).toBeGreaterThan(25);
    expect((await hookState(page)).media!.sender).toEqual({ hasTrack: true, enabled: false, readyState: 'live' });
    await page.getByTestId('callback-mute').click();
    expect((await hookState(page)).media!.sender.enabled).toBe(true);

    await page.getByTestId('callback-hangup').click();
    await phase(page, 'ended', 15_000);
    await expect(page.getByTestId('callback-status').getAttribute('data-result')).resolves.toBe('COMPLETED');
    await expect(page.getByTestId('callback-status').textContent()).resolves.toMatch(/^Call ended: Completed · \d+:\d\d/);
    const duration = (await page.getByTestId('callback-timer').textContent())?.trim() ?? '';
    expect(duration).toMatch(/^\d+:\d\d$/);
    expect(duration).not.toBe('0:00');
    await page.locator(`[data-testid="recent-call"][data-wacid="${wacid}"][data-result="COMPLETED"]`).waitFor({ timeout: 5_000 });
    const e = await until('the user\'s side to end', async () => {
      const c = await suite.emuCall(wacid);
      return c.state === 'ended' ? c : undefined;
    });
    expect(e.terminate).toMatchObject({ status: 'COMPLETED', reason: 'BUSINESS_HANGUP' });
    // The media is released and Call is offered again.
    expect((await hookState(page)).media).toBeNull();
    expect(await page.getByTestId('callback-call').isEnabled()).toBe(true);
    if (mode === 'direct') await shots(page, '6-ended');
  }, 120_000);
});

describe('Call back panel in Chromium', () => {
  it("a rejected permission disables Call with the reason next to it; a badly typed number says what is wrong; the Service's refusal of a dial is shown with its reason", async () => {
    await bridge();
    await suite.control('PATCH', '/messaging/knobs', { permissionReply: 'reject' });
    const user = '+15550123511';
    const page = await supervisorPage('5550123511');
    await page.getByTestId('callback-user').blur();
    await expect(page.getByTestId('callback-user-error').textContent()).resolves.toMatch(/Start the number with \+ and the country code/);
    await expect(page.getByTestId('callback-user').getAttribute('aria-invalid')).resolves.toBe('true');
    expect(await page.getByTestId('callback-call').isDisabled()).toBe(true);
    expect(await page.getByTestId('callback-ask').isDisabled()).toBe(true);
    await shots(page, '7-invalid-number');

    await page.getByTestId('callback-user').fill(user);
    expect(await page.getByTestId('callback-user-error').isHidden()).toBe(true);
    await permissionState(page, 'unknown');
    await page.getByTestId('callback-ask').click();
    await permissionState(page, 'requested', 5_000);
    await permissionState(page, 'rejected', 20_000);
    await expect(page.getByTestId('callback-permission-text').textContent()).resolves.toBe('The user declined calls — do not call.');
    await expect(page.getByTestId('callback-permission').getAttribute('data-tone')).resolves.toBe('stop');
    expect(await page.getByTestId('callback-call').isDisabled()).toBe(true);
    await expect(page.getByTestId('callback-call-reason').textContent()).resolves.toBe('Call is unavailable: The user declined calls from this number.');
    // Nothing was dialed.
    expect((await suite.control('GET', '/calls')).length ?? 0).toBe(0);
    await shots(page, '8-rejected');

    // Another user's permission is separate: typing them shows theirs.
    await page.getByTestId('callback-user').fill('+15550123512');
    await permissionState(page, 'unknown');
    expect(await page.getByTestId('callback-call').isEnabled()).toBe(true);

    // Unknown to the bridge, so the Service decides: it refuses (no permission), and the page
    // shows its reason; nothing is left in progress and Call is offered again.
    await page.getByTestId('callback-call').click();
    const banner = page.locator('[data-testid="callback-error"][data-code="SERVICE_ERROR"]');
    await banner.waitFor({ timeout: 20_000 });
    const message = (await page.getByTestId('callback-error-message').textContent()) ?? '';
    expect(message).toMatch(/^The Service refused the call: /);
    expect(message).toMatch(/no call permission/i);
    expect(message).toMatch(/138006/);
    expect(await page.getByTestId('callback-call-box').isHidden()).toBe(true);
    expect((await hookState(page)).media).toBeNull();
    await page.locator('[data-testid="callback-call"]:not([disabled])').waitFor();
    await shots(page, '9-refused');
    await page.getByTestId('callback-error-dismiss').click();
    expect(await banner.isHidden()).toBe(true);
  }, 90_000);

  it('the panel lists the microphones and speakers; the dial opens exactly the chosen microphone and plays on the chosen speaker; another microphone chosen mid-call replaces the track and the user keeps hearing; the choice is remembered', async () => {
    await bridge();
    const user = '+15550123521';
    await suite.control('PATCH', '/callee', { user, action: 'answer', answerAfterMs: 2_500 });
    const page = await supervisorPage(user);
    // The emulated Service places calls only to users who allowed them.
    await permissionState(page, 'unknown');
    await page.getByTestId('callback-ask').click();
    await permissionState(page, 'granted', 20_000);

    // Chromium's fake devices: a default entry and two inputs, a default and two outputs, all named.
    const options = (id: string) =>
      page.getByTestId(id).locator('option').evaluateAll((os) => os.map((o) => ({ value: (o as HTMLOptionElement).value, label: o.textContent ?? '' })));
    await page.locator('[data-testid="callback-mic"] option:nth-child(3)').waitFor({ state: 'attached', timeout: 10_000 });
    const mics = await options('callback-mic');
    expect(mics.length).toBeGreaterThanOrEqual(3);
    for (const m of mics) expect(m.label).not.toMatch(/^(Device \d+)?$/);
    const [chosen, later] = mics.filter((m) => m.value !== 'default' && m.value !== '').map((m) => m.value);
    expect(chosen && later).toBeTruthy();
    const speakers = await options('callback-speaker');
    const speaker = speakers.find((o) => o.value !== 'default' && o.value !== '')?.value;
    expect(speaker).toBeDefined();
    expect(await page.getByTestId('callback-speaker-field').isVisible()).toBe(true); // Chromium has setSinkId

    await page.getByTestId('callback-mic').selectOption(chosen!);
    await page.getByTestId('callback-speaker').selectOption(speaker!);
    // No call is up: nothing was opened yet; the choice waits for the dial, and is remembered.
    expect(await askedAudio(page)).toEqual([]);
    expect(await page.evaluate(() => [localStorage.getItem('switchboard.mic'), localStorage.getItem('switchboard.speaker')])).toEqual([chosen, speaker]);
    const sinkId = () => page.evaluate(() => (document.querySelector('[data-testid="callback-audio"]') as HTMLAudioElement & { sinkId: string }).sinkId);
    await expect.poll(sinkId).toBe(speaker);

    await page.getByTestId('callback-call').click();
    await phase(page, 'ringing', 20_000);
    // The dial asked for exactly that microphone, and the call sends it.
    const asked = await askedAudio(page);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toMatchObject({ deviceId: { exact: chosen } });
    expect((await hookState(page)).media!.micDeviceId).toBe(chosen);
    expect(await sinkId()).toBe(speaker);
    await expect(page.getByTestId('callback-devices-note').textContent()).resolves.toBe('A microphone or speaker chosen now is used in this call at once.');

    await phase(page, 'active', 20_000);
    const wacid = (await page.getByTestId('callback-call-box').getAttribute('data-wacid'))!;
    await until('the browser\'s audio at the user', async () => {
      const e = await suite.emuCall(wacid);
      return (e.media?.packetsReceived ?? 0) > 25 ? e : undefined;
    });
    await shots(page, '10-devices-in-call');

    // Another microphone during the call: the sender gets its track (never none), still enabled, and the user keeps receiving.
    await page.getByTestId('callback-mic').selectOption(later!);
    await expect.poll(async () => (await hookState(page)).media?.micDeviceId, { timeout: 10_000 }).toBe(later);
    expect((await askedAudio(page)).at(-1)).toMatchObject({ deviceId: { exact: later } });
    expect((await hookState(page)).media!.sender).toEqual({ hasTrack: true, enabled: true, readyState: 'live' });
    const atSwitch = (await suite.emuCall(wacid)).media!.packetsReceived;
    await expect.poll(async () => (await suite.emuCall(wacid)).media!.packetsReceived - atSwitch, { timeout: 5_000 }).toBeGreaterThan(25);
    expect(await page.getByTestId('callback-error').isHidden()).toBe(true);
    await expect(page.getByTestId('callback-call-box').getAttribute('data-phase')).resolves.toBe('active');

    await page.getByTestId('callback-hangup').click();
    await phase(page, 'ended', 15_000);
    await expect(page.getByTestId('callback-devices-note').textContent()).resolves.toBe('');

    // A fresh visit shows (and would dial) the remembered microphone and speaker.
    await page.reload();
    await page.locator(`[data-testid="callback-mic"] option[value="${later}"]`).waitFor({ state: 'attached', timeout: 10_000 });
    await expect.poll(() => page.getByTestId('callback-mic').inputValue()).toBe(later);
    await expect.poll(() => page.getByTestId('callback-speaker').inputValue()).toBe(speaker);
    await expect.poll(sinkId).toBe(speaker);
  }, 90_000);
});
