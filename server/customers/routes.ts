/**
 * The customer panel (design.md "Wave 2 contracts"):
 * `GET /api/customers/:id` (agent, supervisor), `:id` an E.164 number or a BSUID →
 * `{id, contact?, permission, calls, messages, callbacks}`:
 * - `contact`: the Service's contact for a phone number (`GET /contact/contacts/{phone}`),
 *   cached for CONTACT_CACHE_MS, "no contact" (404) too, one read per number at a time;
 *   absent for a new customer (404), a BSUID, or when the Service does not answer within
 *   CONTACT_TIMEOUT_MS (then `contactUnavailable: true`: the panel still shows the rest).
 *   A contact read counts against the Service's management quota, which call signalling
 *   shares (it has a reserved share of it: server/service/ratelimit.ts);
 * - `permission`: the calling permission for `?businessNumber=` (default: the number of the
 *   customer's latest call; `unknown` with `from: ""` when there is none);
 * - `calls`: the latest calls with this customer (date, agent, outcome, disposition, notes;
 *   media without file locations), `messages`: the latest messages with their status,
 *   `callbacks`: the open (and claimed) callback tasks.
 * The call path never waits for any of this: the page asks when it shows a call.
 *
 * Lookups are limited per user (LOOKUP_LIMIT, counted in the store so every node shares
 * it): past it 429 `RATE_LIMITED` with Retry-After, before anything is read.
 *
 * Scoped like the numbers an agent takes calls for (QUEUES_FILE, server/auth/scope.ts):
 * an agent sees the calls, messages and tasks of those numbers only, and a customer with
 * none of them (and no call ringing or held by the agent now) is 404, as an unknown one:
 * no contact is read for them (no quota spent, nothing learned by trying numbers). Asking
 * for another number's permission (`?businessNumber=`) is 403. Supervisors see everything.
 */
import { z } from 'zod';
import { Hono } from 'hono';
import type { CallbackTask, MessageRecord } from '../../shared/records.ts';
import type { Permission, User } from '../../shared/protocol.ts';
import type { Auth, AuthEnv } from '../auth/index.ts';
import { seesEveryNumber, type NumberScope } from '../auth/scope.ts';
import type { CallbackStore } from '../callbacks/store.ts';
import type { MessagingStore } from '../messaging/store.ts';
import type { CallRecord } from '../history/schema.ts';
import type { HistoryStore } from '../history/store.ts';
import type { Logger } from '../log/logger.ts';
import { HttpError, HttpTooManyRequests } from '../ops/errors.ts';
import type { Rations } from '../store/rations.ts';
import type { PermissionBook } from '../permissions/index.ts';
import type { Contact } from '../service/schemas.ts';
import { BSUID_RE, E164_RE } from '../service/validate.ts';
import { parseQuery } from '../ops/validate.ts';

/** How long a contact read from the Service is reused (the panel opens for every call). */
export const CONTACT_CACHE_MS = 30_000;
/** How long the panel waits for the Service's contact (a rate-limit slot included) before answering without it. */
export const CONTACT_TIMEOUT_MS = 3_000;
/** Customer panel lookups per user: at most `max` per `windowMs` (an agent opens one per call). */
export const LOOKUP_LIMIT = { max: 60, windowMs: 60_000 } as const;
const CALLS_SHOWN = 20;

export interface CustomerRoutesOptions {
  auth: Pick<Auth, 'requireUser'>;
  contacts?: { get(idOrPhone: string, opts?: { deadline?: number | undefined }): Promise<Contact> } | undefined;
  /** Where the per-user lookup counters live (shared by every node); without it lookups are not limited. */
  store?: Pick<Rations, 'countInWindow'> | undefined;
  lookupLimit?: { max: number; windowMs: number } | undefined;
  history?: { calls: Pick<HistoryStore, 'searchCalls'>; messages: Pick<MessagingStore, 'messagesOf'>; callbacks: Pick<CallbackStore, 'tasksOf'> } | undefined;
  permissions: Pick<PermissionBook, 'get'>;
  /** A call-back task's permission in words (`Callbacks.permissionOf`; never throws): every listed task carries it. */
  taskPermission?: ((t: Pick<CallbackTask, 'businessNumber' | 'customer'>) => Promise<CallbackTask['permission']>) | undefined;
  log: Pick<Logger, 'warn'>;
  now?: () => number;
  /** Which business numbers each agent may see (QUEUES_FILE); without it every agent sees all. */
  scope?: Pick<NumberScope, 'scoped' | 'allows' | 'allowed'> | undefined;
  /** The customers of the calls an agent rings for, holds or wraps up now (E.164 or BSUID). */
  liveCustomers?: ((agent: string) => Promise<string[]>) | undefined;
}

/** A message's business number: the sender of outbound and echo messages, the addressee of inbound ones. */
const businessOf = (m: MessageRecord): string | undefined => (m.direction === 'inbound' ? m.to : m.from);

export interface CustomerPanel {
  id: string;
  contact?: Contact;
  contactUnavailable?: true;
  permission: Permission;
  calls: CallRecord[];
  messages: MessageRecord[];
  callbacks: CallbackTask[];
}

/** Other parameters are ignored (the page adds none; a link may). */
const PanelQuery = z.object({ businessNumber: z.string().regex(E164_RE, 'must be an E.164 phone number').optional() });

export function createCustomerRoutes(o: CustomerRoutesOptions): Hono<AuthEnv> {
  const now = o.now ?? Date.now;
  const cache = new Map<string, { at: number; contact: Contact | undefined }>();
  const reading = new Map<string, Promise<Contact | undefined>>();
  const lookupLimit = o.lookupLimit ?? LOOKUP_LIMIT;

  /** The contact, or undefined for a new customer (cached too); throws when the Service did not answer in time. */
  async function contactOf(phone: string): Promise<Contact | undefined> {
    const hit = cache.get(phone);
    if (hit && now() - hit.at < CONTACT_CACHE_MS) return hit.contact;
    const inFlight = reading.get(phone);
    if (inFlight) return inFlight;
    const read = (async () => {
      let contact: Contact | undefined;
      try {
        contact = await o.contacts!.get(phone, { deadline: Date.now() + CONTACT_TIMEOUT_MS });
      } catch (err) {
        if ((err as { status?: unknown }).status !== 404) throw err;
      }
      // Oldest first out (a Map keeps insertion order): a flood of new numbers cannot empty the cache.
      if (cache.size >= 5_000) cache.delete(cache.keys().next().value!);
      cache.delete(phone);
      cache.set(phone, { at: now(), contact });
      return contact;
    })().finally(() => reading.delete(phone));
    reading.set(phone, read);
    return read;
  }

  /** One lookup of `user`'s allowance; 429 past it (given back: a refused lookup does not count). */
  async function takeLookup(user: string): Promise<void> {
    if (!o.store) return;
    const key = `lookup:customer:${user}`;
    const r = await o.store.countInWindow(key, 1, lookupLimit.windowMs);
    if (r.count <= lookupLimit.max) return;
    await o.store.countInWindow(key, -1, lookupLimit.windowMs);
    o.log.warn({ user, limit: lookupLimit.max }, 'customer lookups limited');
    throw new HttpTooManyRequests(`customer lookups are limited to ${lookupLimit.max} per ${lookupLimit.windowMs / 1000} s per user; try again after Retry-After seconds`, r.resetInMs, 'RATE_LIMITED');
  }

  /** Tasks as `/api/callbacks` gives them: each with its permission, as design.md's `CallbackTask` has it. */
  const withPermissions = (ts: CallbackTask[]): Promise<CallbackTask[]> =>
    o.taskPermission ? Promise.all(ts.map(async (t) => ({ ...t, permission: await o.taskPermission!(t) }))) : Promise.resolve(ts);

  /** What an agent may see of the panel: the calls, messages and tasks of their numbers. */
  async function scopedTo(user: User, p: Pick<CustomerPanel, 'calls' | 'messages' | 'callbacks'>): Promise<Pick<CustomerPanel, 'calls' | 'messages' | 'callbacks'>> {
    const numbers = [...p.calls.map((k) => k.businessNumber), ...p.messages.map(businessOf), ...p.callbacks.map((t) => t.businessNumber)].filter((n): n is string => typeof n === 'string');
    const ok = await o.scope!.allowed(user, numbers);
    const mine = (n: string | undefined) => n !== undefined && ok.has(n);
    return { calls: p.calls.filter((k) => mine(k.businessNumber)), messages: p.messages.filter((m) => mine(businessOf(m))), callbacks: p.callbacks.filter((t) => mine(t.businessNumber)) };
  }

  const app = new Hono<AuthEnv>();
  app.get('/api/customers/:id', o.auth.requireUser('agent', 'supervisor'), async (c) => {
    const id = c.req.param('id');
    const phone = E164_RE.test(id);
    if (!phone && !BSUID_RE.test(id)) {
      throw new HttpError(400, 'BAD_REQUEST', 'id: must be an E.164 phone number (+ and 7 to 15 digits) or a BSUID (two uppercase letters, a period, then letters or digits)');
    }
    const businessQuery = parseQuery(c, PanelQuery).businessNumber;

    const user = c.get('user');
    await takeLookup(user.name);
    const scoped = o.scope?.scoped === true && !seesEveryNumber(user);
    if (scoped && businessQuery !== undefined && !(await o.scope!.allows(user, businessQuery))) {
      throw new HttpError(403, 'FORBIDDEN', 'businessNumber: not one of the numbers you take calls for');
    }
    const lookup = () =>
      phone && o.contacts
        ? contactOf(id).then((v) => ({ ok: true as const, v }), (err: Error) => {
            o.log.warn({ err: err.message }, 'contact lookup failed');
            return { ok: false as const };
          })
        : Promise.resolve({ ok: true as const, v: undefined });
    // An agent's lookup waits for the access check: a customer they may not see costs the Service nothing.
    let contact = scoped ? undefined : lookup();
    const h = o.history;
    let calls: CallRecord[] = [];
    let messages: MessageRecord[] = [];
    let callbacks: CallbackTask[] = [];
    if (h) {
      try {
        [calls, messages, callbacks] = await Promise.all([
          h.calls.searchCalls({ customer: id, limit: CALLS_SHOWN }).then((p) => p.items),
          h.messages.messagesOf(id, 20),
          h.callbacks.tasksOf(id).then((ts) => withPermissions(ts.filter((t) => t.state === 'open' || t.state === 'claimed'))),
        ]);
      } catch (err) {
        o.log.warn({ err: { message: (err as Error).message } }, 'customer history read failed');
        throw new HttpError(503, 'UNAVAILABLE', 'the call history database is not answering; try again shortly');
      }
    }
    if (scoped) {
      ({ calls, messages, callbacks } = await scopedTo(user, { calls, messages, callbacks }));
      const live = calls.length + messages.length + callbacks.length > 0 || (await o.liveCustomers?.(user.name).catch((): string[] => []))?.includes(id);
      if (!live) throw new HttpError(404, 'NOT_FOUND', `no customer ${JSON.stringify(id)} among the numbers you take calls for`);
      contact = lookup();
    }
    const businessNumber = businessQuery ?? calls.find((k) => k.businessNumber)?.businessNumber;
    const permission: Permission = businessNumber ? await o.permissions.get(businessNumber, id) : { from: '', user: id, state: 'unknown', updatedAt: 0 };
    const ct = await contact!;
    const panel: CustomerPanel = {
      id,
      ...(ct.ok && ct.v ? { contact: ct.v } : {}),
      ...(!ct.ok ? { contactUnavailable: true as const } : {}),
      permission,
      // File locations stay on the server; the history page links the media.
      calls: calls.map((k) => ({ ...k, media: k.media.map(({ path: _p, ...m }) => m) })),
      messages,
      callbacks,
    };
    return c.json(panel);
  });
  return app;
}
