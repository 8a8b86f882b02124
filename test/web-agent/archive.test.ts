/**
 * The archive search page in a real Chromium, against the stand-in server (standin.ts: the
 * real built bundle) answering the history routes with canned records in the shared
 * `CallRecord` shape, and serving a real Ogg Opus recording made with the emulator's own
 * encoder and muxer (the same bytes a captured call gives). The real server's routes have
 * their own tests; the end-to-end run against them comes with the wiring.
 */
import { describe, expect, test } from 'vitest';
import type { Page } from 'playwright-core';
import { CallDetail, CallPage, type CallRecord } from '../../shared/records.ts';
import { OpusEncoder, frameSource } from '../emulator/calls/audio.ts';
import { muxOggOpus } from '../emulator/calls/ogg.ts';
import { StandIn } from './standin.ts';
import { softphoneRig } from './softphone-rig.ts';
import { screenshot } from '../support/shots.ts';


let s: StandIn | undefined;
// The browser, a context per test, and the after-each checks (no bad frame, no page error; the stand-in closed).
const rig = softphoneRig(() => s, { height: 800 });

/** 4 s of a 440 Hz tone as Ogg Opus, 200 frames of 20 ms. */
function recording(): Buffer {
  const enc = new OpusEncoder();
  const next = frameSource({ kind: 'tone', hz: 440 });
  const packets = Array.from({ length: 200 }, () => enc.encode(next()!));
  enc.close();
  return muxOggOpus(packets, { comments: ['TITLE=call w1'] });
}
const OGG = recording();

const call = (wacid: string, extra: Partial<CallRecord> = {}): CallRecord => ({
  wacid,
  phoneId: 'phone-1',
  businessNumber: '+15550001000',
  customer: { phoneNumber: '+15551234567' },
  direction: 'inbound',
  agent: 'agent1',
  outcome: 'answered',
  receivedAt: '2025-03-04T10:00:00.000Z',
  answeredAt: '2025-03-04T10:00:07.000Z',
  endedAt: '2025-03-04T10:01:30.000Z',
  waitMs: 7000,
  talkMs: 83_000,
  media: [],
  ...extra,
});

const DETAIL = CallDetail.parse({
  ...call('w1'),
  endReason: 'USER_HANGUP',
  disposition: 'resolved',
  media: [
    { kind: 'recording', mediaAssetId: 'cma_1', status: 'available', url: '/api/archive/w1/cma_1.ogg', bytes: OGG.length },
    { kind: 'transcription', mediaAssetId: 'cma_2', status: 'available', url: '/api/archive/w1/cma_2.json', bytes: 400 },
  ],
  timeline: [
    { at: '2025-03-04T10:00:00.000Z', event: 'offered', detail: { from: '+15551234567' } },
    { at: '2025-03-04T10:00:07.000Z', event: 'answered', detail: { agent: 'agent1' } },
    { at: '2025-03-04T10:01:30.000Z', event: 'ended', detail: { reason: 'USER_HANGUP' } },
  ],
});
/** The emulator's transcription shape (test/emulator/calls/capture.ts). */
const TRANSCRIPT = {
  wacid: 'w1',
  language: 'en',
  durationMs: 4000,
  segments: [
    { speaker: 'system', startMs: 0, endMs: 1500, text: '[recording announcement, en]' },
    { speaker: 'user', startMs: 1500, endMs: 4000, text: '[tone 440 Hz]' },
    { speaker: 'business', startMs: 2500, endMs: 3500, text: '[audio]' },
  ],
};

async function archiveStandIn(): Promise<StandIn> {
  const st = await StandIn.start({ user: { name: 'ops', roles: ['ops'] } });
  st.answer('GET', '/api/history/calls', (url) => {
    // Newest first, two per page then one: the page must follow the cursor with the same filters.
    const page: CallPage = url.searchParams.get('cursor') === 'c1'
      ? { items: [call('w3', { outcome: 'missed', agent: undefined, talkMs: undefined, answeredAt: undefined, receivedAt: '2025-03-03T08:00:00.000Z' })] }
      : { items: [call('w1'), call('w2', { direction: 'outbound', customer: { userId: 'US.1349120865530274' }, outcome: 'no-answer', receivedAt: '2025-03-04T09:00:00.000Z' })], cursor: 'c1' };
    return { json: CallPage.parse(page) };
  });
  st.answer('GET', '/api/history/calls/w1', () => ({ json: DETAIL }));
  // As the real archive route answers (server/archive/routes.ts): the whole file, no ranges.
  st.answer('GET', '/api/archive/w1/cma_1.ogg', () => ({ body: OGG, headers: { 'content-type': 'audio/ogg', 'content-disposition': 'attachment; filename="cma_1.ogg"' } }));
  st.answer('GET', '/api/archive/w1/cma_2.json', () => ({ json: TRANSCRIPT }));
  return st;
}

async function openPage(width: number, path = '/archive'): Promise<Page> {
  s = await archiveStandIn();
  return rig.openPage(path, { width, timezoneId: 'UTC' });
}

/** The history searches the page sent, as parsed queries. */
const searches = () => s!.requests.filter((r) => r.startsWith('/api/history/calls?')).map((r) => new URLSearchParams(r.split('?')[1]));

const noSideScroll = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth);


describe('archive search page', () => {
  test('filters make the query, Load more follows the cursor, a result opens: the .ogg plays in the page and a transcript click seeks', async () => {
    const page = await openPage(1280);
    // On open: the newest calls, no filters.
    await page.locator('[data-testid="search-result"][data-wacid="w2"]').waitFor();
    expect(searches()[0]!.toString()).toBe('limit=25');
    const row = page.locator('[data-testid="search-result"][data-wacid="w1"]');
    const cells = Object.fromEntries(
      await Promise.all(['time', 'customer', 'business', 'agent', 'direction', 'wait', 'talk', 'outcome'].map(async (c) => [c, await row.getByTestId(`result-${c}`).textContent()] as const)),
    );
    expect(cells).toEqual({
      time: '4 Mar 2025, 10:00',
      customer: '+15551234567',
      business: '+15550001000',
      agent: 'agent1',
      direction: 'Inbound',
      wait: '0:07',
      talk: '1:23',
      outcome: 'Answered',
    });
    expect(await page.locator('[data-testid="search-result"][data-wacid="w2"] [data-testid="result-customer"]').textContent()).toBe('US.1349120865530274');

    // A wrong filter names the field and sends nothing.
    const before = searches().length;
    await page.getByTestId('search-customer').fill('5551234567');
    await page.getByTestId('search-submit').click();
    await page.getByTestId('search-invalid').waitFor();
    expect(await page.getByTestId('search-invalid').textContent()).toMatch(/^Customer: Start the number with \+/);
    expect(await page.getByTestId('search-customer').getAttribute('aria-invalid')).toBe('true');
    expect(searches().length).toBe(before);

    await page.getByTestId('search-customer').fill('+1 555 123-4567');
    await page.getByTestId('search-agent').fill('agent1');
    await page.getByTestId('search-businessNumber').fill('+1 555 000 1000');
    await page.getByTestId('search-direction').selectOption('inbound');
    await page.getByTestId('search-outcome').selectOption('answered');
    await page.getByTestId('search-from').fill('2025-03-04T09:00');
    await page.getByTestId('search-to').fill('2025-03-04T18:30');
    await page.getByTestId('search-q').fill('tone');
    await page.getByTestId('search-submit').click();
    await s!.until(() => searches().length === before + 1, 5000, 'the filtered search');
    expect(Object.fromEntries(searches().at(-1)!)).toEqual({
      from: '2025-03-04T09:00:00.000Z',
      to: '2025-03-04T18:30:00.000Z',
      customer: '+15551234567',
      agent: 'agent1',
      businessNumber: '+15550001000',
      direction: 'inbound',
      outcome: 'answered',
      q: 'tone',
      limit: '25',
    });
    // The search is in the page's URL (a search can be linked).
    expect(new URL(page.url()).searchParams.get('customer')).toBe('+15551234567');

    await page.getByTestId('search-more').click();
    await page.locator('[data-testid="search-result"][data-wacid="w3"]').waitFor();
    const more = searches().at(-1)!;
    expect(more.get('cursor')).toBe('c1');
    expect(more.get('customer')).toBe('+15551234567');
    expect(await page.getByTestId('search-result').count()).toBe(3);
    expect(await page.getByTestId('search-more').isHidden()).toBe(true);
    await screenshot(page, `web-agent-archive-search.png`, { fullPage: true });

    // Open a call: player, transcript beside it, timeline, downloads.
    await row.getByTestId('result-open').click();
    await page.locator('[data-testid="call-detail"][data-wacid="w1"][data-state="ready"]').waitFor();
    const audio = page.getByTestId('detail-audio');
    await page.waitForFunction(() => {
      const a = document.querySelector<HTMLAudioElement>('[data-testid="detail-audio"]');
      return !!a && a.readyState >= 1 && Number.isFinite(a.duration) && a.duration > 0;
    });
    const media = await audio.evaluate((a: HTMLAudioElement) => ({ duration: a.duration, error: a.error?.code ?? null, src: a.currentSrc }));
    expect(media.error).toBeNull();
    // The archive route sends no byte ranges, so the page plays the fetched file from memory.
    expect(await audio.getAttribute('data-source')).toBe('whole-file');
    expect(media.src).toMatch(/^blob:/);
    expect(s!.requests.filter((r) => r === '/api/archive/w1/cma_1.ogg?use=play').length).toBeGreaterThanOrEqual(1);
    expect(media.duration).toBeGreaterThan(3.5);
    expect(media.duration).toBeLessThan(4.5);

    const lines = page.getByTestId('transcript-line');
    await lines.nth(2).waitFor();
    expect(await lines.evaluateAll((ls) => ls.map((l) => l.textContent))).toEqual([
      'System · 0:00[recording announcement, en]',
      'Customer · 0:01[tone 440 Hz]',
      'Agent · 0:02[audio]',
    ]);
    expect(await audio.evaluate((a: HTMLAudioElement) => a.currentTime)).toBe(0);
    await lines.nth(2).locator('button').click();
    await page.waitForFunction(() => document.querySelector<HTMLAudioElement>('[data-testid="detail-audio"]')!.currentTime >= 2.5);
    expect(await lines.nth(2).getAttribute('data-current')).toBe('true');
    // It plays from there (the click is the user's gesture).
    await page.waitForFunction(() => document.querySelector<HTMLAudioElement>('[data-testid="detail-audio"]')!.currentTime > 2.6, undefined, { timeout: 5000 });
    await lines.nth(0).locator('button').click();
    await page.waitForFunction(() => document.querySelector<HTMLAudioElement>('[data-testid="detail-audio"]')!.currentTime < 1);

    expect(await page.getByTestId('timeline-item').evaluateAll((ls) => ls.map((l) => l.getAttribute('data-event')))).toEqual(['offered', 'answered', 'ended']);
    expect(await page.getByTestId('detail-outcome').textContent()).toBe('Answered · The caller hung up.');
    expect(await page.getByTestId('download-link').evaluateAll((ls) => ls.map((l) => l.getAttribute('href')))).toEqual(['/api/archive/w1/cma_1.ogg', '/api/archive/w1/cma_2.json']);
    expect(new URL(page.url()).searchParams.get('call')).toBe('w1');
    await screenshot(page, `web-agent-archive-call.png`, { fullPage: true });

    // Back closes the call and keeps the results.
    await page.goBack();
    await page.getByTestId('call-detail').waitFor({ state: 'detached' });
    expect(await page.getByTestId('search-result').count()).toBe(3);
    expect(new URL(page.url()).searchParams.get('call')).toBeNull();
  });

  test('on a phone: a linked call opens stacked, results are cards, nothing scrolls sideways', async () => {
    const page = await openPage(375, '/archive?call=w1');
    await page.locator('[data-testid="call-detail"][data-wacid="w1"][data-state="ready"]').waitFor();
    await page.locator('[data-testid="search-result"][data-wacid="w2"]').waitFor();
    await page.getByTestId('transcript-line').nth(2).waitFor();
    await page.waitForFunction(() => {
      const d = document.querySelector<HTMLAudioElement>('[data-testid="detail-audio"]')?.duration ?? 0;
      return Number.isFinite(d) && d > 0;
    });
    expect(await noSideScroll(page)).toBe(true);
    // Stacked: the transcript comes below the player, both the page's width.
    const player = (await page.getByTestId('detail-audio').boundingBox())!;
    const transcript = (await page.getByTestId('transcript').boundingBox())!;
    expect(transcript.y).toBeGreaterThan(player.y + player.height);
    expect(player.x + player.width).toBeLessThanOrEqual(375);
    // Results as cards: no table header shown, each cell labelled, every card within the screen.
    expect(await page.locator('.results thead').evaluate((t) => t.getBoundingClientRect().height)).toBeLessThanOrEqual(1);
    const rowBox = (await page.locator('[data-testid="search-result"][data-wacid="w1"]').boundingBox())!;
    expect(rowBox.x + rowBox.width).toBeLessThanOrEqual(375);
    expect(await page.locator('[data-testid="search-result"][data-wacid="w1"] [data-testid="result-outcome"]').evaluate((td) => getComputedStyle(td, '::before').content)).toBe('"Outcome"');
    // A transcript line is a tap target.
    expect((await page.getByTestId('transcript-line').nth(1).locator('button').boundingBox())!.height).toBeGreaterThanOrEqual(44);
    await page.getByTestId('transcript-line').nth(1).locator('button').click();
    await page.waitForFunction(() => document.querySelector<HTMLAudioElement>('[data-testid="detail-audio"]')!.currentTime >= 1.5);
    await screenshot(page, `web-agent-archive-phone.png`, { fullPage: true });
    // Opened from a link: closing stays on the page.
    await page.getByTestId('detail-close').click();
    await page.getByTestId('call-detail').waitFor({ state: 'detached' });
    expect(new URL(page.url()).pathname).toBe('/archive');
    expect(await noSideScroll(page)).toBe(true);
  });
});
