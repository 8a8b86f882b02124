/**
 * The agent softphone in a real Chromium against the server's stand-in (see softphone.test.ts):
 * hang-up and the call's end, the connection (lost socket, half-open socket, ghost calls), the
 * layout on desktop and phone, and the supervisor and archive shells.
 */
import { describe, expect, test } from 'vitest';
import type { Page } from 'playwright-core';
import { goAvailable, hookState } from './driver.ts';
import { StandIn } from './standin.ts';
import { softphoneRig } from './softphone-rig.ts';
import { screenshot } from '../support/shots.ts';

let s: StandIn;
const { newContext, agentPage, ring, answerCall, until } = softphoneRig(() => s);

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
      await screenshot(page, `web-agent-${name}-1-idle.png`);
      expect(await noSideScroll()).toBe(true);
      await goAvailable(page);
      await screenshot(page, `web-agent-${name}-2-available.png`);
      const peer = await ring('w-layout', { from: '15551234567' });
      await page.getByTestId('incoming-call').waitFor();
      await screenshot(page, `web-agent-${name}-3-ringing.png`);
      expect(await noSideScroll()).toBe(true);
      for (const id of ['answer', 'decline']) await expectOnScreen(page, id, width, height);
      await answerCall(page, peer, 'w-layout');
      await until(page, 's.media && s.media.started');
      await page.locator('[data-testid="quality"]:not([data-level="unknown"])').waitFor({ timeout: 5000 });
      await screenshot(page, `web-agent-${name}-4-in-call.png`);
      expect(await noSideScroll()).toBe(true);
      for (const id of ['mute', 'hangup']) await expectOnScreen(page, id, width, height);
      s.state({
        wacid: 'w-layout', phoneId: 'phone-1', from: '15551234567', to: '+15550001000', direction: 'USER_INITIATED',
        state: 'ended', agent: 'agent1', result: 'COMPLETED', duration: 83,
      });
      await page.getByTestId('call-ended').waitFor();
      await screenshot(page, `web-agent-${name}-5-ended.png`, { fullPage: true });
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
    const context = await newContext(1280, 800);
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
    await screenshot(page, `web-agent-supervisor.png`);
  });

  test('the archive page lists media.available frames with download links', async () => {
    s = await StandIn.start({ user: { name: 'ops', roles: ['ops'] } });
    const context = await newContext(375, 800);
    await context.addCookies([{ name: 'sid', value: 'ok', url: s.url }]);
    const page = await context.newPage();
    await page.goto(`${s.url}/archive`);
    await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor();
    s.send({ type: 'media.available', wacid: 'w-rec', kind: 'recording', url: '/api/media/w-rec/recording' });
    const item = page.locator('[data-testid="archive-item"][data-wacid="w-rec"][data-kind="recording"]');
    await item.waitFor();
    expect(await item.getByTestId('archive-download').getAttribute('href')).toBe('/api/media/w-rec/recording');
    await screenshot(page, `web-agent-archive.png`);
  });

  test('a user without the agent role gets told so on the agent page, not a broken phone', async () => {
    s = await StandIn.start({ user: { name: 'ops', roles: ['ops'] } });
    const context = await newContext(1280, 800);
    await context.addCookies([{ name: 'sid', value: 'ok', url: s.url }]);
    const page = await context.newPage();
    await page.goto(`${s.url}/`);
    await page.getByTestId('error-banner').waitFor();
    expect(await page.getByTestId('error-message').textContent()).toBe('This page is for agents. Use the links above.');
    expect(s.clients.size).toBe(0);
  });
});
