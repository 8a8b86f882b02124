/**
 * The page tests' rig (softphone.test.ts, softphone-call.test.ts, desk.test.ts): one Chromium per file,
 * a browser context per test, werift callers, and after each test the checks every test shares
 * (no frame the real server would refuse, no page error) and the clean-up.
 */
import { createRequire } from 'node:module';
import { format } from 'node:util';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { AudioPeer } from '../emulator/calls/peer.ts';
import { launchChromium } from '../support/chromium.ts';
import { waitForState } from './driver.ts';
import type { StandIn } from './standin.ts';

/** werift's own copy of `debug` (its logs): its ICE steps are kept per test and printed when one fails. */
interface DebugModule {
  enable(namespaces: string): void;
  disable(): string;
  log: (...args: unknown[]) => void;
}
const weriftDebug = createRequire(createRequire(import.meta.url).resolve('werift'))('debug') as DebugModule;

/** Registers the file's hooks; `standIn()` is the test's stand-in of the server (each test starts its own); `o`: the pages' default window. */
export function softphoneRig(standIn: () => StandIn | undefined, o: { width?: number; height?: number } = {}) {
  const W = o.width ?? 1280;
  const H = o.height ?? 800;
  let browser: Browser;
  let context: BrowserContext | undefined;
  const peers: AudioPeer[] = [];
  const pageErrors: string[] = [];
  const s = () => standIn()!;

  // The last ICE steps of this test's werift callers (checks received, pairs, nominations).
  const iceLog: string[] = [];
  const defaultLog = weriftDebug.log;
  let enabledBefore = '';
  beforeAll(async () => {
    browser = await launchChromium();
    weriftDebug.log = (...args: unknown[]) => {
      iceLog.push(format(...args).replace(/\s*\n\s*/g, ' ').slice(0, 600));
      if (iceLog.length > 300) iceLog.shift();
    };
    enabledBefore = weriftDebug.disable(); // what DEBUG asked for, if anything
    weriftDebug.enable(enabledBefore ? `${enabledBefore},werift-ice*` : 'werift-ice*');
  });
  afterAll(async () => {
    // The worker runs other files next (isolate: false): werift's logging as it was.
    weriftDebug.disable();
    weriftDebug.enable(enabledBefore);
    weriftDebug.log = defaultLog;
    await browser?.close();
  });
  afterEach(async (ctx) => {
    // A failed test says where each call's media stood, on both ends, before it is all closed
    // (werift callers stalled `connecting` under the full suite's load, never alone).
    if (ctx.task.result?.state === 'fail') await sayWhereMediaStood();
    iceLog.length = 0;
    await context?.close();
    context = undefined;
    for (const p of peers.splice(0)) await p.close();
    // The page never sent a frame the real server would refuse, and never threw.
    expect(standIn()?.badFrames ?? []).toEqual([]);
    expect(pageErrors.splice(0)).toEqual([]);
    await standIn()?.close();
  });

  async function sayWhereMediaStood(): Promise<void> {
    console.log(`werift ICE, the last ${Math.min(iceLog.length, 80)} of ${iceLog.length} lines:\n${iceLog.slice(-80).join('\n')}`);
    for (const p of peers) console.log('caller:', JSON.stringify({ ...p.transportStates(), packetsSent: p.mediaStats().packetsSent, packetsReceived: p.mediaStats().packetsReceived }));
    for (const page of context?.pages() ?? []) {
      const seen = await page
        .evaluate(async () => {
          const hook = (window as typeof window & { __switchboard?: { state(): { media: unknown }; stats?(): Promise<unknown> } }).__switchboard;
          return { media: hook?.state().media ?? null, stats: (await hook?.stats?.()) ?? null };
        })
        .catch((e: Error) => ({ unreadable: e.message }));
      console.log('page:', JSON.stringify(seen).slice(0, 2000));
    }
  }

  /** The test's browser context (closed after the test). */
  async function newContext(width = W, height = H): Promise<BrowserContext> {
    context = await browser.newContext({ viewport: { width, height } });
    return context;
  }

  /** A logged-in page at `path` (session cookie set directly; the login page has its own test). */
  async function openPage(path: string, opts: { width?: number; height?: number; standIn?: StandIn; timezoneId?: string } = {}): Promise<Page> {
    const to = opts.standIn ?? s();
    context ??= await browser.newContext({ viewport: { width: opts.width ?? W, height: opts.height ?? H }, ...(opts.timezoneId ? { timezoneId: opts.timezoneId } : {}) });
    await context.addCookies([{ name: 'sid', value: 'ok', url: to.url }]);
    const page = await context.newPage();
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    await page.goto(`${to.url}${path}`);
    return page;
  }

  /** A logged-in agent page, online. */
  async function agentPage(opts: { width?: number; height?: number; standIn?: StandIn } = {}): Promise<Page> {
    const page = await openPage('/', opts);
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
    s().offer({ wacid, from: opts.from ?? '15551234567', sdp, deadline: Date.now() + (opts.deadlineIn ?? 25_000) });
    return peer;
  }

  /** Answer in the page; apply the answer to the caller; the stand-in acks when `ack` resolves. */
  async function answerCall(page: Page, peer: AudioPeer, wacid: string): Promise<string> {
    const before = s().received.length;
    await page.getByTestId('answer').click();
    const frame = await s().frame('call.answer', before);
    expect(frame.wacid).toBe(wacid);
    await peer.applyAnswer(frame.sdp!);
    peer.startSending({ kind: 'tone' });
    return frame.sdp!;
  }

  return { newContext, openPage, agentPage, caller, ring, answerCall, until: waitForState };
}
