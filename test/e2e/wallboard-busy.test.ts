/**
 * The supervisor console on a busy floor: the real
 * server with history (PGlite), two business numbers with their own agent queues, ten agents
 * (protocol clients; the answered calls have real media through a PeerHost) in every state:
 * available, ringing, on a call, on hold, after-call work, away with a reason. Earlier today:
 * calls answered and ended, abandoned (the caller hung up while waiting) and missed (rang,
 * the window closed), so the day's figures are not zero and the missed ones are open
 * callback tasks. Now: calls waiting, ringing and talking.
 *
 * The console (Chromium at 1280x800, 1920x1080 and 390x844) must show what
 * `GET /api/wallboard` says: each number's figures, every agent with its state, the live
 * calls with theirs, the open callbacks; a phone never scrolls sideways. The screenshots (E2E_SHOTS) are
 * `supervisor-wallboard-busy-{desktop,wall,phone}.png` (gitignored).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { Wallboard } from '../../shared/protocol.ts';
import { formatDuration } from '../../web-agent/src/format.ts';
import { agentClient, fakeConnect, login, postEvent, sleep, until, type ProtocolClient } from './harness.ts';
import { browserSuite } from './suite.ts';
import { screenshot } from '../support/shots.ts';

const suite = browserSuite();

const N1 = { id: '100000000000001', phoneNumber: '+15550100001', wabaId: '200000000000001' };
const N2 = { id: '100000000000002', phoneNumber: '+15550100002', wabaId: '200000000000001' };
/** Each number's queue: N2's agents never ring for N1, so N1's calls wait while hana and ivan are free. */
const QUEUES = { [N1.id]: ['amira', 'ben', 'chen', 'dana', 'eli', 'jo'], [N2.id]: ['farah', 'gus', 'hana', 'ivan'] };
const AGENTS = Object.values(QUEUES).flat();

let customers = 0;
const customer = () => `+1555030${String(++customers).padStart(4, '0')}`;

describe('the supervisor console on a busy floor', () => {
  it('shows what GET /api/wallboard says (figures, agents and their states, live calls, open callbacks) on a desktop, a wall screen and a phone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-busy-'));
    writeFileSync(join(dir, 'queues.json'), JSON.stringify(QUEUES));
    const b = await suite.startBridge({
      agents: AGENTS,
      supervisors: ['boss'],
      history: true,
      emulator: { businessNumbers: [N1, N2], acceptWindowMs: 60_000 },
      // Long windows: the calls placed for the screenshots keep waiting and ringing meanwhile.
      env: { QUEUES_FILE: join(dir, 'queues.json'), ACCEPT_WINDOW_MS: '60000', RING_TIMEOUT_MS: '120000', WRAP_UP_MS: '600000', SLA_SECONDS: '20' },
    });
    const host = await suite.peerHost();
    const a: Record<string, ProtocolClient> = {};
    for (const name of AGENTS) a[name] = suite.track(await agentClient(b.url, name, { available: false }));
    const presence = async (name: string, status: 'available' | 'away', reason?: string) =>
      expect(await a[name]!.request({ type: 'presence.set', status, ...(reason ? { reason } : {}) })).toMatchObject({ type: 'ack' });
    const place = async (n: typeof N1, extra: Record<string, unknown> = {}) => (await suite.control('POST', '/calls', { to: n.phoneNumber, from: customer(), audio: 'silence', ...extra })).wacid as string;
    /** `name` answers the next call to `n` for real (after it waited `waitMs` with `name` away). */
    const answered = async (name: string, n: typeof N1, extra: Record<string, unknown> = {}, waitMs = 0) => {
      const wacid = await place(n, extra);
      if (waitMs > 0) {
        await sleep(waitMs); // the caller waits: the average answer time is not zero
        await presence(name, 'available');
      }
      const offer = await a[name]!.next('call.offered', (m) => m.wacid === wacid, 15_000);
      expect(await a[name]!.request({ type: 'call.answer', wacid, sdp: await host.answer(wacid, offer.sdp) })).toMatchObject({ type: 'ack', wacid });
      await host.unmute(wacid);
      return wacid;
    };
    const ended = (name: string, wacid: string) => a[name]!.next('call.state', (m) => m.wacid === wacid && m.state === 'ended', 15_000);
    /** A connect event with no peer behind it: it only waits or rings (nobody answers it). */
    const connect = async (n: typeof N1, dialTime = Date.now()) => {
      const wacid = `wacid.busy-${++customers}`;
      expect(await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(wacid, { phoneId: n.id, to: n.phoneNumber, from: customer(), dialTime }))).toBe(200);
      return wacid;
    };
    const state = async (wacid: string) => (await b.store.getCall(wacid))?.state;

    // ---- earlier today ----
    // Abandoned: nobody is available, the caller hangs up while waiting (one per number).
    for (const n of [N1, N2]) {
      const wacid = await place(n);
      await until('the call waits', async () => ((await state(wacid)) === 'queued' ? true : undefined), 10_000);
      await suite.control('POST', `/calls/${encodeURIComponent(wacid)}/hangup`);
      await until('the call ended', async () => ((await state(wacid)) === 'ended' ? true : undefined), 10_000);
    }
    // Missed: it rings gus, who lets it ring until the answer window closes (dialed 50 s ago:
    // rejected 3 s before its 60 s window ends); the Service's terminate follows the reject.
    await presence('gus', 'available');
    const missed = await connect(N2, Date.now() - 50_000);
    await a.gus!.next('call.offered', (m) => m.wacid === missed, 10_000);
    // Meanwhile answered calls with real media: amira and hana wrap up, dana stays in after-call work.
    await presence('amira', 'available');
    await presence('hana', 'away', 'Break'); // not yet: gus rings for N2 first
    const done1 = await answered('amira', N1, { hangupAfterMs: 2_500 });
    await until('the missed call is rejected', async () => ((await state(missed)) === 'rejecting' ? true : undefined), 15_000);
    expect(await postEvent(b, 'chat.call.terminate', 'callingTerminate', { wacid: missed, phoneId: N2.id, status: 'FAILED', duration: 0 })).toBe(200);
    await ended('amira', done1);
    expect(await a.amira!.request({ type: 'call.wrapup', wacid: done1, disposition: 'Resolved' })).toMatchObject({ type: 'ack' });
    await presence('gus', 'away', 'Break');
    await presence('hana', 'available');
    const done2 = await answered('hana', N2, { hangupAfterMs: 2_000 });
    await ended('hana', done2);
    expect(await a.hana!.request({ type: 'call.wrapup', wacid: done2, disposition: 'Follow-up needed' })).toMatchObject({ type: 'ack' });
    await presence('hana', 'away', 'Break');
    await presence('amira', 'away', 'Break'); // dana takes the next N1 call, after it waited 4 s
    const done3 = await answered('dana', N1, { hangupAfterMs: 1_500 }, 4_000);
    await ended('dana', done3);
    for (const w of [done1, done2, done3]) await host.closePeer(w);

    // ---- now ----
    const live: Record<string, string> = {};
    await presence('amira', 'available');
    live.amira = await answered('amira', N1);
    await presence('ben', 'available');
    live.ben = await answered('ben', N1);
    expect(await a.ben!.request({ type: 'call.hold', wacid: live.ben })).toMatchObject({ type: 'ack' });
    await presence('farah', 'available');
    live.farah = await answered('farah', N2);
    await presence('eli', 'away', 'Lunch');
    await presence('jo', 'away', 'Training');
    await presence('gus', 'available');
    live.gus = await connect(N2);
    await a.gus!.next('call.offered', (m) => m.wacid === live.gus, 10_000);
    await presence('chen', 'available');
    live.chen = await connect(N1);
    await a.chen!.next('call.offered', (m) => m.wacid === live.chen, 10_000);
    await presence('hana', 'available');
    await presence('ivan', 'available');
    // Every agent of N1 is busy or away: these wait.
    const waiting = [await connect(N1), await connect(N1), await connect(N1)];
    for (const w of waiting) await until('the call waits', async () => ((await state(w)) === 'queued' ? true : undefined), 10_000);

    // ---- the server's board ----
    const cookie = await login(b.url, 'boss');
    const api = async (): Promise<Wallboard> => (await (await fetch(`${b.url}/api/wallboard`, { headers: { cookie } })).json()) as Wallboard;
    // History is written off the call path: wait for the day's settled calls.
    const board = await until('the day in the wallboard', async () => {
      const w = await api();
      const n2 = w.numbers.find((n) => n.businessNumber === N2.phoneNumber);
      return n2 && n2.missed === 1 && n2.abandoned === 1 && w.numbers.reduce((s, n) => s + n.answered, 0) === 6 ? w : undefined;
    }, 30_000);
    const [n1, n2] = [N1, N2].map((n) => board.numbers.find((x) => x.businessNumber === n.phoneNumber)!);
    console.log(`wallboard: ${JSON.stringify(board.numbers.map(({ businessNumber, longestWaitMs: _l, ...f }) => ({ businessNumber, ...f })))}`);
    // 3 ended (answered) + 3 talking; each number has an abandoned call, N2 the missed one.
    expect(n1).toMatchObject({ waiting: 3, ringing: 1, offered: 5, answered: 4, abandoned: 1, missed: 0 });
    expect(n2).toMatchObject({ waiting: 0, ringing: 1, offered: 4, answered: 2, abandoned: 1, missed: 1 });
    for (const n of [n1!, n2!]) {
      expect(n.serviceLevel).toBeGreaterThan(0);
      expect(n.serviceLevel).toBeLessThan(1);
      expect(n.asaMs).toBeGreaterThan(0);
      expect(n.ahtMs).toBeGreaterThan(0);
    }
    const expected: Record<string, [string, string?]> = {
      amira: ['on-call'], ben: ['on-call'], farah: ['on-call'], chen: ['ringing'], gus: ['ringing'], dana: ['after-call-work'],
      eli: ['away', 'Lunch'], jo: ['away', 'Training'], hana: ['available'], ivan: ['available'],
    };
    expect(Object.fromEntries(board.agents.filter((g) => g.name in expected).map((g) => [g.name, g.reason ? [g.status, g.reason] : [g.status]]))).toEqual(expected);
    const cbRes = await fetch(`${b.url}/api/callbacks?state=open`, { headers: { cookie } });
    const openTasks = ((await cbRes.json()) as { items: Array<{ id: string; reason: string }> }).items;
    expect(openTasks.map((t) => t.reason).sort()).toEqual(['abandoned', 'abandoned', 'missed']);

    // ---- the console, three screens ----
    const liveRows: Array<[string, string, string]> = [
      [live.amira!, 'active', 'on call with amira'],
      [live.ben!, 'active', 'on hold by ben'],
      [live.farah!, 'active', 'on call with farah'],
      [live.chen!, 'ringing', 'ringing chen'],
      [live.gus!, 'ringing', 'ringing gus'],
      ...waiting.map((w): [string, string, string] => [w, 'queued', 'waiting for an agent']),
    ];
    for (const [name, viewport] of [['desktop', { width: 1280, height: 800 }], ['wall', { width: 1920, height: 1080 }], ['phone', { width: 390, height: 844 }]] as const) {
      const page = await suite.loginPage('boss', '/supervisor', { viewport });
      // The tiles show the server's figures (the page follows the `wallboard` pushes).
      await until(`${name}: the tiles show the server's figures`, async () => ((await tilesMatch(page, await api())) ? true : undefined), 20_000);
      for (const g of board.agents) {
        const tile = page.locator(`[data-testid="wb-agent"][data-name="${g.name}"][data-status="${g.status}"]`);
        await tile.waitFor({ timeout: 10_000 });
        if (g.reason) expect(await tile.textContent()).toContain(g.reason);
      }
      await page.locator('[data-testid="live-count"]', { hasText: String(liveRows.length) }).waitFor({ timeout: 10_000 });
      for (const [wacid, st, text] of liveRows) {
        const row = page.locator(`[data-testid="live-call"][data-wacid="${wacid}"][data-state="${st}"]`);
        await row.waitFor({ timeout: 10_000 });
        expect(await row.locator('td[data-label="State"]').textContent()).toBe(text);
      }
      expect(await page.locator('[data-testid="live-call"][data-held="true"]').getAttribute('data-wacid')).toBe(live.ben);
      // Only the talking calls can be monitored.
      expect(await page.locator('[data-testid="live-call"]:has([data-testid="monitor-actions"][data-can="true"])').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-wacid')).sort())).toEqual([live.amira, live.ben, live.farah].sort());
      await page.locator('[data-testid="queue-task"]').nth(openTasks.length - 1).waitFor({ timeout: 10_000 });
      expect(await page.locator('[data-testid="queue-task"]').count()).toBe(openTasks.length);
      // Nothing sticks out sideways (a phone never scrolls horizontally).
      const widths = await page.evaluate(() => ({ scroll: document.documentElement.scrollWidth, inner: window.innerWidth }));
      expect(widths.scroll, `${name}: page width`).toBeLessThanOrEqual(widths.inner);
      await screenshot(page, `supervisor-wallboard-busy-${name}.png`, { fullPage: true });
      await page.context().close();
    }
  }, 240_000);
});

/** The supervisor console, logged in as boss, at `viewport`. */

/** Every number's tiles (but the ever-growing longest wait) read as the board's figures. */
async function tilesMatch(page: Page, w: Wallboard): Promise<boolean> {
  for (const n of w.numbers) {
    const want: Record<string, string> = {
      waiting: String(n.waiting), ringing: String(n.ringing), sl: `${Math.round(n.serviceLevel * 100)}%`, answered: `${n.answered} / ${n.offered}`,
      abandoned: String(n.abandoned), missed: String(n.missed), asa: formatDuration(n.asaMs / 1000), aht: formatDuration(n.ahtMs / 1000),
    };
    const section = page.locator(`[data-testid="wb-number"][data-number="${n.businessNumber}"]`);
    if ((await section.count()) !== 1) return false;
    for (const [id, value] of Object.entries(want)) {
      if ((await section.locator(`[data-testid="wb-${id}"] .wb-value`).textContent()) !== value) return false;
    }
  }
  return true;
}
