/**
 * Messaging in the product: the webhook handlers that keep message
 * records, the template catalog and the opt-outs in history; the catalog sync and opt-out
 * load at start; the reconcile loop; and the send path of `POST /api/messages`.
 *
 * State lives in the history database (`server/history/messages.ts`), not in this process:
 * a webhook event is handled by whichever node's worker takes it, and every node must see
 * the same opt-outs and catalog. The merging is the pure models' (`status.ts`,
 * `templates.ts`, `optout.ts`).
 *
 * Handlers take the typed event (`{type, envelope, payload}` as `parseEvent` returns it)
 * and `{signal}`; they are idempotent (the workers deliver at least once) and throw to be
 * retried (database down).
 */
import type { ChatMessage, Envelope, KnownEventType, PayloadOf } from '../../shared/events.ts';
import type { Role, ServerMsg } from '../../shared/protocol.ts';
import type { MessageDirection, MessageRecord } from '../../shared/records.ts';
import type { MessageChange, MessagingStore } from './store.ts';
import type { Logger } from '../log/logger.ts';
import type { PushOptions } from '../push/hub.ts';
import { NotFoundError, TimeoutError, ValidationError, type ServiceClient } from '../service/index.ts';
import type { QueuedSendInput } from '../service/resources/messages.ts';
import { CHAT_CHANNEL, mayMessage } from './optout.ts';
import { offerableTemplates, sendableTemplate, type CatalogTemplate } from './templates.ts';

/** The Hub's shape (server/gateway/hub.ts): where `message.updated` and `callback.updated` go. */
export interface Push {
  toUser(name: string, msg: ServerMsg): void;
  /** `paced`: an announcement, written at each socket's own turn within a second (server/push/hub.ts). */
  toRole(role: Role, msg: ServerMsg, o?: PushOptions): void;
  /** Every connection of these users, batched like a role push (a queue's agents). */
  toUsers?(names: Iterable<string>, msg: ServerMsg, o?: PushOptions): void;
}

/** One event as the workers hand it: `parseEvent`'s known result for type `T`. */
export interface TypedEvent<T extends KnownEventType = KnownEventType> {
  type: T;
  envelope: Envelope;
  payload: PayloadOf<T>;
}
export type TypedHandler<T extends KnownEventType> = (event: TypedEvent<T>, ctx: { signal: AbortSignal }) => Promise<void>;

export type MessagingClient = Pick<ServiceClient, 'messages' | 'templates' | 'unsubscribers' | 'transport'>;

export interface MessagingOptions {
  store: MessagingStore;
  client: MessagingClient;
  push: Push;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  now?: () => number;
  /** A message with no change for this long is fetched (`GET /chat/messages/{id}`). Default 10 min. */
  reconcileIdleMs?: number;
  /** Messages older than this are no longer reconciled. Default 3 days. */
  reconcileMaxAgeMs?: number;
  /** How often the reconcile loop looks. Default 60 s. */
  reconcileEveryMs?: number;
  /** How long a send may wait for a rate-limit slot (part 8) before it is refused. Default 5 s. */
  sendWaitMs?: number;
}

/** A send refused (by us, before the Service, or by the Service): the route's status, code and words. */
export class SendRefused extends Error {
  override readonly name = 'SendRefused';
  constructor(
    readonly status: 400 | 404 | 409 | 422 | 429 | 502 | 503 | 504,
    readonly code: string,
    message: string,
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** `POST /api/messages`, validated (routes.ts). */
export interface SendInput {
  from: string;
  to?: string;
  recipient?: string;
  text?: string;
  template?: { name: string; language: string; parameters?: string[] };
}

const frame = (message: MessageRecord): ServerMsg => ({ type: 'message.updated', message });

export interface Messaging {
  handlers: {
    'chat.message.updated': TypedHandler<'chat.message.updated'>;
    'chat.echo_message.created': TypedHandler<'chat.echo_message.created'>;
    'chat.echo_message.updated': TypedHandler<'chat.echo_message.updated'>;
    'chat.inbound_message.received': TypedHandler<'chat.inbound_message.received'>;
    'chat.template.reviewed': TypedHandler<'chat.template.reviewed'>;
    'chat.template.quality_updated': TypedHandler<'chat.template.quality_updated'>;
    'chat.template.category_updated': TypedHandler<'chat.template.category_updated'>;
    'contact.unsubscribe.created': TypedHandler<'contact.unsubscribe.created'>;
    'contact.unsubscribe.deleted': TypedHandler<'contact.unsubscribe.deleted'>;
  };
  /** At start (and when an event says the catalog is stale): every page of `GET /chat/templates`. */
  syncTemplates(signal?: AbortSignal): Promise<{ templates: number; skipped: number }>;
  /** At start: every page of `GET /unsubscribers`. */
  loadUnsubscribers(signal?: AbortSignal): Promise<{ optedOut: number; skipped: number }>;
  /** One pass of the reconcile loop: returns how many messages were fetched. */
  reconcileOnce(signal?: AbortSignal): Promise<number>;
  /** Start the reconcile loop (every `reconcileEveryMs`); `stop()` ends it. */
  start(): void;
  stop(): void;
  /** `POST /api/messages`: checks (opt-out, template APPROVED, rate limit), send, record. Throws `SendRefused`. */
  send(input: SendInput, by: string, signal?: AbortSignal): Promise<MessageRecord>;
  /** Record and push a message sent by another part of the server (follow-ups). */
  recordSent(response: ChatMessage, sent: Partial<ChatMessage>, by?: string): Promise<MessageRecord | undefined>;
  /** APPROVED templates only (the pickers offer these). */
  offerable(): Promise<CatalogTemplate[]>;
}

export function createMessaging(o: MessagingOptions): Messaging {
  const now = o.now ?? Date.now;
  const { store, client, push, log } = o;
  const idleMs = o.reconcileIdleMs ?? 10 * 60_000;
  const maxAgeMs = o.reconcileMaxAgeMs ?? 3 * 24 * 3600_000;
  const everyMs = o.reconcileEveryMs ?? 60_000;
  const sendWaitMs = o.sendWaitMs ?? 5_000;
  let timer: NodeJS.Timeout | undefined;
  let syncing: Promise<{ templates: number; skipped: number }> | undefined;

  function announce(change: MessageChange | undefined): void {
    if (!change?.changed) return;
    const msg = frame(change.record);
    push.toRole('supervisor', msg);
    if (change.sentBy !== undefined) push.toUser(change.sentBy, msg);
  }

  const onMessage =
    (direction: MessageDirection) =>
    async (ev: TypedEvent<'chat.message.updated' | 'chat.echo_message.created' | 'chat.echo_message.updated' | 'chat.inbound_message.received'>) => {
      announce(await store.applyMessage({ direction, message: ev.payload as ChatMessage, at: ev.envelope.createTime }));
    };

  const onTemplate = async (ev: TypedEvent<'chat.template.reviewed' | 'chat.template.quality_updated' | 'chat.template.category_updated'>) => {
    const at = Date.parse(ev.envelope.createTime);
    const catalog = await store.applyTemplateEvent(ev.type, ev.payload, Number.isFinite(at) ? at : now());
    // An unarchive, or a template we could not place: only a listing tells its status.
    if (catalog.needsSync || [...catalog.templates.values()].some((t) => t.needsSync)) {
      void syncTemplates().catch((err: Error) => log.warn({ err: err.message }, 'template catalog sync failed; it is retried at the next event'));
    }
  };

  const onUnsubscribe = async (ev: TypedEvent<'contact.unsubscribe.created' | 'contact.unsubscribe.deleted'>) => {
    const at = Date.parse(ev.envelope.createTime);
    const e = await store.applyUnsubscribeEvent(ev.type, ev.payload, Number.isFinite(at) ? at : now());
    if (e) log.info({ customer: e.customer, channel: e.channel, optedOut: e.optedOut }, 'opt-out changed');
  };

  function syncTemplates(signal?: AbortSignal) {
    // One listing at a time in this process; a second caller shares it.
    syncing ??= (async () => {
      try {
        const fetchedAt = now();
        const items: unknown[] = [];
        for await (const t of client.templates.iterate({ limit: 100 }, { signal })) items.push(t);
        const r = await store.syncTemplates(items, fetchedAt);
        log.info({ templates: r.catalog.templates.size, skipped: r.skipped }, 'template catalog synced');
        return { templates: r.catalog.templates.size, skipped: r.skipped };
      } finally {
        syncing = undefined;
      }
    })();
    return syncing;
  }

  async function loadUnsubscribers(signal?: AbortSignal) {
    const fetchedAt = now();
    const items: unknown[] = [];
    for await (const u of client.unsubscribers.iterate({ limit: 100 }, { signal })) items.push(u);
    const r = await store.syncUnsubscribers(items, fetchedAt);
    log.info(r, 'unsubscribers loaded');
    return r;
  }

  async function reconcileOnce(signal?: AbortSignal): Promise<number> {
    const t = now();
    const ids = await store.idleMessages(new Date(t - idleMs), new Date(t - maxAgeMs), 50);
    for (const id of ids) {
      signal?.throwIfAborted();
      const cur = await store.getMessage(id);
      if (!cur) continue;
      try {
        const fetched = await client.messages.get(id, { signal });
        const change = await store.applyMessage({ direction: cur.record.direction, message: fetched, at: new Date(now()).toISOString() });
        if (change?.changed) announce(change);
        else await store.touchMessage(id);
      } catch (err) {
        // Unknown to the Service (an inbound id, say): stop asking for a while.
        if (err instanceof NotFoundError) await store.touchMessage(id);
        else throw err;
      }
    }
    return ids.length;
  }

  function start() {
    if (timer) return;
    const tick = () =>
      void reconcileOnce()
        .catch((err: Error) => log.warn({ err: err.message }, 'message reconcile failed; retried at the next pass'))
        .finally(() => {
          if (timer) timer = setTimeout(tick, everyMs).unref();
        });
    timer = setTimeout(tick, everyMs).unref();
  }

  async function recordSent(response: ChatMessage, sent: Partial<ChatMessage>, by?: string): Promise<MessageRecord | undefined> {
    // The queued send's response confirms acceptance; what we sent fills what it omits.
    const message = { ...sent, ...response, status: typeof response.status === 'string' ? response.status : 'accepted' } as ChatMessage;
    const fact = { direction: 'outbound' as const, message, at: new Date(now()).toISOString(), ...(by ? { sentBy: by } : {}) };
    const change = await store.applyMessage(fact);
    announce(change);
    return change?.record;
  }

  async function send(input: SendInput, by: string, signal?: AbortSignal): Promise<MessageRecord> {
    // 1. Opt-outs: nothing goes to an unsubscribed customer (a direct refusal, before the Service).
    const ids = [input.to, input.recipient];
    const opt = mayMessage(await store.optOutsOf(ids), ids, CHAT_CHANNEL);
    if (!opt.ok) throw new SendRefused(409, 'OPTED_OUT', opt.message);
    // 2. Templates: only APPROVED; the refusal names the status that blocks.
    if (input.template) {
      const t = sendableTemplate(await store.catalog(), input.template.name, input.template.language);
      if (!t.ok) throw new SendRefused(t.code === 'UNKNOWN_TEMPLATE' ? 404 : 409, t.code, `template: ${t.message}`);
    }
    // 3. Part 8 limits: the client's limiter for this sender's queued sends. A scope paused
    // by the Service's 429 answers at once; otherwise the send waits at most `sendWaitMs`.
    const scope = `queued:${input.from}`;
    const paused = client.transport.limiter.pausedUntil(scope) - now();
    if (paused > sendWaitMs) throw new SendRefused(429, 'TOO_MANY_REQUESTS', `messages from ${input.from} are paused by the Service's rate limit for ${Math.ceil(paused / 1000)} s more`, paused);
    const address = input.to !== undefined ? { to: input.to } : { recipient: input.recipient! };
    const body: QueuedSendInput = input.template
      ? {
          from: input.from,
          ...address,
          type: 'template',
          template: {
            name: input.template.name,
            language: { code: input.template.language },
            ...(input.template.parameters?.length ? { components: [{ type: 'body', parameters: input.template.parameters.map((text) => ({ type: 'text', text })) }] } : {}),
          },
          filterUnsubscribed: true,
        }
      : { from: input.from, ...address, type: 'text', text: { body: input.text! }, filterUnsubscribed: true };
    let response: ChatMessage;
    try {
      response = await client.messages.send(body, { signal, deadline: now() + sendWaitMs });
    } catch (err) {
      if (err instanceof TimeoutError && err.code === 'DEADLINE_EXCEEDED') {
        throw new SendRefused(429, 'TOO_MANY_REQUESTS', `messages from ${input.from}: the rate limit (part 8: queued sends per sender) gives no slot within ${sendWaitMs / 1000} s; nothing was sent`, 1000);
      }
      if (err instanceof ValidationError) throw new SendRefused(400, 'BAD_REQUEST', err.message);
      throw err;
    }
    const sent: Partial<ChatMessage> = { from: input.from, ...address, type: body.type };
    if (input.text !== undefined) sent.text = { body: input.text };
    if (input.template) Object.assign(sent, { template: body.template });
    const rec = await recordSent(response, sent, by);
    return rec!;
  }

  return {
    handlers: {
      'chat.message.updated': onMessage('outbound'),
      'chat.echo_message.created': onMessage('echo'),
      'chat.echo_message.updated': onMessage('echo'),
      'chat.inbound_message.received': onMessage('inbound'),
      'chat.template.reviewed': onTemplate,
      'chat.template.quality_updated': onTemplate,
      'chat.template.category_updated': onTemplate,
      'contact.unsubscribe.created': onUnsubscribe,
      'contact.unsubscribe.deleted': onUnsubscribe,
    },
    syncTemplates: (signal) => syncTemplates(signal),
    loadUnsubscribers,
    reconcileOnce,
    start,
    stop() {
      clearTimeout(timer);
      timer = undefined;
    },
    send,
    recordSent,
    offerable: async () => offerableTemplates(await store.catalog()),
  };
}
