/**
 * The agent softphone in a real Chromium (fake microphone), against an in-process stand-in
 * of the server (standin.ts: the real built bundle, shared/protocol.ts frames) and a real
 * werift peer as the caller. This tests the page; the server's end-to-end tests drive the
 * real server with the same page.
 */
import { mkdirSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { AudioPeer } from '../emulator/calls/peer.ts';
import { launchChromium } from '../support/chromium.ts';
import { goAvailable, hookState, hookStats, waitForState } from './driver.ts';
import { StandIn } from './standin.ts';

const SHOTS = 'screenshots/web-agent';
mkdirSync(SHOTS, { recursive: true });

let browser: Browser;
let s: StandIn;
let context: BrowserContext | undefined;
const peers: AudioPeer[] = [];
const pageErrors: string[] = [];

beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});
afterEach(async () => {
  await context?.close();
  context = undefined;
  for (const p of peers.splice(0)) await p.close();
  // The page never sent a frame the real server would refuse, and never threw.
  expect(s?.badFrames ?? []).toEqual([]);
  expect(pageErrors.splice(0)).toEqual([]);
  await s?.close();
});

const until = waitForState;

/** A logged-in agent page (session cookie set directly; the login page has its own test). */
async function agentPage(opts: { width?: number; height?: number; standIn?: StandIn } = {}): Promise<Page> {
  const standIn = opts.standIn ?? s;
  context ??= await browser.newContext({ viewport: { width: opts.width ?? 1280, height: opts.height ?? 800 } });
  await context.addCookies([{ name: 'sid', value: 'ok', url: standIn.url }]);
  const page = await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.goto(`${standIn.url}/`);
  await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor();
  return page;
}

/**
 * A caller like the provider's side: a werift ice-lite peer (actpass, candidates inline)
 * with a complete offer; the emulator's own peer class, bound to 127.0.0.1.
 */
async function caller(): Promise<{ peer: AudioPeer; sdp: string }> {
  const made = await AudioPeer.offerer({ iceLite: true });
  peers.push(made.peer);
  return made;
}

async function ring(wacid: string, opts: { deadlineIn?: number; from?: string } = {}): Promise<AudioPeer> {
  const { peer, sdp } = await caller();
  s.offer({ wacid, from: opts.from ?? '15551234567', sdp, deadline: Date.now() + (opts.deadlineIn ?? 25_000) });
  return peer;
}

/** Answer in the page; apply the answer to the caller; the stand-in acks when `ack` resolves. */
async function answerCall(page: Page, peer: AudioPeer, wacid: string): Promise<string> {
  const before = s.received.length;
  await page.getByTestId('answer').click();
  const frame = await s.frame('call.answer', before);
  expect(frame.wacid).toBe(wacid);
  await peer.applyAnswer(frame.sdp!);
  peer.startSending({ kind: 'tone' });
  return frame.sdp!;
}

describe('login', () => {
  test('a page without a session goes to /login; the right password lands on the page asked for', async () => {
    s = await StandIn.start({ demo: true });
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.goto(`${s.url}/`);
    await page.waitForURL(/\/login\?next=%2F$/);
    await page.getByTestId('login-name').fill('agent1');
    await page.getByTestId('login-password').fill('nope');
    await page.getByTestId('login-submit').click();
    await expect.poll(() => page.getByTestId('login-error').textContent()).toBe('Wrong name or password.');
    await page.screenshot({ path: `${SHOTS}/login-error.png` });
    await page.getByTestId('login-password').fill('agent1');
    await page.getByTestId('login-password').press('Enter');
    await page.waitForURL(`${s.url}/`);
    await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor();
    expect(await page.getByTestId('user-name').textContent()).toBe('agent1');
  });

  test('demo mode (me.demo) shows "simulate an incoming call", which posts /api/demo/call', async () => {
    s = await StandIn.start({ demo: true });
    const page = await agentPage();
    await goAvailable(page); // a simulated call rings only an available agent: the button waits for it
    await page.getByTestId('simulate-call').click();
    await s.until(() => s.demoCalls === 1, 5000, 'POST /api/demo/call');
  });

  test('without demo in /api/me there is no simulate button', async () => {
    s = await StandIn.start();
    const page = await agentPage();
    expect(await page.getByTestId('demo').isHidden()).toBe(true);
  });
});

describe('ready-check and presence', () => {
  test('available stays disabled until the microphone is granted with a live level and sound is unlocked by the click', async () => {
    s = await StandIn.start();
    const page = await agentPage();
    expect(await page.getByTestId('presence-available').isDisabled()).toBe(true);
    expect((await hookState(page)).audio.unlocked).toBe(false);
    await page.getByTestId('ready-check').click();
    await page.locator('[data-testid="ready-mic-status"][data-ok="true"]').waitFor();
    await page.locator('[data-testid="ready-sound-status"][data-ok="true"]').waitFor();
    // Chromium's fake microphone beeps: the meter must see it.
    await until(page, 's.ready.level > 0.02');
    expect((await hookState(page)).audio.unlocked).toBe(true);
    await page.getByTestId('presence-available').click();
    const set = await s.frame('presence.set');
    expect(set.status).toBe('available');
    await page.locator('[data-testid="agent-state"][data-status="available"]').waitFor();
    // Available: the tab keeps rendering audio so background throttling cannot stop the ring.
    expect((await hookState(page)).audio.keepAlive).toBe(true);
    await page.getByTestId('presence-away').click();
    await page.locator('[data-testid="agent-state"][data-status="away"]').waitFor();
    expect((await hookState(page)).audio.keepAlive).toBe(false);
  });
});

describe('microphone denied', () => {
  test('a denied microphone says how to allow it, and available stays off', async () => {
    s = await StandIn.start();
    // A second browser whose fake permission prompt answers "deny" (the last flag wins).
    const denying = await launchChromium({ args: ['--use-fake-ui-for-media-stream=deny'] });
    try {
      const ctx = await denying.newContext();
      await ctx.addCookies([{ name: 'sid', value: 'ok', url: s.url }]);
      const page = await ctx.newPage();
      await page.goto(`${s.url}/`);
      await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor();
      await page.getByTestId('ready-check').click();
      await page.locator('[data-testid="ready-mic-status"][data-ok="error"]').waitFor();
      expect(await page.getByTestId('error-banner').getAttribute('data-code')).toBe('MIC_DENIED');
      expect(await page.getByTestId('error-message').textContent()).toMatch(/^Microphone access is blocked\. Allow the microphone for this site/);
      expect(await page.getByTestId('presence-available').isDisabled()).toBe(true);
    } finally {
      await denying.close();
    }
  });
});

describe('ringing', () => {
  test('an offer shows the caller, rings, focuses Answer and counts down to the deadline', async () => {
    s = await StandIn.start();
    const page = await agentPage();
    await goAvailable(page);
    await ring('w-ring', { deadlineIn: 20_000 });
    await page.getByTestId('incoming-call').waitFor();
    expect(await page.getByTestId('incoming-caller').textContent()).toBe('+15551234567');
    const first = Number(await page.getByTestId('incoming-countdown').getAttribute('data-seconds'));
    expect(first).toBeGreaterThanOrEqual(19);
    expect(first).toBeLessThanOrEqual(20);
    expect(await page.getByTestId('incoming-countdown').textContent()).toMatch(/^0:(19|20)$/);
    await page.waitForTimeout(1300);
    expect(Number(await page.getByTestId('incoming-countdown').getAttribute('data-seconds'))).toBeLessThan(first);
    const st = await hookState(page);
    expect(st.audio.ringing).toBe(true);
    expect(st.ringing).toEqual(['w-ring']);
    expect(await page.getByTestId('announcer').textContent()).toBe('Incoming call from +15551234567. Press Alt+A to answer, Alt+D to decline.');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('data-testid'))).toBe('answer');
  });

  test('the ring stops by itself at the deadline, with no frame from the server', async () => {
    s = await StandIn.start();
    const page = await agentPage();
    await goAvailable(page);
    await ring('w-expire', { deadlineIn: 2500 });
    await page.getByTestId('incoming-call').waitFor();
    await page.getByTestId('incoming-call').waitFor({ state: 'detached', timeout: 5000 });
    expect((await hookState(page)).audio.ringing).toBe(false);
  });

  test('call.revoked stops the ring in every tab of the agent; a decline in one tab stops the other at once', async () => {
    s = await StandIn.start();
    const a = await agentPage();
    const b = await agentPage();
    await goAvailable(a);
    await b.getByTestId('ready-check').click();
    await b.locator('[data-testid="ready-sound-status"][data-ok="true"]').waitFor();
    await ring('w-multi');
    await a.getByTestId('incoming-call').waitFor();
    await b.getByTestId('incoming-call').waitFor();
    s.send({ type: 'call.revoked', wacid: 'w-multi', reason: 'answered elsewhere' });
    await a.getByTestId('incoming-call').waitFor({ state: 'detached' });
    await b.getByTestId('incoming-call').waitFor({ state: 'detached' });
    expect((await hookState(a)).audio.ringing).toBe(false);
    expect((await hookState(b)).audio.ringing).toBe(false);

    await ring('w-multi-2');
    await a.getByTestId('incoming-call').waitFor();
    await b.getByTestId('incoming-call').waitFor();
    const before = s.received.length;
    await a.getByTestId('decline').click();
    expect((await s.frame('call.decline', before)).wacid).toBe('w-multi-2');
    // The stand-in sends no revoke here: tab B stops because tab A told it.
    await b.getByTestId('incoming-call').waitFor({ state: 'detached', timeout: 2000 });
  });
});

describe('answer', () => {
  test('sends one complete SDP answer (sha-256 fingerprint, candidates, CRLF) and no audio either way before the ack', async () => {
    s = await StandIn.start();
    let releaseAck!: () => void;
    const ackGate = new Promise<void>((r) => (releaseAck = r));
    s.handle('call.answer', async () => {
      await ackGate;
      return { ack: {} };
    });
    const page = await agentPage();
    await goAvailable(page);
    const peer = await ring('w-answer');
    await page.getByTestId('incoming-call').waitFor();
    const sdp = await answerCall(page, peer, 'w-answer');

    expect(sdp).toMatch(/^v=0\r\n/);
    expect(sdp).toMatch(/\r\na=fingerprint:sha-256 ([0-9A-F]{2}:){31}[0-9A-F]{2}\r\n/);
    expect(sdp).toMatch(/\r\na=candidate:\S+ 1 udp \d+ 127\.0\.0\.1 \d+ typ host/);
    expect(sdp).toMatch(/\r\na=setup:(active|passive)\r\n/);
    expect(sdp).toMatch(/\r\na=sendrecv\r\n/);
    expect(sdp).not.toMatch(/a=ice-lite/); // the browser is the full (controlling) ICE agent
    expect(sdp.endsWith('\r\n')).toBe(true);
    expect(sdp.replace(/\r\n/g, '')).not.toMatch(/[\r\n]/); // CRLF only, no bare LF
    expect(s.received.filter((r) => r.msg.type === 'call.answer')).toHaveLength(1);

    // Connected, caller sending, but no ack yet: the page neither sends nor plays audio.
    await expect.poll(() => peer.mediaStats().connectionState, { timeout: 10_000 }).toBe('connected');
    await page.waitForTimeout(800);
    expect(peer.mediaStats().packetsReceived).toBe(0);
    let st = await hookState(page);
    expect(st.media).toMatchObject({ started: false, sender: { hasTrack: false }, remoteAudioPlaying: false });
    expect(await page.getByTestId('call-active').getAttribute('data-local')).toBe('answering');

    releaseAck();
    await until(page, 's.media && s.media.started');
    await expect.poll(() => peer.mediaStats().packetsReceived, { timeout: 5000 }).toBeGreaterThan(10);
    // The caller's tone plays in the page: packets and energy (the <audio> element is unmuted).
    await expect
      .poll(async () => ((await hookStats(page))?.inbound?.totalAudioEnergy ?? 0) > 0, { timeout: 5000 })
      .toBe(true);
    st = await hookState(page);
    expect(st.media).toMatchObject({ started: true, muted: false, remoteAudioPlaying: true, sender: { hasTrack: true, enabled: true } });
    await page.locator('[data-testid="call-status"][data-state="connected"]').waitFor();
    expect(await page.getByTestId('call-caller').textContent()).toBe('+15551234567');
    // The timer runs from the answer: m:ss, and it advances (how far depends on the machine's pace up to here).
    const secs = async () => {
      const m = /^(\d+):(\d\d)$/.exec((await page.getByTestId('call-timer').textContent()) ?? '');
      expect(m, 'call timer reads m:ss').not.toBeNull();
      return Number(m![1]) * 60 + Number(m![2]);
    };
    const t1 = await secs();
    expect(t1).toBeLessThan(60);
    await expect.poll(secs, { timeout: 3000 }).toBeGreaterThan(t1);
    await page.locator('[data-testid="quality"]:not([data-level="unknown"])').waitFor({ timeout: 5000 });
    expect(await page.getByTestId('quality').getAttribute('data-level')).toBe('good');
  });

  test('mute keeps the sender track (disabled) and packets keep flowing; unmute re-enables it', async () => {
    s = await StandIn.start();
    const page = await agentPage();
    await goAvailable(page);
    const peer = await ring('w-mute');
    await page.getByTestId('incoming-call').waitFor();
    await answerCall(page, peer, 'w-mute');
    await until(page, 's.media && s.media.started');
    await expect.poll(() => peer.mediaStats().packetsReceived, { timeout: 5000 }).toBeGreaterThan(0);

    await page.getByTestId('mute').click();
    expect(await page.getByTestId('mute').getAttribute('aria-pressed')).toBe('true');
    const st = await hookState(page);
    expect(st.media.sender).toMatchObject({ hasTrack: true, enabled: false, readyState: 'live' });
    const stats = await hookStats(page);
    expect(stats.sender.hasTrack).toBe(true);
    // Silence is still sent: the provider's no-media timer never fires for a muted agent.
    const atMute = peer.mediaStats().packetsReceived;
    await page.waitForTimeout(1500);
    expect(peer.mediaStats().packetsReceived - atMute).toBeGreaterThan(40); // 50 packets/s at 20 ms

    await page.getByTestId('mute').click();
    expect(await page.getByTestId('mute').getAttribute('aria-pressed')).toBe('false');
    expect((await hookState(page)).media.sender).toMatchObject({ hasTrack: true, enabled: true, readyState: 'live' });
  });

  test('choosing another microphone mid-call replaces the sending track (never null) and keeps the mute state', async () => {
    s = await StandIn.start();
    const page = await agentPage();
    await goAvailable(page);
    const peer = await ring('w-mic');
    await answerCall(page, peer, 'w-mic');
    await until(page, 's.media && s.media.started');
    const options = await page.getByTestId('mic-select').locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
    expect(options.length).toBeGreaterThan(1); // Chromium's fake devices: default + two inputs
    await page.getByTestId('mute').click();
    const before = (await hookState(page)).media.sender;
    const other = options.find((o) => o !== 'default' && o !== '')!;
    await page.getByTestId('mic-select').selectOption(other);
    await until(page, `s.media.sender.id !== ${JSON.stringify(before.id)}`);
    const after = (await hookState(page)).media.sender;
    expect(after).toMatchObject({ hasTrack: true, enabled: false, readyState: 'live' });
    const atSwitch = peer.mediaStats().packetsReceived;
    await expect.poll(() => peer.mediaStats().packetsReceived - atSwitch, { timeout: 3000 }).toBeGreaterThan(20);

    // Speaker choice goes to the caller's <audio> element (setSinkId).
    const outputs = await page.getByTestId('speaker-select').locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
    const speaker = outputs.find((o) => o !== 'default' && o !== '');
    expect(speaker).toBeDefined();
    await page.getByTestId('speaker-select').selectOption(speaker!);
    await expect
      .poll(() => page.evaluate(() => (document.querySelector('[data-testid="remote-audio"]') as HTMLAudioElement & { sinkId: string }).sinkId))
      .toBe(speaker);
  });

  test('when the caller\'s audio stops arriving, the quality indicator turns poor and says so in plain words', async () => {
    s = await StandIn.start();
    const page = await agentPage();
    await goAvailable(page);
    const peer = await ring('w-quality');
    await answerCall(page, peer, 'w-quality');
    await page.locator('[data-testid="quality"][data-level="good"]').waitFor({ timeout: 6000 });
    peer.stopSending();
    await page.locator('[data-testid="quality"][data-level="poor"]').waitFor({ timeout: 15_000 }); // a whole silent stats interval must pass: slower when CI is busy
    expect(await page.getByTestId('quality-label').textContent()).toBe('Poor line');
    expect(await page.getByTestId('quality-warnings').textContent()).toContain('No audio is arriving from the caller.');
  }, 45_000);

  test('keyboard only: Answer has focus when it rings, Tab reaches Decline, Enter on Answer answers', async () => {
    s = await StandIn.start();
    const page = await agentPage();
    await goAvailable(page);
    const { sdp } = await caller();
    s.offer({ wacid: 'w-key', from: '15551234567', sdp, deadline: Date.now() + 25_000 });
    await page.getByTestId('incoming-call').waitFor();
    const focused = () => page.evaluate(() => document.activeElement?.getAttribute('data-testid'));
    await expect.poll(focused).toBe('answer');
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('decline');
    await page.keyboard.press('Shift+Tab');
    expect(await focused()).toBe('answer');
    await page.keyboard.press('Enter');
    expect((await s.frame('call.answer')).wacid).toBe('w-key');
    await until(page, 's.tabCall === "w-key"');
  });

  test("a Service refusal shows the Service's reason and the call does not start", async () => {
    s = await StandIn.start();
    s.handle('call.answer', () => ({ error: { code: 'SERVICE_ERROR', message: 'No call permission for this user (138006)' } }));
    const page = await agentPage();
    await goAvailable(page);
    await ring('w-refused');
    await page.getByTestId('incoming-call').waitFor();
    await page.getByTestId('answer').click();
    await page.getByTestId('error-banner').waitFor();
    expect(await page.getByTestId('error-message').textContent()).toBe(
      'The Service refused the call: No call permission for this user (138006)',
    );
    expect(await page.getByTestId('error-banner').getAttribute('data-code')).toBe('SERVICE_ERROR');
    expect(await page.getByTestId('call-active').isHidden()).toBe(true);
    expect((await hookState(page)).media).toBeNull();
  });

  test('an unknown accept outcome keeps the call and starts audio once the server shows it active for this agent', async () => {
    s = await StandIn.start();
    s.handle('call.answer', () => ({ error: { code: 'OUTCOME_UNKNOWN', message: 'accept timed out' } }));
    const page = await agentPage();
    await goAvailable(page);
    const peer = await ring('w-unknown');
    await answerCall(page, peer, 'w-unknown');
    await page.locator('[data-testid="call-status"][data-state="confirming"]').waitFor();
    await page.waitForTimeout(300);
    expect((await hookState(page)).media).toMatchObject({ started: false, outcomeUnknown: true });
    s.state({
      wacid: 'w-unknown', phoneId: 'phone-1', from: '15551234567', to: '+15550001000', direction: 'USER_INITIATED',
      state: 'active', agent: 'agent1', startedAt: Date.now(),
    });
    await until(page, 's.media && s.media.started');
    await expect.poll(() => peer.mediaStats().packetsReceived, { timeout: 5000 }).toBeGreaterThan(0);
    expect(s.received.filter((r) => r.msg.type === 'call.answer')).toHaveLength(1); // never answered twice
  });

  test('an answer lost with the socket is sent again, byte-identical, when welcome shows the offer still ringing', async () => {
    s = await StandIn.start();
    s.handle('call.answer', (_m, client) => {
      if (s.received.filter((r) => r.msg.type === 'call.answer').length === 1) {
        client.socket.destroy(); // the link dies before the ack
        return 'none';
      }
      return { ack: {} };
    });
    const page = await agentPage();
    await goAvailable(page);
    const peer = await ring('w-lost');
    const first = await answerCall(page, peer, 'w-lost');
    const second = await s.frame('call.answer', s.received.findIndex((r) => r.msg.type === 'call.answer') + 1, 15_000);
    expect(second.sdp).toBe(first);
    await until(page, 's.media && s.media.started');
  });

  test('losing the race (CONFLICT) says someone else answered first and releases the call', async () => {
    s = await StandIn.start();
    s.handle('call.answer', () => ({ error: { code: 'CONFLICT', message: 'agent2 has the call' } }));
    const page = await agentPage();
    await goAvailable(page);
    await ring('w-race');
    await page.getByTestId('answer').click();
    await page.getByTestId('error-banner').waitFor();
    expect(await page.getByTestId('error-message').textContent()).toMatch(/^Someone else answered first/);
    expect((await hookState(page)).tabCall).toBeNull();
  });
});

describe('hang up and end', () => {
  test('hang up sends call.hangup; the call shows ended with its duration (at the head of its wrap-up) once the server says so, and joins the call list', async () => {
    s = await StandIn.start();
    const page = await agentPage();
    await goAvailable(page);
    const peer = await ring('w-end');
    await page.getByTestId('incoming-call').waitFor();
    await answerCall(page, peer, 'w-end');
    await until(page, 's.media && s.media.started');
    // Direct mode: no Transfer button; the page says why instead.
    expect(await page.getByTestId('transfer-open').count()).toBe(0);
    expect(await page.getByTestId('transfer-unavailable').textContent()).toMatch(/^Transfer is not offered here: it needs the media server/);
    const before = s.received.length;
    await page.getByTestId('hangup').click();
    expect((await s.frame('call.hangup', before)).wacid).toBe('w-end');
    await page.locator('[data-testid="call-active"][data-local="hangingUp"]').waitFor();
    s.state({
      wacid: 'w-end', phoneId: 'phone-1', from: '15551234567', to: '+15550001000', direction: 'USER_INITIATED',
      state: 'ended', agent: 'agent1', result: 'COMPLETED', duration: 42,
    });
    await page.getByTestId('call-ended').waitFor();
    expect(await page.getByTestId('call-active').isHidden()).toBe(true);
    expect(await page.getByTestId('call-ended-duration').textContent()).toBe('0:42');
    expect(await page.getByTestId('call-ended-result').textContent()).toBe('Completed');
    // The one call list: this session's call, with its duration, once.
    const items = page.locator('[data-testid="call-log-item"][data-wacid="w-end"]');
    expect(await items.count()).toBe(1);
    expect(await items.first().textContent()).toContain('Answered · 0:42');
    expect((await hookState(page)).media).toBeNull();
  });

  test('the caller hanging up mid-call ends it on screen and stops the media', async () => {
    s = await StandIn.start();
    const page = await agentPage();
    await goAvailable(page);
    const peer = await ring('w-callerend');
    await answerCall(page, peer, 'w-callerend');
    await until(page, 's.media && s.media.started');
    s.state({
      wacid: 'w-callerend', phoneId: 'phone-1', from: '15551234567', to: '+15550001000', direction: 'USER_INITIATED',
      state: 'ended', agent: 'agent1', result: 'COMPLETED', startedAt: Date.now() - 7000, endedAt: Date.now(),
    });
    await page.getByTestId('call-ended').waitFor();
    expect(await page.getByTestId('call-ended-duration').textContent()).toBe('0:07');
    expect((await hookState(page)).media).toBeNull();
  });
});

describe('connection', () => {
  test('socket killed while ringing: the page reconnects, welcome brings the offer back, and it can be answered', async () => {
    s = await StandIn.start();
    const page = await agentPage();
    await goAvailable(page);
    const peer = await ring('w-resync');
    await page.getByTestId('incoming-call').waitFor();
    const [client] = [...s.clients];
    client!.socket.destroy();
    await page.locator('[data-testid="connection-status"][data-state="reconnecting"]').waitFor();
    await s.until(() => s.clients.size === 1 && ![...s.clients].includes(client!), 10_000, 'a new connection');
    await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor();
    await page.getByTestId('incoming-call').waitFor();
    expect(await page.getByTestId('incoming-caller').textContent()).toBe('+15551234567');
    await answerCall(page, peer, 'w-resync');
    await until(page, 's.media && s.media.started');
  });

  test('pings are answered with pong {t}; when pings stop (half-open socket) the page replaces the socket', async () => {
    s = await StandIn.start();
    const page = await agentPage();
    s.startPings(200);
    const pong = await s.frame('pong');
    expect(typeof pong.t).toBe('number');
    await s.until(() => s.received.filter((r) => r.msg.type === 'pong').length >= 3, 5000, 'three pongs');
    const [old] = [...s.clients];
    s.frozen.add(old!); // the server side sees an open socket; the page hears nothing
    const t0 = Date.now();
    await s.until(() => [...s.clients].some((c) => c !== old), 5000, 'a replacement connection');
    // 2.5 × the 200 ms ping interval, floored at 1 s; plus the backoff's first delay.
    expect(Date.now() - t0).toBeLessThan(3000);
    await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor();
  });

  test('a call this tab held that the new welcome no longer lists ends on screen (no ghost call)', async () => {
    s = await StandIn.start();
    const page = await agentPage();
    await goAvailable(page);
    const peer = await ring('w-ghost');
    await answerCall(page, peer, 'w-ghost');
    await until(page, 's.media && s.media.started');
    s.calls.clear(); // the server forgot it (e.g. it ended while the socket was down)
    [...s.clients][0]!.socket.destroy();
    await page.getByTestId('call-ended').waitFor({ timeout: 10_000 });
    expect(await page.getByTestId('call-ended-reason').textContent()).toBe('The server no longer lists this call.');
    expect((await hookState(page)).media).toBeNull();
  });
});

describe('layout', () => {
  for (const [name, width, height] of [
    ['desktop', 1280, 800],
    ['phone', 375, 800],
  ] as const) {
    test(`${name} ${width}×${height}: no sideways scrolling; ringing and in-call controls are on screen and at least 44 px tall`, async () => {
      s = await StandIn.start({ demo: true });
      const page = await agentPage({ width, height });
      const noSideScroll = () => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);
      await page.screenshot({ path: `${SHOTS}/${name}-1-idle.png` });
      expect(await noSideScroll()).toBe(true);
      await goAvailable(page);
      await page.screenshot({ path: `${SHOTS}/${name}-2-available.png` });
      const peer = await ring('w-layout', { from: '15551234567' });
      await page.getByTestId('incoming-call').waitFor();
      await page.screenshot({ path: `${SHOTS}/${name}-3-ringing.png` });
      expect(await noSideScroll()).toBe(true);
      for (const id of ['answer', 'decline']) await expectOnScreen(page, id, width, height);
      await answerCall(page, peer, 'w-layout');
      await until(page, 's.media && s.media.started');
      await page.locator('[data-testid="quality"]:not([data-level="unknown"])').waitFor({ timeout: 5000 });
      await page.screenshot({ path: `${SHOTS}/${name}-4-in-call.png` });
      expect(await noSideScroll()).toBe(true);
      for (const id of ['mute', 'hangup']) await expectOnScreen(page, id, width, height);
      s.state({
        wacid: 'w-layout', phoneId: 'phone-1', from: '15551234567', to: '+15550001000', direction: 'USER_INITIATED',
        state: 'ended', agent: 'agent1', result: 'COMPLETED', duration: 83,
      });
      await page.getByTestId('call-ended').waitFor();
      await page.screenshot({ path: `${SHOTS}/${name}-5-ended.png`, fullPage: true });
      expect(await noSideScroll()).toBe(true);
    });
  }
});

async function expectOnScreen(page: Page, testid: string, width: number, height: number): Promise<void> {
  const box = await page.getByTestId(testid).boundingBox();
  expect(box, testid).not.toBeNull();
  expect(box!.x, testid).toBeGreaterThanOrEqual(0);
  expect(box!.x + box!.width, testid).toBeLessThanOrEqual(width);
  expect(box!.y + box!.height, `${testid} is above the fold`).toBeLessThanOrEqual(height);
  expect(box!.height, testid).toBeGreaterThanOrEqual(44);
}

describe('supervisor and archive shells', () => {
  test('the supervisor page lists live calls from call.state frames and moves ended ones to the recent list', async () => {
    s = await StandIn.start({ user: { name: 'sup', roles: ['supervisor', 'agent'] } });
    s.calls.set('w-live', {
      wacid: 'w-live', phoneId: 'phone-1', from: '15551234567', to: '+15550001000', direction: 'USER_INITIATED',
      state: 'active', agent: 'agent2', startedAt: Date.now() - 65_000,
    });
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addCookies([{ name: 'sid', value: 'ok', url: s.url }]);
    const page = await context.newPage();
    await page.goto(`${s.url}/supervisor`);
    await page.locator('[data-testid="live-call"][data-wacid="w-live"]').waitFor();
    expect(await page.getByTestId('live-count').textContent()).toBe('1');
    s.state({ wacid: 'w-new', phoneId: 'phone-1', from: '15557654321', to: '+15550001000', direction: 'USER_INITIATED', state: 'ringing', deadline: Date.now() + 20_000 });
    await page.locator('[data-testid="live-call"][data-wacid="w-new"][data-state="ringing"]').waitFor();
    s.state({ wacid: 'w-live', phoneId: 'phone-1', from: '15551234567', to: '+15550001000', direction: 'USER_INITIATED', state: 'ended', agent: 'agent2', result: 'COMPLETED', duration: 70 });
    await page.locator('[data-testid="recent-call"][data-wacid="w-live"][data-result="COMPLETED"]').waitFor();
    expect(await page.locator('[data-testid="live-call"][data-wacid="w-live"]').count()).toBe(0);
    await page.screenshot({ path: `${SHOTS}/supervisor.png` });
  });

  test('the archive page lists media.available frames with download links', async () => {
    s = await StandIn.start({ user: { name: 'ops', roles: ['ops'] } });
    context = await browser.newContext({ viewport: { width: 375, height: 800 } });
    await context.addCookies([{ name: 'sid', value: 'ok', url: s.url }]);
    const page = await context.newPage();
    await page.goto(`${s.url}/archive`);
    await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor();
    s.send({ type: 'media.available', wacid: 'w-rec', kind: 'recording', url: '/api/media/w-rec/recording' });
    const item = page.locator('[data-testid="archive-item"][data-wacid="w-rec"][data-kind="recording"]');
    await item.waitFor();
    expect(await item.getByTestId('archive-download').getAttribute('href')).toBe('/api/media/w-rec/recording');
    await page.screenshot({ path: `${SHOTS}/archive.png` });
  });

  test('a user without the agent role gets told so on the agent page, not a broken phone', async () => {
    s = await StandIn.start({ user: { name: 'ops', roles: ['ops'] } });
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addCookies([{ name: 'sid', value: 'ok', url: s.url }]);
    const page = await context.newPage();
    await page.goto(`${s.url}/`);
    await page.getByTestId('error-banner').waitFor();
    expect(await page.getByTestId('error-message').textContent()).toBe('This page is for agents. Use the links above.');
    expect(s.clients.size).toBe(0);
  });
});
