/**
 * Answer click → audio flowing, direct vs relayed through TURN: the real agent
 * page in Debian Chromium answers calls from the emulator's werift caller, on two bridges —
 * one with no ICE servers (host candidates, direct), one with `ICE_TRANSPORT_POLICY=relay`
 * and a private coturn (test/support/coturn.ts) — alternating call by call so that drift of
 * the machine's speed hits both alike. Measured per call from the click on Answer until the
 * page has received the caller's audio AND the caller has received the page's (the
 * emulator's count), polled every 10 ms. Prints p50 / p95 of each and the difference.
 *
 *   npx tsx bench/turn.ts [--calls 20]
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import type { Page } from 'playwright-core';
import { buildWebAgent } from '../web-agent/build.ts';
import { PASSWORD, emulatorRequest, sleep, startBridge, type Bridge } from '../test/e2e/harness.ts';
import { launchChromium } from '../test/support/chromium.ts';
import { startTurn } from '../test/support/coturn.ts';
import { figure } from './figures.ts';
import { pct } from './stats.ts';

const { values: args } = parseArgs({ options: { calls: { type: 'string', default: '20' } } });
const CALLS = Number(args.calls);

async function agentPage(browser: Awaited<ReturnType<typeof launchChromium>>, b: Bridge): Promise<Page> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  await page.goto(`${b.url}/`);
  await page.waitForURL(/\/login/);
  await page.getByTestId('login-name').fill('agent1');
  await page.getByTestId('login-password').fill(PASSWORD);
  await page.getByTestId('login-submit').click();
  await page.waitForURL(`${b.url}/`);
  await page.locator('[data-testid="connection-status"][data-state="online"]').waitFor();
  await page.getByTestId('ready-check').click();
  await page.locator('[data-testid="presence-available"]:not([disabled])').waitFor();
  await page.getByTestId('presence-available').click();
  await page.locator('[data-testid="presence-status"][data-status="available"]').waitFor();
  return page;
}

async function oneCall(b: Bridge, page: Page): Promise<{ ms: number; path: string }> {
  await page.locator('[data-testid="agent-state"][data-status="available"], [data-testid="presence-status"][data-status="available"]').first().waitFor();
  const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', { audio: 'tone' })).wacid as string;
  const card = page.locator(`[data-testid="incoming-call"][data-wacid="${wacid}"]`);
  await card.waitFor({ timeout: 15_000 });
  await sleep(300); // the ring settles; the click is what is timed
  const t0 = performance.now();
  await card.getByTestId('answer').click();
  let pageHears = false;
  let callerHears = false;
  while (!(pageHears && callerHears)) {
    if (performance.now() - t0 > 20_000) throw new Error(`no audio both ways within 20 s (${wacid})`);
    const [s, e] = await Promise.all([
      pageHears ? null : page.evaluate(() => (window as any).__switchboard.stats() as Promise<{ inbound?: { packetsReceived: number } } | null>),
      callerHears ? null : emulatorRequest(b.emu, 'GET', `/calls/${encodeURIComponent(wacid)}`),
    ]);
    if (s && (s.inbound?.packetsReceived ?? 0) > 0) pageHears = true;
    if (e && ((e.media as { packetsReceived?: number } | undefined)?.packetsReceived ?? 0) > 0) callerHears = true;
    if (!(pageHears && callerHears)) await sleep(10);
  }
  const ms = performance.now() - t0;
  const path = ((await page.evaluate(() => (window as any).__switchboard.stats())) as { path?: string } | null)?.path ?? '?';
  await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/hangup`);
  await page.locator(`[data-testid="call-active"][data-wacid="${wacid}"]`).waitFor({ state: 'detached', timeout: 15_000 }).catch(() => undefined);
  return { ms, path };
}

async function main(): Promise<void> {
  const [assets, browser, turn] = await Promise.all([buildWebAgent(), launchChromium({ autoplayWithoutGesture: true }), startTurn()]);
  const common = { assets, agents: ['agent1'], supervisors: [] as string[] };
  const direct = await startBridge({ ...common, env: { WRAP_UP_MS: 'off' } });
  const relayed = await startBridge({ ...common, env: { WRAP_UP_MS: 'off', ...turn.env('relay') } });
  try {
    const pages = { direct: await agentPage(browser, direct), relayed: await agentPage(browser, relayed) };
    // One warm-up call each (first getUserMedia, first allocation): not counted.
    await oneCall(direct, pages.direct);
    await oneCall(relayed, pages.relayed);
    const ms = { direct: [] as number[], relayed: [] as number[] };
    const paths = { direct: new Set<string>(), relayed: new Set<string>() };
    for (let i = 0; i < CALLS; i++) {
      for (const kind of i % 2 === 0 ? (['direct', 'relayed'] as const) : (['relayed', 'direct'] as const)) {
        const r = await oneCall(kind === 'direct' ? direct : relayed, pages[kind]);
        ms[kind].push(r.ms);
        paths[kind].add(r.path);
      }
    }
    const d50 = pct(ms.direct, 50);
    const r50 = pct(ms.relayed, 50);
    console.log(`answer click → audio both ways, ${CALLS} calls each (paths: direct ${[...paths.direct].join('/')}, relayed ${[...paths.relayed].join('/')})`);
    console.log(`  direct : p50 ${d50.toFixed(0)} ms, p95 ${pct(ms.direct, 95).toFixed(0)} ms, min ${Math.min(...ms.direct).toFixed(0)}, max ${Math.max(...ms.direct).toFixed(0)}`);
    console.log(`  relayed: p50 ${r50.toFixed(0)} ms, p95 ${pct(ms.relayed, 95).toFixed(0)} ms, min ${Math.min(...ms.relayed).toFixed(0)}, max ${Math.max(...ms.relayed).toFixed(0)}`);
    figure('turn', 'answer → audio direct p50', Math.round(d50), 'ms');
    figure('turn', 'answer → audio direct p95', Math.round(pct(ms.direct, 95)), 'ms');
    figure('turn', 'answer → audio relayed p50', Math.round(r50), 'ms');
    figure('turn', 'answer → audio relayed p95', Math.round(pct(ms.relayed, 95)), 'ms');
    figure('turn', 'relayed − direct p50', Math.round(r50 - d50), 'ms', { max: 150 });
  } finally {
    await browser.close();
    await relayed.close();
    await direct.close();
    await turn.close();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
