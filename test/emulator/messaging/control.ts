/**
 * Control API of the messaging surface, mounted by the core under `/_emulator`, so
 * every path here is `/_emulator/messaging/...`. It moves the simulated far side:
 * knobs, inbound messages, opt-outs, group joins and template status changes.
 */
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { badRequest, notFound, type Env } from '../http.ts';
import { receiveInbound, sendEcho, userChangedNumber } from './chat-messages.ts';
import { simulateJoin } from './groups.ts';
import { Knobs } from './knobs.ts';
import { businessNumber, templateKey, type Runtime } from './state.ts';
import { TEMPLATE_STATUSES, setTemplateStatus } from './templates.ts';
import { EMAIL_RE, isBsuid, isE164, parseBody, phoneParam } from './validation.ts';

const InboundBody = z.strictObject({ from: z.string(), to: z.string(), text: z.string().min(1, 'must not be empty') });
const UnsubBody = z.strictObject({ customer: z.string(), channel: z.string().min(1).optional(), source: z.string().optional() });
const JoinBody = z.strictObject({ user: z.string() });
const StatusBody = z.strictObject({ status: z.enum(TEMPLATE_STATUSES), reason: z.string().optional() });
const EchoBody = z.strictObject({ from: z.string(), to: z.string(), text: z.string().min(1, 'must not be empty'), outcome: z.enum(['sent', 'delivered', 'read', 'failed']).optional() });
const SmsInboundBody = z.strictObject({ from: z.string(), to: z.string().optional(), text: z.string().min(1, 'must not be empty') });
const ChangeNumberBody = z.strictObject({ business: z.string(), oldNumber: z.string(), newNumber: z.string() });
const BalanceBody = z.strictObject({ amount: z.number(), currency: z.string().length(3).optional() });

export function controlRoutes(rt: Runtime): Hono<Env> {
  const app = new Hono<Env>();
  const { state, ctx } = rt;
  const ownerOf = (c: Context<Env>) => c.get('apiKey') ?? ctx.apiKeys[0] ?? '';

  app.get('/messaging/knobs', (c) => c.json(rt.knobs));
  app.patch('/messaging/knobs', async (c) => {
    const p = await parseBody(c, Knobs.partial());
    if (!p.ok) return p.res;
    Object.assign(rt.knobs, p.data);
    return c.json(rt.knobs);
  });

  app.post('/messaging/inbound', async (c) => {
    const p = await parseBody(c, InboundBody);
    if (!p.ok) return p.res;
    if (!isE164(p.data.from) && !isBsuid(p.data.from)) return badRequest(c, 'from: must be an E.164 number or a BSUID');
    return c.json(receiveInbound(rt, p.data.from, p.data.to, p.data.text, ownerOf(c)));
  });

  app.post('/messaging/echo', async (c) => {
    const p = await parseBody(c, EchoBody);
    if (!p.ok) return p.res;
    const biz = businessNumber(state, p.data.from, ownerOf(c));
    if (!biz) return badRequest(c, `from: ${p.data.from} is not a business phone number of this account`);
    if (!isE164(p.data.to) && !isBsuid(p.data.to)) return badRequest(c, 'to: must be an E.164 number or a BSUID');
    return c.json(sendEcho(rt, biz, p.data.to, p.data.text, p.data.outcome ?? 'read', ownerOf(c)));
  });

  app.post('/messaging/users/changeNumber', async (c) => {
    const p = await parseBody(c, ChangeNumberBody);
    if (!p.ok) return p.res;
    const biz = businessNumber(state, p.data.business, ownerOf(c));
    if (!biz) return badRequest(c, `business: ${p.data.business} is not a business phone number of this account`);
    for (const f of ['oldNumber', 'newNumber'] as const) if (!isE164(p.data[f])) return badRequest(c, `${f}: must be an E.164 number`);
    return c.json(userChangedNumber(rt, biz, p.data.oldNumber, p.data.newNumber, ownerOf(c)));
  });

  app.post('/messaging/sms/inbound', async (c) => {
    const p = await parseBody(c, SmsInboundBody);
    if (!p.ok) return p.res;
    if (!isE164(p.data.from)) return badRequest(c, 'from: must be an E.164 number');
    const sms = { id: ctx.newId('smsin_'), from: p.data.from, ...(p.data.to ? { to: p.data.to } : {}), text: p.data.text, createTime: rt.iso() };
    ctx.emit('sms.inbound.received', 'smsInbound', sms, ownerOf(c));
    return c.json(sms);
  });

  app.post('/messaging/unsubscribers', async (c) => {
    const p = await parseBody(c, UnsubBody);
    if (!p.ok) return p.res;
    const { customer } = p.data;
    if (!isE164(customer) && !isBsuid(customer) && !EMAIL_RE.test(customer)) return badRequest(c, 'customer: must be an E.164 number, a BSUID or an email address');
    const channel = p.data.channel ?? 'chat';
    const source = p.data.source ?? 'USER_REQUEST';
    const updateTime = rt.iso();
    const existing = state.unsubscribers.find((u) => u.customer === customer && u.channel === channel);
    if (existing) Object.assign(existing, { source, updateTime });
    else state.unsubscribers.push({ customer, channel, source, updateTime });
    ctx.emit('contact.unsubscribe.created', 'unsubscriberChanged', { phoneNumber: customer, channel, source, updateTime }, ownerOf(c));
    return c.json({ customer, channel, source, updateTime });
  });
  app.delete('/messaging/unsubscribers/:customer/:channel', (c) => {
    const raw = c.req.param('customer');
    const customer = /^\+?\d+$/.test(raw) ? phoneParam(raw) : raw;
    const i = state.unsubscribers.findIndex((u) => u.customer === customer && u.channel === c.req.param('channel'));
    if (i < 0) return notFound(c, 'unsubscriber');
    const [u] = state.unsubscribers.splice(i, 1);
    const updateTime = rt.iso();
    ctx.emit('contact.unsubscribe.deleted', 'unsubscriberChanged', { phoneNumber: u!.customer, channel: u!.channel, source: u!.source, updateTime }, ownerOf(c));
    return c.json({ success: true });
  });

  app.post('/messaging/groups/:groupId/join', async (c) => {
    const g = state.groups.get(c.req.param('groupId'));
    if (!g) return notFound(c, 'group');
    const p = await parseBody(c, JoinBody);
    if (!p.ok) return p.res;
    if (!isE164(p.data.user) && !isBsuid(p.data.user)) return badRequest(c, 'user: must be an E.164 number or a BSUID');
    return c.json(simulateJoin(rt, g, p.data.user));
  });

  app.post('/messaging/templates/:wabaId/:name/:language/status', async (c) => {
    const t = state.templates.get(templateKey(c.req.param('wabaId'), c.req.param('name'), c.req.param('language')));
    if (!t) return notFound(c, 'template');
    const p = await parseBody(c, StatusBody);
    if (!p.ok) return p.res;
    setTemplateStatus(rt, t, p.data.status, ownerOf(c), p.data.reason);
    return c.json(t);
  });

  app.get('/messaging/messages/:id/history', (c) => {
    const m = state.messages.get(c.req.param('id'));
    return m ? c.json({ id: m.view.id, status: m.view.status, history: m.history }) : notFound(c, 'message');
  });

  app.put('/messaging/balance', async (c) => {
    const p = await parseBody(c, BalanceBody);
    if (!p.ok) return p.res;
    state.balance.amount = p.data.amount;
    if (p.data.currency) state.balance.currency = p.data.currency;
    return c.json(state.balance);
  });
  return app;
}
