/**
 * Everything the softphone needs from the HTTP side, as one Hono sub-app to mount at the
 * root (`app.route('/', switchboard.routes)`):
 *
 * - `/api/login`, `/api/logout`, `/api/me` (auth), `GET /api/calls` (live calls: supervisors
 *   see all, agents their own), `POST /api/demo/call` (demo mode: ask the emulator to call);
 * - `GET /ws` (the gateway);
 * - the pages: `/` (agents), `/supervisor` (supervisors), `/archive` (ops, supervisors),
 *   `/login` and `/assets/*` for everybody. A page asked for without a session redirects
 *   to `/login?next=…`; with the wrong role it answers 403 with a page that says whose page
 *   it is and links to the user's own (a silent redirect left people lost).
 */
import { Hono, type Context } from 'hono';
import type { Role, User } from '../../shared/protocol.ts';
import type { Auth, AuthEnv } from '../auth/index.ts';
import { HttpBadGateway, HttpNotFound } from '../ops/errors.ts';
import type { Feature } from '../features/feature.ts';
import { view } from '../calls/views.ts';
import { fromRecord } from '../calls/record.ts';
import type { Logger } from '../log/logger.ts';
import type { Store } from '../store/store.ts';

export interface WebAsset {
  contentType: string;
  body: string | Uint8Array;
}

/** Demo mode: how to ask the emulator for a user-initiated call. */
export interface DemoCaller {
  /** Starts a call from a simulated chat user; resolves to what the emulator answered. */
  call(): Promise<unknown>;
}

export interface WebOptions {
  auth: Auth;
  store: Store;
  /** The gateway's routes (`GET /ws`). */
  ws: Hono;
  /** Built pages and assets (`buildWebAgent()`), URL path → asset. */
  assets: Map<string, WebAsset>;
  log: Logger;
  demo?: DemoCaller | undefined;
}

const PAGE_ROLES: Record<string, Role[]> = {
  '/': ['agent'],
  '/supervisor': ['supervisor'],
  '/archive': ['ops', 'supervisor'],
  '/preflight': ['agent', 'supervisor', 'ops', 'admin'],
  '/admin': ['admin'],
  '/admin/audit': ['ops', 'admin'],
  '/account': ['agent', 'supervisor', 'ops', 'admin'],
};

/** The page a user lands on: a supervisor's console before the phone (supervisors are often agents too). */
export function homeFor(roles: readonly Role[]): string {
  if (roles.includes('supervisor')) return '/supervisor';
  if (roles.includes('agent')) return '/';
  if (roles.includes('ops')) return '/archive';
  if (roles.includes('admin')) return '/admin/audit';
  return '/account';
}

const PAGE_NAMES: Record<string, string> = { '/': 'Phone', '/supervisor': 'Supervisor', '/archive': 'Archive', '/preflight': 'Network check', '/admin': 'Admin', '/admin/audit': 'Audit', '/account': 'Account' };
const ROLE_WORDS: Record<Role, string> = { agent: 'agents', supervisor: 'supervisors', ops: 'ops', admin: 'admins' };

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

/** The 403 page for a signed-in user whose roles do not include the page's. */
function forbiddenPage(user: User, roles: readonly Role[]): string {
  const home = homeFor(user.roles);
  const who = roles.map((r) => ROLE_WORDS[r]).join(' and ');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Not your page · Switchboard</title><link rel="icon" href="data:,"><link rel="stylesheet" href="/assets/style.css"></head>
<body><main class="layout"><section class="card">
<h1 class="card-title">This page is not open to you</h1>
<p data-testid="forbidden-message">This page is for ${escapeHtml(who)}. You are signed in as <strong>${escapeHtml(user.name)}</strong> (${escapeHtml(user.roles.join(', ') || 'no role')}).</p>
<p><a class="btn btn-go" data-testid="forbidden-home" href="${home}">Go to ${PAGE_NAMES[home] ?? 'your page'}</a></p>
</section></main></body></html>`;
}

export function createWebRoutes(o: WebOptions): Hono<AuthEnv> {
  const { auth, store, assets, log } = o;
  const app = new Hono<AuthEnv>();

  app.route('/', auth.routes);
  app.route('/', o.ws);

  app.get('/api/calls', auth.requireUser('agent', 'supervisor'), async (c) => {
    const user = c.get('user');
    const all = (await store.listCalls()).map(fromRecord);
    const visible = all.filter((call) => user.roles.includes('supervisor') || call.agent === user.name);
    return c.json({ items: visible.map(view) });
  });

  app.post('/api/demo/call', auth.requireUser('agent'), async (c) => {
    if (!o.demo) throw new HttpNotFound('simulated calls exist in demo mode only');
    try {
      const r = await o.demo.call();
      log.info({ user: c.get('user').name }, 'demo call requested');
      return c.json({ ok: true, call: r });
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'demo call failed');
      throw new HttpBadGateway(`the emulator did not start a call: ${(err as Error).message}`, 'EMULATOR_ERROR');
    }
  });

  const serve = (c: Context, path: string): Response => {
    const a = assets.get(path);
    if (!a) return c.text('not found', 404);
    const body = typeof a.body === 'string' ? a.body : new Uint8Array(a.body);
    return new Response(body, {
      headers: {
        'content-type': a.contentType,
        // Pages must not be cached across logins; assets are rebuilt at every start.
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        ...(a.contentType.startsWith('text/html')
          ? {
              'content-security-policy':
                "default-src 'self'; connect-src 'self'; media-src 'self' blob: data:; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
              'referrer-policy': 'same-origin',
            }
          : {}),
      },
    });
  };

  for (const [path, roles] of Object.entries(PAGE_ROLES)) {
    app.get(path, async (c) => {
      const user: User | undefined = await auth.userOf(c.req.raw);
      if (!user) return c.redirect(`/login?next=${encodeURIComponent(path)}`, 302);
      if (!roles.some((r) => user.roles.includes(r))) return c.html(forbiddenPage(user, roles), 403, { 'cache-control': 'no-store' });
      return serve(c, path);
    });
  }
  app.get('/login', (c) => serve(c, '/login'));
  // The login form posts here only when its script has not taken it over (still loading, or
  // not run): back to the page, the body unread (the password is never in a URL or a log).
  app.post('/login', (c) => c.redirect(`/login${new URL(c.req.url).search}`, 303));
  app.get('/assets/*', (c) => serve(c, c.req.path));

  return app;
}

/** The pages as a feature, listed last (their routes answer what no other route did). */
export function webFeature(o: Pick<WebOptions, 'ws' | 'assets' | 'demo'>): Feature<Pick<WebOptions, 'auth' | 'store' | 'log'>> {
  return {
    name: 'web',
    install: (ctx) => ctx.routes(createWebRoutes({ auth: ctx.auth, store: ctx.store, ws: o.ws, assets: o.assets, log: ctx.log.child({ part: 'web' }), demo: o.demo })),
  };
}
