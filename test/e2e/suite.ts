/**
 * The per-test setup that e2e files share: call `programSuite()` or `browserSuite()` once at
 * module top level; it registers the vitest hooks and hands back what a test starts and what
 * is closed after each test.
 */
import type { Browser, BrowserContext, BrowserContextOptions, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { buildWebAgent } from '../../web-agent/build.ts';
import { launchChromium } from '../support/chromium.ts';
import { PASSWORD, emulatorCall, emulatorRequest, startBridge, type Bridge, type BridgeOptions, type ProtocolClient } from './harness.ts';
import { PeerHost } from './program-agent.ts';

/**
 * What one test started: bridges, protocol clients, a PeerHost. `close()` closes the clients,
 * then the PeerHost, then the bridges, the last started first (nodes sharing an emulator
 * before its owner).
 */
export class E2eSuite {
  private readonly bridges: Bridge[] = [];
  private readonly clients: ProtocolClient[] = [];
  private peers: PeerHost | undefined;

  /**
   * `keepPeerHost`: the PeerHost (a Chromium) outlives the test: its peers are closed after
   * each test and the browser after the file (`shutPeerHost`), so a file launches one Chromium
   * for its program agents, not one per test. Its page stays on the origin of the bridge it was
   * started on (a secure context for getUserMedia); it talks to later bridges only through
   * the SDP the test hands it.
   */
  constructor(private readonly o: { keepPeerHost?: boolean } = {}) {}

  /** Start a bridge that is closed after the test. */
  async startBridge(o: BridgeOptions = {}): Promise<Bridge> {
    const b = await startBridge(o);
    this.bridges.push(b);
    return b;
  }

  /** The first bridge started in this test. */
  get bridge(): Bridge {
    const b = this.bridges[0];
    if (!b) throw new Error('no bridge started in this test');
    return b;
  }

  /** Close `c` after the test. */
  track<T extends ProtocolClient>(c: T): T {
    this.clients.push(c);
    return c;
  }

  /** The test's PeerHost (program agents' WebRTC peers), started on the bridge on first use. */
  async peerHost(): Promise<PeerHost> {
    this.peers ??= await PeerHost.start(this.bridge.url);
    return this.peers;
  }

  /** The PeerHost `peerHost()` started. */
  get host(): PeerHost {
    if (!this.peers) throw new Error('no PeerHost started in this test');
    return this.peers;
  }

  /** A request to the bridge's emulator (see `emulatorRequest`). */
  control<T = Record<string, unknown>>(method: string, path: string, body?: unknown): Promise<T> {
    return emulatorRequest<T>(this.bridge.emu, method, path, body);
  }

  /** The bridge's emulator's record of one call. */
  emuCall(wacid: string): ReturnType<typeof emulatorCall> {
    return emulatorCall(this.bridge.emu, wacid);
  }

  async close(): Promise<void> {
    for (const c of this.clients.splice(0)) c.close();
    if (this.o.keepPeerHost) await this.peers?.closePeers();
    else await this.shutPeerHost();
    for (const b of this.bridges.splice(0).reverse()) await b.close();
  }

  /** Close the PeerHost's browser (after each test, or after the file with `keepPeerHost`). */
  async shutPeerHost(): Promise<void> {
    await this.peers?.close();
    this.peers = undefined;
  }
}

/**
 * Agents as programs (protocol clients, PeerHost): everything is closed after each test, but
 * with `keepPeerHost` the PeerHost's Chromium, kept for the file (its peers closed after each test).
 */
export function programSuite(o: { keepPeerHost?: boolean } = {}): E2eSuite {
  const suite = new E2eSuite(o);
  afterEach(() => suite.close());
  if (o.keepPeerHost) afterAll(() => suite.shutPeerHost());
  return suite;
}

interface Launched {
  browser: Browser;
  assets: Awaited<ReturnType<typeof buildWebAgent>>;
}

/**
 * Agents in Debian Chromium: one browser and one build of the web agent for the file; the
 * test's browser contexts, then its bridges, are closed after each test.
 */
export class BrowserSuite extends E2eSuite {
  private readonly contexts: BrowserContext[] = [];
  private launched: Launched | undefined;

  /** Launch the browser and build the web agent (beforeAll). */
  async open(): Promise<void> {
    const [browser, assets] = await Promise.all([launchChromium(), buildWebAgent()]);
    this.launched = { browser, assets };
  }

  /** Close the browser (afterAll). */
  async shut(): Promise<void> {
    await this.launched?.browser.close();
  }

  /** Start a bridge serving the built web agent, closed after the test. */
  override startBridge(o: BridgeOptions = {}): Promise<Bridge> {
    return super.startBridge({ assets: this.opened().assets, ...o });
  }

  /** A browser context that is closed after the test. */
  async newContext(options: BrowserContextOptions): Promise<BrowserContext> {
    const ctx = await this.opened().browser.newContext(options);
    this.contexts.push(ctx);
    return ctx;
  }

  /**
   * A new context and page that logs in through the login page as `name`, starting at `path`
   * of the suite's bridge. `online`: also wait for the landing page and its live connection.
   */
  async loginPage(name: string, path: string, o: { viewport?: { width: number; height: number }; online?: boolean; context?: BrowserContextOptions } = {}): Promise<Page> {
    const url = this.bridge.url;
    const ctx = await this.newContext({ viewport: o.viewport ?? { width: 1280, height: 900 }, ...o.context });
    const page = await ctx.newPage();
    page.on('pageerror', (e) => console.error(`[${name} page error]`, e.message));
    await page.goto(`${url}${path}`);
    await page.waitForURL(/\/login/);
    await page.getByTestId('login-name').fill(name);
    await page.getByTestId('login-password').fill(PASSWORD);
    await page.getByTestId('login-submit').click();
    if (o.online !== false) {
      await page.waitForURL(`${url}${path}`);
      await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor({ timeout: 15_000 });
    }
    return page;
  }

  override async close(): Promise<void> {
    for (const c of this.contexts.splice(0)) await c.close();
    await super.close();
  }

  private opened(): Launched {
    if (!this.launched) throw new Error('the browser is not launched (beforeAll failed?)');
    return this.launched;
  }
}

export function browserSuite(): BrowserSuite {
  const suite = new BrowserSuite();
  beforeAll(() => suite.open());
  afterAll(() => suite.shut());
  afterEach(() => suite.close());
  return suite;
}
