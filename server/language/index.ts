/**
 * Each user's language for the pages (the catalogues are web-agent/src/i18n/; the list is
 * shared/languages.ts). Kept in the history database (`user_language`, migration 12); a
 * server without one keeps it in memory until it stops. No row: the page uses the browser's.
 *
 * - `GET /api/me/language` → `{language: "ar" | … | null}`;
 * - `PUT /api/me/language` `{language}` → `{language}`; an unknown language is a 400 naming
 *   the field and the languages there are.
 */
import { Hono, type MiddlewareHandler } from 'hono';
import { z } from 'zod';
import { LANGUAGES, type Language } from '../../shared/languages.ts';
import type { Auth, AuthEnv } from '../auth/index.ts';
import type { Feature } from '../features/feature.ts';
import type { History } from '../history/index.ts';
import type { Sql } from '../history/db.ts';
import { parseBody } from '../ops/validate.ts';

export interface LanguageStore {
  get(user: string): Promise<Language | undefined>;
  set(user: string, language: Language, at: number): Promise<void>;
}

/** In the history database (`db`), or in memory without one. */
export function languageStore(db: Sql | undefined): LanguageStore {
  if (!db) {
    const kept = new Map<string, Language>();
    return { get: async (u) => kept.get(u), set: async (u, l) => void kept.set(u, l) };
  }
  return {
    async get(user) {
      const rows = await db.query<{ language: string }>('SELECT language FROM user_language WHERE user_name = $1', [user]);
      const l = rows[0]?.language;
      return (LANGUAGES as readonly string[]).includes(l ?? '') ? (l as Language) : undefined;
    },
    async set(user, language, at) {
      await db.query(
        `INSERT INTO user_language (user_name, language, updated_at) VALUES ($1, $2, $3::timestamptz)
         ON CONFLICT (user_name) DO UPDATE SET language = EXCLUDED.language, updated_at = EXCLUDED.updated_at`,
        [user, language, new Date(at).toISOString()],
      );
    },
  };
}

const Body = z.object({ language: z.enum(LANGUAGES, { error: () => `must be one of ${LANGUAGES.join(', ')}` }) });

/** The routes; `guard` is the auth's `requireUser()` (any role). */
export function createLanguageRoutes(o: { store: LanguageStore; guard: MiddlewareHandler<AuthEnv>; now?: () => number }): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  app.get('/api/me/language', o.guard, async (c) => {
    c.header('Cache-Control', 'private, no-store');
    return c.json({ language: (await o.store.get(c.get('user').name)) ?? null });
  });
  app.put('/api/me/language', o.guard, async (c) => {
    const { language } = await parseBody(c, Body, '{language}');
    await o.store.set(c.get('user').name, language, (o.now ?? Date.now)());
    return c.json({ language });
  });
  return app;
}

/** The language routes as a feature (`/api/me/language`, any signed-in user). */
export const languageFeature: Feature<{ history: Pick<History, 'store'> | undefined; auth: Pick<Auth, 'requireUser'>; now: () => number }> = {
  name: 'language',
  install: (ctx) => ctx.routes(createLanguageRoutes({ store: languageStore(ctx.history?.store.db), guard: ctx.auth.requireUser(), now: ctx.now })),
};
