/**
 * Login, logout, "who am I", and the role checks every `/api` route and the WebSocket
 * upgrade go through.
 *
 * - `POST /api/login {name, password}` → 200 `{name, roles, demo}` + session cookie (HttpOnly,
 *   SameSite=Strict), or 401 UNAUTHORIZED (same answer for an unknown name and a wrong
 *   password). Failed logins are limited per name and address, per address, and (slowly)
 *   per name from all addresses (429 with Retry-After): see `LOGIN_LIMITS`.
 * - `POST /api/logout` → 204; the session is deleted from the store and its WebSockets are
 *   closed on every node (server/gateway).
 * - `GET /api/me` → `{name, roles, demo}` or 401.
 * - `requireUser(...roles)`: 401 without a session, 403 without one of the roles.
 * - State-changing requests (anything but GET/HEAD/OPTIONS) must come from our own origin:
 *   PUBLIC_URL, see `sameOrigin` in session.ts.
 */
import type { IncomingMessage } from 'node:http';
import type { Context, MiddlewareHandler } from 'hono';
import { Hono } from 'hono';
import { z } from 'zod';
import type { Role, User } from '../../shared/protocol.ts';
import type { Logger } from '../log/logger.ts';
import { HttpBadRequest, HttpError, HttpForbidden, HttpNotFound, HttpTooManyRequests, HttpUnauthorized } from '../ops/errors.ts';
import { deviceOf, devicePartsOf } from './device.ts';
import type { Rations } from '../store/rations.ts';
import { SESSION_COOKIE, Sessions, clearedCookie, hostAllowed, readCookie, sameOrigin, sessionCookie, type OriginPolicy, type Session } from './session.ts';
import type { Users } from './users.ts';
import type { Audit } from '../audit/trail.ts';
import { parseBody } from '../ops/validate.ts';

export { Sessions, sameOrigin, readCookie, SESSION_COOKIE, type OriginPolicy, type Session } from './session.ts';
export { Users, demoUsers, loadUsersFile, hashPassword, DEMO_USERS, type Account } from './users.ts';

export type AuthEnv = { Variables: { user: User; requestId?: string } };

const LoginBody = z.object({
  name: z.string({ error: 'is required (a string)' }).min(1, 'must not be empty').max(64, 'must be at most 64 characters'),
  password: z.string({ error: 'is required (a string)' }).min(1, 'must not be empty').max(1024, 'must be at most 1024 characters'),
});

/**
 * Login attempts per fixed window, counted in the store (so every node shares them) BEFORE
 * the password is checked: an attempt first takes a slot of each of its counters, in one
 * atomic step each; over any limit it gives them all back and gets 429 without a check; a
 * right password gives them back too, a wrong one keeps them. So within one window at most
 * `perName` wrong passwords for a name are ever checked from one address, however many
 * arrive at once and on however many nodes.
 *
 * Counters (five wrong guesses from anywhere used to lock a name out for everyone):
 * - the name from this address: `perName` per `windowMs`, and `perNameSlow` per `slowWindowMs`;
 * - this address, any name: `perAddress` per `windowMs`;
 * - the name from every address: `perNameAllAddresses` per `slowWindowMs`: the slow lockout
 *   that bounds a guesser with many addresses. It is above `perNameSlow`, so one address
 *   alone can never lock a name out for its owner elsewhere.
 * The counters expire with their window (bounded memory).
 */
export interface LoginLimits {
  perName: number;
  perAddress: number;
  windowMs: number;
  perNameSlow: number;
  perNameAllAddresses: number;
  slowWindowMs: number;
}
export const LOGIN_LIMITS: LoginLimits = { perName: 5, perAddress: 20, windowMs: 60_000, perNameSlow: 20, perNameAllAddresses: 100, slowWindowMs: 3_600_000 };

/**
 * The client's address for the per-address limit: the TCP peer (X-Forwarded-For is not
 * trusted: anybody can send it). IPv6 addresses count per /64, the block one host gets.
 */
export function clientAddress(c: Context): string {
  const raw = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket?.remoteAddress;
  if (!raw) return 'unknown';
  const a = raw.startsWith('::ffff:') && raw.includes('.') ? raw.slice(7) : raw;
  if (!a.includes(':')) return a;
  const [head, tail = ''] = a.split('::') as [string, string?];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const full = a.includes('::') ? [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t] : h;
  return `${full.slice(0, 4).map((x) => x.toLowerCase().replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

export interface Auth {
  /** `/api/login`, `/api/logout`, `/api/me` (mount at the root). */
  routes: Hono<AuthEnv>;
  /** Session + role gate; with no roles any logged-in user passes. */
  requireUser(...roles: Role[]): MiddlewareHandler<AuthEnv>;
  /** Same-origin gate for state-changing methods. */
  sameOriginWrites: MiddlewareHandler;
  /** The logged-in user of a raw request (for the WebSocket upgrade), or undefined. */
  userOf(req: Request): Promise<User | undefined>;
  /** The user and the session of a raw request (the gateway ties sockets to the session). */
  sessionOf(req: Request): Promise<{ user: User; session: Session } | undefined>;
  /** The same-origin check with this server's origin policy (PUBLIC_URL). */
  sameOrigin(req: Request, required: boolean): boolean;
  /** Whether a Host header names this server (PUBLIC_URL; see `hostAllowed` in session.ts). */
  hostAllowed(host: string | null): boolean;
  sessions: Sessions;
  users: Users;
}

export interface AuthOptions {
  users: Users;
  sessions: Sessions;
  /** Where the login counters live (shared by every node). */
  store: Pick<Rations, 'countInWindow'>;
  /** PUBLIC_URL, or (demo mode) the bind address: see `sameOrigin`. */
  origin?: OriginPolicy;
  loginLimits?: Partial<LoginLimits>;
  log: Logger;
  /** Demo mode: `/api/me` says so (the page then offers "simulate an incoming call"). */
  demo?: boolean;
  /** A user logged out (after the session is gone): an agent is set away (the next login starts with the ready-check). */
  onLogout?: (user: User) => void;
  /** The audit trail: logins (success, failure with the name tried), logouts. */
  audit?: Audit | undefined;
  /** PASSWORD_LOGIN=off: `POST /api/login` is refused (single sign-on only). Default true. */
  passwordLogin?: boolean;
  /** Single sign-on is configured (`/auth/sso/start`): the login page offers it. */
  sso?: boolean;
}

export function createAuth(deps: AuthOptions): Auth {
  const { users, sessions, log, store } = deps;
  const demo = deps.demo ?? false;
  const audit: Audit = deps.audit ?? (() => undefined);
  /** A name that is no user's may be a password typed into the wrong field: never logged. */
  const loggedName = (name: string) => (users.get(name) ? name : 'unknown user');
  const origin = deps.origin ?? {};
  const given = { ...LOGIN_LIMITS, ...deps.loginLimits };
  // A raised fast limit raises the slow ones it would otherwise run into (tests log in by the hundred).
  const perNameSlow = deps.loginLimits?.perNameSlow ?? Math.max(given.perNameSlow, given.perName);
  const limits: LoginLimits = { ...given, perNameSlow, perNameAllAddresses: deps.loginLimits?.perNameAllAddresses ?? Math.max(given.perNameAllAddresses, 5 * perNameSlow) };

  async function sessionOf(req: Request): Promise<{ user: User; session: Session } | undefined> {
    const session = await sessions.lookup(readCookie(req.headers.get('cookie'), SESSION_COOKIE));
    const user = session ? users.get(session.user) : undefined;
    // Opened with another password hash (the password changed since), or before sessions carried one: over.
    const hash = session ? users.passwordHashOf(session.user) : undefined;
    if (!user || !session || hash === undefined || session.credential !== sessions.fingerprint(hash)) return undefined;
    return { user, session };
  }
  const userOf = async (req: Request) => (await sessionOf(req))?.user;
  const isSameOrigin = (req: Request, required: boolean) => sameOrigin(req, required, origin);

  const secure = (c: Context) =>
    origin.publicUrl?.startsWith('https:') || (c.req.header('x-forwarded-proto') ?? new URL(c.req.url).protocol.replace(':', '')).startsWith('https');

  const sameOriginWrites: MiddlewareHandler = async (c, next) => {
    const m = c.req.method;
    if (m !== 'GET' && m !== 'HEAD' && m !== 'OPTIONS' && !isSameOrigin(c.req.raw, false)) {
      throw new HttpForbidden('cross-origin request refused');
    }
    await next();
  };

  const requireUser =
    (...roles: Role[]): MiddlewareHandler<AuthEnv> =>
    async (c, next) => {
      const user = await userOf(c.req.raw);
      if (!user) throw new HttpUnauthorized('log in first');
      if (roles.length > 0 && !roles.some((r) => user.roles.includes(r))) {
        throw new HttpForbidden(`needs role ${roles.join(' or ')}`);
      }
      c.set('user', user);
      await next();
    };

  const routes = new Hono<AuthEnv>();
  routes.use('/api/*', sameOriginWrites);

  // What the login page offers (public).
  routes.get('/api/auth/options', (c) => c.json({ password: deps.passwordLogin !== false, sso: deps.sso === true }));

  routes.post('/api/login', async (c) => {
    if (deps.passwordLogin === false) throw new HttpError(403, 'PASSWORD_LOGIN_OFF', 'Password login is off on this server. Sign in with single sign-on.');
    const body = await parseBody(c, LoginBody, '{"name": string, "password": string}');
    // Take a slot of every counter first (see LoginLimits), then check the password.
    const address = clientAddress(c);
    const counters = [
      { key: `login:name:${address}|${body.name}`, max: limits.perName, windowMs: limits.windowMs, what: 'name from this address' },
      { key: `login:addr:${address}`, max: limits.perAddress, windowMs: limits.windowMs, what: 'address' },
      { key: `login:name-slow:${address}|${body.name}`, max: limits.perNameSlow, windowMs: limits.slowWindowMs, what: 'name from this address' },
      { key: `login:name-all:${body.name}`, max: limits.perNameAllAddresses, windowMs: limits.slowWindowMs, what: 'name from all addresses together' },
    ];
    const counts = await Promise.all(counters.map((k) => store.countInWindow(k.key, 1, k.windowMs)));
    const giveBack = () => Promise.all(counters.map((k) => store.countInWindow(k.key, -1, k.windowMs)));
    const over = counters.flatMap((k, i) => (counts[i]!.count > k.max ? [{ ...k, resetInMs: counts[i]!.resetInMs }] : []));
    if (over.length > 0) {
      await giveBack();
      const waitMs = Math.max(...over.map((k) => k.resetInMs));
      log.warn({ user: loggedName(body.name), address, limit: over[0]!.what }, 'login refused: too many failed attempts');
      audit({ action: 'login.failure', actor: body.name, address, detail: { reason: 'rate-limited' } });
      throw new HttpTooManyRequests(`too many failed logins for this ${over[0]!.what}; try again after Retry-After seconds`, waitMs, 'RATE_LIMITED');
    }
    let user: User | undefined;
    try {
      user = await users.check(body.name, body.password);
    } catch (err) {
      await giveBack();
      throw err;
    }
    if (user && users.isDisabled(user.name)) {
      await giveBack();
      log.warn({ user: user.name, address }, 'login refused: the account is disabled');
      audit({ action: 'login.failure', actor: user.name, address, detail: { reason: 'disabled' } });
      throw new HttpError(403, 'ACCOUNT_DISABLED', 'This account is disabled. Ask an administrator to enable it.');
    }
    if (!user) {
      log.warn({ user: loggedName(body.name), address }, 'login failed');
      audit({ action: 'login.failure', actor: body.name, address, detail: { reason: 'wrong name or password' } });
      throw new HttpUnauthorized('wrong name or password');
    }
    await giveBack();
    const cookie = await sessions.create(user.name, users.passwordHashOf(user.name), { device: deviceOf(c.req.header('user-agent')), address, parts: devicePartsOf(c.req.header('user-agent')) });
    c.header('Set-Cookie', sessionCookie(cookie, { secure: secure(c), maxAgeS: Math.floor(sessions.ttlMs / 1000) }));
    log.info({ user: user.name }, 'login');
    audit({ action: 'login.success', actor: user.name, address });
    return c.json({ ...user, demo });
  });

  routes.post('/api/logout', async (c) => {
    const cookie = readCookie(c.req.header('cookie'), SESSION_COOKIE);
    const ending = await sessions.lookup(cookie);
    const who = await userOf(c.req.raw).catch(() => undefined);
    await sessions.destroy(cookie);
    if (who) deps.onLogout?.(who);
    if (ending) audit({ action: 'logout', actor: ending.user, address: clientAddress(c) });
    c.header('Set-Cookie', clearedCookie(secure(c)));
    return c.body(null, 204);
  });

  // The page's shape (web-agent/src/api.ts `Me`): the user's fields at the top level.
  routes.get('/api/me', requireUser(), (c) => c.json({ ...c.get('user'), demo }));

  // ---- sessions: your own, and (admins) anyone's -----------------------
  // Ending a session deletes it from the store and publishes its id on `session-ended`:
  // every node's gateway closes its sockets (4001), as on logout.
  const current = async (c: Context) => (await sessionOf(c.req.raw))?.session.sid;
  /** The fingerprint a session of `name` must carry to be live (see sessionOf). */
  const credentialOf = (name: string) => {
    const hash = users.passwordHashOf(name);
    return hash === undefined ? '' : sessions.fingerprint(hash);
  };
  const known = (name: string) => {
    if (!users.get(name)) throw new HttpNotFound(`name: no user ${JSON.stringify(name.slice(0, 64))}`);
    return name;
  };
  const revoked = (c: Context<AuthEnv>, subject: string, count: number, scope: 'all' | 'one') => {
    const actor = c.get('user').name;
    audit({ action: 'sessions.revoked', actor, ...(subject !== actor ? { subject } : {}), address: clientAddress(c), detail: { count, scope } });
    log.info({ user: actor, of: subject, count, scope }, 'sessions ended');
  };
  routes.get('/api/sessions', requireUser(), async (c) => {
    c.header('Cache-Control', 'private, no-store');
    const name = c.get('user').name;
    return c.json({ items: await sessions.list(name, await current(c), credentialOf(name)) });
  });
  routes.post('/api/sessions/end-all', requireUser(), async (c) => {
    const name = c.get('user').name;
    const ended = await sessions.endAll(name);
    revoked(c, name, ended, 'all');
    c.header('Set-Cookie', clearedCookie(secure(c)));
    return c.json({ ended });
  });
  routes.delete('/api/sessions/:id', requireUser(), async (c) => {
    const name = c.get('user').name;
    const id = c.req.param('id');
    if (!/^[A-Za-z0-9_-]{16}$/.test(id)) throw new HttpBadRequest('id: must be a session id from GET /api/sessions');
    const ended = await sessions.endAll(name, id);
    if (ended === 0) throw new HttpNotFound('id: no such session of yours');
    revoked(c, name, ended, 'one');
    return c.json({ ended });
  });
  routes.get('/api/users/:name/sessions', requireUser('admin'), async (c) => {
    c.header('Cache-Control', 'private, no-store');
    const name = known(c.req.param('name'));
    return c.json({ items: await sessions.list(name, await current(c), credentialOf(name)) });
  });
  routes.post('/api/users/:name/sessions/end-all', requireUser('admin'), async (c) => {
    const name = known(c.req.param('name'));
    const ended = await sessions.endAll(name);
    revoked(c, name, ended, 'all');
    return c.json({ ended });
  });

  return { routes, requireUser, sameOriginWrites, userOf, sessionOf, sameOrigin: isSameOrigin, hostAllowed: (host) => hostAllowed(host, origin), sessions, users };
}
