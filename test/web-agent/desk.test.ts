/**
 * The agent desk around a call in a real Chromium against the stand-in server
 * (standin.ts) and a real werift caller: the customer panel on ring, keyboard shortcuts,
 * hold with music the caller hears, the no-audio warning, after-call work with a required
 * disposition and its countdown, away with a reason and time in state, the call log after
 * a reload, and the notification + flashing title for a hidden tab.
 */
import { describe, expect, test } from 'vitest';
import type { Page } from 'playwright-core';
import { callErrorReason } from '../../shared/callErrors.ts';
import type { CallRecord } from '../../shared/records.ts';
import type { AudioPeer } from '../emulator/calls/peer.ts';
import { goAvailable, hookState, waitForState } from './driver.ts';
import { StandIn } from './standin.ts';
import { softphoneRig } from './softphone-rig.ts';
import { screenshot } from '../support/shots.ts';

const PHONE = { width: 390, height: 844 };
const fmt = (w: { meanLevel: number; audibleFraction: number; pitches: number[] }) => `${w.meanLevel.toFixed(3)}, ${w.audibleFraction.toFixed(2)}, [${w.pitches.join(' ')}]`;

let s: StandIn;
const { newContext, agentPage, ring } = softphoneRig(() => s, { width: 1280, height: 900 });

const CUSTOMER = '15551234567';
const iso = (msAgo: number) => new Date(Date.now() - msAgo).toISOString();
const record = (p: Partial<CallRecord>): CallRecord => ({
  wacid: 'w-old',
  phoneId: 'phone-1',
  businessNumber: '+15550001000',
  customer: { phoneNumber: CUSTOMER },
  direction: 'inbound',
  agent: 'agent1',
  outcome: 'answered',
  receivedAt: iso(86_400_000),
  media: [],
  ...p,
});
const PAST = [
  record({ wacid: 'w-old-1', disposition: 'Follow-up needed', notes: 'Wants the invoice resent.', talkMs: 95_000 }),
  record({ wacid: 'w-old-2', outcome: 'missed', endReason: 'not answered', agent: 'agent2', receivedAt: iso(2 * 86_400_000) }),
];

/** The stand-in with the desk's canned API answers and lists. */
async function standIn(opts: { log?: CallRecord[]; permission?: Record<string, unknown> } = {}): Promise<StandIn> {
  const st = await StandIn.start();
  st.welcomeExtras = { dispositions: ['Resolved', 'Sale', 'Wrong number'], awayReasons: ['Break', 'Lunch', 'Training'] };
  st.answer('GET', `/api/customers/${CUSTOMER}`, () => ({
    json: {
      id: CUSTOMER,
      contact: { id: 'c1', remarkName: 'Ada Lovelace', tags: ['vip', 'billing'], customAttributes: { plan: 'Gold', orders: 12 } },
      permission: opts.permission ?? { state: 'granted', text: 'Permission granted until 29 Nov, 14:05.', callAllowed: true },
      calls: PAST,
      messages: [{ id: 'm1', direction: 'outbound', from: '+15550001000', to: CUSTOMER, type: 'text', text: 'Your order shipped.', status: 'read', statusHistory: [], createTime: iso(3_600_000), updateTime: iso(3_000_000) }],
      callbacks: [{ id: 'cb1', customer: CUSTOMER, businessNumber: '+15550001000', reason: 'missed', createdAt: iso(2 * 86_400_000), state: 'open', attempts: [], misses: [], updatedAt: iso(86_400_000), version: 1 }],
    },
  }));
  st.answer('GET', '/api/history/calls', () => ({ json: { items: opts.log ?? PAST } }));
  return st;
}

const view = (wacid: string, extra: Record<string, unknown>) => ({ wacid, phoneId: 'phone-1', from: CUSTOMER, to: '+15550001000', direction: 'USER_INITIATED' as const, agent: 'agent1', ...extra });

/** Ring, answer with Alt+A (the shortcut), caller sends `send` (or nothing), server says active. */
async function inCall(page: Page, wacid: string, send = true): Promise<AudioPeer> {
  const peer = await ring(wacid);
  // Answer is always on the page (the controls never move): wait until it can answer this ring.
  // Waiting for the button alone let the key go before the offer arrived (CI, under load).
  await page.locator('[data-testid="answer"]:not([disabled])').waitFor();
  const before = s.received.length;
  await page.keyboard.press('Alt+KeyA');
  const frame = await s.frame('call.answer', before).catch(async (e) => {
    // Say what the page did with the key.
    const st = await hookState(page);
    console.log(`inCall ${wacid}: no call.answer; frames after the key:`, JSON.stringify(s.received.slice(before).map((r) => r.msg.type)), 'page:', JSON.stringify({ error: st.error, calls: st.calls.map((c: { wacid: string; state: string; local: string; revoked: boolean }) => [c.wacid, c.state, c.local, c.revoked]), ringing: st.ringing, tabCall: st.tabCall, media: st.media, ready: st.ready, focus: await page.evaluate(() => document.activeElement?.outerHTML.slice(0, 200)) }));
    throw e;
  });
  await peer.applyAnswer(frame.sdp!);
  if (send) peer.startSending({ kind: 'tone', hz: 300 });
  s.state(view(wacid, { state: 'active', startedAt: Date.now() }) as never);
  await waitForState(page, 's.media && s.media.started');
  return peer;
}

// A page, a stand-in server and a werift caller per test: 4-5 s alone, 21-33 s in a full run on
// the 2-core CI machine (two files at once, each with Chromium): the first test hit the 30 s default (CI).
describe('agent desk', { timeout: 60_000 }, () => {
  test('ringing shows the customer panel (contact, permission, past calls, messages, callbacks); shortcuts are on the buttons', async () => {
    s = await standIn();
    const page = await agentPage();
    await goAvailable(page);
    await ring('w-ring');
    const panel = page.locator('[data-testid="customer"][data-state="ready"]');
    await panel.waitFor();
    expect(await page.getByTestId('customer-name').textContent()).toBe('Ada Lovelace');
    expect(await page.getByTestId('customer-tag').allTextContents()).toEqual(['vip', 'billing']);
    expect(await page.getByTestId('customer-attributes').textContent()).toContain('Gold');
    expect(await page.getByTestId('customer-permission').textContent()).toBe('Calling permission: granted');
    const calls = await page.getByTestId('customer-call').allTextContents();
    expect(calls).toHaveLength(2);
    expect(calls[0]).toContain('Follow-up needed');
    expect(calls[0]).toContain('agent1');
    expect(calls[1]).toContain('Rung out');
    expect(await page.getByTestId('customer-message').getAttribute('data-status')).toBe('read');
    expect(await page.getByTestId('customer-callback').count()).toBe(1);
    expect(await page.getByTestId('answer').getAttribute('aria-keyshortcuts')).toBe('Alt+A');
    // On the buttons as their keyboard shortcut and tooltip (the labels stay short: the controls never move).
    expect(await page.getByTestId('decline').getAttribute('aria-keyshortcuts')).toBe('Alt+D');
    expect(await page.getByTestId('decline').getAttribute('title')).toBe('Alt+D');
    await screenshot(page, `web-agent-desk-ringing-customer.png`, { fullPage: true });
    await page.setViewportSize(PHONE);
    await screenshot(page, `web-agent-desk-ringing-customer-phone.png`, { fullPage: true });
    // Alt+D declines.
    const before = s.received.length;
    await page.keyboard.press('Alt+KeyD');
    expect((await s.frame('call.decline', before)).wacid).toBe('w-ring');
  });

  test('a new customer (no contact) says so and the ring is never held back by the panel', async () => {
    s = await StandIn.start();
    s.answer('GET', `/api/customers/${CUSTOMER}`, async () => {
      await new Promise((r) => setTimeout(r, 1500)); // a slow history must not delay the ring
      return { json: { id: CUSTOMER, permission: { state: 'rejected' }, calls: [], messages: [], callbacks: [] } };
    });
    s.answer('GET', '/api/history/calls', () => ({ json: { items: [] } }));
    const page = await agentPage();
    await goAvailable(page);
    await ring('w-new');
    // The ring is up (Answer enabled) while the customer panel still loads (1.5 s).
    await page.locator('[data-testid="answer"]:not([disabled])').waitFor();
    expect(await page.locator('[data-testid="customer"]').getAttribute('data-state')).toBe('loading');
    await page.locator('[data-testid="customer"][data-state="ready"]').waitFor();
    expect(await page.getByTestId('customer-name').textContent()).toBe('New customer');
    expect(await page.getByTestId('customer-call-back-reason').textContent()).toContain('The customer declined calls');
  });

  test('hold: the caller hears a tune instead of the microphone, a hold timer runs; Resume brings the microphone back; Alt+M mutes, Alt+H holds', async () => {
    s = await standIn();
    const page = await agentPage();
    await goAvailable(page);
    const peer = await inCall(page, 'w-hold');
    await expect.poll(() => peer.mediaStats().packetsReceived, { timeout: 5000 }).toBeGreaterThan(50);
    // The microphone first: Chromium's fake microphone beeps once a second (one pitch, mostly silent).
    peer.markWindow();
    await page.waitForTimeout(3000);
    const mic = peer.windowStats();
    await screenshot(page, `web-agent-desk-in-call.png`, { fullPage: true });

    const before = s.received.length;
    const heldAt = Date.now();
    await page.getByTestId('hold').click();
    expect((await s.frame('call.hold', before)).wacid).toBe('w-hold');
    await page.locator('[data-testid="hold"][aria-pressed="true"]').waitFor();
    await page.getByTestId('hold-timer').waitFor();
    await page.waitForTimeout(500); // the track switch settles
    peer.markWindow();
    await page.waitForTimeout(3500);
    const music = peer.windowStats();
    // Hold music: continuous, several notes; the microphone was neither.
    expect(music.audibleFraction).toBeGreaterThan(0.8);
    expect(music.pitches.length).toBeGreaterThanOrEqual(4);
    expect(mic.audibleFraction).toBeLessThan(0.5);
    expect(music.meanLevel).toBeGreaterThan(mic.meanLevel);
    // The hold timer counts from the hold: at least the 4 s waited since it showed (its last
    // tick up to 1 s behind), at most the time since the click (under the full suite's load the
    // steps between took 7 s: a fixed 0:03-0:05 failed in CI).
    const held = /^On hold 0:(\d\d)/.exec((await page.getByTestId('hold-timer').textContent()) ?? '');
    expect(held, 'the hold timer reads "On hold 0:ss"').not.toBeNull();
    expect(Number(held![1])).toBeGreaterThanOrEqual(3);
    expect(Number(held![1])).toBeLessThanOrEqual(Math.ceil((Date.now() - heldAt) / 1000));
    await screenshot(page, `web-agent-desk-on-hold.png`, { fullPage: true });
    await page.setViewportSize(PHONE);
    await screenshot(page, `web-agent-desk-on-hold-phone.png`, { fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });

    const r = s.received.length;
    await page.keyboard.press('Alt+KeyH'); // resume by shortcut
    expect((await s.frame('call.resume', r)).wacid).toBe('w-hold');
    await page.locator('[data-testid="hold"][aria-pressed="false"]').waitFor();
    await page.waitForTimeout(500);
    peer.markWindow();
    await page.waitForTimeout(2500);
    const back = peer.windowStats();
    console.log(`caller heard (mean level, audible share, pitches): mic ${fmt(mic)}; hold music ${fmt(music)}; after resume ${fmt(back)}`);
    expect(back.audibleFraction).toBeLessThan(0.5); // no continuous tune any more: the microphone's beep
    expect(back.pitches.length).toBeLessThan(music.pitches.length);
    await page.keyboard.press('Alt+KeyM');
    await page.locator('[data-testid="mute"][aria-pressed="true"]').waitFor();
    const h = s.received.length;
    await page.keyboard.press('Alt+KeyX');
    expect((await s.frame('call.hangup', h)).wacid).toBe('w-hold');
  });

  test('no audio from the caller 5 s after connecting → a warning with what to check', async () => {
    s = await standIn();
    const page = await agentPage();
    await goAvailable(page);
    await inCall(page, 'w-silent', false);
    expect(await page.getByTestId('no-audio-warning').isHidden()).toBe(true);
    // The watchdog counts from the line coming up (on a loaded machine ICE and DTLS with the
    // werift caller took seconds: the old count from the answer failed in 1 full run of 4).
    await waitForState(page, 's.media && s.media.connectionState === "connected"', 20_000);
    const tUp = Date.now();
    await page.getByTestId('no-audio-warning').waitFor({ timeout: 10_000 }).catch(async (e) => {
      console.log('no warning; the page:', JSON.stringify((await hookState(page)).media), 'stats:', JSON.stringify(await page.evaluate(() => (window as typeof window & { __switchboard: { stats(): unknown } }).__switchboard.stats())).slice(0, 1500));
      throw e;
    });
    expect(Date.now() - tUp).toBeLessThan(10_000); // NO_AUDIO_WARN_MS after connecting: well before the Service's 20 s drop
    expect(await page.getByTestId('no-audio-warning').textContent()).toContain('Check your network');
  });

  test('after-call work: a disposition is required, the countdown shows, the one button saves it (call.wrapup) and the wrap-up leaves, More time once; the Service code of a failure in words', async () => {
    s = await standIn();
    const page = await agentPage();
    await goAvailable(page);
    await inCall(page, 'w-acw');
    s.state(view('w-acw', { state: 'ended', result: 'COMPLETED', duration: 30, reason: callErrorReason(138021, 'Media receive timeout'), errorCode: 138021 }) as never);
    const now = Date.now();
    s.send({ type: 'agent.state', status: 'after-call-work', since: now, until: now + 30_000, wacid: 'w-acw' });
    await page.locator('[data-testid="wrapup"][data-state="editing"]').waitFor();
    expect(await page.getByTestId('call-ended-reason').textContent()).toBe('No audio was received from the other side (138021)');
    // One button ends the wrap-up: disabled until a disposition is chosen.
    expect(await page.getByTestId('acw-ready').isDisabled()).toBe(true);
    expect(await page.locator('[data-testid="wrapup-disposition"] option').allTextContents()).toEqual(['Choose…', 'Resolved', 'Sale', 'Wrong number']);
    const cd = Number(await page.getByTestId('acw-countdown').getAttribute('data-seconds'));
    expect(cd).toBeGreaterThan(25);
    expect(cd).toBeLessThanOrEqual(30);
    await page.getByTestId('acw-more-time').click();
    await s.frame('agent.moreTime');
    await page.locator('[data-testid="acw-more-time"][disabled]').waitFor();
    await page.getByTestId('wrapup-disposition').selectOption('Sale');
    await page.getByTestId('wrapup-notes').fill('Upgraded to Gold.');
    await screenshot(page, `web-agent-desk-after-call-work.png`, { fullPage: true });
    await page.setViewportSize(PHONE);
    await screenshot(page, `web-agent-desk-after-call-work-phone.png`, { fullPage: true });
    const before = s.received.length;
    await page.getByTestId('acw-ready').click();
    const wrap = await s.frame('call.wrapup', before);
    expect(wrap).toMatchObject({ wacid: 'w-acw', disposition: 'Sale', notes: 'Upgraded to Gold.' });
    // Saved: nothing of the finished call stays on screen.
    await page.locator('[data-testid="wrapup"]').waitFor({ state: 'detached' });
  });

  test('the countdown ending first shows "Not set" was recorded', async () => {
    s = await standIn();
    const page = await agentPage();
    await goAvailable(page);
    await inCall(page, 'w-notset');
    s.state(view('w-notset', { state: 'ended', result: 'COMPLETED', duration: 5 }) as never);
    s.send({ type: 'agent.state', status: 'after-call-work', since: Date.now(), until: Date.now() + 2000, wacid: 'w-notset' });
    await page.locator('[data-testid="wrapup"][data-state="editing"]').waitFor();
    s.send({ type: 'agent.state', status: 'available', since: Date.now() });
    await page.locator('[data-testid="wrapup"][data-state="not-set"]').waitFor();
    expect(await page.getByTestId('wrapup-status').textContent()).toContain('your notes were saved with "Not set"');
  });

  test('away with a reason from the list; the state and the time in it are shown (Missed a call after a ring-out)', async () => {
    s = await standIn();
    const page = await agentPage();
    await goAvailable(page);
    await page.getByTestId('away-reason').selectOption('Lunch');
    const before = s.received.length;
    await page.getByTestId('presence-away').click();
    expect(await s.frame('presence.set', before)).toMatchObject({ status: 'away', reason: 'Lunch' });
    s.send({ type: 'agent.state', status: 'away', reason: 'Lunch', since: Date.now() - 65_000 });
    // The line says "away" from the click on (the page's own presence), the reason once the
    // server's state arrives: wait for the reason, not the status (CI, 30 Nov: read between the two).
    await expect.poll(() => page.getByTestId('agent-state-detail').textContent(), { timeout: 10_000 }).toContain('Lunch');
    expect(await page.locator('[data-testid="agent-state"]').getAttribute('data-status')).toBe('away');
    await expect.poll(() => page.getByTestId('presence-reason').textContent(), { timeout: 10_000 }).toBe('Away: Lunch.'); // chosen, not "set away"
    await expect.poll(() => page.getByTestId('agent-state-time').textContent()).toMatch(/for 1:0[5-9]/);
    await screenshot(page, `web-agent-desk-away-reason.png`, { fullPage: true });
    await page.setViewportSize(PHONE);
    await screenshot(page, `web-agent-desk-away-reason-phone.png`, { fullPage: true });
    s.send({ type: 'agent.state', status: 'away', reason: 'Missed a call', since: Date.now() });
    await expect.poll(() => page.getByTestId('agent-state-detail').textContent(), { timeout: 10_000 }).toContain('Missed a call');
    await expect.poll(() => page.getByTestId('presence-reason').textContent(), { timeout: 10_000 }).toMatch(/rang .*unanswered/);
  });

  test('the call log comes from history, stays after a reload, and a click opens the customer panel', async () => {
    s = await standIn({ log: [record({ wacid: 'w-log-1', disposition: 'Resolved' }), record({ wacid: 'w-log-2', outcome: 'missed', endReason: 'declined' }), record({ wacid: 'w-log-3', direction: 'outbound', outcome: 'no-answer' })] });
    const page = await agentPage();
    await page.locator('[data-testid="call-log"][data-state="ready"]').waitFor();
    const rows = async () => page.getByTestId('call-log-item').allTextContents();
    expect(await rows()).toHaveLength(3);
    await page.reload();
    await page.locator('[data-testid="call-log"][data-state="ready"]').waitFor();
    const after = await rows();
    expect(after).toHaveLength(3);
    expect(after[0]).toContain('Resolved');
    expect(after[1]).toContain('Declined');
    expect(after[2]).toContain('Call back · Not answered');
    await page.getByTestId('call-log-open').first().click();
    await page.locator('[data-testid="customer"][data-state="ready"]').waitFor();
    expect(await page.getByTestId('customer-name').textContent()).toBe('Ada Lovelace');
    await screenshot(page, `web-agent-desk-call-log.png`, { fullPage: true });
    await page.setViewportSize(PHONE);
    await screenshot(page, `web-agent-desk-call-log-phone.png`, { fullPage: true });
    expect(s.requests.filter((r) => r.startsWith('/api/history/calls')).length).toBeGreaterThanOrEqual(2);

    // Opened while the node's history cannot answer yet (503 after a restart): the log fills in
    // by itself, no click (before, it stayed "could not be read" until a click on its retry or
    // the next call's wrap-up).
    let refused = 0;
    await page.route('**/api/history/calls?*', (r) => (refused++ < 2 ? r.fulfill({ status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'UNAVAILABLE', message: 'the call history database is not answering; try again shortly' } }) }) : r.continue()));
    await page.reload();
    await page.locator('[data-testid="call-log"][data-state="failed"]').waitFor();
    await page.locator('[data-testid="call-log"][data-state="ready"]').waitFor({ timeout: 10_000 });
    expect(refused).toBe(3);
    expect(await rows()).toHaveLength(3);
  });

  test('Send a message from the customer panel: text → status live (accepted → delivered → read); an APPROVED template with its parameters; a refusal in words', async () => {
    s = await standIn();
    const posted: unknown[] = [];
    let refuse = false;
    const sent = (id: string, status: string, extra: Record<string, unknown>) => ({ id, direction: 'outbound', from: '+15550001000', to: CUSTOMER, status, statusHistory: [], createTime: iso(0), updateTime: iso(0), ...extra });
    s.answer('POST', '/api/messages', (_url, body) => {
      posted.push(body);
      if (refuse) return { status: 409, json: { error: { status: 409, code: 'OPTED_OUT', message: 'the customer unsubscribed from marketing messages', requestId: 'r9' } } };
      return { status: 202, json: sent(`msg-${posted.length}`, 'accepted', { type: 'text', text: (body as { text?: string }).text }) };
    });
    s.answer('GET', '/api/templates', () => ({ json: { items: [{ name: 'order_update', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Hi {{1}}, order {{2}} is ready.' }] }] } }));
    const page = await agentPage();
    await page.locator('[data-testid="call-log"][data-state="ready"]').waitFor();
    await page.getByTestId('call-log-open').first().click();
    const form = page.getByTestId('message-form');
    await form.waitFor();
    expect(await page.getByTestId('message-send').isDisabled()).toBe(true);
    expect(await page.getByTestId('message-hint').textContent()).toBe('Write the message first.');

    // 1. Text: sent, then its status follows the server's message.updated frames.
    await page.getByTestId('message-text').fill('Your invoice is on its way.');
    await page.getByTestId('message-send').click();
    await page.locator('[data-testid="message-status"][data-status="accepted"]').waitFor();
    expect(posted[0]).toEqual({ from: '+15550001000', to: CUSTOMER, text: 'Your invoice is on its way.' });
    s.send({ type: 'message.updated', message: sent('msg-other', 'read', { type: 'text' }) } as never); // not ours: nothing changes
    s.send({ type: 'message.updated', message: sent('msg-1', 'delivered', { type: 'text' }) } as never);
    await page.locator('[data-testid="message-status"][data-status="delivered"]').waitFor();
    expect(await page.getByTestId('message-status').textContent()).toBe('Delivered');
    s.send({ type: 'message.updated', message: sent('msg-1', 'read', { type: 'text' }) } as never);
    await page.locator('[data-testid="message-status"][data-status="read"]').waitFor();
    await screenshot(page, `web-agent-desk-message-sent.png`, { fullPage: true });

    // 2. A template with its two parameters; the server refuses (opted out): said in words.
    refuse = true;
    await page.getByTestId('message-mode-template').check();
    await page.getByTestId('message-template').selectOption('order_update|en_US');
    const params = page.getByTestId('message-parameter');
    expect(await params.count()).toBe(2);
    expect(await page.getByTestId('message-hint').textContent()).toBe('Fill in field 1 of the template.');
    await params.nth(0).fill('Ada');
    await params.nth(1).fill('A-17');
    await page.getByTestId('message-send').click();
    await page.locator('[data-testid="message-form"][data-state="failed"]').waitFor();
    expect(posted[1]).toEqual({ from: '+15550001000', to: CUSTOMER, template: { name: 'order_update', language: 'en_US', parameters: ['Ada', 'A-17'] } });
    expect(await page.getByTestId('message-status').textContent()).toBe('Not sent: the customer unsubscribed from messages.');
    await page.setViewportSize(PHONE);
    await screenshot(page, `web-agent-desk-message-refused-phone.png`, { fullPage: true });
  });

  test('a ring in a hidden tab shows a desktop notification (click focuses the tab) and a flashing title', async () => {
    s = await standIn();
    const context = await newContext();
    await context.grantPermissions(['notifications'], { origin: s.url });
    const page = await agentPage();
    await page.evaluate(() => {
      // Record what the page shows (the real Notification still runs).
      const Real = window.Notification;
      const shown: string[] = [];
      (window as any).__notes = shown;
      (window as any).Notification = class extends Real {
        constructor(title: string, opts?: NotificationOptions) {
          super(title, opts);
          shown.push(`${title}|${opts?.body ?? ''}`);
          (window as any).__lastNote = this;
        }
      };
      Object.defineProperty((window as any).Notification, 'permission', { get: () => Real.permission });
    });
    await goAvailable(page);
    // Headless Chromium reports every tab "visible" (minimizing or covering the window
    // changes nothing), so the page is told it is hidden the way the browser would: the
    // property and the event. The notification itself is Chromium's own, with the
    // permission granted to the origin as the ready-check would ask for it.
    await page.evaluate(() => {
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
      Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
      document.dispatchEvent(new Event('visibilitychange'));
    });
    expect(await page.evaluate(() => Notification.permission)).toBe('granted');
    await ring('w-hidden');
    await expect.poll(() => page.evaluate(() => (window as any).__notes.length), { timeout: 5000 }).toBe(1);
    expect(await page.evaluate(() => (window as any).__notes[0])).toMatch(/^Incoming call\|.*is calling/);
    // Its click brings the tab forward and closes it.
    const focused = await page.evaluate(() => {
      let called = false;
      const realFocus = window.focus.bind(window);
      window.focus = () => {
        called = true;
        realFocus();
      };
      (window as any).__lastNote.onclick(new Event('click'));
      return called;
    });
    expect(focused).toBe(true);
    const titles = new Set<string>();
    for (let i = 0; i < 12; i++) {
      titles.add(await page.title());
      await new Promise((r) => setTimeout(r, 250));
    }
    expect([...titles].sort()).toEqual(['☎ Incoming call · Switchboard', '☎☎☎ ANSWER · Switchboard']);
  });
});
