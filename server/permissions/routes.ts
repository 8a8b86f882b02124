/**
 * Calling permission over HTTP (roles supervisor or agent; 401 without a session, 403 for
 * other roles; errors in the Service's shape `{error:{status,code,message,requestId}}`):
 *
 * - `POST /api/permissions/request` (same origin) with
 *   `{from, to?, recipient?, body?}` → an interactive `call_permission_request` with `body`
 *   as its text (default `DEFAULT_BODY`), or `{from, to?, recipient?, template:{name,
 *   language}}` → that approved template (it must carry a `call_permission_request`
 *   component). `from` E.164; `to` (E.164) or `recipient` (BSUID); both given: `to` is used
 *   (interface part 4). 202 `{permission, messageId}`; the permission is then `requested`.
 *   400 names the field and rule; 409 CONFLICT while the user's rejection is less than 24 h
 *   old; 429 TOO_MANY_REQUESTS (with Retry-After) past the ration of 1 request per 24 h and
 *   2 per 7 days per business number + user; the Service's refusals keep its code and
 *   reason (its 401/403/5xx, which are about our key or the Service, become 502).
 * - `GET /api/permissions?from=<E.164>&user=<E.164 or BSUID>` → `{permission}` (`unknown`
 *   when nothing is known).
 * - With QUEUES_FILE an agent asks from, and reads the permissions of, the numbers they
 *   take calls for only: another `from` is 403 naming the field (supervisors: every number).
 * - `GET /api/numbers` → `{numbers:[{phoneNumber, phoneId?, name?}]}`: the business numbers
 *   of the API key (the Service's phone numbers, cached 60 s); 502 when the Service fails.
 */
import { randomUUID } from 'node:crypto';
import { Hono } from 'hono';
import { z } from 'zod';
import type { Permission } from '../../shared/protocol.ts';
import type { Auth, AuthEnv } from '../auth/index.ts';
import type { NumberScope } from '../auth/scope.ts';
import { HttpBadGateway, HttpBadRequest, HttpConflict, HttpError, HttpForbidden, HttpTooManyRequests, HttpUnavailable } from '../ops/errors.ts';
import type { Logger } from '../log/logger.ts';
import { describeServiceError, OutcomeUnknownError, RateLimitedError, ServiceError, ValidationError } from '../service/errors.ts';
import type { ChatMessage } from '../../shared/events.ts';
import type { MessagesResource } from '../service/resources/messages.ts';
import type { PhoneNumbersResource } from '../service/resources/phoneNumbers.ts';
import { BSUID_RE, E164_RE } from '../service/validate.ts';
import type { PermissionBook } from './book.ts';
import { applyRequest, rejectionHold, toView } from './model.ts';
import { badRequest, parseBody, parseQuery } from '../ops/validate.ts';

export const DEFAULT_BODY = 'May we call you? One of our team would like to call you back here on a voice call.';
/** Our limit on the request text (the interface states none; the provider's interactive body allows 1,024). */
export const BODY_MAX = 1024;
export const NUMBERS_CACHE_MS = 60_000;

export type PermissionMessages = Pick<MessagesResource, 'requestCallPermission' | 'sendTemplate'>;
export type PermissionNumbers = Pick<PhoneNumbersResource, 'iterate'>;

export interface NumberItem {
  phoneNumber: string;
  phoneId?: string;
  name?: string;
}

export interface PermissionRoutesOptions {
  auth: Auth;
  book: PermissionBook;
  log: Logger;
  /** Without it, requests answer 503 (no Service client). */
  messages?: PermissionMessages | undefined;
  /** Without it, `/api/numbers` answers 503. */
  phoneNumbers?: PermissionNumbers | undefined;
  /** Tell supervisors and the requester. */
  announce(p: Permission): void;
  /** After a request went out: record the sent message (messaging's history; its failure is logged, never answered). */
  onSent?: ((response: ChatMessage, sent: Partial<ChatMessage>, by: string) => Promise<unknown>) | undefined;
  /** Which numbers each agent may use (QUEUES_FILE); without it: all. */
  scope?: Pick<NumberScope, 'allows'> | undefined;
}

class BadInput extends Error {}

const REQUEST_FIELDS = ['from', 'to', 'recipient', 'body', 'template'];

export interface RequestInput {
  from: string;
  /** The user as addressed: `to` when given (it wins), else `recipient`. */
  user: string;
  address: { to: string } | { recipient: string };
  body?: string;
  template?: { name: string; language: string };
}

const E164_RULE = 'must be an E.164 phone number: + and 7 to 15 digits, no spaces';
const e164Field = () => z.string({ error: 'is required (an E.164 phone number such as +15550100001)' }).min(1, 'is required (an E.164 phone number such as +15550100001)').regex(E164_RE, E164_RULE);

/** The request body: `to` wins over `recipient` when both are given (the Service uses `to`, part 4; the recipient must still be well-formed). */
export const RequestBody = z
  .strictObject(
    {
    from: e164Field(),
    to: e164Field().nullish(),
    recipient: z.string({ error: 'must be a BSUID' }).regex(BSUID_RE, 'must be a BSUID: two uppercase letters, a period, then up to 128 letters or digits').nullish(),
    body: z
      .string({ error: 'must be a non-empty string (the text of the request)' })
      .refine((b) => b.trim() !== '', 'must be a non-empty string (the text of the request)')
      .refine((b) => [...b].length <= BODY_MAX, `must be at most ${BODY_MAX} characters`)
      .optional(),
    template: z
      .object(
        {
          name: z
            .string({ error: 'is required (the approved template with a call_permission_request component)' })
            .refine((n) => n.trim() !== '', 'is required (the approved template with a call_permission_request component)')
            .max(512, 'must be at most 512 characters'),
          language: z.string({ error: 'is required' }).regex(/^[A-Za-z]{2,3}([_-][A-Za-z0-9]{2,8})?$/, 'must be a language code such as en or en_US'),
        },
        { error: 'must be an object {name, language}' },
      )
      .optional(),
    },
    { error: 'must be a JSON object {from, to | recipient, body? | template?}' },
  )
  .superRefine((b, ctx) => {
    if (b.to == null && b.recipient == null) ctx.addIssue({ code: 'custom', path: ['to'], message: 'to (E.164 phone number) or recipient (BSUID) is required' });
    if (b.body !== undefined && b.template !== undefined) ctx.addIssue({ code: 'custom', path: ['template'], message: 'give either body (an interactive request) or template, not both' });
  })
  .transform((b): RequestInput => {
    const address: RequestInput['address'] = b.to != null ? { to: b.to } : { recipient: b.recipient! };
    return {
      from: b.from,
      user: 'to' in address ? address.to : address.recipient,
      address,
      ...(b.template ? { template: { name: b.template.name, language: b.template.language } } : b.body !== undefined ? { body: b.body } : {}),
    };
  });

/** The `GET /api/permissions` query: one (business number, user) pair. */
const PermissionQuery = z.object({
  from: e164Field(),
  user: z
    .string({ error: "is required (the user's E.164 phone number or BSUID)" })
    .refine((u) => E164_RE.test(u) || BSUID_RE.test(u), 'must be an E.164 phone number or a BSUID'),
});

/** The request body, checked; throws `BadInput` naming the field and the rule. */
export function parseRequestBody(raw: unknown): RequestInput {
  const r = RequestBody.safeParse(raw);
  if (!r.success) throw new BadInput(badRequest(r.error, 'body', REQUEST_FIELDS).message);
  return r.data;
}

/** True when the request surely never reached the user: invalid before sending, or refused by the Service with a 4xx. */
export function surelyNotSent(err: unknown): boolean {
  if (err instanceof ValidationError) return true;
  if (err instanceof OutcomeUnknownError || !(err instanceof ServiceError)) return false;
  return err.status !== undefined && err.status >= 400 && err.status < 500;
}

/** A Service refusal as the error to answer with, carrying the Service's reason (`what` names the request in the logs). */
export function serviceFailure(err: unknown, log: Logger, what = 'call permission request'): HttpError {
  if (err instanceof ValidationError) return new HttpBadRequest(err.message);
  if (err instanceof OutcomeUnknownError) {
    return new HttpError(504, 'OUTCOME_UNKNOWN', `the Service did not answer in time; the request may or may not have been sent (${err.message}): check the permission before asking again`);
  }
  if (err instanceof ServiceError) {
    const reason = `the Service refused: ${describeServiceError(err)}${err.requestId ? ` [Service request ${err.requestId}]` : ''}`;
    if (err instanceof RateLimitedError) return new HttpTooManyRequests(reason, err.retryAfterMs, err.code || 'TOO_MANY_REQUESTS');
    const s = err.status;
    if (s === 400 || s === 404 || s === 409 || s === 422) return new HttpError(s, err.code, reason);
    log.warn({ code: err.code, status: s, serviceRequestId: err.requestId }, `${what}: Service failure`);
    return new HttpBadGateway(reason);
  }
  log.error({ err }, `${what} failed`);
  return new HttpError(500, 'INTERNAL', 'the request could not be sent');
}

export function createPermissionRoutes(o: PermissionRoutesOptions): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  const guard = o.auth.requireUser('supervisor', 'agent');
  const { book } = o;
  let numbersCache: { at: number; numbers: NumberItem[] } | undefined;
  let numbersInFlight: Promise<NumberItem[]> | undefined;

  app.post('/api/permissions/request', o.auth.sameOriginWrites, guard, async (c) => {
    const input = await parseBody(c, RequestBody, '{from, to | recipient, body? | template?}');
    const { from, user } = input;
    if (o.scope && !(await o.scope.allows(c.get('user'), from))) throw new HttpForbidden('from: not one of the numbers you take calls for');
    if (!o.messages) throw new HttpUnavailable('no Service client: call permission requests cannot be sent');
    const by = c.get('user').name;
    const now = book.now();
    const cur = await book.read(from, user);
    const hold = rejectionHold(cur, now);
    if (hold) {
      throw new HttpConflict(
        `${user} rejected the call permission request from ${from} at ${new Date(cur!.updatedAt).toISOString()}; the user is not asked again before ${new Date(hold.until).toISOString()}`,
        { params: { reason: 'REJECTED_RECENTLY', user, from, nextAt: hold.until } },
      );
    }
    // Check and take the ration in one atomic step (parallel requests, other nodes): only
    // a request holding a slot goes to the Service.
    const slot = randomUUID();
    const limited = await book.reserveRequest(from, user, slot, now);
    if (!limited.ok) {
      throw new HttpTooManyRequests(
        `call permission requests to ${user} from ${from} are limited to ${limited.rule}; the next one may be sent at ${new Date(limited.nextAt).toISOString()}`,
        limited.nextAt - now,
        'TOO_MANY_REQUESTS',
        { reason: 'RATION', user, from, nextAt: limited.nextAt, rule: limited.rule },
      );
    }
    let messageId: string;
    try {
      const sent = input.template
        ? await o.messages.sendTemplate({ from, ...input.address, name: input.template.name, language: input.template.language })
        : await o.messages.requestCallPermission({ from, ...input.address, body: input.body ?? DEFAULT_BODY });
      messageId = sent.id;
      // What was sent, for the message's record (its status then climbs with the webhooks).
      const body: Partial<ChatMessage> = input.template
        ? { from, ...input.address, type: 'template', template: { name: input.template.name, language: { code: input.template.language } } }
        : { from, ...input.address, type: 'interactive', interactive: { type: 'call_permission_request', action: { name: 'call_permission_request' }, body: { text: input.body ?? DEFAULT_BODY } } };
      void o.onSent?.(sent, body, by).catch((e: Error) => o.log.warn({ err: e.message, messageId }, 'sent permission request not recorded in messaging history'));
    } catch (err) {
      // The slot goes back only when the request surely did not reach the user: refused
      // before sending, or a 4xx refusal from the Service. A 5xx, a timeout or any other
      // failure may have come after the Service sent it: the slot stays taken (the user
      // must not get a second request inside the ration).
      if (surelyNotSent(err)) {
        await book.releaseRequest(from, user, slot).catch((e: Error) => o.log.warn({ err: e.message, from, user }, 'call permission ration slot not given back'));
      }
      throw serviceFailure(err, o.log);
    }
    // The request is out: a store failure now must not turn into an error the supervisor
    // would retry (a second request to the user). Answer what was done; the reply handler
    // records the user's answer when it comes.
    let stored;
    try {
      stored = await book.update(from, user, (latest) => applyRequest(latest, { from, user, by, at: book.now() }));
    } catch (err) {
      o.log.error({ err, from, user, messageId }, 'call permission request sent, but its record could not be stored');
      stored = applyRequest(cur, { from, user, by, at: book.now() });
    }
    const permission = toView(stored, from, user, book.now());
    o.log.info({ from, user, by, messageId, template: input.template?.name }, 'call permission requested');
    o.announce(permission);
    c.header('Cache-Control', 'private, no-store');
    return c.json({ permission, messageId }, 202);
  });

  app.get('/api/permissions', guard, async (c) => {
    const { from, user } = parseQuery(c, PermissionQuery);
    if (o.scope && !(await o.scope.allows(c.get('user'), from))) throw new HttpForbidden('from: not one of the numbers you take calls for');
    c.header('Cache-Control', 'private, no-store');
    return c.json({ permission: await book.get(from, user) });
  });

  const loadNumbers = async (): Promise<NumberItem[]> => {
    const out: NumberItem[] = [];
    for await (const n of o.phoneNumbers!.iterate()) {
      if (typeof n.phoneNumber !== 'string') continue;
      const item: NumberItem = { phoneNumber: n.phoneNumber };
      if (typeof n.id === 'string') item.phoneId = n.id;
      const name = n.verifiedName ?? n.businessUsername;
      if (typeof name === 'string' && name) item.name = name;
      out.push(item);
    }
    return out;
  };

  app.get('/api/numbers', guard, async (c) => {
    if (!o.phoneNumbers) throw new HttpUnavailable('no Service client: business numbers are not known');
    const now = Date.now();
    if (!numbersCache || now - numbersCache.at >= NUMBERS_CACHE_MS) {
      try {
        numbersInFlight ??= loadNumbers().finally(() => (numbersInFlight = undefined));
        numbersCache = { at: Date.now(), numbers: await numbersInFlight };
      } catch (err) {
        const why = err instanceof ServiceError ? `${err.code}: ${err.message}${err.requestId ? ` [Service request ${err.requestId}]` : ''}` : (err as Error).message;
        o.log.warn({ err: why }, 'business numbers: Service failure');
        throw new HttpBadGateway(`the Service did not list the business numbers: ${why}`);
      }
    }
    c.header('Cache-Control', 'private, max-age=60');
    return c.json({ numbers: numbersCache.numbers });
  });

  return app;
}
