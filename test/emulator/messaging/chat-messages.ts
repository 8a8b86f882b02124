/**
 * Chat messages (queued and direct sends, retrieval, mark-as-read) and the simulated
 * user behind them: status progression, pricing, and the call-permission reply that
 * writes `ctx.permissions` for the core's business-initiated connect.
 */
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { badRequest, notFound, serviceError, type Env } from '../http.ts';
import type { MessageOutcome } from './knobs.ts';
import {
  STATUS_RANK,
  bsuidFor,
  businessNumber,
  detRandom,
  regionOf,
  templateKey,
  type Json,
  type MessageRecord,
  type MessageStatus,
  type Runtime,
  type TemplateRecord,
} from './state.ts';
import { check, decimalString, e164, isBsuid, isE164 } from './validation.ts';

const TYPES = ['text', 'image', 'video', 'audio', 'document', 'sticker', 'template', 'interactive', 'location', 'contacts', 'reaction'] as const;

const SendBody = z.looseObject({
  from: e164(),
  to: z.string().optional(),
  recipient: z.string().optional(),
  type: z.enum(TYPES),
  externalId: z.string().max(256).optional(),
  bidSpec: z.strictObject({ per_message_bid_multiplier: decimalString({ maxDecimals: 3 }) }).optional(),
  text: z.looseObject({ body: z.string().min(1, 'must not be empty').max(4096, 'at most 4096 characters') }).optional(),
  template: z
    .looseObject({
      name: z.string().min(1, 'must not be empty'),
      language: z.looseObject({ code: z.string().min(1, 'must not be empty'), policy: z.literal('deterministic').optional() }),
      components: z.array(z.looseObject({ type: z.string() })).optional(),
    })
    .optional(),
  interactive: z
    .looseObject({
      type: z.string().min(1),
      action: z.looseObject({ name: z.string() }).optional(),
      body: z.looseObject({ text: z.string().min(1, 'must not be empty') }).optional(),
    })
    .optional(),
  filterUnsubscribed: z.boolean().optional(),
  filterBlocked: z.boolean().optional(),
});

/** Provider code the emulator uses when the call-permission request ration is used up (our choice; the interface names none). */
export const PERMISSION_LIMIT_CODE = 138009;
const DAY = 24 * 3600 * 1000;

const BASE_PRICE: Record<string, number> = { MARKETING: 0.025, UTILITY: 0.004, AUTHENTICATION: 0.0135 };
const round4 = (n: number) => Math.round(n * 10000) / 10000;
const OTP_TYPES = new Set(['ONE_TAP', 'ZERO_TAP', 'COPY_CODE']);

/** True when a template needs a phone number: one-tap, zero-tap or copy-code auth (copy-code is the auth default). */
function needsPhoneNumber(t: TemplateRecord): boolean {
  if (t.category !== 'AUTHENTICATION') return false;
  const otp = t.components.flatMap((c) => (Array.isArray(c.buttons) ? (c.buttons as Json[]) : [])).map((b) => String(b.otp_type ?? '').toUpperCase());
  return otp.length === 0 || otp.some((o) => OTP_TYPES.has(o));
}

const hasPermissionComponent = (components: Json[]) =>
  components.some((c) => String(c.type).toLowerCase() === 'call_permission_request');

const owner = (rt: Runtime, c: Context<Env>) => c.get('apiKey') ?? rt.ctx.apiKeys[0] ?? '';

/**
 * Validates and accepts one chat message; shared by queued and direct sends and by the
 * group invite-link send. Returns the response to give.
 */
export function sendChatMessage(rt: Runtime, c: Context<Env>, raw: unknown, mode: 'queued' | 'direct'): Response {
  const parsed = check(c, SendBody, raw);
  if (!parsed.ok) return parsed.res;
  const b = parsed.data;
  const { state, ctx } = rt;

  if (mode === 'direct') {
    // The filters only exist on queued sends; silently ignoring them would let a caller
    // believe suppression happened when it did not.
    if (b.filterUnsubscribed !== undefined) return badRequest(c, 'filterUnsubscribed: only accepted by POST /chat/messages (queued)');
    if (b.filterBlocked !== undefined) return badRequest(c, 'filterBlocked: only accepted by POST /chat/messages (queued)');
  }
  // `to` wins over `recipient`; only the one used is validated.
  let user: string;
  if (b.to !== undefined) {
    if (!isE164(b.to)) return badRequest(c, 'to: must be an E.164 number such as +14155550100');
    user = b.to;
  } else if (b.recipient !== undefined) {
    if (!isBsuid(b.recipient)) return badRequest(c, 'recipient: must be a BSUID: two uppercase letters, a period, up to 128 alphanumerics');
    user = b.recipient;
  } else {
    return badRequest(c, 'to: is required when recipient is absent');
  }
  const key = owner(rt, c);
  const biz = businessNumber(state, b.from, key);
  if (!biz) return badRequest(c, `from: ${b.from} is not a business phone number of this account`);

  const content = (b as Json)[b.type];
  if (content === undefined || content === null || typeof content !== 'object') return badRequest(c, `${b.type}: is required for type ${b.type}`);

  let template: TemplateRecord | undefined;
  let permissionRequest = false;
  if (b.type === 'template') {
    const t = b.template!;
    template = state.templates.get(templateKey(biz.wabaId, t.name, t.language.code));
    if (!template) return badRequest(c, `template.name: no template ${t.name} in language ${t.language.code} for business account ${biz.wabaId}`);
    if (template.status !== 'APPROVED') return badRequest(c, `template: status is ${template.status}; only APPROVED templates can be sent`);
    if (b.to === undefined && needsPhoneNumber(template)) {
      return badRequest(c, 'to: one-tap, zero-tap and copy-code authentication templates need a phone number; a BSUID alone is refused');
    }
    permissionRequest = hasPermissionComponent(template.components);
  }
  if (b.type === 'interactive') {
    const i = b.interactive!;
    if (i.type === 'call_permission_request') {
      if (i.action?.name !== 'call_permission_request') return badRequest(c, 'interactive.action.name: must be call_permission_request');
      if (!i.body?.text) return badRequest(c, 'interactive.body.text: is required for a call_permission_request');
      permissionRequest = true;
    }
  }
  if (b.bidSpec && !(template?.category === 'MARKETING' && template.bidSpec)) {
    return badRequest(c, 'bidSpec: applies only to a marketing template created with bidSpec');
  }

  const now = rt.iso();
  const recipientUserId = bsuidFor(user);
  const region = regionOf(user);

  // Pricing: templates are charged by category; Max Price templates estimate the ceiling.
  let totalPrice = 0;
  let pricingCategory = 'service';
  let bidPricingFlag = false;
  if (template) {
    pricingCategory = template.category.toLowerCase();
    totalPrice = BASE_PRICE[template.category] ?? 0;
    if (template.category === 'AUTHENTICATION') {
      const account = state.businessAccounts.get(biz.wabaId);
      const intl = (account?.authIntlRateEligibilityCountries as string[] | undefined) ?? [];
      if (intl.includes(region) && regionOf(b.from) !== region) pricingCategory = 'authentication_international';
    }
    if (template.bidSpec) {
      const adj = template.bidSpec.countryPriceAdjustments?.find((a) => a.countryCode === region);
      const perMessage = b.bidSpec ? Number(b.bidSpec.per_message_bid_multiplier) : 1;
      totalPrice = Number(template.bidSpec.maxBid) * (adj ? Number(adj.multiplier) : 1) * perMessage;
      pricingCategory = 'marketing_lite_bidding';
      bidPricingFlag = true;
    }
  }

  const view: MessageRecord['view'] = {
    id: ctx.newId('msg_'),
    wamid: `wamid.${ctx.newId('')}`,
    wabaId: biz.wabaId,
    from: b.from,
    ...(b.to !== undefined ? { to: b.to } : { recipient: user }),
    recipientUserId,
    type: b.type,
    [b.type]: content,
    status: 'accepted',
    createTime: now,
    updateTime: now,
    totalPrice: round4(totalPrice),
    pricingCategory,
    bidPricingFlag,
    pricingType: template ? 'regular' : 'free_customer_service',
    pricingModel: 'PMP',
    currency: state.balance.currency,
    regionCode: region,
    bizType: 'chat',
    ...(b.externalId !== undefined ? { externalId: b.externalId } : {}),
    conversation: { type: 'REGULAR' },
  };
  const record: MessageRecord = { view, history: ['accepted'], owner: key };

  // Suppression is checked on queued sends only, and only when asked for.
  if (mode === 'queued') {
    const unsub = b.filterUnsubscribed && state.unsubscribers.some((u) => u.customer === user && u.channel === 'chat');
    const blocked = b.filterBlocked && [...state.contacts.values()].some((ct) => ct.blocked === true && (ct.phoneNumber === user || ct.recipientUserId === user));
    if (unsub || blocked) {
      Object.assign(view, {
        status: 'failed',
        totalPrice: 0,
        errorCode: unsub ? 'SUPPRESSED_UNSUBSCRIBED' : 'SUPPRESSED_BLOCKED',
        errorMessage: unsub ? 'recipient unsubscribed from the chat channel; skipped (filterUnsubscribed)' : 'recipient is a blocked contact; skipped (filterBlocked)',
      });
      record.history.push('failed');
      state.messages.set(view.id, record);
      ctx.emit('chat.message.updated', 'chatMessage', statusPayload(record, 'failed', now), key);
      return c.json(view);
    }
  }

  if (permissionRequest) {
    const pair = `${b.from}|${user}`;
    const nowMs = ctx.clock.now();
    const times = (state.permissionRequests.get(pair) ?? []).filter((t) => t > nowMs - 7 * DAY);
    const last24 = times.filter((t) => t > nowMs - DAY);
    if (last24.length >= 1 || times.length >= 2) {
      const rule = last24.length >= 1 ? '1 per 24 hours' : '2 per 7 days';
      const nextAt = last24.length >= 1 ? last24[0]! + DAY : times[0]! + 7 * DAY;
      return serviceError(
        c,
        400,
        'BAD_REQUEST',
        `call permission request limit reached for ${b.from} and this user (${rule}); next request allowed at ${new Date(nextAt).toISOString()}`,
        { code: PERMISSION_LIMIT_CODE, message: 'Call permission request limit reached', nextAllowedTime: new Date(nextAt).toISOString() },
      );
    }
    times.push(nowMs);
    state.permissionRequests.set(pair, times);
  }

  state.messages.set(view.id, record);
  const book = state.contactBook.get(b.from) ?? new Set<string>();
  book.add(recipientUserId);
  state.contactBook.set(b.from, book);
  progress(rt, record, user, permissionRequest);
  return c.json(view);
}

function statusesFor(outcome: MessageOutcome, skipDelivered: boolean): MessageStatus[] {
  switch (outcome) {
    case 'accepted':
      return [];
    case 'sent':
      return ['sent'];
    case 'delivered':
      return ['sent', 'delivered'];
    case 'failed':
      return ['sent', 'failed'];
    case 'read':
      return skipDelivered ? ['sent', 'read'] : ['sent', 'delivered', 'read'];
  }
}

/** Schedules the status events of one message and, for a permission request, the user's reply. */
function progress(rt: Runtime, record: MessageRecord, user: string, permissionRequest: boolean) {
  const k = rt.knobs;
  const statuses = statusesFor(k.outcomeByRecipient[user] ?? k.messageOutcome, k.skipDelivered);
  const steps = statuses.map((s) => ({ ms: k.stepDelayMs, run: () => applyStatus(rt, record, s) }));
  // The user answers after seeing the request: after read, or delivered when read never comes.
  const seen = statuses.includes('read') || statuses.includes('delivered');
  if (permissionRequest && seen && k.permissionReply !== 'none') {
    // Ids are taken now, in request order, so they don't depend on which timer fires first.
    const ids = { id: rt.ctx.newId('inb_'), wamid: `wamid.${rt.ctx.newId('')}` };
    steps.push({ ms: k.stepDelayMs, run: () => replyToPermissionRequest(rt, record, user, ids) });
  }
  if (k.lateLowerStatus && statuses.length > 1) steps.push({ ms: k.stepDelayMs, run: () => applyStatus(rt, record, 'sent') });
  rt.sched.chain(steps);
}

/** Records a status event; the view moves only upward (a late lower status stays in history). */
function applyStatus(rt: Runtime, record: MessageRecord, status: MessageStatus) {
  const now = rt.iso();
  const v = record.view;
  record.history.push(status);
  const current = v.status;
  const raises = STATUS_RANK[status] > STATUS_RANK[current] && !(status === 'failed' && (current === 'delivered' || current === 'read'));
  if (raises) {
    v.status = status;
    v.updateTime = now;
    if (status === 'sent') v.sendTime = now;
    if (status === 'delivered') v.deliverTime = now;
    if (status === 'read') v.readTime = now;
    if (status === 'failed') {
      v.errorCode = rt.knobs.failErrorCode;
      v.errorMessage = rt.knobs.failErrorMessage;
      v.totalPrice = 0; // undelivered messages incur no delivery charge
    }
    if ((status === 'delivered' || status === 'read') && !record.charged) {
      finalizePrice(rt, v);
      record.charged = true;
    }
  }
  const payload = statusPayload(record, status, now);
  rt.ctx.emit('chat.message.updated', 'chatMessage', payload, record.owner);
  if (rt.knobs.duplicateStatusEvents) rt.ctx.emit('chat.message.updated', 'chatMessage', payload, record.owner);
}

/** The charge is dynamic at or below the Max Price ceiling, and fixed otherwise. */
function finalizePrice(rt: Runtime, v: Json) {
  const estimate = Number(v.totalPrice);
  const final = v.bidPricingFlag ? round4(estimate * (0.6 + 0.4 * detRandom(rt.ctx.options.seed, `price:${String(v.id)}`))) : estimate;
  v.totalPrice = final;
  rt.state.balance.amount = round4(rt.state.balance.amount - final);
}

/** `chatMessage` of a status event: the message without its content, at the event's status. */
function statusPayload(record: MessageRecord, status: MessageStatus, now: string): Json {
  const v = record.view;
  const { [String(v.type)]: _content, type: _type, ...rest } = v;
  const payload: Json = { ...rest, status, updateTime: now };
  if (status !== 'failed') {
    payload.customerProfile = status === 'sent' ? { name: 'Simulated User' } : { name: 'Simulated User', username: 'simulated.user' };
    delete payload.errorCode;
    delete payload.errorMessage;
  }
  return payload;
}

function replyToPermissionRequest(rt: Runtime, record: MessageRecord, user: string, ids: { id: string; wamid: string }) {
  const { ctx, knobs } = rt;
  const v = record.view;
  const business = String(v.from);
  const permanent = knobs.permissionPermanent;
  const response = knobs.permissionReply === 'reject' ? 'reject' : 'accept';
  const expiration = response === 'accept' && !permanent ? Math.floor(ctx.clock.now() / 1000) + knobs.permissionExpirySeconds : undefined;
  const grant = { business, user, response, isPermanent: permanent, ...(expiration !== undefined ? { expirationTimestamp: expiration } : {}) } as const;
  // Written before the event goes out, so a client reacting to the event can call at once.
  ctx.permissions.set(`${business}|${user}`, { ...grant });
  const bsuid = bsuidFor(user);
  if (bsuid !== user) ctx.permissions.set(`${business}|${bsuid}`, { ...grant, user: bsuid });

  const now = rt.iso();
  const inbound = {
    ...ids,
    wabaId: v.wabaId,
    ...(user.startsWith('+') ? { from: user } : {}),
    fromUserId: bsuid,
    to: business,
    type: 'interactive',
    interactive: {
      type: 'call_permission_reply',
      call_permission_reply: {
        response,
        is_permanent: permanent,
        ...(expiration !== undefined ? { expiration_timestamp: expiration } : {}),
        response_source: 'user_action',
      },
    },
    context: { id: v.id, wamid: v.wamid },
    customerProfile: { name: 'Simulated User' },
    createTime: now,
  };
  rt.state.inbound.set(inbound.id, { ...inbound, owner: record.owner });
  ctx.emit('chat.inbound_message.received', 'chatInboundMessage', inbound, record.owner);
}

/** A plain inbound text from a simulated user (control API), so markAsRead has something to read. */
export function receiveInbound(rt: Runtime, from: string, to: string, text: string, owner: string): Json {
  const biz = businessNumber(rt.state, to);
  const now = rt.iso();
  const inbound = {
    id: rt.ctx.newId('inb_'),
    wamid: `wamid.${rt.ctx.newId('')}`,
    wabaId: biz?.wabaId,
    ...(from.startsWith('+') ? { from } : {}),
    fromUserId: bsuidFor(from),
    to,
    type: 'text',
    text: { body: text },
    customerProfile: { name: 'Simulated User' },
    createTime: now,
  };
  rt.state.inbound.set(inbound.id, { ...inbound, owner });
  rt.ctx.emit('chat.inbound_message.received', 'chatInboundMessage', inbound, owner);
  return inbound;
}

/**
 * A message the business sent outside the API (control API): `chat.echo_message.created`
 * (status sent, with content), then `chat.echo_message.updated` without content or type.
 * A failure is reported as a separate failed echo (its own id, provider code 131000), not
 * as a move of the first one.
 */
export function sendEcho(rt: Runtime, biz: { phoneNumber: string; wabaId: string }, user: string, text: string, outcome: 'sent' | 'delivered' | 'read' | 'failed', owner: string): Json {
  const { ctx } = rt;
  const now = rt.iso();
  const base = {
    wabaId: biz.wabaId,
    from: biz.phoneNumber,
    ...(user.startsWith('+') ? { to: user } : { recipient: user }),
    recipientUserId: bsuidFor(user),
  };
  const echo = { id: ctx.newId('echo_'), wamid: `wamid.${ctx.newId('')}`, ...base, type: 'text', text: { body: text }, status: 'sent', createTime: now, sendTime: now, updateTime: now };
  const failedIds = outcome === 'failed' ? { id: ctx.newId('echo_'), wamid: `wamid.${ctx.newId('')}` } : undefined;
  ctx.emit('chat.echo_message.created', 'chatMessage', echo, owner);
  const later: MessageStatus[] = outcome === 'delivered' ? ['delivered'] : outcome === 'read' ? ['delivered', 'read'] : [];
  const steps = later.map((status) => ({
    ms: rt.knobs.stepDelayMs,
    run: () => ctx.emit('chat.echo_message.updated', 'chatMessage', { id: echo.id, wamid: echo.wamid, ...base, status, updateTime: rt.iso() }, owner),
  }));
  if (failedIds) {
    steps.push({
      ms: rt.knobs.stepDelayMs,
      run: () => ctx.emit('chat.echo_message.updated', 'chatMessage', { ...failedIds, ...base, status: 'failed', errorCode: '131000', errorMessage: 'Something went wrong', updateTime: rt.iso() }, owner),
    });
  }
  rt.sched.chain(steps);
  return echo;
}

/** The user moved to a new number: a system inbound message carrying the old and new BSUIDs. */
export function userChangedNumber(rt: Runtime, biz: { phoneNumber: string; wabaId: string }, oldNumber: string, newNumber: string, owner: string): Json {
  const msg = {
    id: rt.ctx.newId('inb_'),
    wamid: `wamid.${rt.ctx.newId('')}`,
    wabaId: biz.wabaId,
    from: newNumber,
    fromUserId: bsuidFor(newNumber),
    to: biz.phoneNumber,
    type: 'system',
    system: {
      type: 'user_changed_number',
      body: `User changed from ${oldNumber} to ${newNumber}`,
      old_user_id: bsuidFor(oldNumber),
      new_user_id: bsuidFor(newNumber),
    },
    createTime: rt.iso(),
  };
  rt.state.inbound.set(msg.id, { ...msg, owner });
  rt.ctx.emit('chat.inbound_message.received', 'chatInboundMessage', msg, owner);
  return msg;
}

export function chatMessageRoutes(rt: Runtime): Hono<Env> {
  const app = new Hono<Env>();
  const body = async (c: Context<Env>) => c.req.json().catch(() => undefined);

  app.post('/chat/messages', async (c) => {
    const raw = await body(c);
    if (raw === undefined) return badRequest(c, 'body: must be a JSON object');
    return sendChatMessage(rt, c, raw, 'queued');
  });
  app.post('/chat/messages/sendDirectly', async (c) => {
    const raw = await body(c);
    if (raw === undefined) return badRequest(c, 'body: must be a JSON object');
    return sendChatMessage(rt, c, raw, 'direct');
  });
  app.get('/chat/messages/:id', (c) => {
    const rec = rt.state.messages.get(c.req.param('id'));
    // Another tenant's message is as invisible as a missing one.
    if (!rec || rec.owner !== owner(rt, c)) return notFound(c, 'message');
    return c.json(rec.view);
  });
  app.post('/chat/inboundMessages/:id/markAsRead', (c) => {
    const rec = rt.state.inbound.get(c.req.param('id'));
    if (!rec || rec.owner !== owner(rt, c)) return notFound(c, 'inbound message');
    rec.readTime ??= rt.iso();
    return c.json({ success: true, id: rec.id, status: 'read', readTime: rec.readTime });
  });
  return app;
}
