/**
 * Single sign-on in Debian Chromium against a real OpenID provider (`oidc-provider` on a
 * free loopback port) with password login off: a user is made just in time with the
 * roles of the provider's claim and lands on their page; a user whose claim names no
 * known role is refused in words; an answer whose state does not match the sign-in is
 * refused; logout ends the local session; a user an admin disabled is refused; every
 * login and refusal is an audit row, and no row holds a token, code or secret.
 */
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOidcProvider, type TestOidcProvider } from '../support/oidc.ts';
import { until, type Bridge } from './harness.ts';
import { browserSuite } from './suite.ts';

const suite = browserSuite();
let op: TestOidcProvider;
beforeAll(async () => {
  op = await startOidcProvider({
    accounts: {
      olga: { name: 'Olga O', email: 'olga@example.com', roles: ['agent', 'unknown-thing'] },
      ada: { name: 'Ada A', roles: 'admin' },
      nora: { name: 'Nora N', roles: ['guest'] },
    },
  });
});
afterAll(async () => {
  await op?.close();
});

async function startSsoBridge(): Promise<Bridge> {
  const b = await suite.startBridge({
    agents: ['agent1'],
    history: true,
    env: { OIDC_ISSUER: op.issuer, OIDC_CLIENT_ID: op.clientId, OIDC_CLIENT_SECRET: op.clientSecret, OIDC_ROLES_CLAIM: 'roles', PASSWORD_LOGIN: 'off' },
  });
  op.register(`${b.url}/auth/sso/callback`);
  return b;
}

/** Through the login page's single sign-on link and the provider's login and consent pages; stops back at the app. */
async function ssoLogin(ctx: BrowserContext, b: Bridge, account: string): Promise<{ page: Page }> {
  const page = await ctx.newPage();
  await page.goto(`${b.url}/login`);
  await page.getByTestId('login-sso').click();
  await page.waitForURL(`${op.issuer}/**`);
  await page.locator('input[name="login"]').fill(account);
  await page.locator('input[name="password"]').fill('anything');
  await page.locator('button.login-submit').click();
  // The consent page (first sign-in of this account to this client).
  await until('back at the app', async () => {
    if (page.url().startsWith(b.url)) return true;
    const consent = page.locator('button.login-submit');
    if (await consent.isVisible().catch(() => false)) await consent.click().catch(() => undefined);
    return false;
  }, 20_000, 200);
  return { page };
}

const me = (page: Page) => page.evaluate(async () => {
  const r = await fetch('/api/me');
  return r.ok ? ((await r.json()) as { name: string; roles: string[] }) : r.status;
});

describe('single sign-on (OpenID Connect, authorization code + PKCE)', () => {
  it('login makes the user with the mapped roles; no role refused; a wrong state refused; logout ends the session; disabled refused', async () => {
    const b = await startSsoBridge();

    // Password login is off, said in words; the login page offers single sign-on only.
    const pw = await fetch(`${b.url}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'agent1', password: 'correct horse battery' }) });
    expect(pw.status).toBe(403);
    expect(((await pw.json()) as { error: { message: string } }).error.message).toBe('Password login is off on this server. Sign in with single sign-on.');

    // olga: made just in time, roles from the claim (the unknown one ignored), lands on the phone page.
    const olgaCtx = await suite.newContext({ viewport: { width: 1280, height: 900 } });
    const { page: olga } = await ssoLogin(olgaCtx, b, 'olga');
    await olga.waitForURL(`${b.url}/`);
    expect(await olga.getByTestId('login-form').count()).toBe(0);
    expect(await me(olga)).toMatchObject({ name: 'olga', roles: ['agent'] });

    // nora: no known role, refused in words; no session.
    const noraCtx = await suite.newContext({ viewport: { width: 1280, height: 900 } });
    const { page: nora } = await ssoLogin(noraCtx, b, 'nora');
    expect(await nora.getByTestId('sso-error').innerText()).toBe('Your account at the identity provider has no Switchboard role: its "roles" claim names none of agent, supervisor, ops, admin. Ask an administrator to give you one.');
    expect(await me(nora)).toBe(401);

    // A sign-in started outside this browser (its flow cookie kept aside): the browser, without
    // it, is refused before the code is used; the same answer with another state, with the
    // flow cookie, is refused too.
    const start = await fetch(`${b.url}/auth/sso/start`, { redirect: 'manual' });
    const flowCookie = start.headers.get('set-cookie')!.split(';')[0]!;
    const strayCtx = await suite.newContext({ viewport: { width: 1280, height: 900 } });
    const stray = await strayCtx.newPage();
    await stray.goto(start.headers.get('location')!);
    await stray.locator('input[name="login"]').fill('ada');
    await stray.locator('input[name="password"]').fill('anything');
    await stray.locator('button.login-submit').click();
    await until('the callback without its flow', async () => {
      if (stray.url().startsWith(`${b.url}/auth/sso/callback`)) return true;
      const consent = stray.locator('button.login-submit');
      if (await consent.isVisible().catch(() => false)) await consent.click().catch(() => undefined);
      return false;
    }, 20_000, 200);
    expect(await stray.getByTestId('sso-error').innerText()).toBe('This sign-in was not started here, or took longer than 10 minutes. Start again from the login page.');
    const tampered = new URL(stray.url());
    tampered.searchParams.set('state', 'not-the-state-of-this-sign-in');
    const wrong = await fetch(tampered.href, { headers: { cookie: flowCookie }, redirect: 'manual' });
    expect(wrong.status).toBe(400);
    expect(wrong.headers.get('set-cookie') ?? '').not.toContain('sb_session=');
    expect(await wrong.text()).toContain('The answer from the identity provider does not belong to this sign-in (its state does not match). Start again from the login page.');
    // ada, properly: an admin.
    const adaCtx = await suite.newContext({ viewport: { width: 1280, height: 900 } });
    const { page: ada } = await ssoLogin(adaCtx, b, 'ada');
    await until('ada signed in', async () => (await me(ada)) !== 401, 10_000);
    expect(await me(ada)).toMatchObject({ name: 'ada', roles: ['admin'] });

    // Logout ends olga's local session.
    expect(await olga.evaluate(async () => (await fetch('/api/logout', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).status)).toBe(204);
    expect(await me(olga)).toBe(401);

    // The admin disables olga: her next single sign-on is refused in words.
    const disabled = await ada.evaluate(async () => (await fetch('/api/admin/users/olga', { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ enabled: false }) })).status);
    expect(disabled).toBe(204);
    const again = await ssoLogin(await suite.newContext({ viewport: { width: 1280, height: 900 } }), b, 'olga');
    expect(await again.page.getByTestId('sso-error').innerText()).toBe('This account is disabled. Ask an administrator to enable it.');
    expect(await me(again.page)).toBe(401);

    // The audit trail: one row per login and refusal, with no secret in them.
    await b.sb.audit.trail.flush();
    const rows = await b.sb.history!.store.db.query<{ action: string; actor: string; detail: Record<string, unknown> | null }>(`SELECT action, actor, detail FROM audit_log WHERE detail->>'via' = 'sso' OR actor = 'sso' ORDER BY at, id`);
    const described = rows.map((r) => (r.action === 'login.failure' && r.actor === 'unknown user' && /state/i.test(String(r.detail?.reason)) ? 'login.failure unknown user: state' : `${r.action} ${r.actor} ${r.detail?.reason ?? ''}`.trim()));
    // Rows of one millisecond have no order among them: compared as a set of rows.
    expect(described.sort()).toEqual(
      [
        'user.added sso',
        'login.success olga',
        'login.failure nora Your account at the identity provider has no Switchboard role: its "roles" claim names none of agent, supervisor, ops, admin. Ask an administrator to give you one.',
        'login.failure unknown user: state',
        'login.failure unknown user no sign-in in progress',
        'user.added sso',
        'login.success ada',
        'login.failure olga This account is disabled. Ask an administrator to enable it.',
      ].sort(),
    );
    const text = JSON.stringify(await b.sb.history!.store.db.query('SELECT * FROM audit_log'));
    expect(text).not.toContain(op.clientSecret);
    expect(text).not.toContain(tampered.searchParams.get('code')!);
    expect(text).not.toContain(flowCookie.split('=')[1]!);
  }, 180_000);
});
