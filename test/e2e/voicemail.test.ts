/**
 * Voicemail in anchor mode, end to end with real parts: a private Janus (AudioBridge) in a
 * network namespace, a bridge with MEDIA_MODE=anchor, VOICEMAIL_AFTER_S and HOURS_FILE, real
 * history (PGlite), the emulator's werift caller (its voice a 400 Hz tone) and program agents.
 * What the caller hears is measured by pitch in the caller's listening window (kept from the
 * call's start, so a short sound is not missed on a loaded machine): the prompt and the closed
 * greeting are tone stand-ins here (VOICEMAIL_PROMPT_FILE, CLOSED_GREETING_FILE:
 * test/support/tone-sounds.ts; the bundled spoken ones: server/anchor/anchor.test.ts) — the
 * prompt's chime (PROMPT_HZ), its tone (BEEP_HZ), the closed greeting (CLOSED_HZ).
 *
 * 1. Nobody answers: agent1 rings, and at VOICEMAIL_AFTER_S the ring is revoked; the caller
 *    hears the prompt and the tone, speaks, hangs up → a call-back task with reason
 *    `voicemail` whose miss links the message; the message (Ogg/Opus from the archive) decodes
 *    to the caller's voice, seconds long; history: missed, with why; the room is gone; on
 *    agent2's page (Debian Chromium) the queue panel's player loads the message (duration > 0)
 *    and plays it; an agent gets no other archived file.
 * 2. Out of hours: nobody rings; the caller hears the closed greeting, then the prompt, and
 *    leaves a message → the same.
 * 3. A caller who stops talking (silence frames, the call still up): the message ends
 *    VOICEMAIL_SILENCE_S later from our side, long before VOICEMAIL_MAX_S; the message is kept
 *    (the caller's voice, then the silence) and the task made.
 * VOICEMAIL_AFTER_S is given for the open number only (`+1…=4`): per number.
 * One bridge and one Janus for both.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VOICEMAIL_LEFT } from '../../shared/callErrors.ts';
import type { CallbackTask } from '../../shared/records.ts';
import { BEEP_HZ } from '../../server/anchor/sounds.ts';
import { fetchMessage, measureMessage, roomCount } from './voicemail-rig.ts';
import { CLOSED_HZ, PROMPT_HZ, writeToneSounds } from '../support/tone-sounds.ts';
import { createNetns, type Netns } from '../support/netns.ts';
import { JanusApi, startJanus, type TestJanus } from '../support/janus.ts';
import type { Browser } from 'playwright-core';
import { buildWebAgent } from '../../web-agent/build.ts';
import { launchChromium } from '../support/chromium.ts';
import { screenshot, shotsDir } from '../support/shots.ts';
import { agentClient, callerPitches, emulatorRequest, listenCaller, login, nearHz, PASSWORD, startBridge, until, type Bridge, type ProtocolClient, closeAnchorParts } from './harness.ts';

const OPEN = '+15550100001';
const CLOSED = '+15550100002';
const EVERY_DAY = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];
const CALLER_HZ = 400;
const HEARD = 0.05;
/** VOICEMAIL_SILENCE_S here: the callers of the other tests talk without a pause until they hang up. */
const SILENCE_S = 2;

describe('voicemail (anchor mode)', () => {
  let ns: Netns;
  let janus: TestJanus;
  let control: JanusApi;
  let b: Bridge;
  let dir: string;
  let browser: Browser;
  const clients: ProtocolClient[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-voicemail-'));
    const hoursFile = join(dir, 'hours.json');
    // CLOSED: no opening on any day; OPEN: no entry (always open).
    writeFileSync(hoursFile, JSON.stringify({ [CLOSED]: { timeZone: 'UTC', weekly: Object.fromEntries(EVERY_DAY.map((d) => [d, []])) } }));
    const sounds = writeToneSounds(dir);
    ns = await createNetns();
    const [launched, assets] = await Promise.all([launchChromium({ autoplayWithoutGesture: true }), buildWebAgent(), (async () => (janus = await startJanus(ns)))()]);
    browser = launched;
    control = await JanusApi.connect(janus.url);
    b = await startBridge({
      assets,
      history: true,
      agents: ['agent1', 'agent2'],
      supervisors: ['boss'],
      env: { MEDIA_MODE: 'anchor', JANUS_URLS: janus.url, WRAP_UP_MS: 'off', VOICEMAIL_AFTER_S: `${OPEN}=4`, VOICEMAIL_MAX_S: '30', VOICEMAIL_SILENCE_S: String(SILENCE_S), HOURS_FILE: hoursFile, VOICEMAIL_PROMPT_FILE: sounds.prompt, CLOSED_GREETING_FILE: sounds.closed },
      emulator: {
        businessNumbers: [
          { id: '100000000000001', phoneNumber: OPEN, wabaId: '200000000000001' },
          { id: '100000000000002', phoneNumber: CLOSED, wabaId: '200000000000001' },
        ],
      },
    });
    // A namespace, Janus and an embedded history database: seconds alone, much longer on a loaded 2-core machine.
  }, 180_000);
  afterAll(async () => {
    await closeAnchorParts({ clients, browser, bridge: b, control, janus, ns, dir });
  });

  const rooms = () => roomCount(control);

  const listen = (wacid: string) => listenCaller(b.emu, wacid);
  const heard = (wacid: string) => callerPitches(b.emu, wacid);
  const near = nearHz;

  /** The caller has heard the prompt's chime and its tone; then speaks a while and hangs up. */
  async function leaveMessage(wacid: string, speakMs: number): Promise<void> {
    await until('the caller hears the prompt and its tone', async () => {
      const p = await heard(wacid);
      return near(p, PROMPT_HZ) && near(p, BEEP_HZ) ? p : undefined;
    }, 20_000);
    await new Promise((r) => setTimeout(r, speakMs)); // the caller's tone goes on meanwhile: the message
    await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/hangup`, {});
  }

  /** The task of the caller's voicemail, as the supervisor is told of it, and its message fetched, decoded and measured. */
  async function checkMessage(boss: ProtocolClient, wacid: string, customer: string, businessNumber: string, from: number): Promise<string> {
    const task = (await boss.next('callback.updated', (m) => m.task.customer === customer && m.task.misses.some((x) => x.wacid === wacid && x.voicemail !== undefined), 20_000, from)).task as CallbackTask;
    expect(task).toMatchObject({ state: 'open', businessNumber, reason: 'voicemail' });
    const miss = task.misses.find((x) => x.wacid === wacid)!;
    expect(miss).toMatchObject({ reason: 'voicemail', voicemail: `/api/archive/${encodeURIComponent(wacid)}/${encodeURIComponent(`voicemail-${wacid}`)}.ogg` });
    const cookie = await login(b.url, 'boss');
    // The message is saved moments after the call ends (its task may be told first).
    const ogg = await fetchMessage(b, miss.voicemail!, cookie);
    const { seconds, frames, voiced } = measureMessage(ogg, CALLER_HZ);
    console.log(`voicemail ${wacid}: ${ogg.length} bytes, ${seconds.toFixed(1)} s, ${voiced} of ${frames} frames the caller's voice`);
    expect(seconds).toBeGreaterThan(1.5);
    expect(voiced / frames).toBeGreaterThan(0.8);
    // History: missed (the prompt answered, no agent), and why.
    const rec = await until('the call in history', async () => {
      const r = await fetch(`${b.url}/api/history/calls/${encodeURIComponent(wacid)}`, { headers: { cookie } });
      const j = (await r.json()) as Record<string, unknown>;
      return r.status === 200 && j.outcome !== 'in-progress' ? j : undefined;
    }, 15_000);
    expect(rec).toMatchObject({ outcome: 'missed', endReason: VOICEMAIL_LEFT, businessNumber, mediaMode: 'anchor' });
    expect(rec.agent).toBeUndefined();
    // The timeline: the call went to voicemail (why), and the message is in the archive.
    const timeline = await until('the timeline with the message', async () => {
      const r = await fetch(`${b.url}/api/history/calls/${encodeURIComponent(wacid)}`, { headers: { cookie } });
      const j = (await r.json()) as { timeline?: Array<{ event: string; detail?: Record<string, unknown> }> };
      return j.timeline?.some((t) => t.event === 'recording available') ? j.timeline : undefined;
    }, 15_000);
    expect(timeline.find((t) => t.event === 'voicemail')?.detail).toMatchObject({ reason: businessNumber === CLOSED ? 'outside business hours' : 'no agent answered in time' });
    return miss.voicemail!;
  }

  it('nobody answers within VOICEMAIL_AFTER_S: the ring is revoked, prompt, tone, the message → a voicemail task whose message decodes to the caller', async () => {
    const agent1 = await agentClient(b.url, 'agent1');
    const boss = await agentClient(b.url, 'boss', { available: false });
    clients.push(agent1, boss);
    const customer = '+15550123001';
    const from = boss.received.length;
    const t0 = Date.now();
    const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', { from: customer, to: OPEN })).wacid as string;
    await listen(wacid);
    await agent1.next('call.offered', (m) => m.wacid === wacid, 10_000);
    const revoked = await agent1.next('call.revoked', (m) => m.wacid === wacid, 15_000);
    expect(revoked.reason).toBe('the caller went to voicemail');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(3_900);
    // Supervisors see the call in voicemail, held by no agent.
    const seen = await boss.next('call.state', (m) => m.wacid === wacid && m.voicemail?.phase === 'recording', 15_000, from);
    expect(seen).toMatchObject({ state: 'active', voicemail: { phase: 'recording' } });
    expect(seen.agent).toBeUndefined();
    await leaveMessage(wacid, 3_000);
    await until('the room is destroyed', async () => (await rooms()) === 0, 10_000);
    const url = await checkMessage(boss, wacid, customer, OPEN, from);

    // agent2's page: the queue panel plays the message (Chromium decodes the Ogg/Opus, duration > 0).
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    try {
      const page = await ctx.newPage();
      await page.goto(`${b.url}/`);
      await page.waitForURL(/\/login/);
      await page.getByTestId('login-name').fill('agent2');
      await page.getByTestId('login-password').fill(PASSWORD);
      await page.getByTestId('login-submit').click();
      const task = page.locator(`[data-testid="queue-task"][data-customer="${customer}"]`);
      await task.waitFor({ timeout: 20_000 });
      await expect(task.getByTestId('queue-reason').getAttribute('data-reason')).resolves.toBe('voicemail');
      const player = task.getByTestId('queue-voicemail');
      await expect(player.getAttribute('src')).resolves.toBe(`${url}?use=play`);
      await expect(player.getAttribute('aria-label')).resolves.toMatch(/^Voicemail message from /);
      const duration = await player.evaluate(
        (el: HTMLAudioElement) =>
          new Promise<number>((resolve, reject) => {
            const done = () => (Number.isFinite(el.duration) && el.duration > 0 ? resolve(el.duration) : undefined);
            el.addEventListener('durationchange', done);
            el.addEventListener('loadedmetadata', done);
            el.addEventListener('error', () => reject(new Error(`audio error ${el.error?.code}`)));
            setTimeout(() => reject(new Error(`no duration in 15 s (${el.duration}, readyState ${el.readyState})`)), 15_000);
            el.load();
          }),
      );
      // Played until past 0.3 s, waited for (8 s at most): a loaded machine starts the audio late.
      const played = await player.evaluate(async (el: HTMLAudioElement) => {
        await el.play();
        const t0 = performance.now();
        while (el.currentTime <= 0.3 && performance.now() - t0 < 8_000) await new Promise((r) => setTimeout(r, 100));
        el.pause();
        return el.currentTime;
      });
      // Screenshots with E2E_SHOTS (test/support/shots.ts): the voicemail in the queue panel, desktop and phone.
      if (shotsDir()) {
        await task.scrollIntoViewIfNeeded();
        await screenshot(page, 'voicemail-queue-desktop.png');
        await page.setViewportSize({ width: 390, height: 844 });
        await task.scrollIntoViewIfNeeded();
        await screenshot(page, 'voicemail-queue-phone.png');
      }
      console.log(`voicemail in the page: duration ${duration.toFixed(2)} s, played to ${played.toFixed(2)} s`);
      expect(duration).toBeGreaterThan(1.5);
      expect(played).toBeGreaterThan(0.3);
      // An agent plays voicemail messages, nothing else of the archive.
      const cookie = await login(b.url, 'agent2');
      expect((await fetch(`${b.url}${url}`, { headers: { cookie } })).status).toBe(200);
      expect((await fetch(`${b.url}/api/archive/${encodeURIComponent(wacid)}/other.ogg`, { headers: { cookie } })).status).toBe(403);
      expect((await fetch(`${b.url}/api/archive`, { headers: { cookie } })).status).toBe(403);
    } finally {
      await ctx.close();
    }
  }, 120_000);

  it('out of hours: nobody rings; the closed greeting, then the prompt, and the message → a voicemail task', async () => {
    const agent1 = await agentClient(b.url, 'agent1');
    const boss = await agentClient(b.url, 'boss', { available: false });
    clients.push(agent1, boss);
    const customer = '+15550123002';
    const from = boss.received.length;
    const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', { from: customer, to: CLOSED })).wacid as string;
    await listen(wacid);
    await until('the caller hears the closed greeting', async () => near(await heard(wacid), CLOSED_HZ), 20_000);
    expect((await boss.next('call.state', (m) => m.wacid === wacid && m.voicemail?.phase === 'recording', 15_000, from)).voicemail).toEqual({ phase: 'recording', closed: true });
    await leaveMessage(wacid, 2_500);
    expect(agent1.received.some((m) => m.type === 'call.offered' && m.wacid === wacid)).toBe(false);
    await checkMessage(boss, wacid, customer, CLOSED, from);
  }, 120_000);
  it('the caller stops talking: the message ends VOICEMAIL_SILENCE_S later (not at VOICEMAIL_MAX_S), kept, a voicemail task', async () => {
    const boss = await agentClient(b.url, 'boss', { available: false });
    clients.push(boss);
    const customer = '+15550123003';
    const from = boss.received.length;
    const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', { from: customer, to: OPEN })).wacid as string;
    await listen(wacid);
    await until('the caller hears the prompt and its tone', async () => {
      const p = await heard(wacid);
      return near(p, PROMPT_HZ) && near(p, BEEP_HZ) ? p : undefined;
    }, 30_000);
    await new Promise((r) => setTimeout(r, 2_000)); // the message: the caller's tone goes on
    await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/audio`, { audio: 'silence' });
    const quietAt = Date.now();
    const ended = await until('the call ended from our side', async () => {
      const c = await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(wacid)}`);
      return typeof c.endedAt === 'number' ? c.endedAt : undefined;
    }, 20_000);
    const afterMs = ended - quietAt;
    console.log(`voicemail silence: the caller silent → the call ended ${afterMs} ms later (VOICEMAIL_SILENCE_S=${SILENCE_S})`);
    // Not before the silence; well before VOICEMAIL_MAX_S (30 s). Janus writes its recording
    // through a buffer: the last voice can look up to ~1.5 s older than it was.
    expect(afterMs).toBeGreaterThan(SILENCE_S * 1000 - 1_600);
    expect(afterMs).toBeLessThan(SILENCE_S * 1000 + 6_000);
    const task = (await boss.next('callback.updated', (m) => m.task.customer === customer && m.task.misses.some((x) => x.wacid === wacid && x.voicemail !== undefined), 20_000, from)).task as CallbackTask;
    expect(task).toMatchObject({ state: 'open', businessNumber: OPEN, reason: 'voicemail' });
    const cookie = await login(b.url, 'boss');
    const url = task.misses.find((x) => x.wacid === wacid)!.voicemail!;
    const { frames, voiced } = measureMessage(await fetchMessage(b, url, cookie), CALLER_HZ);
    console.log(`voicemail ${wacid} (silence): ${frames} frames, ${voiced} the caller's voice`);
    expect(voiced * 20).toBeGreaterThan(1_000); // the caller's words are kept
    expect(frames - voiced).toBeGreaterThan(20); // and the silence that ended it
    const rec = await until('the call in history', async () => {
      const j = (await (await fetch(`${b.url}/api/history/calls/${encodeURIComponent(wacid)}`, { headers: { cookie } })).json()) as Record<string, unknown>;
      return j.outcome !== undefined && j.outcome !== 'in-progress' ? j : undefined;
    }, 15_000);
    expect(rec).toMatchObject({ outcome: 'missed', endReason: VOICEMAIL_LEFT });
    await until('the room is destroyed', async () => (await rooms()) === 0, 10_000);
  }, 120_000);
});
