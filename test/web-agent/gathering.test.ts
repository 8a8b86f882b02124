/**
 * ICE gathering with a timeout, in a real Chromium: web-agent/src/phone.ts is bundled on
 * its own and run against real RTCPeerConnections. A TURN server that accepts the TCP
 * connection and never answers (a black hole on loopback, so it works in a loopback-only
 * network too) keeps Chromium's gathering open for seconds, like a network that cannot
 * gather; the answer path must fail fast with a clear message instead of hanging.
 */
import * as esbuild from 'esbuild';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../support/chromium.ts';

let browser: Browser;
let page: Page;
let blackHole: Server;
const held: Socket[] = [];
let turnPort = 0;

beforeAll(async () => {
  const bundle = await esbuild.build({
    stdin: {
      contents: `import { waitForGathering, CallSetupError } from './phone.ts'; window.phone = { waitForGathering, CallSetupError };`,
      resolveDir: fileURLToPath(new URL('../../web-agent/src/', import.meta.url)),
      loader: 'ts',
    },
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
  });
  blackHole = createServer((sock) => held.push(sock)); // read nothing, answer nothing
  await new Promise<void>((r) => blackHole.listen(0, '127.0.0.1', r));
  turnPort = (blackHole.address() as AddressInfo).port;
  browser = await launchChromium();
  page = await browser.newPage();
  await page.addScriptTag({ content: bundle.outputFiles[0]!.text });
});
afterAll(async () => {
  await browser?.close();
  for (const sock of held) sock.destroy();
  blackHole?.close();
});

test('gathering that does not finish in time rejects with GATHER_TIMEOUT and a message saying what to check', async () => {
  const r = await page.evaluate(async (port) => {
    const pc = new RTCPeerConnection({
      iceServers: [{ urls: `turn:127.0.0.1:${port}?transport=tcp`, username: 'u', credential: 'p' }],
    });
    pc.addTransceiver('audio');
    await pc.setLocalDescription(await pc.createOffer());
    const t0 = performance.now();
    try {
      await (window as any).phone.waitForGathering(pc, 400);
      return { ok: true, state: pc.iceGatheringState, ms: performance.now() - t0 };
    } catch (e) {
      return { ok: false, code: (e as any).code, message: (e as Error).message, ms: performance.now() - t0, state: pc.iceGatheringState };
    } finally {
      pc.close();
    }
  }, turnPort);
  expect(r.state).toBe('gathering'); // the silent TURN server really held gathering open
  expect(held.length).toBeGreaterThan(0); // and Chromium did connect to it
  expect(r).toMatchObject({ ok: false, code: 'GATHER_TIMEOUT' });
  expect(r.message).toMatch(/within 0\.4 s.*Check the network/);
  expect(r.ms).toBeGreaterThanOrEqual(390);
  expect(r.ms).toBeLessThan(1500);
});

test('gathering that completes resolves, and the SDP then carries the candidates', async () => {
  const r = await page.evaluate(async () => {
    const pc = new RTCPeerConnection({ iceServers: [] });
    pc.addTransceiver('audio');
    await pc.setLocalDescription(await pc.createOffer());
    await (window as any).phone.waitForGathering(pc, 3000);
    const sdp = pc.localDescription!.sdp;
    pc.close();
    return { sdp };
  });
  expect(r.sdp).toMatch(/\r\na=candidate:.* typ host/);
});
