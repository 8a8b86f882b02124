/**
 * Reports in Debian Chromium: the real server with history on (PGlite),
 * today's scripted calls written to history as the recorder writes them; the supervisor page
 * shows the Reports section for today by default with the known figures per number and per
 * agent, "Download CSV" saves the server's CSV, and another range shows its own figures; a
 * page opened while the node's history cannot answer yet (503) fills in by itself.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { startOfDay } from '../../server/wallboard/compute.ts';
import { localDate } from '../../server/reports/range.ts';
import { login, until } from './harness.ts';
import { browserSuite } from './suite.ts';

const suite = browserSuite();

describe('reports on the supervisor page', () => {
  it('today by default: the figures per number and per agent; Download CSV saves the CSV; another range', async () => {
    const b = await suite.startBridge({ agents: ['agent1'], history: true, env: { SLA_SECONDS: '20' } });
    // One of the API key's business numbers (a number it does not have has no row of its own).
    const N = [...b.emu.ctx.phoneNumbers.values()][0]!.phoneNumber;
    const day0 = startOfDay(Date.now());
    const at = (ms: number) => new Date(day0 + ms).toISOString();
    const base = { type: 'call' as const, phoneId: 'phone-1', businessNumber: N, customer: { phoneNumber: '+15550300001' }, direction: 'inbound' as const, version: 3 };
    const facts = [
      { ...base, wacid: 'r-1', outcome: 'answered' as const, agent: 'agent1', receivedAt: at(1_000), answeredAt: at(11_000), endedAt: at(71_000), waitMs: 10_000, talkMs: 60_000 },
      { ...base, wacid: 'r-2', outcome: 'answered' as const, agent: 'agent1', receivedAt: at(100_000), answeredAt: at(130_000), endedAt: at(250_000), waitMs: 30_000, talkMs: 120_000 },
      { ...base, wacid: 'r-3', outcome: 'abandoned' as const, receivedAt: at(300_000), endedAt: at(305_000), waitMs: 5_000 },
      // Yesterday's: only in a range that holds yesterday.
      { ...base, wacid: 'r-y', outcome: 'missed' as const, receivedAt: at(-3_600_000), endedAt: at(-3_570_000), waitMs: 30_000 },
    ];
    for (const f of facts) await b.sb.history!.store.record(f);

    const page = await suite.loginPage('boss', '/supervisor', { context: { acceptDownloads: true } });

    const today = localDate(Date.now());
    const row = page.locator(`[data-testid="reports-number"][data-number="${N}"]`);
    await row.waitFor({ timeout: 15_000 });
    expect(await page.getByTestId('reports-from').inputValue()).toBe(today);
    expect(await page.getByTestId('reports-to').inputValue()).toBe(today);
    // Offered 3, answered 2, abandoned 1, missed 0, 1 of 3 within 20 s, ASA 20 s, AHT 90 s, no transfers.
    expect((await row.locator('td').allInnerTexts()).slice(1)).toEqual(['3', '2', '1', '0', '33%', '0:20', '1:30', '0']);
    expect(await page.locator('[data-testid="reports-agent"][data-name="agent1"] td').allInnerTexts()).toEqual(['agent1', '2', '2', '0', '3:00', '0:00', '1:30', '0']);

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('reports-csv-number').click()]);
    expect(download.suggestedFilename()).toBe(`switchboard-numbers-${today}_${today}.csv`);
    const saved = await readFile((await download.path())!, 'utf8');
    // The table's headings and units: percent and seconds, not `serviceLevel 0.33` and `asaMs`.
    expect(saved).toBe(`Business number,Offered,Answered,Abandoned,Missed,Service level (20 s) %,Avg. answer (s),Avg. handle (s),Transfers\r\n${N},3,2,1,0,33.3,20,90,0\r\n`);
    const cookie = await login(b.url, 'boss');
    expect(await (await fetch(`${b.url}/api/reports.csv?from=${today}&to=${today}&by=number`, { headers: { cookie } })).text()).toBe(saved);

    // Yesterday and today: the missed call counts too.
    const yesterday = localDate(day0 - 1);
    await page.getByTestId('reports-from').fill(yesterday);
    await page.getByTestId('reports-show').click();
    await until('the two-day report', async () => (await page.getByTestId('reports-tables').getAttribute('data-from')) === yesterday, 10_000, 100);
    expect((await row.locator('td').allInnerTexts()).slice(1, 5)).toEqual(['4', '2', '1', '1']);
    expect(await page.getByTestId('reports-csv-agent').getAttribute('href')).toBe(`/api/reports.csv?from=${yesterday}&to=${today}&by=agent`);

    // A node restarting: its history still opening, it answers the page's first reads 503
    // (what `server/reports` and `server/callbacks` say then; a restart's few seconds are too
    // racy to time for real). The page, opened meanwhile, fills in by itself: the report and
    // the call-back queue are read again, with no reload and no click.
    const unavailable = { status: 503, contentType: 'application/json', body: JSON.stringify({ error: { code: 'UNAVAILABLE', message: 'the call history database is not answering; try again shortly' } }) };
    const refused = { reports: 0, callbacks: 0 };
    await page.route('**/api/reports', (r) => (refused.reports++ < 2 ? r.fulfill(unavailable) : r.continue()));
    await page.route('**/api/callbacks?state=open,claimed', (r) => (refused.callbacks++ < 2 ? r.fulfill(unavailable) : r.continue()));
    await page.reload();
    await page.getByTestId('reports-error').waitFor({ timeout: 10_000 });
    await page.getByTestId('callback-queue-error').waitFor({ timeout: 10_000 });
    // Two refusals each, then the real answers: within the retries' first delays (≤ 1 s, ≤ 2 s),
    // inside the queue's 15 s reload (without the retry, the list stays "load failed" past 10 s).
    await row.waitFor({ timeout: 10_000 });
    await page.getByTestId('callback-queue-empty').waitFor({ timeout: 10_000 });
    expect(refused.reports).toBe(3);
    expect(refused.callbacks).toBeGreaterThanOrEqual(3); // the welcome's read may come after
    expect(await page.getByTestId('reports-error').isHidden()).toBe(true);
    expect(await page.getByTestId('callback-queue-error').isHidden()).toBe(true);
    expect(await page.getByTestId('reports-from').inputValue()).toBe(today);
    expect((await row.locator('td').allInnerTexts()).slice(1, 5)).toEqual(['3', '2', '1', '0']);
  }, 90_000);
});
