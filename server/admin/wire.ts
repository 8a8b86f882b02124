/**
 * The administration, wired in two steps: `openDirectory` before the auth module
 * (server/calling.ts: the users it checks come from the database, the router's queues too),
 * `adminFeature` once auth exists (the `/api/admin` routes and,
 * with OIDC_ISSUER, single sign-on). Without the history database there is no directory:
 * USERS_FILE and QUEUES_FILE are read once as before, and the routes answer 503.
 */
import type { Hono } from 'hono';
import type { Audit } from '../audit/trail.ts';
import type { Auth, AuthEnv } from '../auth/index.ts';
import type { Users } from '../auth/users.ts';
import { readQueuesFile } from '../calls/routing.ts';
import type { Config } from '../config/config.ts';
import type { Feature } from '../features/feature.ts';
import type { History } from '../history/index.ts';
import type { Logger } from '../log/logger.ts';
import type { Store } from '../store/store.ts';
import { Directory } from './directory.ts';
import { createAdminRoutes } from './routes.ts';
import { Admin } from './service.ts';
import { createSso } from './sso.ts';
import { AdminStore, type AdminDb, type Seed } from './store.ts';

/** The seed of an empty directory: the users at hand (USERS_FILE, the demo's, a test's) and QUEUES_FILE's queues. */
export function seedOf(users: Users, queuesFile: string | undefined): Seed {
  const queues = queuesFile ? Object.entries(readQueuesFile(queuesFile)) : [];
  return {
    users: users.accounts().map((u) => ({ name: u.name, roles: u.roles, passwordHash: u.passwordHash })),
    queues: queues.map(([phoneId, agents]) => ({
      name: phoneId === '*' ? 'default' : phoneId.replace(/[^A-Za-z0-9._-]/g, '-').slice(0, 64),
      numbers: [phoneId],
      members: [...new Set(agents)].map((agent) => ({ agent, priority: 1 })),
    })),
  };
}

/** The live directory on the history database (seeded, loaded, following the other nodes), or undefined without one. */
export async function openDirectory(o: { db: AdminDb | undefined; pubsub: Pick<Store, 'publish' | 'subscribe'>; users: Users; config: Pick<Config, 'queuesFile' | 'sso'>; log: Logger; onLoaded: () => void }): Promise<Directory | undefined> {
  if (!o.db) {
    if (o.config.sso) throw new Error('OIDC_ISSUER: single sign-on keeps its users in the history database; set DATABASE_URL or DATA_DIR');
    return undefined;
  }
  const directory = new Directory({ store: new AdminStore(o.db), pubsub: o.pubsub, users: o.users, seed: seedOf(o.users, o.config.queuesFile), log: o.log.child({ part: 'admin' }), onLoaded: o.onLoaded });
  await directory.start();
  return directory;
}

/** `/api/admin/*`, and `/auth/sso/*` with OIDC_ISSUER. */
export function adminRoutes(o: { db: AdminDb | undefined; directory: Directory | undefined; auth: Auth; users: Users; audit: Audit; config: Pick<Config, 'sso' | 'publicUrl' | 'sessionSecret'>; log: Logger; now: () => number }): Hono<AuthEnv>[] {
  const { db, directory } = o;
  const store = db ? new AdminStore(db) : undefined;
  const admin = store && directory ? new Admin({ store, directory, audit: o.audit, endSessions: (name) => o.auth.sessions.endAll(name) }) : undefined;
  const routes: Hono<AuthEnv>[] = [createAdminRoutes({ auth: o.auth, admin, directory })];
  if (o.config.sso && store && directory && o.config.publicUrl) {
    routes.push(
      createSso({ settings: o.config.sso, publicUrl: o.config.publicUrl, users: o.users, sessions: o.auth.sessions, store, directory, audit: o.audit, secret: o.config.sessionSecret, log: o.log.child({ part: 'sso' }), now: o.now }).routes,
    );
  }
  return routes;
}

/** The administration's routes as a feature. */
export const adminFeature: Feature<{ history: History | undefined; directory: Directory | undefined; auth: Auth; users: Users; audit: { record: Audit }; config: Config; log: Logger; now: () => number }> = {
  name: 'admin',
  install(ctx) {
    for (const r of adminRoutes({ db: ctx.history?.store.db, directory: ctx.directory, auth: ctx.auth, users: ctx.users, audit: ctx.audit.record, config: ctx.config, log: ctx.log, now: ctx.now })) ctx.routes(r); // /api/admin/*, /auth/sso/*
  },
};
