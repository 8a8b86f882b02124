/**
 * The agent desk's media end to end: the real agent page in Chromium (its fake
 * microphone plays 730 Hz), the real server with history, the emulator's WebRTC callers
 * (440 Hz). Hold, in both media modes (media-modes.ts): the caller hears music (the page's,
 * or Janus's in anchor mode), not the agent, for 10 s without the call being dropped by
 * the Service's mid-call no-media rule (shortened in the emulator to 4 s for the hold: a
 * hold that stopped the agent's RTP for that long would end the call; the real 30 s would
 * need a hold of more than 30 s to tell), then the agent again; a microphone switch mid-call keeps packets flowing; a caller whose
 * audio never arrives brings the no-audio warning; an accept the Service refuses shows its
 * 138xxx code in words.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { describeCallError } from '../../shared/callErrors.ts';
import { buildWebAgent } from '../../web-agent/build.ts';
import type { WebAsset } from '../../server/web/index.ts';
import { launchChromium } from '../support/chromium.ts';
import { wav } from '../support/tones.ts';
import { goAvailable, hookStats } from '../web-agent/driver.ts';
import { emulatorRequest, sleep, startBridge, until, type Bridge } from './harness.ts';
import { DeskPages, answer, callerMedia, hangUp, hangUpAll, placeCall, shots, stateIs, wrapUp } from './desk-page.ts';
import { mediaModes, type MediaMode } from './media-modes.ts';

const CALLER_HZ = 440;
const AGENT_HZ = 730;
/** The page's voice processing damps a steady tone to ~0.03 (monitor.test.ts); absent ≤ 0.002. */
const VOICE_HEARD = 0.015;
const SILENT = 0.01;
/** The hold: 2.5 × the emulator's mid-call no-media rule in the hold's bridge (NO_MEDIA_MID_CALL_MS). */
const HOLD_MS = 10_000;
const NO_MEDIA_MID_CALL_MS = 4_000;

let dir: string;
let assets: Map<string, WebAsset>;
let browser: Browser;
let b: Bridge;
const pages = new DeskPages(() => browser, () => b);
const modes = mediaModes();

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sb-desk-media-'));
  [assets, browser] = await Promise.all([buildWebAgent(), launchChromium({ fakeAudioCapture: wav(join(dir, 'agent.wav'), AGENT_HZ) })]);
}, 90_000);
/**
 * A bridge per describe, in its media mode. The emulator's no-media rules at their real
 * values (noMediaAtStartMs 20 s, noMediaMidCallMs 30 s) unless `emulator` says otherwise.
 */
async function bridgeIn(mode: MediaMode, emulator: { noMediaMidCallMs?: number } = {}): Promise<void> {
  b = await startBridge({ assets, history: true, agents: ['agent1', 'agent2', 'agent3', 'agent4'], reconnectGraceMs: 1_000, emulator, env: { WRAP_UP_MS: '30000', ...(await modes.env(mode)) } });
}
async function closeBridge(): Promise<void> {
  await b?.close();
}
afterEach(async () => {
  await pages.closeAll();
  await hangUpAll(b);
  expect(pages.errors.splice(0)).toEqual([]);
});
afterAll(async () => {
  await browser?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** What the caller heard in the last second at the agent's frequency. */
const callerHearsAgent = async (wacid: string) => ((await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(wacid)}/hears?hz=${AGENT_HZ}&ms=1000`)).levels as number[])[0]!;
/** The caller's listening window: POST starts one, GET reads it. */
const window = async (wacid: string, method: 'POST' | 'GET') =>
  emulatorRequest<{ frames: number; audibleFraction: number; meanLevel: number; pitches: number[] }>(b.emu, method, `/calls/${encodeURIComponent(wacid)}/window`);
const fmt = (w: { audibleFraction: number; meanLevel: number; pitches: number[] }) => `${w.meanLevel.toFixed(3)}, ${w.audibleFraction.toFixed(2)}, [${w.pitches.join(' ')}]`;

// Hold on the media-mode matrix: in direct mode the page plays its tune to the caller; in
// anchor mode hold is the room's state (the agent muted in the room, Janus plays the bundled
// music, a melody of a note a second over a bed). Either way the caller hears music and not
// the agent for 10 s, 2.5 × the (shortened) mid-call no-media rule, and the agent again
// after Resume.
describe.each(modes.list)('the agent desk media against the real server and emulator: hold (%s media)', (mode) => {
  beforeAll(() => bridgeIn(mode, { noMediaMidCallMs: NO_MEDIA_MID_CALL_MS }), 120_000);
  afterAll(closeBridge);
  it('hold: the caller hears music, not the agent, for 10 s (past the no-media rule) and the call stays up; Resume brings the agent back; hold time in history', async () => {
    const emu = await emulatorRequest(b.emu, 'GET', '/faults'); // no faults
    expect(emu).toMatchObject({ endpoints: {} });
    expect(b.emu).toBeDefined();
    const page = await pages.open('agent1');
    await goAvailable(page);
    const wacid = await placeCall(b, { toneHz: CALLER_HZ });
    await answer(page, wacid);
    await until('the caller hears the agent', async () => ((await callerHearsAgent(wacid)) > VOICE_HEARD ? true : undefined), 10_000);
    await window(wacid, 'POST');
    await sleep(2_000);
    const talking = await window(wacid, 'GET');

    await page.getByTestId('hold').click();
    await page.locator('[data-testid="hold"][aria-pressed="true"]').waitFor();
    const heldAt = Date.now();
    await until('the server knows the hold', async () => ((await b.store.getCall(wacid)) as { heldSince?: number } | null)?.heldSince ?? undefined, 5_000);
    await sleep(1_000); // the track switch settles
    await window(wacid, 'POST');
    // Held for 10 s: past the mid-call no-media rule (4 s here); RTP keeps flowing all along.
    let maxGap = 0;
    while (Date.now() - heldAt < HOLD_MS) {
      await sleep(2_000);
      const m = await callerMedia(b, wacid);
      expect(m.state).toBe('active');
      maxGap = Math.max(maxGap, Date.now() - (m.media.lastReceivedAt ?? 0));
    }
    const music = await window(wacid, 'GET');
    const agentWhileHeld = await callerHearsAgent(wacid);
    expect(await page.getByTestId('hold-timer').textContent()).toMatch(/^On hold 0:(09|1[0-5])/);
    await shots(page, mode === 'direct' ? 'on-hold' : 'anchor-on-hold');
    expect((await callerMedia(b, wacid)).state).toBe('active');
    expect(maxGap).toBeLessThan(1_500);
    expect(music.audibleFraction).toBeGreaterThan(0.8); // continuous
    expect(music.pitches.length).toBeGreaterThanOrEqual(4); // a tune of several notes
    expect(agentWhileHeld).toBeLessThan(SILENT); // not the agent's microphone

    await page.getByTestId('hold').click();
    await page.locator('[data-testid="hold"][aria-pressed="false"]').waitFor();
    await until('the caller hears the agent again', async () => ((await callerHearsAgent(wacid)) > VOICE_HEARD ? true : undefined), 10_000);
    await window(wacid, 'POST');
    await sleep(2_000);
    const back = await window(wacid, 'GET');
    console.log(`${mode}: caller heard (mean level, audible share, pitches): talking ${fmt(talking)}; on hold ${fmt(music)}; after resume ${fmt(back)}; agent tone while held ${agentWhileHeld.toFixed(4)}; longest RTP gap while held ${maxGap} ms`);
    expect(back.pitches.length).toBeLessThan(music.pitches.length);

    await hangUp(page, wacid);
    await wrapUp(page, 'Resolved');
    const rec = await until('hold time in history', async () => {
      const r = await b.sb.history!.store.getCall(wacid);
      return r?.holdMs !== undefined && r.disposition === 'Resolved' ? r : undefined;
    }, 10_000);
    expect(rec.holdMs).toBeGreaterThanOrEqual(HOLD_MS);
    expect(rec.holdMs).toBeLessThan(HOLD_MS + 15_000);
  }, 120_000);

});

// The page's own media (a device switch, the page's no-audio warning) and a refused accept:
// the same in both modes as far as the page goes; direct only, to keep the suite's time.
describe('the agent desk media against the real server and emulator', () => {
  beforeAll(() => bridgeIn('direct'), 120_000);
  afterAll(closeBridge);
  it('a microphone switch mid-call keeps packets flowing; a caller whose audio never arrives brings the no-audio warning', async () => {
    const page = await pages.open('agent2');
    await goAvailable(page);
    const wacid = await placeCall(b, { toneHz: CALLER_HZ });
    await answer(page, wacid);
    await until('device lists', async () => ((await page.locator('[data-testid="mic-select"] option').count()) > 1 ? true : undefined), 10_000);
    const options = await page.getByTestId('mic-select').locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
    const before = (await hookStats(page)).sender.id as string;
    const other = options.find((o) => o !== 'default' && o !== '' && o !== before)!;
    await page.getByTestId('mic-select').selectOption(other);
    await until('the sender has the new track', async () => ((await hookStats(page)).sender.id !== before ? true : undefined), 10_000);
    const at = { caller: (await callerMedia(b, wacid)).media.packetsReceived, sent: (await hookStats(page)).outbound?.packetsSent ?? 0 };
    await sleep(2_000);
    const after = { caller: (await callerMedia(b, wacid)).media.packetsReceived, sent: (await hookStats(page)).outbound?.packetsSent ?? 0 };
    console.log(`after the microphone switch, in 2 s: caller received ${after.caller - at.caller}, page sent ${after.sent - at.sent} packets`);
    expect(after.caller - at.caller).toBeGreaterThan(50); // 50 packets/s at 20 ms
    expect(after.sent - at.sent).toBeGreaterThan(50);
    expect((await callerMedia(b, wacid)).state).toBe('active');
    await page.locator('[data-testid="call-status"][data-state="connected"]').waitFor();
    expect(await page.getByTestId('no-audio-warning').isHidden()).toBe(true);
    await hangUp(page, wacid);
    await wrapUp(page, 'Other');
    await stateIs(page, 'available');

    // One-way audio: the caller's packets never arrive.
    const silent = await placeCall(b, { audio: 'none' });
    const t0 = Date.now();
    await answer(page, silent);
    await page.getByTestId('no-audio-warning').waitFor({ timeout: 15_000 });
    expect(Date.now() - t0).toBeLessThan(18_000); // well before the Service's 20 s drop
    expect(await page.getByTestId('no-audio-warning').textContent()).toContain('Check your network');
    expect((await callerMedia(b, silent)).media.packetsReceived).toBeGreaterThan(0); // the agent's side still sends
  }, 90_000);

  it('an accept the Service refuses shows its 138xxx code in words', async () => {
    const page = await pages.open('agent3');
    await goAvailable(page);
    await emulatorRequest(b.emu, 'PATCH', '/faults', { endpoints: { 'POST /chat/calls/accept': { kind: 'refuse', code: 138019, times: 1 } } });
    const wacid = await placeCall(b, { toneHz: CALLER_HZ });
    const card = page.locator(`[data-testid="incoming-call"][data-wacid="${wacid}"]`);
    await card.waitFor({ timeout: 15_000 });
    await card.getByTestId('answer').click();
    const words = describeCallError(138019)!;
    // Never answered, so no wrap-up: the call list says why (nothing else of the call stays on screen).
    const why = page.locator(`[data-testid="call-log-item"][data-wacid="${wacid}"] [data-testid="call-log-reason"]`);
    await why.waitFor({ timeout: 15_000 });
    const reason = await why.textContent();
    expect(reason).toContain(words);
    expect(reason).toContain('138019');
    await until('the caller is refused', async () => ((await callerMedia(b, wacid)).state === 'ended' ? true : undefined), 10_000);
  }, 60_000);
});
