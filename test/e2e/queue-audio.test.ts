/**
 * Queue audio in anchor mode, end to end with real parts: a private Janus (AudioBridge) in a
 * network namespace, a bridge with MEDIA_MODE=anchor and QUEUE_AUDIO_FILE (a greeting and
 * position announcements of the number's own: tone stand-ins, test/support/tone-sounds.ts —
 * the bundled ones are speech; the place in the queue every 4 s), real history (PGlite), the emulator's werift
 * callers and the agent's page in Chromium (its fake microphone 730 Hz). What a caller hears is measured by pitch in its
 * listening window (kept from the call's start) and by energy at one frequency over the last
 * second: the greeting (GREETING_HZ), the music's bed (BED_HZ), the place in the queue
 * (POSITION_HZ), the agent's voice (AGENT_HZ).
 *
 * Nobody available: caller 1 is answered by the bridge at once and hears the greeting, then
 * the music, while the call still waits (no agent, no `startedAt`); caller 2 hears the
 * greeting and its place in the queue (Janus's `is_playing`: place 2 for caller 2, place 1 for
 * caller 1); the wallboard counts both waiting. agent1 becomes
 * available and answers caller 1: caller 1 hears the agent and no more music; caller 2 hangs
 * up while hearing music. History: caller 1 answered by agent1 with its wait up to the
 * answer; caller 2 abandoned with no agent; the wallboard: 1 answered, 1 abandoned.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GREETING_HZ, POSITION_HZ, writeToneSounds } from '../support/tone-sounds.ts';
import { BED_HZ } from '../../scripts/make-hold-music.ts';
import { fromRecord } from '../../server/calls/record.ts';
import { createNetns, type Netns } from '../support/netns.ts';
import { JanusApi, startJanus, type TestJanus } from '../support/janus.ts';
import { positionId } from '../../server/calls/queueMedia.ts';
import type { Browser } from 'playwright-core';
import { buildWebAgent } from '../../web-agent/build.ts';
import { launchChromium } from '../support/chromium.ts';
import { wav } from '../support/tones.ts';
import { loginAs } from '../web-agent/driver.ts';
import { agentClient, callerPitches, emulatorRequest, listenCaller, login, nearHz, PASSWORD, startBridge, until, type Bridge, type ProtocolClient, closeAnchorParts } from './harness.ts';

const AGENT_HZ = 730;

const NUMBER = '+15550100001';
/** A 0.12–0.25 tone arrives at ~0.1–0.25 after Opus; an absent one measures ≤ 0.002. */
const HEARD = 0.03;

describe('queue audio (anchor mode)', () => {
  let ns: Netns;
  let janus: TestJanus;
  let control: JanusApi;
  let b: Bridge;
  let dir: string;
  let browser: Browser;
  const clients: ProtocolClient[] = [];
  const pageErrors: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-queue-audio-'));
    const file = join(dir, 'queue-audio.json');
    const sounds = writeToneSounds(dir);
    writeFileSync(file, JSON.stringify({ [NUMBER]: { greetings: { en: sounds.greeting }, positionDir: sounds.positionDir, positionEveryS: 4 } }));
    ns = await createNetns();
    const [launched, assets] = await Promise.all([
      launchChromium({ fakeAudioCapture: wav(join(dir, 'agent.wav'), AGENT_HZ), autoplayWithoutGesture: true }),
      buildWebAgent(),
      (async () => (janus = await startJanus(ns)))(),
    ]);
    browser = launched;
    control = await JanusApi.connect(janus.url);
    b = await startBridge({
      assets,
      history: true,
      agents: ['agent1'],
      supervisors: ['boss'],
      env: { MEDIA_MODE: 'anchor', JANUS_URLS: janus.url, WRAP_UP_MS: 'off', QUEUE_AUDIO_FILE: file },
      emulator: { businessNumbers: [{ id: '100000000000001', phoneNumber: NUMBER, wabaId: '200000000000001' }] },
    });
  }, 180_000);
  afterAll(async () => {
    await closeAnchorParts({ clients, browser, bridge: b, control, janus, ns, dir });
    expect(pageErrors).toEqual([]);
  });

  const listen = (wacid: string) => listenCaller(b.emu, wacid, 30_000);
  const heard = (wacid: string) => callerPitches(b.emu, wacid);
  const near = nearHz;
  /** The caller's level at each frequency over the last `ms`. */
  const levels = async (wacid: string, hz: number[], ms = 1000): Promise<number[]> => (await emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(wacid)}/hears?hz=${hz.join(',')}&ms=${ms}`)).levels as number[];
  const record = async (wacid: string) => fromRecord((await b.store.getCall(wacid))!);
  /** Janus plays the announcement of that place in the queue into the call's room (caught while it plays: ~0.4 s per pulse, every 4 s). */
  async function announces(wacid: string, place: number): Promise<void> {
    const { room } = (await record(wacid)).anchor!;
    const h = await control.attach();
    try {
      await until(`${wacid}: place ${place} announced`, async () => {
        const r = await control.message(h, { request: 'is_playing', room, file_id: positionId(place) });
        return r.plugindata?.data.playing === true;
      }, 30_000, 50);
    } finally {
      await control.request({ janus: 'detach', handle_id: h });
    }
  }

  it('greeting then music while waiting, the place in the queue, an agent answers (music gone), an abandon; history and wallboard count right', async () => {
    // agent1's page is open, not available yet: nobody can answer.
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    page.on('pageerror', (e) => pageErrors.push(e.message));
    await loginAs(page, b.url, 'agent1', PASSWORD);
    const boss = await agentClient(b.url, 'boss', { available: false });
    clients.push(boss);
    const cookie = await login(b.url, 'boss');

    // Caller 1: answered by the bridge at once; the greeting, then the music, before any agent.
    const t1 = Date.now();
    const w1 = (await emulatorRequest(b.emu, 'POST', '/calls', { from: '+15550123001', to: NUMBER })).wacid as string;
    await listen(w1);
    await until('caller 1 hears the greeting', async () => near(await heard(w1), GREETING_HZ), 30_000);
    const greetingMs = Date.now() - t1;
    await until('caller 1 hears the music', async () => (await levels(w1, [BED_HZ]))[0]! > HEARD, 30_000);
    const musicMs = Date.now() - t1;
    const waiting1 = await record(w1);
    expect(waiting1).toMatchObject({ state: 'queued', queueAudio: { acceptedAt: expect.any(Number) } });
    expect(waiting1.startedAt).toBeUndefined();
    expect(waiting1.agent).toBeUndefined();

    // Caller 2: the greeting, then its place in the queue (second).
    const w2 = (await emulatorRequest(b.emu, 'POST', '/calls', { from: '+15550123002', to: NUMBER })).wacid as string;
    await listen(w2);
    await until('caller 2 hears the greeting', async () => near(await heard(w2), GREETING_HZ), 30_000);
    await until('caller 2 hears its place in the queue', async () => near(await heard(w2), POSITION_HZ), 30_000);
    // Caller 1 hears its own place too (the interval runs for every waiting caller).
    await until('caller 1 hears its place in the queue', async () => near(await heard(w1), POSITION_HZ), 30_000);
    // Which place each is told: caller 1 first, caller 2 second.
    await Promise.all([announces(w2, 2), announces(w1, 1)]);
    // The wallboard counts both as waiting (the greeting answered them; no agent did).
    await until('the wallboard shows two waiting', async () => {
      const r = await fetch(`${b.url}/api/wallboard`, { headers: { cookie } });
      const j = (await r.json()) as { numbers?: Array<{ businessNumber: string; waiting: number }> };
      return j.numbers?.find((n) => n.businessNumber === NUMBER)?.waiting === 2;
    }, 30_000);

    // agent1 becomes available: the longest waiting (caller 1) rings on the page; answered there, its leg joins the room.
    // (Not goAvailable: with callers waiting the desk goes available → ringing at once.)
    await page.getByTestId('ready-check').click();
    await page.locator('[data-testid="ready-mic-status"][data-ok="true"]').waitFor({ timeout: 30_000 });
    await page.locator('[data-testid="ready-sound-status"][data-ok="true"]').waitFor({ timeout: 30_000 });
    await page.locator('[data-testid="presence-available"]:not([disabled])').click({ timeout: 30_000 });
    await page.locator(`[data-testid="incoming-call"][data-wacid="${w1}"]`).waitFor({ timeout: 30_000 });
    const tAnswer = Date.now();
    await page.getByTestId('answer').click();
    await page.locator(`[data-testid="call-active"][data-wacid="${w1}"]`).waitFor({ timeout: 30_000 });
    await page.locator('[data-testid="call-status"][data-state="connected"]').waitFor({ timeout: 30_000 });
    // Caller 1 hears the agent, and the music is gone.
    let music = 1;
    let voice = 0;
    await until('caller 1 hears the agent and no more music', async () => {
      const l = await levels(w1, [AGENT_HZ, BED_HZ]);
      voice = l[0]!;
      music = l[1]!;
      return voice > HEARD && music < HEARD / 3;
    }, 30_000);
    const agentHeardMs = Date.now() - tAnswer;
    const active = await record(w1);
    expect(active).toMatchObject({ state: 'active', agent: 'agent1' });
    // Caller 2 still waits, hearing music.
    expect((await record(w2)).state).toBe('queued');
    await until('caller 2 hears the music', async () => (await levels(w2, [BED_HZ]))[0]! > HEARD, 30_000);

    // Caller 2 gives up (an abandon); then caller 1 hangs up too.
    await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(w2)}/hangup`, {});
    await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(w1)}/hangup`, {});

    // History: caller 1 answered by agent1, waited until the answer (the greeting is no answer); caller 2 abandoned, no agent.
    const historyOf = (wacid: string) =>
      until(`${wacid} in history`, async () => {
        const r = await fetch(`${b.url}/api/history/calls/${encodeURIComponent(wacid)}`, { headers: { cookie } });
        const j = (await r.json()) as Record<string, unknown>;
        return r.status === 200 && j.outcome !== 'in-progress' && j.endedAt !== undefined ? j : undefined;
      }, 30_000);
    const h1 = await historyOf(w1);
    const h2 = await historyOf(w2);
    expect(h1).toMatchObject({ outcome: 'answered', agent: 'agent1', mediaMode: 'anchor' });
    expect(h1.waitMs).toBe(active.startedAt! - active.createdAt);
    expect(h1.waitMs as number).toBeGreaterThan(musicMs - 1_000);
    expect(h2).toMatchObject({ outcome: 'abandoned' });
    expect(h2.agent).toBeUndefined();
    expect(h2.answeredAt).toBeUndefined();
    // The wallboard: one answered, one abandoned, nobody waiting.
    const row = await until('the wallboard counts the answer and the abandon', async () => {
      const r = await fetch(`${b.url}/api/wallboard`, { headers: { cookie } });
      const j = (await r.json()) as { numbers?: Array<{ businessNumber: string; waiting: number; answered: number; abandoned: number }> };
      const n = j.numbers?.find((x) => x.businessNumber === NUMBER);
      return n && n.answered === 1 && n.abandoned === 1 && n.waiting === 0 ? n : undefined;
    }, 30_000);
    expect(row).toMatchObject({ answered: 1, abandoned: 1, waiting: 0 });
    console.log(`queue audio e2e: caller connect → greeting heard ${greetingMs} ms, → music heard ${musicMs} ms; answer → caller hears the agent without music ${agentHeardMs} ms (agent ${voice.toFixed(3)}, music ${music.toFixed(3)}); caller 1 waited ${h1.waitMs} ms`);
  }, 180_000);
});
