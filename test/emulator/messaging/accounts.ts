/**
 * Business accounts and business phone numbers (not their `/settings`, which the core
 * owns together with the calls it governs).
 */
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { badRequest, notFound, pageNumber, serviceError, type Env } from '../http.ts';
import type { Json, Runtime } from './state.ts';
import { BSUID_RE, COUNTRY_RE, isParentBsuid, parseBody, phoneParam } from './validation.ts';

const DATE_INTERVALS = ['L1D', 'L7D', 'L14D', 'L28D'] as const;

const CreativePatch = z.strictObject({
  enabled: z.boolean().optional(),
  features: z.record(z.string(), z.boolean()).optional(),
});
const RegisterBody = z.looseObject({ pin: z.string().regex(/^\d{6}$/, 'must be 6 digits') });
const UsernameBody = z.strictObject({
  username: z.string().min(3, 'must be 3 to 35 characters').max(35, 'must be 3 to 35 characters').regex(/^[a-z0-9._]+$/, 'may hold only lowercase letters, digits, periods and underscores'),
});
const DisplayNameBody = z.strictObject({ newName: z.string().min(3, 'must be 3 to 512 characters').max(512, 'must be 3 to 512 characters') });
const CommercePatch = z.strictObject({ isCartEnabled: z.boolean().optional(), isCatalogVisible: z.boolean().optional() });

export function accountRoutes(rt: Runtime): Hono<Env> {
  const app = new Hono<Env>();
  const { state } = rt;

  app.get('/chat/businessAccounts', (c) => pageNumber(c, [...state.businessAccounts.values()]));
  app.get('/chat/businessAccounts/:id', (c) => {
    const a = state.businessAccounts.get(c.req.param('id'));
    return a ? c.json(a) : notFound(c, 'business account');
  });

  app.get('/chat/businessAccounts/:wabaId/reachEstimate', (c) => {
    const a = state.businessAccounts.get(c.req.param('wabaId'));
    if (!a) return notFound(c, 'business account');
    const country = c.req.query('targetCountry');
    if (country === undefined) return badRequest(c, 'targetCountry: is required');
    if (!COUNTRY_RE.test(country)) return badRequest(c, 'targetCountry: must be an ISO 3166-1 alpha-2 code such as US');
    const dateInterval = c.req.query('dateInterval') ?? 'L28D';
    if (!(DATE_INTERVALS as readonly string[]).includes(dateInterval)) return badRequest(c, `dateInterval: must be one of ${DATE_INTERVALS.join(', ')}`);
    // A fixed curve per bid: more bid, more deliveries per 1,000 recipients.
    const estimates = [5, 10, 20, 40].map((bid) => {
      const lower = Math.min(1000, 200 + bid * 15);
      const upper = Math.min(1000, lower + 120);
      return {
        bid_amount: bid,
        users: 1000,
        deliveries_lower_bound: String(lower),
        deliveries_upper_bound: String(upper),
        cost_lower_bound: Math.round(lower * bid) / 1000,
        cost_upper_bound: Math.round(upper * bid) / 1000,
      };
    });
    return c.json({ waba_currency: a.currency ?? 'USD', dateInterval, estimates });
  });

  app.get('/chat/businessAccounts/:wabaId/automatic-creative-optimizations', (c) => {
    const s = state.creativeOptimizations.get(c.req.param('wabaId'));
    return s ? c.json(s) : notFound(c, 'business account');
  });
  app.patch('/chat/businessAccounts/:wabaId/automatic-creative-optimizations', async (c) => {
    const s = state.creativeOptimizations.get(c.req.param('wabaId'));
    if (!s) return notFound(c, 'business account');
    const p = await parseBody(c, CreativePatch);
    if (!p.ok) return p.res;
    if (p.data.enabled !== undefined) s.enabled = p.data.enabled;
    if (p.data.features) s.features = { ...(s.features as object), ...p.data.features };
    s.updateTime = rt.iso();
    return c.json(s);
  });

  const ownerOf = (c: Context<Env>) => c.get('apiKey') ?? rt.ctx.apiKeys[0] ?? '';
  const mine = (c: Context<Env>, id: string) => (state.numberOwners.get(id) ?? ownerOf(c)) === ownerOf(c);

  app.get('/chat/phoneNumbers', (c) => {
    const wabaId = c.req.query('wabaId');
    return pageNumber(c, [...state.phoneNumbers.values()].filter((n) => mine(c, n.id) && (!wabaId || n.wabaId === wabaId)));
  });

  /** The number addressed by `{wabaId}/{phoneNumber}`; a leading + may be raw or %2B. */
  const numberOf = (c: Context<Env>) => {
    const e164 = phoneParam(c.req.param('phoneNumber') ?? '');
    const wabaId = c.req.param('wabaId');
    return [...state.phoneNumbers.values()].find((n) => n.wabaId === wabaId && n.phoneNumber === e164 && mine(c, n.id));
  };

  app.get('/chat/phoneNumbers/:wabaId/:phoneNumber', (c) => {
    const n = numberOf(c);
    return n ? c.json(n) : notFound(c, 'phone number');
  });
  app.get('/chat/phoneNumbers/:wabaId/:phoneNumber/profile', (c) => {
    const n = numberOf(c);
    return n ? c.json({ id: n.id, phoneNumber: n.phoneNumber, ...state.profiles.get(n.id) }) : notFound(c, 'phone number');
  });
  app.post('/chat/phoneNumbers/:wabaId/:phoneNumber/register', async (c) => {
    const n = numberOf(c);
    if (!n) return notFound(c, 'phone number');
    const p = await parseBody(c, RegisterBody);
    if (!p.ok) return p.res;
    const reg = { success: true, id: n.id, phoneNumber: n.phoneNumber, status: 'REGISTERED', registerTime: rt.iso() };
    state.registered.set(n.id, reg);
    return c.json(reg);
  });
  app.patch('/chat/phoneNumbers/:wabaId/:phoneNumber/chatCommerceSettings', async (c) => {
    const n = numberOf(c);
    if (!n) return notFound(c, 'phone number');
    const p = await parseBody(c, CommercePatch);
    if (!p.ok) return p.res;
    const s = { ...state.commerceSettings.get(n.id), ...p.data };
    state.commerceSettings.set(n.id, s);
    return c.json({ id: n.id, ...s });
  });
  app.delete('/chat/phoneNumbers/:wabaId/:phoneNumber/contactBook/:bsuid', (c) => {
    const n = numberOf(c);
    if (!n) return notFound(c, 'phone number');
    const bsuid = c.req.param('bsuid');
    if (!BSUID_RE.test(bsuid)) return badRequest(c, 'bsuid: must be a BSUID: two uppercase letters, a period, up to 128 alphanumerics');
    if (isParentBsuid(bsuid)) return serviceError(c, 400, 'BAD_REQUEST', 'bsuid: parent BSUIDs (containing .ENT.) are not supported; use the regular BSUID');
    const deleted = state.contactBook.get(n.phoneNumber)?.delete(bsuid) ?? false;
    return c.json({ success: true, deleted });
  });

  // Display name update: under review first (nameStatus PENDING_REVIEW, newName), then the
  // new name becomes the verified one a step later. No event: the interface lists none.
  app.post('/chat/phoneNumbers/:wabaId/:phoneNumber/displayName', async (c) => {
    const n = numberOf(c);
    if (!n) return notFound(c, 'phone number');
    const p = await parseBody(c, DisplayNameBody);
    if (!p.ok) return p.res;
    const { newName } = p.data;
    const profile = state.profiles.get(n.id) ?? {};
    Object.assign(n, { newName, nameStatus: 'PENDING_REVIEW' });
    Object.assign(profile, { newName, nameStatus: 'PENDING_REVIEW' });
    rt.sched.after(rt.knobs.reviewDelayMs, () => {
      if (n.newName !== newName) return;
      for (const o of [n, profile]) {
        delete o.newName;
        Object.assign(o, { verifiedName: newName, nameStatus: 'APPROVED' });
      }
    });
    return c.json({ id: n.id, phoneNumber: n.phoneNumber, verifiedName: n.verifiedName, newName, nameStatus: 'PENDING_REVIEW' });
  });

  // ---- business username: one per number, never shared; new writes are `reserved`,
  // then become `active` (the interface shows no transition: ours is one step later).
  const usernameView = (n: Json) => ({
    id: n.id,
    phoneNumber: n.phoneNumber,
    displayPhoneNumber: n.displayPhoneNumber,
    wabaId: n.wabaId,
    ...(n.businessUsername !== undefined ? { businessUsername: n.businessUsername } : {}),
    ...(n.businessUsernameStatus !== undefined ? { businessUsernameStatus: n.businessUsernameStatus } : {}),
    ...(n.requestedBusinessUsername !== undefined ? { requestedBusinessUsername: n.requestedBusinessUsername } : {}),
    ...(n.businessUsernameUpdatedAt !== undefined ? { businessUsernameUpdatedAt: n.businessUsernameUpdatedAt } : {}),
  });
  const announce = (n: Json, owner: string) => rt.ctx.emit('chat.phone_number.business_username_updated', 'chatPhoneNumber', usernameView(n), owner);

  app.get('/chat/phoneNumbers/:wabaId/:phoneNumber/businessUsername', (c) => {
    const n = numberOf(c);
    return n ? c.json(usernameView(n)) : notFound(c, 'phone number');
  });
  app.get('/chat/phoneNumbers/:wabaId/:phoneNumber/businessUsername/suggestions', (c) => {
    const n = numberOf(c);
    if (!n) return notFound(c, 'phone number');
    const base = String(n.verifiedName ?? 'business').toLowerCase().replace(/[^a-z0-9]/g, '').slice(0, 28) || 'business';
    const taken = new Set([...state.phoneNumbers.values()].flatMap((x) => [x.businessUsername, x.requestedBusinessUsername]));
    const items = [base, `${base}.support`, `${base}_hq`, `${base}.calls`].filter((u) => !taken.has(u));
    return c.json({ items, length: items.length });
  });
  app.post('/chat/phoneNumbers/:wabaId/:phoneNumber/businessUsername', async (c) => {
    const n = numberOf(c);
    if (!n) return notFound(c, 'phone number');
    const p = await parseBody(c, UsernameBody);
    if (!p.ok) return p.res;
    const wanted = p.data.username;
    const holder = [...state.phoneNumbers.values()].find((x) => x.id !== n.id && (x.businessUsername === wanted || x.requestedBusinessUsername === wanted));
    if (holder) return serviceError(c, 409, 'CONFLICT', `username: ${wanted} is used by another phone number`);
    const owner = ownerOf(c);
    Object.assign(n, { requestedBusinessUsername: wanted, businessUsernameStatus: 'reserved', businessUsernameUpdatedAt: rt.iso() });
    announce(n, owner);
    rt.sched.after(rt.knobs.stepDelayMs, () => {
      if (n.requestedBusinessUsername !== wanted) return; // replaced or deleted meanwhile
      delete n.requestedBusinessUsername;
      Object.assign(n, { businessUsername: wanted, businessUsernameStatus: 'active', businessUsernameUpdatedAt: rt.iso() });
      announce(n, owner);
    });
    return c.json(usernameView(n));
  });
  app.delete('/chat/phoneNumbers/:wabaId/:phoneNumber/businessUsername', (c) => {
    const n = numberOf(c);
    if (!n) return notFound(c, 'phone number');
    if (n.businessUsername === undefined && n.requestedBusinessUsername === undefined) return notFound(c, 'business username');
    delete n.businessUsername;
    delete n.requestedBusinessUsername;
    delete n.businessUsernameStatus;
    n.businessUsernameUpdatedAt = rt.iso();
    announce(n, ownerOf(c));
    return c.json({ success: true });
  });
  return app;
}
