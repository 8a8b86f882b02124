/**
 * Sessions in Debian Chromium on two nodes sharing one Redis: a user's
 * own page lists their live sessions (device from the User-Agent, address, since; this one
 * marked); "Sign out everywhere" ends every one of them and closes their sockets on both
 * nodes; an admin on the other node ends another user's sessions, whose open tab is sent
 * to the login page and whose program socket is closed (4001). Each end is one audit row.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.ts';
import { login, PASSWORD, ProtocolClient, until, type Bridge } from './harness.ts';
import { browserSuite } from './suite.ts';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.close();
});
const suite = browserSuite();

async function twoNodes(): Promise<[Bridge, Bridge]> {
  const prefix = uniquePrefix('sessions');
  const env = { SESSION_SECRET: randomBytes(24).toString('base64url') };
  const a = await suite.startBridge({ agents: ['agent1', 'agent2'], admins: ['root'], redisUrl: redis.url, storePrefix: prefix, env, history: true });
  const b = await suite.startBridge({ agents: ['agent1', 'agent2'], admins: ['root'], redisUrl: redis.url, storePrefix: prefix, env, sharedEmulator: { emu: a.emu, secret: a.secret } });
  return [a, b];
}

async function socket(b: Bridge, cookie: string): Promise<ProtocolClient> {
  const c = suite.track(new ProtocolClient(b.url, cookie));
  await c.opened;
  await c.next('welcome');
  return c;
}

describe('sessions', () => {
  it('your sessions with device, address and since; Sign out everywhere closes them on every node', async () => {
    const [a, b] = await twoNodes();
    // agent1 also signed in from a program on node B, with a socket there.
    const programCookie = await login(b.url, 'agent1');
    const onB = await socket(b, programCookie);

    const page = await suite.loginPage('agent1', '/account');
    const rows = page.getByTestId('session');
    await until('two sessions', async () => (await rows.count()) === 2, 10_000);
    const current = page.locator('[data-testid="session"][data-current="true"]');
    expect(await current.locator('td').first().innerText()).toMatch(/^Headless Chrome \d+ on Linux \(this one\)$|^Chrome \d+ on Linux \(this one\)$/);
    expect(await current.locator('td').nth(1).innerText()).toBe('127.0.0.1');
    const other = page.locator('[data-testid="session"][data-current="false"]');
    expect(await other.locator('td').first().innerText()).toBe('a program');
    // No session id on the page.
    expect(await page.content()).not.toContain(programCookie.split('=')[1]!.split('.')[0]!);

    await page.getByTestId('sign-out-everywhere').click();
    await page.waitForURL(/\/login/);
    expect(await onB.closed).toBe(4001);
    expect((await fetch(`${b.url}/api/me`, { headers: { cookie: programCookie } })).status).toBe(401);

    const root = await login(a.url, 'root');
    await a.sb.audit.trail.flush();
    const trail = (await (await fetch(`${a.url}/api/audit?action=sessions.revoked`, { headers: { cookie: root } })).json()) as { items: Array<Record<string, unknown>> };
    expect(trail.items).toEqual([expect.objectContaining({ actor: 'agent1', detail: { count: 2, scope: 'all' } })]);
  }, 90_000);

  it("an admin on one node ends a user's sessions: their tab on the other node goes to login, their socket closes", async () => {
    const [a, b] = await twoNodes();
    const agentPage = await suite.loginPage('agent2', '/account');
    const programCookie = await login(a.url, 'agent2');
    const onA = await socket(a, programCookie);

    // The admin works on node B (a page of its own, on B's origin).
    const ctx = await suite.newContext({ viewport: { width: 1280, height: 900 } });
    const admin = await ctx.newPage();
    await admin.goto(`${b.url}/account`);
    await admin.waitForURL(/\/login/);
    await admin.getByTestId('login-name').fill('root');
    await admin.getByTestId('login-password').fill(PASSWORD);
    await admin.getByTestId('login-submit').click();
    await admin.waitForURL(/\/account/);
    await admin.getByTestId('admin-user').fill('agent2');
    await admin.getByTestId('admin-lookup').click();
    await until('agent2 has two sessions', async () => (await admin.getByTestId('admin-user-sessions').getAttribute('data-count')) === '2', 10_000);
    await admin.getByTestId('admin-end-all').click();
    await until('the notice', async () => (await admin.getByTestId('sessions-notice').innerText()) === '2 sessions ended for agent2.', 10_000);

    expect(await onA.closed).toBe(4001);
    await agentPage.waitForURL(/\/login/, { timeout: 15_000 });
    // The admin's own session is untouched.
    expect(await admin.getByTestId('session').count()).toBe(1);
    // An unknown user is a 404 naming the field; an agent may not end another's sessions.
    const root = await login(b.url, 'root');
    const unknown = await fetch(`${b.url}/api/users/nobody/sessions`, { headers: { cookie: root } });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { message: string } }).error.message).toMatch(/^name: /);
    const agent1 = await login(b.url, 'agent1');
    expect((await fetch(`${b.url}/api/users/agent2/sessions/end-all`, { method: 'POST', headers: { cookie: agent1, origin: b.url } })).status).toBe(403);
  }, 90_000);
});
