/**
 * Single sign-on with an OpenID Connect provider (`OIDC_ISSUER`, openid-client): the
 * authorization code flow with PKCE, its state and nonce checked.
 *
 * - `GET /auth/sso/start?next=/path` → 302 to the provider. The PKCE verifier, state, nonce
 *   and `next` travel in a short-lived cookie (`sb_sso`, HttpOnly, SameSite=Lax so the
 *   provider's redirect back carries it, MAC'd under SESSION_SECRET, 10 minutes).
 * - `GET /auth/sso/callback` → the code is exchanged (state, nonce and PKCE checked by
 *   openid-client); the user is the one linked to the identity (`<issuer>|<sub>`), else one
 *   made just in time (name from `preferred_username`, `email` or `sub`), or a user an admin
 *   made for single sign-on (no password) of that name. Roles come from `OIDC_ROLES_CLAIM`
 *   (a list or a space/comma-separated string, ID token first, then userinfo; names other
 *   than agent, supervisor, ops, admin are ignored) and are kept up to date at each login.
 *   Refused in words (a page, 403): no known role, a disabled user, a name taken by a
 *   password user, a state that does not match. A session starts as with a password
 *   (logout ends it); the page then moves on with a same-site navigation, so the
 *   SameSite=Strict session cookie goes with it.
 * Every login and refusal is an audit row (`login.success` / `login.failure`, `via: sso`).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { Hono, type Context } from 'hono';
import * as oidc from 'openid-client';
import { NAME_RULE } from '../../shared/admin.ts';
import { Role } from '../../shared/protocol.ts';
import type { Audit } from '../audit/trail.ts';
import { clientAddress, type AuthEnv } from '../auth/index.ts';
import { deviceOf, devicePartsOf } from '../auth/device.ts';
import { sessionCookie, type Sessions } from '../auth/session.ts';
import type { Users } from '../auth/users.ts';
import type { SsoSettings } from '../config/config.ts';
import type { Logger } from '../log/logger.ts';
import type { Directory } from './directory.ts';
import type { AdminStore } from './store.ts';

const FLOW_COOKIE = 'sb_sso';
const FLOW_TTL_MS = 10 * 60_000;

export interface SsoOptions {
  settings: SsoSettings;
  publicUrl: string;
  users: Users;
  sessions: Sessions;
  store: AdminStore;
  directory: Directory;
  audit: Audit;
  /** SESSION_SECRET: MACs the flow cookie. */
  secret: string;
  log: Pick<Logger, 'info' | 'warn'>;
  now?: () => number;
}

interface Flow {
  state: string;
  nonce: string;
  verifier: string;
  next: string;
  exp: number;
}

/** A refusal the user reads. */
class Refused extends Error {}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);
const page = (title: string, body: string, head = '') => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">${head}
<title>${escapeHtml(title)} · Switchboard</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/assets/style.css"></head>
<body><main class="layout"><section class="card">${body}</section></main></body></html>`;

/** The roles a claim value names (a list, or one string separated by spaces or commas); unknown names ignored. */
export function rolesFrom(value: unknown): Role[] {
  const names = Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : typeof value === 'string' ? value.split(/[\s,]+/) : [];
  return [...new Set(names.map((n) => n.trim().toLowerCase()).filter((n): n is Role => Role.safeParse(n).success))];
}

/** A claim by name or dotted path (`realm_access.roles`). */
export function claimAt(claims: Record<string, unknown>, path: string): unknown {
  if (path in claims) return claims[path];
  let v: unknown = claims;
  for (const k of path.split('.')) v = v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined;
  return v;
}

/** A user name from the identity's claims (the part of an email before the @, characters outside the name rule made `-`). */
export function nameFrom(claims: Record<string, unknown>): string {
  const raw = [claims.preferred_username, typeof claims.email === 'string' ? claims.email.split('@')[0] : undefined, claims.sub].find((v): v is string => typeof v === 'string' && v.length > 0) ?? 'user';
  const name = raw.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 64);
  return NAME_RULE.test(name) ? name : 'user';
}

/** `next` when it is a path on this server, else `/`. */
const safeNext = (next: string | undefined) => (next && next.startsWith('/') && !next.startsWith('//') && !next.startsWith('/\\') ? next : '/');

export function createSso(o: SsoOptions): { routes: Hono<AuthEnv> } {
  const now = o.now ?? Date.now;
  const redirectUri = `${o.publicUrl.replace(/\/+$/, '')}/auth/sso/callback`;
  const secure = o.publicUrl.startsWith('https:');
  let discovered: Promise<oidc.Configuration> | undefined;
  /** The provider's metadata, read once (again after a failure). */
  const configuration = () =>
    (discovered ??= oidc
      .discovery(new URL(o.settings.issuer), o.settings.clientId, o.settings.clientSecret, undefined, new URL(o.settings.issuer).protocol === 'http:' ? { execute: [oidc.allowInsecureRequests] } : undefined)
      .catch((err: Error) => {
        discovered = undefined;
        throw err;
      }));

  const mac = (v: string) => createHmac('sha256', o.secret).update(`sso-flow:${v}`).digest('base64url');
  const sealFlow = (f: Flow) => {
    const v = Buffer.from(JSON.stringify(f)).toString('base64url');
    return `${v}.${mac(v)}`;
  };
  const openFlow = (cookie: string | undefined): Flow | undefined => {
    const [v, m] = (cookie ?? '').split('.');
    if (!v || !m || m.length !== mac(v).length || !timingSafeEqual(Buffer.from(m), Buffer.from(mac(v)))) return undefined;
    try {
      const f = JSON.parse(Buffer.from(v, 'base64url').toString('utf8')) as Flow;
      return f.exp > now() ? f : undefined;
    } catch {
      return undefined;
    }
  };
  const flowCookie = (value: string, maxAgeS: number) => `${FLOW_COOKIE}=${value}; Path=/auth/sso; HttpOnly; SameSite=Lax; Max-Age=${maxAgeS}${secure ? '; Secure' : ''}`;
  const readFlowCookie = (c: Context) =>
    c.req
      .header('cookie')
      ?.split(';')
      .map((p) => p.trim())
      .find((p) => p.startsWith(`${FLOW_COOKIE}=`))
      ?.slice(FLOW_COOKIE.length + 1);

  const routes = new Hono<AuthEnv>();
  routes.get('/auth/sso/start', async (c) => {
    let cfg: oidc.Configuration;
    try {
      cfg = await configuration();
    } catch (err) {
      o.log.warn({ err: (err as Error).message }, 'single sign-on: the provider could not be reached');
      return c.html(page('Single sign-on', '<h1 class="card-title">Single sign-on is not reachable</h1><p data-testid="sso-error">The identity provider did not answer. Try again in a moment.</p>'), 503);
    }
    const flow: Flow = { state: oidc.randomState(), nonce: oidc.randomNonce(), verifier: oidc.randomPKCECodeVerifier(), next: safeNext(c.req.query('next')), exp: now() + FLOW_TTL_MS };
    const url = oidc.buildAuthorizationUrl(cfg, {
      redirect_uri: redirectUri,
      scope: 'openid profile email',
      code_challenge: await oidc.calculatePKCECodeChallenge(flow.verifier),
      code_challenge_method: 'S256',
      state: flow.state,
      nonce: flow.nonce,
    });
    c.header('Set-Cookie', flowCookie(sealFlow(flow), FLOW_TTL_MS / 1000));
    c.header('Cache-Control', 'no-store');
    return c.redirect(url.href, 302);
  });

  routes.get('/auth/sso/callback', async (c) => {
    const address = clientAddress(c);
    c.header('Cache-Control', 'no-store');
    c.header('Set-Cookie', flowCookie('', 0), { append: true });
    const refuse = (words: string, reason: string, actor = 'unknown user', status: 400 | 403 = 403) => {
      o.audit({ action: 'login.failure', actor, address, detail: { via: 'sso', reason } });
      o.log.warn({ user: actor, address, reason }, 'single sign-on refused');
      return c.html(page('Sign-in refused', `<h1 class="card-title">Sign-in refused</h1><p data-testid="sso-error">${escapeHtml(words)}</p><p><a class="btn" href="/login">Back to the login page</a></p>`), status);
    };
    const flow = openFlow(readFlowCookie(c));
    if (!flow) return refuse('This sign-in was not started here, or took longer than 10 minutes. Start again from the login page.', 'no sign-in in progress', undefined, 400);
    let claims: Record<string, unknown>;
    try {
      const cfg = await configuration();
      const current = new URL(c.req.url);
      const tokens = await oidc.authorizationCodeGrant(cfg, new URL(`${redirectUri}${current.search}`), { pkceCodeVerifier: flow.verifier, expectedState: flow.state, expectedNonce: flow.nonce, idTokenExpected: true });
      claims = { ...(tokens.claims() ?? {}) };
      if (claimAt(claims, o.settings.rolesClaim) === undefined && typeof claims.sub === 'string') claims = { ...(await oidc.fetchUserInfo(cfg, tokens.access_token, claims.sub)), ...claims };
    } catch (err) {
      const e = err as Error & { code?: string };
      const why = `${e.message}${e.cause instanceof Error ? `: ${e.cause.message}` : ''}`;
      const words = /"state"/.test(why) ? 'The answer from the identity provider does not belong to this sign-in (its state does not match). Start again from the login page.' : 'The identity provider did not confirm the sign-in. Start again from the login page.';
      return refuse(words, `${e.code ?? 'error'}: ${why}`.slice(0, 200), undefined, 400);
    }
    const subject = `${o.settings.issuer}|${String(claims.sub)}`;
    try {
      const name = await userFor(subject, claims);
      const cookie = await o.sessions.create(name, o.users.passwordHashOf(name), { device: deviceOf(c.req.header('user-agent')), address, parts: devicePartsOf(c.req.header('user-agent')) });
      o.audit({ action: 'login.success', actor: name, address, detail: { via: 'sso' } });
      o.log.info({ user: name }, 'login (single sign-on)');
      c.header('Set-Cookie', sessionCookie(cookie, { secure, maxAgeS: Math.floor(o.sessions.ttlMs / 1000) }), { append: true });
      const next = escapeHtml(flow.next);
      return c.html(page('Signed in', `<h1 class="card-title">Signed in</h1><p><a class="btn btn-go" data-testid="sso-continue" href="${next}">Continue</a></p>`, `<meta http-equiv="refresh" content="0;url=${next}">`));
    } catch (err) {
      if (err instanceof Refused) return refuse(err.message, err.message, nameFrom(claims));
      throw err;
    }
  });

  /** The user of an identity, made or brought up to date; throws `Refused` in words. */
  async function userFor(subject: string, claims: Record<string, unknown>): Promise<string> {
    const roles = rolesFrom(claimAt(claims, o.settings.rolesClaim));
    const linked = o.users.nameOfSso(subject);
    const name = linked ?? nameFrom(claims);
    if (roles.length === 0) throw new Refused(`Your account at the identity provider has no Switchboard role: its "${o.settings.rolesClaim}" claim names none of agent, supervisor, ops, admin. Ask an administrator to give you one.`);
    const stored = o.directory.current.users.find((u) => u.name === name);
    if (stored && !stored.enabled) throw new Refused('This account is disabled. Ask an administrator to enable it.');
    if (!stored) {
      const made = await o.store.addUser({ name, displayName: typeof claims.name === 'string' ? claims.name.slice(0, 100) : '', email: typeof claims.email === 'string' ? claims.email.slice(0, 200) : '', roles, enabled: true, teams: [], skills: {}, passwordHash: null, ssoSubject: subject });
      if (!made) throw new Refused(`A user named "${name}" was added meanwhile. Try again.`);
      o.audit({ action: 'user.added', actor: 'sso', subject: name, detail: { roles, sso: true } });
    } else {
      if (!linked && (stored.ssoSubject !== undefined || stored.hasPassword)) throw new Refused(`A user named "${name}" exists already and is not linked to this sign-in. Ask an administrator.`);
      const sameRoles = [...stored.roles].sort().join() === [...roles].sort().join();
      if (linked && sameRoles) return name;
      await o.store.updateUser({ ...stored, roles, ssoSubject: subject });
      o.audit({ action: 'user.updated', actor: 'sso', subject: name, detail: { changed: sameRoles ? ['sso'] : ['roles'], 'roles.before': stored.roles, 'roles.after': roles } });
    }
    await o.directory.changed(`user:${name}`);
    return name;
  }

  return { routes };
}
