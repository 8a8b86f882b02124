/**
 * Monitoring without a media server, the media core in real Chromium:
 * a werift caller (the emulator's peer) plays a 440 Hz tone; the agent's browser answers
 * with the real `CallMedia` and its fake microphone plays 730 Hz; the supervisor's browser
 * (a second Chromium process, its own fake microphone at 1230 Hz) monitors the call.
 * Signaling goes through this test (validated as the protocol's `monitor.signal` frames,
 * as the server will relay them). Each party's tone is told apart by its frequency
 * (Goertzel): the supervisor's meter, the agent's "heard" meter, and the caller's decoded
 * packets. Without a server here, a closed tab is found from the monitor connection alone
 * (the pages use a 2 s grace after `disconnected`; the server's socket close is the fast path).
 */
import * as esbuild from 'esbuild';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { MonitorSignal, ServerMsg } from '../../shared/protocol.ts';
import { toneLevel } from '../../web-agent/src/monitor/energy.ts';
import type { SignalMessage } from '../../web-agent/src/monitor/signaling.ts';
import { OpusDecoder, SAMPLE_RATE } from '../emulator/calls/audio.ts';
import { AudioPeer } from '../emulator/calls/peer.ts';
import { launchChromium } from '../support/chromium.ts';
import { wav } from '../support/tones.ts';

const CALLER_HZ = 440;
const AGENT_HZ = 730;
const SUPERVISOR_HZ = 1230;
const ALL = [CALLER_HZ, AGENT_HZ, SUPERVISOR_HZ];
/** A tone of peak 0.3 arrives at ~0.2-0.3 after Opus and mixing; absent tones measure ~0.001. */
const HEARD = 0.05;
const SILENT = 0.02;

let dir: string;
let http: Server;
let url: string;
let agentBrowser: Browser;
let supBrowser: Browser;
let agentPage: Page;
let supPage: Page;
let caller: AudioPeer;
const pageErrors: string[] = [];
/** Every monitor.signal the pages sent, as the server would receive them. */
const relayed: Array<{ from: 'agent' | 'supervisor'; msg: SignalMessage }> = [];

/** Stands in for the server's relay: validates the request frame, relays the frame the other tab gets. */
async function relay(from: 'agent' | 'supervisor', msg: SignalMessage): Promise<void> {
  MonitorSignal.parse({ type: 'monitor.signal', id: 'r1', ...msg });
  relayed.push({ from, msg });
  const frame = ServerMsg.parse({ type: 'monitor.signal', ...msg });
  const { type: _t, ...out } = frame as Extract<ServerMsg, { type: 'monitor.signal' }>;
  const to = from === 'agent' ? supPage : agentPage;
  if (to && !to.isClosed()) await to.evaluate((m) => window.h.deliver(m), out).catch(() => undefined);
}

async function openPage(browser: Browser, who: 'agent' | 'supervisor'): Promise<Page> {
  const page = await browser.newPage();
  page.on('pageerror', (e) => pageErrors.push(`${who}: ${e}`));
  await page.exposeFunction('__signal', (m: SignalMessage) => relay(who, m));
  await page.goto(url);
  expect(await page.evaluate(() => window.h.contextState())).toBe('running');
  return page;
}

/** The tone levels the caller decoded from the call's packets that arrived in the last `ms`. */
function callerHears(hz: number[], ms: number): number[] {
  const since = Date.now() - ms;
  const packets = caller.received.filter((p) => p.at >= since);
  const dec = new OpusDecoder();
  const pcm: number[] = [];
  for (const p of packets) for (const v of dec.decode(p.payload)) pcm.push(v / 32768);
  dec.close();
  // Median over 4096-sample blocks, like the pages' meters.
  const blocks: number[][] = [];
  for (let i = 0; i + 4096 <= pcm.length; i += 4096) {
    const block = pcm.slice(i, i + 4096);
    blocks.push(hz.map((f) => toneLevel(block, SAMPLE_RATE, f)));
  }
  expect(blocks.length).toBeGreaterThan(3); // audio really arrived
  return hz.map((_, i) => blocks.map((b) => b[i]!).sort((a, b) => a - b)[Math.floor(blocks.length / 2)]!);
}

const agentState = () => agentPage.evaluate(() => window.h.agentState());
const supState = () => supPage.evaluate(() => window.h.supervisorState());
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > end) return v;
    await sleep(100);
  }
}

/** The supervisor page monitors the call in `mode`, until both sides are live and connected. */
async function monitor(monitorId: string, mode: 'listen' | 'whisper' | 'barge'): Promise<void> {
  await supPage.evaluate(([id, m]) => window.h.createSupervisor(id, m), [monitorId, mode] as const);
  expect(await agentPage.evaluate(([id, m]) => window.h.startMonitor(id, m), [monitorId, mode] as const)).toBe('offering');
  const a = await until(agentState, (s) => s.phase === 'live' && s.monitorConnection === 'connected');
  expect(a).toMatchObject({ phase: 'live', monitorConnection: 'connected' });
  const s = await until(supState, (v) => v.phase === 'live' && v.monitorConnection === 'connected');
  expect(s).toMatchObject({ phase: 'live', monitorConnection: 'connected', mode });
}

/** Mode switch as the server will do it: `monitor.mode` to both tabs. */
async function switchMode(mode: 'listen' | 'whisper' | 'barge'): Promise<void> {
  await supPage.evaluate((m) => window.h.supervisorMode(m), mode);
  await agentPage.evaluate((m) => window.h.agentMode(m), mode);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sb-monitor-'));
  const bundle = await esbuild.build({
    entryPoints: [fileURLToPath(new URL('./monitor-page.ts', import.meta.url))],
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    target: 'chrome110',
  });
  const js = bundle.outputFiles[0]!.text;
  http = createServer((req, res) => {
    if (req.url === '/monitor.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
    res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>monitor</title><script src="/monitor.js"></script>');
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  // 127.0.0.1: a secure context, so getUserMedia works.
  url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/`;
  // Two browser processes: each has its own fake microphone file.
  agentBrowser = await launchChromium({ fakeAudioCapture: wav(join(dir, 'agent.wav'), AGENT_HZ), autoplayWithoutGesture: true });
  supBrowser = await launchChromium({ fakeAudioCapture: wav(join(dir, 'supervisor.wav'), SUPERVISOR_HZ), autoplayWithoutGesture: true });
  agentPage = await openPage(agentBrowser, 'agent');
  supPage = await openPage(supBrowser, 'supervisor');

  // The call: werift caller offers (ice-lite, like the provider), the agent page answers with CallMedia.
  const made = await AudioPeer.offerer({ iceLite: true, keepPackets: true });
  caller = made.peer;
  const answer = await agentPage.evaluate((o) => window.h.answerCall(o), made.sdp);
  await caller.applyAnswer(answer);
  caller.startSending({ kind: 'tone', hz: CALLER_HZ });
  await agentPage.evaluate(() => window.h.startCall());
  await until(agentState, (s) => s.call.connection === 'connected');
  await sleep(1000);
  // Before any monitoring: the caller hears the agent and nobody else.
  const [c, a, s] = callerHears(ALL, 800);
  expect(a).toBeGreaterThan(HEARD);
  expect(c).toBeLessThan(SILENT);
  expect(s).toBeLessThan(SILENT);
}, 60_000);

afterAll(async () => {
  await caller?.close();
  await agentBrowser?.close();
  await supBrowser?.close();
  http?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  expect(pageErrors).toEqual([]);
});

describe.sequential('monitoring a live call', () => {
  let micTrackId: string;

  test('listen: the supervisor hears the caller and the agent; nobody hears the supervisor', async () => {
    micTrackId = (await agentState()).call.callMicTrack!;
    await monitor('m1', 'listen');
    // One offer from the agent, one answer from the supervisor, complete SDPs (no trickle).
    expect(relayed.map((r) => `${r.from}:${r.msg.kind}`)).toEqual(['agent:offer', 'supervisor:answer']);
    expect(relayed[0]!.msg.sdp).toMatch(/\r\na=candidate:/);
    await sleep(800);
    const [c, a, s] = await supPage.evaluate((hz) => window.h.supervisorHears(hz, 1000), ALL);
    console.log(`listen, supervisor hears: caller ${c!.toFixed(3)} agent ${a!.toFixed(3)} supervisor ${s!.toFixed(3)}`);
    expect(c).toBeGreaterThan(HEARD);
    expect(a).toBeGreaterThan(HEARD);
    expect(s).toBeLessThan(SILENT);
    expect(await supState()).toMatchObject({ micOn: false });
    const [heard] = await agentPage.evaluate((hz) => window.h.agentHears(hz, 600), [SUPERVISOR_HZ]);
    expect(heard).toBeLessThan(SILENT);
    expect(callerHears([SUPERVISOR_HZ], 800)[0]).toBeLessThan(SILENT);
    // The call's sender still carries the call's own microphone track.
    expect(await agentState()).toMatchObject({ barging: false, call: { senderTrack: micTrackId, negotiationNeeded: 0, signalingChanges: 0 } });
  });

  test('whisper: the agent hears the supervisor, the caller does not', async () => {
    await switchMode('whisper');
    expect(await supState()).toMatchObject({ mode: 'whisper', micOn: true });
    await sleep(800);
    const [heard] = await agentPage.evaluate((hz) => window.h.agentHears(hz, 1000), [SUPERVISOR_HZ]);
    const [sToCaller, aToCaller] = callerHears([SUPERVISOR_HZ, AGENT_HZ], 800);
    console.log(`whisper: agent hears supervisor ${heard!.toFixed(3)}; caller hears supervisor ${sToCaller!.toFixed(3)} agent ${aToCaller!.toFixed(3)}`);
    expect(heard).toBeGreaterThan(HEARD);
    expect(sToCaller).toBeLessThan(SILENT);
    expect(aToCaller).toBeGreaterThan(HEARD);
    // Neither connection was renegotiated: no new offer, and the call saw nothing.
    expect(relayed).toHaveLength(2);
    expect(await agentState()).toMatchObject({ barging: false, call: { senderTrack: micTrackId, negotiationNeeded: 0, signalingChanges: 0 } });
  });

  test('barge: the caller hears the supervisor and still the agent', async () => {
    await switchMode('barge');
    await sleep(800);
    const [sToCaller, aToCaller] = callerHears([SUPERVISOR_HZ, AGENT_HZ], 800);
    console.log(`barge: caller hears supervisor ${sToCaller!.toFixed(3)} agent ${aToCaller!.toFixed(3)}`);
    expect(sToCaller).toBeGreaterThan(HEARD);
    expect(aToCaller).toBeGreaterThan(HEARD);
    const [heard] = await agentPage.evaluate((hz) => window.h.agentHears(hz, 600), [SUPERVISOR_HZ]);
    expect(heard).toBeGreaterThan(HEARD);
    const st = await agentState();
    expect(st).toMatchObject({ barging: true, call: { negotiationNeeded: 0, signalingChanges: 0, senderTrackLive: true } });
    expect(st.call.senderTrack).not.toBe(micTrackId); // the mix, by replaceTrack
    expect(relayed).toHaveLength(2);
  });

  test('stop: the call goes on both ways with its own microphone, never renegotiated', async () => {
    const before = caller.mediaStats().packetsReceived;
    await supPage.evaluate(() => window.h.supervisorStop());
    expect(relayed.at(-1)).toEqual({ from: 'supervisor', msg: { monitorId: 'm1', kind: 'end', reason: 'stopped' } });
    await until(agentState, (s) => s.phase === 'ended');
    await agentPage.evaluate(() => window.h.agentSettled()); // the teardown (mic back) is done
    const a = await agentState();
    expect(a).toMatchObject({ phase: 'ended', endReason: 'stopped', barging: false, call: { senderTrack: micTrackId, connection: 'connected', negotiationNeeded: 0, signalingChanges: 0 } });
    expect(await supState()).toMatchObject({ phase: 'ended', endReason: 'stopped', monitorConnection: 'closed' });
    await sleep(1000);
    const [c, ag, s] = callerHears(ALL, 800);
    expect(ag).toBeGreaterThan(HEARD);
    expect(s).toBeLessThan(SILENT);
    expect(c).toBeLessThan(SILENT);
    expect(caller.mediaStats().packetsReceived - before).toBeGreaterThan(40); // ≥ 0.8 s of 20 ms packets
    // And the caller's audio still reaches the agent.
    const r1 = await agentPage.evaluate(() => window.h.callPacketsReceived());
    await sleep(500);
    expect((await agentPage.evaluate(() => window.h.callPacketsReceived())) - r1).toBeGreaterThan(15);
  });

  test('the supervisor tab closing (while barging) leaves the call up with its own microphone', async () => {
    await monitor('m2', 'barge');
    await sleep(500);
    expect(await agentState()).toMatchObject({ barging: true });
    const sent = relayed.length;
    await supPage.close();
    // No server here: the agent's tab finds out from the monitor connection itself.
    const t0 = Date.now();
    await until(agentState, (s) => s.phase === 'ended', 25_000);
    await agentPage.evaluate(() => window.h.agentSettled());
    console.log(`supervisor tab closed → agent side ended in ${Date.now() - t0} ms`);
    expect(await agentState()).toMatchObject({
      phase: 'ended',
      endReason: 'supervisor-gone',
      barging: false,
      call: { senderTrack: micTrackId, connection: 'connected', negotiationNeeded: 0, signalingChanges: 0 },
    });
    // It told the server (which ends it for both anyway when the socket closes).
    expect(relayed.slice(sent)).toContainEqual({ from: 'agent', msg: { monitorId: 'm2', kind: 'end', reason: 'supervisor-gone' } });
    await sleep(1000);
    const [ag, s] = callerHears([AGENT_HZ, SUPERVISOR_HZ], 800);
    expect(ag).toBeGreaterThan(HEARD);
    expect(s).toBeLessThan(SILENT);
  }, 45_000);

  test('the agent tab closing ends monitoring on the supervisor side', async () => {
    supPage = await openPage(supBrowser, 'supervisor');
    await monitor('m3', 'listen');
    await agentPage.close();
    const t0 = Date.now();
    const s = await until(supState, (v) => v.phase === 'ended', 25_000);
    console.log(`agent tab closed → supervisor side ended in ${Date.now() - t0} ms`);
    expect(s).toMatchObject({ phase: 'ended', endReason: 'agent-gone', micOn: false, monitorConnection: 'closed' });
  }, 45_000);
});
