/**
 * The audit page and its CSV in Debian Chromium: an admin opens
 * `/admin/audit`, sees the trail newest first, filters it by action and user, and
 * "Download CSV" saves what the server's `/api/audit.csv` answers for that search; an agent
 * is refused the page. No row shown holds the password tried.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { login, until } from './harness.ts';
import { browserSuite } from './suite.ts';

const suite = browserSuite();
const WRONG = 'Wrong-Password-5519';

describe('audit page', () => {
  it('shows the trail, filters by action and user, downloads the CSV of the search; agents are refused', async () => {
    const b = await suite.startBridge({ agents: ['agent1'], admins: ['root'], history: true });
    const failed = await fetch(`${b.url}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json', origin: b.url }, body: JSON.stringify({ name: 'agent1', password: WRONG }) });
    expect(failed.status).toBe(401);
    await login(b.url, 'ops');

    const page = await suite.loginPage('root', '/admin/audit', { context: { acceptDownloads: true } });
    // The trail is written a moment after each action: search again until root's own login is in.
    await until(
      'the rows',
      async () => {
        if ((await page.getByTestId('audit-row').count()) >= 3) return true;
        await page.getByTestId('audit-search').click();
        return false;
      },
      15_000,
      500,
    );
    // Newest first: root's own login, then ops's, then the failure.
    expect(await page.getByTestId('audit-row').first().getAttribute('data-actor')).toBe('root');
    expect(await page.getByTestId('audit-rows').innerText()).not.toContain(WRONG);

    await page.getByTestId('audit-action').selectOption('login.failure');
    await page.getByTestId('audit-user').fill('agent1');
    await page.getByTestId('audit-search').click();
    await until('the filtered rows', async () => (await page.getByTestId('audit-row').count()) === 1 && (await page.getByTestId('audit-row').getAttribute('data-action')) === 'login.failure', 10_000);
    expect(await page.getByTestId('audit-row').locator('td').allInnerTexts()).toEqual([expect.any(String), 'agent1', 'Login refused', '', '', '127.0.0.1', 'reason: wrong name or password']);

    // Dates are whole days of the browser: today keeps the row, tomorrow has none.
    const day = (plus: number) => {
      const d = new Date(Date.now() + plus * 86_400_000);
      return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
    };
    await page.getByTestId('audit-from').fill(day(1));
    await page.getByTestId('audit-search').click();
    await page.getByTestId('audit-empty').waitFor({ state: 'visible', timeout: 10_000 });
    await page.getByTestId('audit-from').fill(day(0));
    await page.getByTestId('audit-to').fill(day(0));
    await page.getByTestId('audit-search').click();
    await until('the row of today', async () => (await page.getByTestId('audit-row').count()) === 1, 10_000);
    await page.getByTestId('audit-from').fill('');
    await page.getByTestId('audit-to').fill('');
    await page.getByTestId('audit-search').click();
    await until('the row again', async () => (await page.getByTestId('audit-rows').getAttribute('data-phase')) === 'idle' && (await page.getByTestId('audit-row').count()) === 1, 10_000);

    const href = await page.getByTestId('audit-csv').getAttribute('href');
    expect(href).toBe('/api/audit.csv?user=agent1&action=login.failure');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByTestId('audit-csv').click()]);
    expect(download.suggestedFilename()).toMatch(/^switchboard-audit-\d{4}-\d{2}-\d{2}\.csv$/);
    const saved = await readFile((await download.path())!, 'utf8');
    const lines = saved.trimEnd().split('\r\n');
    expect(lines[0]).toBe('at,actor,action,subject,target,address,detail');
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(/^\d{4}-\d{2}-\d{2}T[\d:.]+Z,agent1,login\.failure,,,127\.0\.0\.1,"{""reason"":""wrong name or password""}"$/);
    expect(saved).not.toContain(WRONG);
    const cookie = await login(b.url, 'ops');
    expect(await (await fetch(`${b.url}${href}`, { headers: { cookie } })).text()).toBe(saved);

    // An agent gets the "not your page" answer.
    const agent = await login(b.url, 'agent1');
    expect((await fetch(`${b.url}/admin/audit`, { headers: { cookie: agent } })).status).toBe(403);
  }, 90_000);
});
