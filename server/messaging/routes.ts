/**
 * Messages over HTTP (design.md, "Wave 2 contracts"), agents and supervisors:
 *
 * - `POST /api/messages` `{from, to | recipient, text | template: {name, language, parameters?}}`
 *   → 202 `MessageRecord` (status `accepted`; `message.updated` pushes what follows).
 *   Refused before the Service: 400 naming the field and rule, 409 `OPTED_OUT` (the
 *   customer unsubscribed), 404 `UNKNOWN_TEMPLATE` / 409 `TEMPLATE_NOT_APPROVED` (naming
 *   the status that blocks), 429 when the sender's rate limit (part 8) has no slot soon;
 *   a Service refusal keeps its status and reason.
 * - `GET /api/messages/:id` → `MessageRecord`.
 * With QUEUES_FILE an agent sends from, and reads the messages of, the numbers they take
 * calls for only (server/auth/scope.ts): another number as `from` is 403 naming the field,
 * another number's message is 404 as an unknown one. Supervisors: every number.
 * - `GET /api/templates` → `{items}`: the APPROVED templates only (what a picker may offer).
 */
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import type { Auth, AuthEnv } from '../auth/index.ts';
import type { NumberScope } from '../auth/scope.ts';
import { HttpError } from '../ops/errors.ts';
import type { MessagingStore } from './store.ts';
import { historyUnavailable, isDbOutage } from '../history/errors.ts';
import { ServiceError } from '../service/errors.ts';
import type { Logger } from '../log/logger.ts';
import { serviceFailure } from '../permissions/routes.ts';
import { BSUID_RE, E164_RE } from '../service/validate.ts';
import { SendRefused, type Messaging, type SendInput } from './service.ts';
import { parseBody } from '../ops/validate.ts';

export interface MessagingRoutesOptions {
  auth: Auth;
  messaging: Pick<Messaging, 'send' | 'offerable'>;
  store: Pick<MessagingStore, 'getMessage'>;
  log: Logger;
  /** Which business numbers each agent may use and read (QUEUES_FILE); without it: all. */
  scope?: Pick<NumberScope, 'allows'> | undefined;
}

const SendBody = z
  .strictObject({
    from: z.string({ error: 'is required (the business number, E.164)' }).regex(E164_RE, 'must be an E.164 phone number (+ and 7 to 15 digits)'),
    to: z.string().regex(E164_RE, 'must be an E.164 phone number (+ and 7 to 15 digits)').optional(),
    recipient: z.string().regex(BSUID_RE, 'must be a BSUID (two uppercase letters, a period, then letters or digits)').optional(),
    text: z.string().trim().min(1, 'must not be empty').max(4096, 'must be at most 4096 characters').optional(),
    template: z
      .strictObject({
        name: z.string({ error: 'is required' }).min(1, 'must not be empty').max(512, 'must be at most 512 characters'),
        language: z.string({ error: 'is required' }).regex(/^[A-Za-z]{2,3}(?:_[A-Za-z0-9]{2,8})?$/, 'must be a language code such as en or en_US (exact, case-sensitive)'),
        parameters: z.array(z.string().max(1024, 'must be at most 1024 characters'), { error: 'must be an array of strings' }).max(100, 'at most 100').optional(),
      })
      .optional(),
  })
  .superRefine((b, ctx) => {
    if (b.to === undefined && b.recipient === undefined) ctx.addIssue({ code: 'custom', path: ['to'], message: 'to (E.164) or recipient (BSUID) is required' });
    if ((b.text === undefined) === (b.template === undefined)) ctx.addIssue({ code: 'custom', path: ['text'], message: 'give exactly one of text or template' });
  });

/** A send refused before it reached the Service, as the error to answer with. */
export function refusal(err: SendRefused): HttpError {
  const headers = err.retryAfterMs !== undefined ? { 'Retry-After': String(Math.max(1, Math.ceil(err.retryAfterMs / 1000))) } : undefined;
  return new HttpError(err.status, err.code, err.message, headers ? { headers } : {});
}

export function createMessagingRoutes(o: MessagingRoutesOptions): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  const guard = o.auth.requireUser('agent', 'supervisor');

  app.post('/api/messages', o.auth.sameOriginWrites, guard, async (c) => {
    const input = (await parseBody(c, SendBody, '{from, to | recipient, text | template}')) as SendInput;
    if (o.scope && !(await o.scope.allows(c.get('user'), input.from))) throw new HttpError(403, 'FORBIDDEN', 'from: not one of the numbers you take calls for');
    try {
      const record = await o.messaging.send(input, c.get('user').name, c.req.raw.signal);
      c.header('Cache-Control', 'private, no-store');
      return c.json(record, 202);
    } catch (err) {
      if (err instanceof SendRefused) throw refusal(err);
      // Messages are recorded in history: its database out is 503 (as the history routes), not 500.
      if (isDbOutage(err) && !(err instanceof ServiceError)) throw historyUnavailable();
      throw serviceFailure(err, o.log, 'message send');
    }
  });

  app.get('/api/messages/:id', guard, async (c) => {
    const id = c.req.param('id');
    if (id.length > 256) throw new HttpError(400, 'BAD_REQUEST', 'id: must be at most 256 characters');
    let m;
    try {
      m = await o.store.getMessage(id);
    } catch (err) {
      if (isDbOutage(err)) throw historyUnavailable();
      throw err;
    }
    const business = m ? (m.record.direction === 'inbound' ? m.record.to : m.record.from) : undefined;
    // Another number's message answers as an unknown one: its existence is not theirs to learn.
    if (!m || (o.scope && !(business !== undefined && (await o.scope.allows(c.get('user'), business))))) {
      throw new HttpError(404, 'NOT_FOUND', `no message ${JSON.stringify(id)} in the history`);
    }
    return c.json(m.record);
  });

  app.get('/api/templates', guard, async (c) => {
    const items = (await o.messaging.offerable()).map((t) => ({ wabaId: t.wabaId, name: t.name, language: t.language, category: t.category, components: t.components }));
    return c.json({ items });
  });

  return app;
}
