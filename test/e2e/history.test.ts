/**
 * Call history end to end: the real server with history on (PGlite), the
 * emulator with capture on, program agents answering with Chromium peers, and the archive
 * search page in Debian Chromium. A call → its record (outcome, times, agent); its recording
 * plays in the page (streamed with byte ranges: the <audio> knows its duration) beside the
 * transcript; search by customer, by outcome and by a word of the transcript finds it; an
 * agent sees only their own calls; /metrics shows the history queue's lag.
 * Screenshots of the search page (desktop and phone) with E2E_SHOTS (test/support/shots.ts).
 */
import { screenshot } from '../support/shots.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { afterEach, describe, expect, it } from 'vitest';
import type { CallRecord } from '../../server/history/schema.ts';
import { agentClient, emulatorRequest, login, PASSWORD, sleep, until, type ProtocolClient } from './harness.ts';
import { browserSuite } from './suite.ts';

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 375, height: 800 };

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});
const suite = browserSuite();

async function archivePage(name: string): Promise<Page> {
  const ctx = await suite.newContext({ viewport: DESKTOP });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => console.error(`[${name} page error]`, e.message));
  await page.goto(`${suite.bridge.url}/archive`);
  await page.waitForURL(/\/login/);
  await page.getByTestId('login-name').fill(name);
  await page.getByTestId('login-password').fill(PASSWORD);
  await page.getByTestId('login-submit').click();
  await page.waitForURL(`${suite.bridge.url}/archive`);
  await page.getByTestId('search-form').waitFor();
  return page;
}

/** Submit the form with only `fields` set; resolves once the rows are exactly `wacids`. */
async function search(page: Page, fields: Partial<Record<'customer' | 'outcome' | 'q', string>>, wacids: string[]): Promise<void> {
  await page.getByTestId('search-reset').click();
  if (fields.customer !== undefined) await page.getByTestId('search-customer').fill(fields.customer);
  if (fields.q !== undefined) await page.getByTestId('search-q').fill(fields.q);
  if (fields.outcome !== undefined) await page.getByTestId('search-outcome').selectOption(fields.outcome);
  await page.getByTestId('search-submit').click();
  const rows = () => page.getByTestId('search-result').evaluateAll((ls) => ls.map((l) => l.getAttribute('data-wacid')).sort());
  await until(`results ${JSON.stringify(fields)} = ${wacids.join(',')}`, async () => JSON.stringify(await rows()) === JSON.stringify([...wacids].sort()), 10_000, 100);
}

describe('call history', () => {
  it('a call → its record; the recording plays beside the transcript; search by customer, outcome and transcript word; agents see their own', async () => {
    dir = await mkdtemp(join(tmpdir(), 'sb-history-archive-'));
    const b = await suite.startBridge({ agents: ['agent1', 'agent2'], history: true, env: { ARCHIVE_DIR: dir, WRAP_UP_MS: 'off' }, emulator: { announcementMs: 0 } });
    const number = [...b.emu.ctx.phoneNumbers.values()][0]!;
    await emulatorRequest(b.emu, 'POST', `${b.emu.baseUrl}/chat/phoneNumbers/${number.wabaId}/${encodeURIComponent(number.phoneNumber)}/settings`, {
      capture: { recordingEnabled: true, transcriptionEnabled: true, purpose: 'quality assurance', announcementLanguage: 'en' },
    });
    const a1 = suite.track(await agentClient(b.url, 'agent1'));
    const a2 = suite.track(await agentClient(b.url, 'agent2', { available: false }));
    const host = await suite.peerHost();

    /** A call from `from`, answered by `agent`, talking `talkMs`, hung up by the caller. */
    const answered = async (agent: ProtocolClient, from: string, toneHz: number, talkMs: number): Promise<string> => {
      const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', { audio: 'tone', toneHz, from })).wacid as string;
      const offer = await agent.next('call.offered', (m) => m.wacid === wacid, 20_000);
      expect((await agent.request({ type: 'call.answer', wacid, sdp: await host.answer(wacid, offer.sdp) })).type).toBe('ack');
      await host.unmute(wacid);
      await sleep(talkMs);
      await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/hangup`);
      await agent.next('call.state', (m) => m.wacid === wacid && m.state === 'ended', 20_000);
      return wacid;
    };

    // A: answered by agent1, captured (recording + transcript "[tone 440 Hz]").
    const a = await answered(a1, '+15557770001', 440, 2500);
    await a1.next('media.available', (m) => m.wacid === a && m.kind === 'recording', 30_000);
    await a1.next('media.available', (m) => m.wacid === a && m.kind === 'transcription', 30_000);
    // B: the caller gives up while it rings agent1: abandoned, nobody's call.
    const bw = (await emulatorRequest(b.emu, 'POST', '/calls', { audio: 'tone', toneHz: 600, from: '+15557770002' })).wacid as string;
    await a1.next('call.offered', (m) => m.wacid === bw, 20_000);
    await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(bw)}/hangup`);
    await a1.next('call.state', (m) => m.wacid === bw && m.state === 'ended', 20_000);
    // C: answered by agent2 (agent1 away).
    expect((await a1.request({ type: 'presence.set', status: 'away' })).type).toBe('ack');
    expect((await a2.request({ type: 'presence.set', status: 'available' })).type).toBe('ack');
    const c = await answered(a2, '+15557770003', 700, 1000);

    // The records (through the API, as a supervisor): outcome, times, agent, media.
    const boss = await login(b.url, 'boss');
    const get = async (w: string, cookie = boss) => (await fetch(`${b.url}/api/history/calls/${encodeURIComponent(w)}`, { headers: { cookie } })).json() as Promise<CallRecord & { timeline: unknown[] }>;
    const rec = await until('call A recorded with its media', async () => {
      const r = await get(a);
      return r.endedAt && r.media?.filter((m) => m.status === 'available').length === 2 ? r : undefined;
    }, 30_000, 200);
    expect(rec).toMatchObject({ wacid: a, outcome: 'answered', agent: 'agent1', direction: 'inbound', customer: { phoneNumber: '+15557770001' } });
    expect(Date.parse(rec.answeredAt!)).toBeGreaterThanOrEqual(Date.parse(rec.receivedAt));
    expect(Date.parse(rec.endedAt!) - Date.parse(rec.answeredAt!)).toBeGreaterThanOrEqual(2000);
    expect(rec.talkMs).toBeGreaterThanOrEqual(2000);
    await until('call B recorded as abandoned', async () => (await get(bw)).outcome === 'abandoned', 20_000, 200);
    await until('call C recorded for agent2', async () => (await get(c)).endedAt !== undefined, 20_000, 200);
    expect((await get(bw)).agent).toBeUndefined();

    // Agents see only their own calls.
    const mine = async (name: string) => {
      const r = await fetch(`${b.url}/api/history/calls`, { headers: { cookie: await login(b.url, name) } });
      return ((await r.json()) as { items: CallRecord[] }).items.map((x) => x.wacid);
    };
    expect(await mine('agent1')).toEqual([a]);
    expect(await mine('agent2')).toEqual([c]);
    expect((await fetch(`${b.url}/api/history/calls?agent=agent2`, { headers: { cookie: await login(b.url, 'agent1') } })).status).toBe(403);
    expect((await fetch(`${b.url}/api/history/calls/${encodeURIComponent(c)}`, { headers: { cookie: await login(b.url, 'agent1') } })).status).toBe(404);

    // /metrics: the history queue's lag.
    const metrics = await (await fetch(`${b.url}/metrics`)).text();
    expect(metrics).toMatch(/^switchboard_history_queue_pending \d+$/m);
    expect(metrics).toMatch(/^switchboard_history_facts_written_total \d+$/m);
    // Histograms: webhook → first offer (three inbound calls offered), handler time per lane, history lag.
    expect(Number(/^switchboard_offer_latency_seconds_count (\d+)$/m.exec(metrics)?.[1])).toBe(3);
    expect(metrics).toMatch(/^switchboard_offer_latency_seconds_bucket\{le="\+Inf"\} 3$/m);
    expect(Number(/^switchboard_webhook_handler_seconds_count\{lane="calls"\} (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(6);
    expect(Number(/^switchboard_history_lag_seconds_count (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(0);
    // The process's own (prom-client's defaults): CPU, memory, event-loop lag.
    expect(metrics).toMatch(/^process_cpu_user_seconds_total [\d.e+-]+$/m);
    expect(metrics).toMatch(/^nodejs_eventloop_lag_p99_seconds [\d.e+-]+$/m);
    expect(metrics).toMatch(/^switchboard_event_loop_delay_seconds\{quantile="0.99"\} [\d.e+-]+$/m);

    // The page, as the supervisor: search by customer, by outcome, by a transcript word.
    const page = await archivePage('boss');
    await search(page, { customer: '+15557770001' }, [a]);
    const row = page.locator(`[data-testid="search-result"][data-wacid="${a}"]`);
    expect(await row.getByTestId('result-outcome').textContent()).toMatch(/answered/i);
    expect(await row.getByTestId('result-agent').textContent()).toBe('agent1');
    await search(page, { outcome: 'abandoned' }, [bw]);
    await search(page, { q: '440' }, [a]);
    await search(page, {}, [a, bw, c]);
    await screenshot(page, 'history-search-desktop.png');
    await page.setViewportSize(PHONE);
    await screenshot(page, 'history-search-phone.png', { fullPage: true });
    await page.setViewportSize(DESKTOP);

    // Open A: the recording plays (streamed: the duration is known without fetching the whole file) beside the transcript.
    await search(page, { q: '440' }, [a]);
    await row.getByTestId('result-open').click();
    await page.locator(`[data-testid="call-detail"][data-wacid="${a}"][data-state="ready"]`).waitFor();
    const audio = page.getByTestId('detail-audio');
    await until('the recording loaded with a duration', () => audio.evaluate((el: HTMLAudioElement) => el.readyState >= 1 && Number.isFinite(el.duration) && el.duration > 0), 15_000, 100);
    const media = await audio.evaluate((el: HTMLAudioElement) => ({ duration: el.duration, error: el.error?.code ?? null, source: el.dataset.source }));
    expect(media.error).toBeNull();
    expect(media.duration).toBeGreaterThan(1);
    expect(media.source).toBe('stream');
    const lines = await page.getByTestId('transcript-line').evaluateAll((ls) => ls.map((l) => l.textContent ?? ''));
    expect(lines.some((l) => l.includes('440'))).toBe(true);
    const player = (await audio.boundingBox())!;
    const transcript = (await page.getByTestId('transcript').boundingBox())!;
    expect(transcript.x).toBeGreaterThan(player.x); // beside it on a desktop
    await screenshot(page, 'history-detail-desktop.png');
    await page.setViewportSize(PHONE);
    await screenshot(page, 'history-detail-phone.png', { fullPage: true });
  }, 240_000);
});
