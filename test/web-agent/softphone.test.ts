/**
 * The agent softphone in a real Chromium (fake microphone), against an in-process stand-in
 * of the server (standin.ts: the real built bundle, shared/protocol.ts frames) and a real
 * werift peer as the caller. This tests the page; the server's end-to-end tests drive the
 * real server with the same page. Login, ready-check, ringing and answer here; hang-up,
 * connection, layout and the other shells in softphone-call.test.ts (rig: softphone-rig.ts).
 */
import { describe, expect, test } from 'vitest';
import { launchChromium } from '../support/chromium.ts';
import { goAvailable, hookState, hookStats } from './driver.ts';
import { StandIn } from './standin.ts';
import { softphoneRig } from './softphone-rig.ts';
import { screenshot } from '../support/shots.ts';

let s: StandIn;
const { newContext, agentPage, caller, ring, answerCall, until } = softphoneRig(() => s);

describe('login', () => {
  test('a page without a session goes to /login; the right password lands on the page asked for', async () => {
    s = await StandIn.start({ demo: true });
    const context = await newContext(1280, 800);
    const page = await context.newPage();
    await page.goto(`${s.url}/`);
    await page.waitForURL(/\/login\?next=%2F$/);
    await page.getByTestId('login-name').fill('agent1');
    await page.getByTestId('login-password').fill('nope');
    await page.getByTestId('login-submit').click();
    await expect.poll(() => page.getByTestId('login-error').textContent()).toBe('Wrong name or password.');
    await screenshot(page, `web-agent-login-error.png`);
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
    // Each step within 8 s, named with both tabs' state if not (it once ran into the test's 30 s in a full run; ~3.6 s alone).
    const step = async (name: string, p: Promise<unknown>) => {
      await p.catch(async (e) => {
        console.log(`softphone two tabs: "${name}" did not happen; tab A:`, JSON.stringify(await hookState(a)).slice(0, 1500), '\ntab B:', JSON.stringify(await hookState(b)).slice(0, 1500));
        throw e;
      });
    };
    const T = { timeout: 8_000 };
    await step('tab A available', goAvailable(a));
    await step('tab B ready-check', b.getByTestId('ready-check').click(T));
    await step('tab B sound ok', b.locator('[data-testid="ready-sound-status"][data-ok="true"]').waitFor(T));
    await ring('w-multi');
    await step('tab A rings', a.getByTestId('incoming-call').waitFor(T));
    await step('tab B rings', b.getByTestId('incoming-call').waitFor(T));
    s.send({ type: 'call.revoked', wacid: 'w-multi', reason: 'answered elsewhere' });
    await step('tab A ring revoked', a.getByTestId('incoming-call').waitFor({ state: 'detached', ...T }));
    await step('tab B ring revoked', b.getByTestId('incoming-call').waitFor({ state: 'detached', ...T }));
    expect((await hookState(a)).audio.ringing).toBe(false);
    expect((await hookState(b)).audio.ringing).toBe(false);

    await ring('w-multi-2');
    await step('tab A rings again', a.getByTestId('incoming-call').waitFor(T));
    await step('tab B rings again', b.getByTestId('incoming-call').waitFor(T));
    const before = s.received.length;
    await step('decline in tab A', a.getByTestId('decline').click(T));
    expect((await s.frame('call.decline', before)).wacid).toBe('w-multi-2');
    // The stand-in sends no revoke here: tab B stops because tab A told it.
    await step('tab B stops with tab A', b.getByTestId('incoming-call').waitFor({ state: 'detached', timeout: 2000 }));
  }, 60_000);
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
