/**
 * Bounded, non-trickle ICE gathering, in a real Chromium: web-agent/src/phone.ts
 * is bundled on its own and run against real RTCPeerConnections, with a real private coturn
 * (test/support/coturn.ts) and a TURN "server" that accepts the TCP connection and never
 * answers (a black hole on loopback, so it works in a loopback-only network too). The SDP
 * must go out at the bound with what was gathered, never later; with the relay policy and
 * no relay candidate the failure is worded; with a TURN server that answers, the SDP goes
 * out about a second after the first relay candidate.
 */
import * as esbuild from 'esbuild';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { mintTurnCredential } from '../../server/ice/ice.ts';
import { launchChromium } from '../support/chromium.ts';
import { startTurn, type TestTurn } from '../support/coturn.ts';

let browser: Browser;
let page: Page;
let blackHole: Server;
let turn: TestTurn;
const held: Socket[] = [];
let holePort = 0;

beforeAll(async () => {
  const bundle = await esbuild.build({
    stdin: {
      // The page's words in English (the catalogue the server serves at /assets/i18n/en.json).
      contents: `import { gatherWithin, CallSetupError } from './phone.ts'; import { useCatalogue } from './i18n/index.ts'; import en from './i18n/en.json'; useCatalogue('en', en); window.phone = { gatherWithin, CallSetupError };`,
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
  holePort = (blackHole.address() as AddressInfo).port;
  [browser, turn] = await Promise.all([launchChromium(), startTurn()]);
  page = await browser.newPage();
  await page.addScriptTag({ content: bundle.outputFiles[0]!.text });
});
afterAll(async () => {
  await browser?.close();
  await turn?.close();
  for (const sock of held) sock.destroy();
  blackHole?.close();
});

type Run = { ok: boolean; code?: string; message?: string; ms: number; state: string; gathered?: { ended: string; candidates: number; relay: boolean; warning?: string }; sdpCandidates: number };

function run(cfg: RTCConfiguration, bound: { afterRelayMs?: number; maxMs?: number }, o: { expectRelay?: boolean; relayOnly?: boolean }): Promise<Run> {
  return page.evaluate(
    async ({ cfg, bound, o }) => {
      const pc = new RTCPeerConnection(cfg);
      pc.addTransceiver('audio');
      const t0 = performance.now();
      try {
        const gathered = await (window as any).phone.gatherWithin(pc, async () => pc.setLocalDescription(await pc.createOffer()), bound, o);
        const sdpCandidates = (pc.localDescription!.sdp.match(/\r\na=candidate:/g) ?? []).length;
        return { ok: true, ms: performance.now() - t0, state: pc.iceGatheringState, gathered, sdpCandidates };
      } catch (e) {
        return { ok: false, code: (e as any).code, message: (e as Error).message, ms: performance.now() - t0, state: pc.iceGatheringState, sdpCandidates: 0 };
      } finally {
        pc.close();
      }
    },
    { cfg, bound, o },
  );
}

test('a TURN server that never answers costs at most the bound: the SDP goes out with the host candidates and a worded warning', async () => {
  const r = await run({ iceServers: [{ urls: `turn:127.0.0.1:${holePort}?transport=tcp`, username: 'u', credential: 'p' }] }, { maxMs: 600 }, { expectRelay: true });
  expect(r.state).toBe('gathering'); // the silent TURN server really held gathering open
  expect(held.length).toBeGreaterThan(0); // and Chromium did connect to it
  expect(r.ok).toBe(true);
  expect(r.gathered).toMatchObject({ ended: 'bound', relay: false });
  expect(r.sdpCandidates).toBeGreaterThan(0);
  expect(r.gathered!.warning).toMatch(/relay server \(TURN\) did not answer \(waited 0\.6 s\).*goes out without it/);
  expect(r.ms).toBeGreaterThanOrEqual(590);
  expect(r.ms).toBeLessThan(1500);
});

test('relay policy and a TURN server that never answers: NO_RELAY within the bound, saying the call cannot connect and what to ask IT', async () => {
  const r = await run({ iceServers: [{ urls: `turn:127.0.0.1:${holePort}?transport=tcp`, username: 'u', credential: 'p' }], iceTransportPolicy: 'relay' }, { maxMs: 600 }, { expectRelay: true, relayOnly: true });
  expect(r).toMatchObject({ ok: false, code: 'NO_RELAY' });
  expect(r.message).toMatch(/must go through it: this call cannot connect.*ask IT to allow TURN/);
  expect(r.ms).toBeLessThan(1500);
});

test('a TURN server that answers: the SDP goes out about a second after the first relay candidate, carrying it', async () => {
  const cred = mintTurnCredential(turn.secret, 'gather-test', Math.floor(Date.now() / 1000) + 600);
  // UDP and a TCP URL of the black hole: gathering cannot complete on its own, so the relay rule must end it.
  const r = await run(
    { iceServers: [{ urls: [turn.urls.udp], ...cred }, { urls: `turn:127.0.0.1:${holePort}?transport=tcp`, username: 'u', credential: 'p' }] },
    { afterRelayMs: 300, maxMs: 4000 },
    { expectRelay: true },
  );
  expect(r.ok).toBe(true);
  expect(r.gathered).toMatchObject({ ended: 'relay', relay: true });
  expect(r.gathered!.warning).toBeUndefined();
  expect(r.ms).toBeLessThan(2000);
  expect(turn.allocations()).toBeGreaterThan(0);
});

test('an expired REST credential gets no relay (coturn checks the expiry at allocation): what makes renewal necessary', async () => {
  const before = turn.refusals();
  const expired = mintTurnCredential(turn.secret, 'gather-test', Math.floor(Date.now() / 1000) - 5);
  const r = await run({ iceServers: [{ urls: [turn.urls.udp], ...expired }], iceTransportPolicy: 'relay' }, { maxMs: 1500 }, { expectRelay: true, relayOnly: true });
  expect(r).toMatchObject({ ok: false, code: 'NO_RELAY' });
  expect(turn.refusals()).toBeGreaterThan(before);
  // The same user with a fresh one is allocated.
  const fresh = mintTurnCredential(turn.secret, 'gather-test', Math.floor(Date.now() / 1000) + 60);
  const ok = await run({ iceServers: [{ urls: [turn.urls.udp], ...fresh }], iceTransportPolicy: 'relay' }, { afterRelayMs: 100, maxMs: 3000 }, { expectRelay: true, relayOnly: true });
  expect(ok).toMatchObject({ ok: true, gathered: { relay: true } });
});

test('gathering that completes resolves at once, and the SDP then carries the candidates', async () => {
  const r = await run({ iceServers: [] }, {}, {});
  expect(r).toMatchObject({ ok: true, gathered: { ended: 'complete', relay: false } });
  expect(r.sdpCandidates).toBeGreaterThan(0);
  expect(r.ms).toBeLessThan(2000);
});
