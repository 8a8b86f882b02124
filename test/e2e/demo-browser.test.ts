/**
 * The demo works in an ordinary browser. Chromium runs as users run it —
 * without `--allow-loopback-in-peer-connection`, so it offers no 127.0.0.1 candidate — with
 * fake devices only, inside a network namespace this test creates, joined to this machine
 * by a veth pair (private /30, no route out): its traffic stays on this machine and off the
 * outside interface. The demo server (main.ts, built-in emulator) listens on the host end;
 * the page loads from 127.0.0.1 inside the namespace (a forwarder: a secure context, as
 * `localhost` is for a user), and the call's audio goes over the veth, both ways.
 *
 * Needs root and `ip netns` (CI runs as root): without them it fails saying so.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { loadConfig } from '../../server/config/config.ts';
import { createLogger } from '../../server/log/logger.ts';
import { startSwitchboard, type Running } from '../../server/main.ts';
import { chromiumArgs, launchChromium } from '../support/chromium.ts';
import { tempDataDir } from '../support/data-dir.ts';
import { createNetns, linkExists, type Netns } from '../support/netns.ts';
import { until } from '../support/wait.ts';

let running: Running | undefined;
let browser: Browser | undefined;
let ns: Netns | undefined;
let port = 0;

beforeAll(async () => {
  ns = await createNetns();
  const config = loadConfig({ PORT: '0', HOST: ns.hostAddress, LOG_LEVEL: 'silent', DATA_DIR: tempDataDir() });
  running = await startSwitchboard(config, { log: createLogger({ level: 'silent' }) });
  port = Number(new URL(running.url).port);
  await ns.forward(port);
  browser = await launchChromium({ executablePath: ns.chromium, loopbackCandidates: false });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await running?.close();
  const name = ns?.name;
  await ns?.close();
  if (name) expect(linkExists(`sbh${name.slice(4)}`), 'the veth pair is gone with the namespace').toBe(false);
});

interface EmulatorCall {
  wacid: string;
  state: string;
  terminate?: { status: string; reason: string };
  media?: { packetsReceived: number; packetsSent: number; decodedFrames: number; audibleFrames: number; peakLevel: number; connectionState: string; path?: { local: string; remote: string; remoteType: string } };
}

async function control(method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const base = running!.config.serviceBaseUrl!.replace(/\/v2$/, '/_emulator');
  const r = await fetch(`${base}${path}`, {
    method,
    headers: { 'x-api-key': running!.config.serviceApiKey, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return (await r.json()) as Record<string, unknown>;
}

async function emulatorCalls(): Promise<EmulatorCall[]> {
  return (await control('GET', '/calls')).items as EmulatorCall[];
}

it('Chromium launched without the loopback flag (fake devices only) answers the demo call: it connects over the veth, audio measured both ways', async () => {
  const args = chromiumArgs({ loopbackCandidates: false });
  expect(args).not.toContain('--allow-loopback-in-peer-connection');
  expect(args).toEqual(expect.arrayContaining(['--use-fake-device-for-media-stream', '--use-fake-ui-for-media-stream']));

  const origin = `http://127.0.0.1:${port}`;
  const page = await browser!.newPage();
  await page.goto(`${origin}/login`);
  await page.getByTestId('login-name').fill('agent1');
  await page.getByTestId('login-password').fill('agent1');
  await page.getByTestId('login-submit').click();
  await page.waitForURL(`${origin}/`);
  await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor();
  await page.getByTestId('ready-check').click();
  await page.locator('[data-testid="presence-available"]:not([disabled])').waitFor();
  await page.getByTestId('presence-available').click();
  await page.getByTestId('simulate-call').click();
  await page.getByTestId('incoming-call').waitFor({ timeout: 10_000 });
  const wacid = await page.getByTestId('incoming-call').getAttribute('data-wacid');
  await page.getByTestId('answer').click();
  await page.locator('[data-testid="call-status"][data-state="connected"]').waitFor({ timeout: 15_000 });

  // The browser hears the caller's tone...
  const inbound = await until(
    'the caller’s audio arrives and plays in the page',
    async () => {
      const s = await page.evaluate(async () => {
        const st = await (window as typeof window & { __switchboard: { stats(): Promise<{ inbound?: { packetsReceived: number; totalAudioEnergy?: number } } | null> } }).__switchboard.stats();
        return { packetsReceived: st?.inbound?.packetsReceived ?? 0, totalAudioEnergy: st?.inbound?.totalAudioEnergy ?? 0 };
      });
      return s.packetsReceived > 100 && s.totalAudioEnergy > 0 ? s : undefined;
    },
    15_000,
  );
  // ...and the caller hears the browser's fake microphone (a beep each second).
  const caller = await until(
    'the browser’s audio reaches the caller and decodes as sound',
    async () => {
      const c = (await emulatorCalls()).find((x) => x.wacid === wacid);
      return c?.media && c.media.decodedFrames > 100 && c.media.audibleFrames > 5 ? c : undefined;
    },
    15_000,
  );
  const media = caller.media!;
  console.log(
    `figure demo-browser: browser ← caller ${inbound.packetsReceived} packets, totalAudioEnergy ${inbound.totalAudioEnergy.toFixed(4)}; ` +
      `caller ← browser ${media.decodedFrames} frames, ${media.audibleFrames} audible, peak level ${media.peakLevel.toFixed(3)}; path ${media.path?.local} ↔ ${media.path?.remote} (${media.path?.remoteType})`,
  );
  expect(media.connectionState).toBe('connected');
  // The audio went over the veth pair: the caller's end is the host end, the browser's the namespace's.
  expect(media.path?.local.split(':')[0]).toBe(ns!.hostAddress);
  expect(media.path?.remote.split(':')[0]).toBe(ns!.nsAddress);

  await page.getByTestId('hangup').click();
  await page.getByTestId('call-ended').waitFor({ timeout: 10_000 });
  expect(await page.getByTestId('call-ended-result').getAttribute('data-result')).toBe('COMPLETED');
}, 90_000);

it('the other way: a supervisor calls a customer back (Call back panel) and the emulator’s callee answers, over the veth, audio both ways', async () => {
  const origin = `http://127.0.0.1:${port}`;
  const user = '+15550123777';
  await control('POST', '/callPermissions', { business: '+15550100001', user });
  const page = await browser!.newPage();
  await page.goto(`${origin}/login`);
  await page.getByTestId('login-name').fill('supervisor');
  await page.getByTestId('login-password').fill('supervisor');
  await page.getByTestId('login-submit').click();
  await page.waitForURL(`${origin}/supervisor`);
  await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor();
  await page.locator('[data-testid="callback-from"] option[value="+15550100001"]').waitFor({ state: 'attached', timeout: 15_000 });
  await page.getByTestId('callback-from').selectOption('+15550100001');
  await page.getByTestId('callback-user').fill(user);
  await page.getByTestId('callback-call').click();
  await page.locator('[data-testid="callback-call-box"][data-phase="active"]').waitFor({ timeout: 20_000 });
  const wacid = (await page.getByTestId('callback-call-box').getAttribute('data-wacid'))!;
  const inbound = await until(
    'the callee’s audio in the page',
    async () => {
      const st = await page.evaluate(() => (window as typeof window & { __switchboard: { callback: { stats(): Promise<{ inbound?: { packetsReceived: number } } | null> } } }).__switchboard.callback.stats());
      return (st?.inbound?.packetsReceived ?? 0) > 50 ? st : undefined;
    },
    15_000,
  );
  const callee = await until(
    'the page’s audio at the callee',
    async () => {
      const c = (await emulatorCalls()).find((x) => x.wacid === wacid);
      return c?.media && c.media.decodedFrames > 50 && c.media.audibleFrames > 2 ? c : undefined;
    },
    15_000,
  );
  console.log(
    `figure demo-browser call back: page ← callee ${inbound!.inbound!.packetsReceived} packets; callee ← page ${callee.media!.decodedFrames} frames, ${callee.media!.audibleFrames} audible; path ${callee.media!.path?.local} ↔ ${callee.media!.path?.remote} (${callee.media!.path?.remoteType})`,
  );
  expect(callee.media!.path?.local.split(':')[0]).toBe(ns!.hostAddress);
  expect(callee.media!.path?.remote.split(':')[0]).toBe(ns!.nsAddress);
  await page.getByTestId('callback-hangup').click();
}, 90_000);

