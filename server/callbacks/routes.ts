/**
 * The callback queue over HTTP (design.md, "Wave 2 contracts"), agents and supervisors:
 *
 * - `GET /api/callbacks?state=open|claimed|done|cancelled` (default `open`) → `{items: CallbackTask[]}`,
 *   each with its permission in words; several states, comma-separated, are read at once
 *   (`state=open,claimed`: every task not done, what the pages list);
 * - `POST /api/callbacks/:id/claim` → the task; atomic across nodes: of two claims one
 *   wins, the other gets 409 naming who holds it;
 * - `POST /api/callbacks/:id/done` `{outcome}` → the task; by its assignee, anyone when it
 *   is unclaimed, or a supervisor; 409 when it is already closed or someone else holds it.
 * With QUEUES_FILE an agent lists, claims and closes the tasks of the numbers they take
 * calls for only: another number's task is 404, as an unknown one (supervisors: all).
 */
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { CALLBACK_STATES, type CallbackState } from '../../shared/records.ts';
import type { Auth, AuthEnv } from '../auth/index.ts';
import { HttpError } from '../ops/errors.ts';
import type { ClaimResult } from './store.ts';
import { historyUnavailable, isDbOutage } from '../history/errors.ts';
import type { Callbacks } from './index.ts';
import { parseBody, parseQuery } from '../ops/validate.ts';

export interface CallbackRoutesOptions {
  auth: Auth;
  callbacks: Pick<Callbacks, 'list' | 'claim' | 'done' | 'visible'>;
}

const ListQuery = z.strictObject({
  state: z
    .string()
    .refine((s) => s.split(',').every((x) => (CALLBACK_STATES as readonly string[]).includes(x)), `must be one of ${CALLBACK_STATES.join(', ')}, or several of them comma-separated`)
    .default('open'),
});

const DoneBody = z.strictObject({ outcome: z.string({ error: 'is required (how the task ended, in words)' }).trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters') });

/** The queue lives in history: its database out is 503 UNAVAILABLE (as the history routes), not 500. */
async function onHistory<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    if (isDbOutage(err)) throw historyUnavailable();
    throw err;
  }
}

export function createCallbackRoutes(o: CallbackRoutesOptions): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  const guard = o.auth.requireUser('agent', 'supervisor');

  const answer = (c: Context<AuthEnv>, id: string, r: ClaimResult, what: string) => {
    if (r.ok) return c.json(r.task);
    if (r.code === 'NOT_FOUND') throw new HttpError(404, 'NOT_FOUND', `no callback task ${JSON.stringify(id)}`);
    const t = r.task;
    const why = t.state === 'claimed' ? `it is claimed by ${t.assignee}` : `it is ${t.state}${t.outcome ? ` (${t.outcome})` : ''}`;
    throw new HttpError(409, 'CONFLICT', `callback task ${id} cannot be ${what}: ${why}`);
  };

  app.get('/api/callbacks', guard, async (c) => {
    const states = parseQuery(c, ListQuery).state.split(',') as CallbackState[];
    c.header('Cache-Control', 'private, no-store');
    return c.json({ items: await onHistory(o.callbacks.list(states, c.get('user'))) });
  });

  /** Another queue's task answers as an unknown one (the list hides it too). */
  const mustSee = async (c: Context<AuthEnv>, id: string) => {
    if (!(await o.callbacks.visible(id, c.get('user')))) throw new HttpError(404, 'NOT_FOUND', `no callback task ${JSON.stringify(id)}`);
  };

  app.post('/api/callbacks/:id/claim', o.auth.sameOriginWrites, guard, async (c) => {
    const id = c.req.param('id');
    await onHistory(mustSee(c, id));
    return answer(c, id, await onHistory(o.callbacks.claim(id, c.get('user').name)), 'claimed');
  });

  app.post('/api/callbacks/:id/done', o.auth.sameOriginWrites, guard, async (c) => {
    const id = c.req.param('id');
    const { outcome } = await parseBody(c, DoneBody, '{outcome}');
    const user = c.get('user');
    await onHistory(mustSee(c, id));
    return answer(c, id, await onHistory(o.callbacks.done(id, outcome, user.name, user.roles.includes('supervisor'))), 'closed');
  });

  return app;
}
