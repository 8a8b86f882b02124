/**
 * The administration over HTTP (role `admin`, same-origin writes; bodies in
 * shared/admin.ts, each broken rule a 400 naming the field):
 * - `GET /api/admin/directory` → `{users, teams, skills, queues}` (never a hash);
 * - `POST /api/admin/users` (→ `{password}` once, when none was given and not `ssoOnly`),
 *   `PATCH|DELETE /api/admin/users/:name`, `POST /api/admin/users/:name/password` (a new
 *   password, shown once), `POST /api/admin/users/:name/sso-only` (no password: SSO);
 * - `POST /api/admin/{teams,skills,queues}`, `PUT|DELETE /api/admin/{teams,skills,queues}/:name`.
 * Without the history database every route answers 503 saying why.
 */
import { Hono, type Context } from 'hono';
import type { z } from 'zod';
import { NewUser, QueueBody, SkillBody, TeamBody, UserPatch } from '../../shared/admin.ts';
import { parseBody } from '../ops/validate.ts';
import { clientAddress, type Auth, type AuthEnv } from '../auth/index.ts';
import { HttpBadRequest, HttpUnavailable } from '../ops/errors.ts';
import type { Directory } from './directory.ts';
import type { Actor, Admin } from './service.ts';
import { publicView } from './store.ts';

export function createAdminRoutes(o: { auth: Auth; admin: Admin | undefined; directory: Directory | undefined }): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  app.use('/api/admin/*', o.auth.sameOriginWrites, o.auth.requireUser('admin'), async (c, next) => {
    if (!o.admin || !o.directory) throw new HttpUnavailable('administration keeps users and queues in the history database, and this server has none (set DATABASE_URL or DATA_DIR)');
    c.header('Cache-Control', 'private, no-store');
    await next();
  });
  const admin = () => o.admin!;
  const actor = (c: Context<AuthEnv>): Actor => ({ name: c.get('user').name, address: clientAddress(c) });
  const body = <S extends z.ZodType>(c: Context<AuthEnv>, schema: S): Promise<z.output<S>> => parseBody(c, schema, 'object');
  /** The body's `name`, when given, must be the one in the path. */
  const named = <T extends { name: string }>(c: Context<AuthEnv>, b: T): T => {
    if (b.name !== c.req.param('name')) throw new HttpBadRequest('name: must be the name in the path (names do not change; add a new one instead)');
    return b;
  };

  app.get('/api/admin/directory', (c) => c.json(publicView(o.directory!.current)));

  app.post('/api/admin/users', async (c) => c.json(await admin().addUser(actor(c), await body(c, NewUser)), 201));
  app.patch('/api/admin/users/:name', async (c) => {
    await admin().updateUser(actor(c), c.req.param('name'), await body(c, UserPatch));
    return c.body(null, 204);
  });
  app.delete('/api/admin/users/:name', async (c) => {
    await admin().removeUser(actor(c), c.req.param('name'));
    return c.body(null, 204);
  });
  app.post('/api/admin/users/:name/password', async (c) => c.json(await admin().resetPassword(actor(c), c.req.param('name'))));
  app.post('/api/admin/users/:name/sso-only', async (c) => {
    await admin().ssoOnly(actor(c), c.req.param('name'));
    return c.body(null, 204);
  });

  const things = [
    { path: 'teams', schema: TeamBody, put: (a: Actor, b: TeamBody, create: boolean) => admin().putTeam(a, b, create), remove: (a: Actor, n: string) => admin().removeTeam(a, n) },
    { path: 'skills', schema: SkillBody, put: (a: Actor, b: SkillBody, create: boolean) => admin().putSkill(a, b, create), remove: (a: Actor, n: string) => admin().removeSkill(a, n) },
    { path: 'queues', schema: QueueBody, put: (a: Actor, b: QueueBody, create: boolean) => admin().putQueue(a, b, create), remove: (a: Actor, n: string) => admin().removeQueue(a, n) },
  ] as const;
  for (const t of things) {
    const put = t.put as (a: Actor, b: z.output<typeof t.schema>, create: boolean) => Promise<void>;
    app.post(`/api/admin/${t.path}`, async (c) => {
      await put(actor(c), await body(c, t.schema), true);
      return c.body(null, 201);
    });
    app.put(`/api/admin/${t.path}/:name`, async (c) => {
      await put(actor(c), named(c, await body(c, t.schema)), false);
      return c.body(null, 204);
    });
    app.delete(`/api/admin/${t.path}/:name`, async (c) => {
      await t.remove(actor(c), c.req.param('name'));
      return c.body(null, 204);
    });
  }
  return app;
}
