/**
 * Everything the softphone needs from the HTTP side, as one Hono sub-app to mount at the
 * root (`app.route('/', switchboard.routes)`):
 *
 * - `/api/login`, `/api/logout`, `/api/me` (auth), `GET /api/calls` (live calls: supervisors
 *   see all, agents their own), `POST /api/demo/call` (demo mode: ask the emulator to call);
 * - `GET /ws` (the gateway);
 * - the pages: `/` (agents), `/supervisor` (supervisors), `/archive` (ops, supervisors),
 *   `/login` and `/assets/*` for everybody. A page asked for without a session redirects
 *   to `/login?next=…`; with the wrong role, to the user's own home page.
 */
import { Hono, type Context } from 'hono';
import type { Role, User } from '../../shared/protocol.ts';
import type { Auth, AuthEnv } from '../auth/index.ts';
import { HttpBadGateway, HttpNotFound } from '../ops/errors.ts';
import { view } from '../calls/views.ts';
import { fromRecord } from '../calls/apply.ts';
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
};

export function homeFor(roles: readonly Role[]): string {
  if (roles.includes('agent')) return '/';
  if (roles.includes('supervisor')) return '/supervisor';
  return '/archive';
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
      if (!roles.some((r) => user.roles.includes(r))) {
        const home = homeFor(user.roles);
        return home === path ? c.text('forbidden', 403) : c.redirect(home, 302);
      }
      return serve(c, path);
    });
  }
  app.get('/login', (c) => serve(c, '/login'));
  app.get('/assets/*', (c) => serve(c, c.req.path));

  return app;
}
