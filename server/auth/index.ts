/**
 * Login, logout, "who am I", and the role checks every `/api` route and the WebSocket
 * upgrade go through.
 *
 * - `POST /api/login {name, password}` → 200 `{name, roles, demo}` + session cookie (HttpOnly,
 *   SameSite=Strict), or 401 UNAUTHORIZED (same answer for an unknown name and a wrong
 *   password). Repeated failures for one name are slowed down (429).
 * - `POST /api/logout` → 204; the session is deleted from the store.
 * - `GET /api/me` → `{name, roles, demo}` or 401.
 * - `requireUser(...roles)`: 401 without a session, 403 without one of the roles.
 * - State-changing requests (anything but GET/HEAD/OPTIONS) must come from our own Origin.
 */
import { randomUUID } from 'node:crypto';
import type { Context, MiddlewareHandler } from 'hono';
import { Hono } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { z } from 'zod';
import type { Role, User } from '../../shared/protocol.ts';
import type { Logger } from '../log/logger.ts';
import { SESSION_COOKIE, Sessions, clearedCookie, readCookie, sameOrigin, sessionCookie } from './session.ts';
import type { Users } from './users.ts';

export { Sessions, sameOrigin, readCookie, SESSION_COOKIE } from './session.ts';
export { Users, demoUsers, loadUsersFile, hashPassword, DEMO_USERS } from './users.ts';

export type AuthEnv = { Variables: { user: User; requestId?: string } };

/** The API's error body: the Service's error shape (design: `/api/...`). */
export function apiError(c: Context, status: ContentfulStatusCode, code: string, message: string): Response {
  const requestId = (c.get('requestId') as string | undefined) ?? c.req.header('x-request-id') ?? randomUUID();
  return c.json({ error: { status, code, message, requestId } }, status);
}

const LoginBody = z.object({ name: z.string().min(1).max(64), password: z.string().min(1).max(1024) });

/** Failures per name in a sliding minute before login answers 429. */
const MAX_FAILURES = 5;
const FAILURE_WINDOW_MS = 60_000;

export interface Auth {
  /** `/api/login`, `/api/logout`, `/api/me` (mount at the root). */
  routes: Hono<AuthEnv>;
  /** Session + role gate; with no roles any logged-in user passes. */
  requireUser(...roles: Role[]): MiddlewareHandler<AuthEnv>;
  /** Same-origin gate for state-changing methods. */
  sameOriginWrites: MiddlewareHandler;
  /** The logged-in user of a raw request (for the WebSocket upgrade), or undefined. */
  userOf(req: Request): Promise<User | undefined>;
  sessions: Sessions;
  users: Users;
}

export interface AuthOptions {
  users: Users;
  sessions: Sessions;
  log: Logger;
  /** Demo mode: `/api/me` says so (the page then offers "simulate an incoming call"). */
  demo?: boolean;
  now?: () => number;
}

export function createAuth(deps: AuthOptions): Auth {
  const { users, sessions, log } = deps;
  const demo = deps.demo ?? false;
  const now = deps.now ?? Date.now;
  const failures = new Map<string, number[]>();

  async function userOf(req: Request): Promise<User | undefined> {
    const name = await sessions.resolve(readCookie(req.headers.get('cookie'), SESSION_COOKIE));
    return name ? users.get(name) : undefined;
  }

  const secure = (c: Context) => (c.req.header('x-forwarded-proto') ?? new URL(c.req.url).protocol.replace(':', '')).startsWith('https');

  const sameOriginWrites: MiddlewareHandler = async (c, next) => {
    const m = c.req.method;
    if (m !== 'GET' && m !== 'HEAD' && m !== 'OPTIONS' && !sameOrigin(c.req.raw, false)) {
      return apiError(c, 403, 'FORBIDDEN', 'cross-origin request refused');
    }
    await next();
  };

  const requireUser =
    (...roles: Role[]): MiddlewareHandler<AuthEnv> =>
    async (c, next) => {
      const user = await userOf(c.req.raw);
      if (!user) return apiError(c, 401, 'UNAUTHORIZED', 'log in first');
      if (roles.length > 0 && !roles.some((r) => user.roles.includes(r))) {
        return apiError(c, 403, 'FORBIDDEN', `needs role ${roles.join(' or ')}`);
      }
      c.set('user', user);
      await next();
    };

  const routes = new Hono<AuthEnv>();
  routes.use('/api/*', sameOriginWrites);

  routes.post('/api/login', async (c) => {
    let body: z.infer<typeof LoginBody>;
    try {
      body = LoginBody.parse(await c.req.json());
    } catch {
      return apiError(c, 400, 'BAD_REQUEST', 'body must be {"name": string, "password": string}');
    }
    const t = now();
    const recent = (failures.get(body.name) ?? []).filter((x) => t - x < FAILURE_WINDOW_MS);
    if (recent.length >= MAX_FAILURES) {
      c.header('Retry-After', String(Math.ceil((recent[0]! + FAILURE_WINDOW_MS - t) / 1000)));
      return apiError(c, 429, 'RATE_LIMITED', 'too many failed logins for this name; wait a minute');
    }
    const user = await users.check(body.name, body.password);
    if (!user) {
      failures.set(body.name, [...recent, t]);
      // A name that is no user's may be a password typed into the wrong field: not logged.
      log.warn({ user: users.get(body.name) ? body.name : 'unknown user' }, 'login failed');
      return apiError(c, 401, 'UNAUTHORIZED', 'wrong name or password');
    }
    failures.delete(body.name);
    const cookie = await sessions.create(user.name);
    c.header('Set-Cookie', sessionCookie(cookie, { secure: secure(c), maxAgeS: Math.floor(sessions.ttlMs / 1000) }));
    log.info({ user: user.name }, 'login');
    return c.json({ ...user, demo });
  });

  routes.post('/api/logout', async (c) => {
    await sessions.destroy(readCookie(c.req.header('cookie'), SESSION_COOKIE));
    c.header('Set-Cookie', clearedCookie(secure(c)));
    return c.body(null, 204);
  });

  // The page's shape (web-agent/src/api.ts `Me`): the user's fields at the top level.
  routes.get('/api/me', requireUser(), (c) => c.json({ ...c.get('user'), demo }));

  return { routes, requireUser, sameOriginWrites, userOf, sessions, users };
}
