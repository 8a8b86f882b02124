/**
 * Customer data (contacts with their attributes, unsubscribers, custom events,
 * verifications) and chat flows.
 */
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { badRequest, cursorPage, notFound, pageNumber, serviceError, type Env } from '../http.ts';
import { regionOf, type Json, type Runtime } from './state.ts';
import { EMAIL_RE, E164_RE, e164, isE164, parseBody, phoneParam } from './validation.ts';

const SOURCE_TYPES = ['WHATSAPP', 'GROWTH_TOOL', 'MANUALLY_ADDED', 'FILE_IMPORT', 'SHOPIFY', 'API', 'AD', 'POST', 'CALLING', 'SMB', 'UNKNOWN'] as const;
const ContactFields = {
  remarkName: z.string().max(256, 'at most 256 characters').optional(),
  nickName: z.string().max(256, 'at most 256 characters').optional(),
  realName: z.string().max(256, 'at most 256 characters').optional(),
  email: z.string().regex(EMAIL_RE, 'must be an email address').optional(),
  ownerEmail: z.string().regex(EMAIL_RE, 'must be an email address').optional(),
  sourceType: z.enum(SOURCE_TYPES).optional(),
  sourceId: z.string().optional(),
  sourceUrl: z.string().optional(),
  tags: z.array(z.string().min(1, 'must not be empty')).optional(),
  blocked: z.boolean().optional(),
  customAttributes: z.record(z.string(), z.union([z.string(), z.number()])).optional(),
};
const ContactCreate = z.strictObject({ phoneNumber: e164(), ...ContactFields });
const ContactPatch = z.strictObject({
  phoneNumber: e164().optional(),
  ...ContactFields,
  // null removes an attribute
  customAttributes: z.record(z.string(), z.union([z.string(), z.number(), z.null()])).optional(),
});

const NoteBody = z.strictObject({ content: z.string().min(1, 'must not be empty').max(2000, 'at most 2000 characters'), username: z.string().optional() });
const EventBody = z.looseObject({
  name: z.string().min(1, 'must not be empty').max(128, 'at most 128 characters'),
  contactId: z.string().optional(),
  phoneNumber: e164().optional(),
  properties: z.record(z.string(), z.unknown()).optional(),
  externalId: z.string().optional(),
  occurTime: z.iso.datetime({ message: 'must be an ISO 8601 UTC time' }).optional(),
});
const VerificationBody = z.looseObject({
  to: z.string().min(1, 'must not be empty'),
  channel: z.enum(['sms', 'voice', 'chat', 'email']).optional(),
  codeLength: z.number().int().min(4, 'must be 4 to 8').max(8, 'must be 4 to 8').optional(),
  externalId: z.string().optional(),
});

const FLOW_CATEGORIES = ['SIGN_UP', 'SIGN_IN', 'APPOINTMENT_BOOKING', 'LEAD_GENERATION', 'CONTACT_US', 'CUSTOMER_SUPPORT', 'SURVEY', 'OTHER'] as const;
const httpsUrl = () => z.url({ protocol: /^https$/, message: 'must be an https URL' });
const FlowCreate = z.looseObject({
  wabaId: z.string().optional(),
  name: z.string().min(1, 'must not be empty').max(200, 'at most 200 characters'),
  categories: z.array(z.enum(FLOW_CATEGORIES)).min(1, 'must have at least one category'),
  flowJson: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
  endpointUri: httpsUrl().optional(),
});
const FlowMetadata = z.strictObject({
  name: z.string().min(1, 'must not be empty').max(200, 'at most 200 characters').optional(),
  categories: z.array(z.enum(FLOW_CATEGORIES)).min(1, 'must have at least one category').optional(),
  endpointUri: httpsUrl().optional(),
});
const FlowStructure = z.strictObject({ flowJson: z.union([z.string(), z.record(z.string(), z.unknown())]) });

export function customerDataRoutes(rt: Runtime): Hono<Env> {
  const app = new Hono<Env>();
  const { state, ctx } = rt;
  const ownerOf = (c: Context<Env>) => c.get('apiKey') ?? ctx.apiKeys[0];

  /** `{id}` may be the contact id or its phone number (raw + or %2B). */
  const contactOf = (key: string) =>
    state.contacts.get(key) ??
    (/^\+?\d+$/.test(key) ? [...state.contacts.values()].find((ct) => ct.phoneNumber === phoneParam(key)) : undefined);
  const phoneTaken = (phone: string, except?: string) => [...state.contacts.values()].some((ct) => ct.phoneNumber === phone && ct.id !== except);
  const defineAttributes = (attrs: Record<string, unknown> | undefined) => {
    for (const [name, v] of Object.entries(attrs ?? {})) {
      if (v !== null && !state.attributes.has(name)) state.attributes.set(name, { name, type: typeof v === 'number' ? 'number' : 'string', createTime: rt.iso() });
    }
  };

  app.get('/contact/contacts', (c) => pageNumber(c, [...state.contacts.values()]));

  app.post('/contact/contacts', async (c) => {
    const p = await parseBody(c, ContactCreate);
    if (!p.ok) return p.res;
    if (phoneTaken(p.data.phoneNumber)) return serviceError(c, 409, 'CONFLICT', `phoneNumber: a contact with ${p.data.phoneNumber} already exists`);
    const now = rt.iso();
    const region = regionOf(p.data.phoneNumber);
    const contact = {
      id: ctx.newId('ct_'),
      ...p.data,
      countryCode: region,
      countryName: new Intl.DisplayNames(['en'], { type: 'region' }).of(region) ?? region,
      sourceType: p.data.sourceType ?? 'API',
      tags: p.data.tags ?? [],
      blocked: p.data.blocked ?? false,
      customAttributes: p.data.customAttributes ?? {},
      createTime: now,
      updateTime: now,
    };
    state.contacts.set(contact.id, contact);
    defineAttributes(contact.customAttributes);
    ctx.emit('contact.created', 'contactCreated', { ...contact }, ownerOf(c));
    return c.json(contact);
  });

  // Registered before `/:id` so "attributes" is never looked up as a contact.
  app.get('/contact/contacts/attributes', (c) => pageNumber(c, [...state.attributes.values()]));

  app.get('/contact/contacts/:id', (c) => {
    const ct = contactOf(c.req.param('id'));
    return ct ? c.json(ct) : notFound(c, 'contact');
  });

  app.patch('/contact/contacts/:id', async (c) => {
    const ct = contactOf(c.req.param('id'));
    if (!ct) return notFound(c, 'contact');
    const p = await parseBody(c, ContactPatch);
    if (!p.ok) return p.res;
    const { customAttributes, tags, ...rest } = p.data;
    if (rest.phoneNumber && phoneTaken(rest.phoneNumber, ct.id)) return serviceError(c, 409, 'CONFLICT', `phoneNumber: a contact with ${rest.phoneNumber} already exists`);
    const now = rt.iso();
    const changed: Record<string, Json> = {};
    if (customAttributes) {
      const attrs = { ...(ct.customAttributes as Record<string, string | number>) };
      for (const [name, v] of Object.entries(customAttributes)) {
        const old = attrs[name];
        if (v === null) delete attrs[name];
        else attrs[name] = v;
        if (old !== (v ?? undefined)) changed[name] = { ...(old !== undefined ? { oldValue: old } : {}), ...(v !== null ? { newValue: v } : {}) };
      }
      ct.customAttributes = attrs;
      defineAttributes(customAttributes);
    }
    if (tags) {
      const old = (ct.tags as string[]) ?? [];
      const added = tags.filter((t) => !old.includes(t));
      if (added.length || old.some((t) => !tags.includes(t))) {
        changed.tags = { oldValue: old, newValue: tags, extra: added.map((value) => ({ action: 'ADDED', id: ctx.newId('tag_'), value })) };
      }
      ct.tags = tags;
    }
    Object.assign(ct, rest, { updateTime: now });
    if (Object.keys(changed).length) {
      ctx.emit('contact.attributes_changed', 'contactAttributesChanged', { id: ct.id, updateTime: now, changedAttributes: changed }, ownerOf(c));
    }
    return c.json(ct);
  });

  app.delete('/contact/contacts/:id', (c) => {
    const ct = contactOf(c.req.param('id'));
    if (!ct) return notFound(c, 'contact');
    state.contacts.delete(ct.id);
    // The notes go with the contact, silently: contact.note.deleted is only for a note
    // deleted on its own, never for this cascade.
    for (const [id, n] of state.notes) if (n.contactId === ct.id) state.notes.delete(id);
    const now = rt.iso();
    ctx.emit('contact.deleted', 'contactDeleted', { id: ct.id, remarkName: ct.remarkName, nickName: ct.nickName, phoneNumber: ct.phoneNumber, updateTime: now }, ownerOf(c));
    return c.json({ success: true, id: ct.id });
  });

  // ---- contact notes (paths not shown: nested under the contact)
  const notesOf = (contactId: string) => [...state.notes.values()].filter((n) => n.contactId === contactId);
  app.get('/contact/contacts/:id/notes', (c) => {
    const ct = contactOf(c.req.param('id'));
    return ct ? pageNumber(c, notesOf(ct.id)) : notFound(c, 'contact');
  });
  app.post('/contact/contacts/:id/notes', async (c) => {
    const ct = contactOf(c.req.param('id'));
    if (!ct) return notFound(c, 'contact');
    const p = await parseBody(c, NoteBody);
    if (!p.ok) return p.res;
    const now = rt.iso();
    const note = { id: ctx.newId('note_'), contactId: ct.id, username: p.data.username ?? 'api', phoneNumber: String(ct.phoneNumber), content: p.data.content, createTime: now, updateTime: now };
    state.notes.set(note.id, note);
    ctx.emit('contact.note.created', 'contactNote', { ...note }, ownerOf(c));
    return c.json(note);
  });
  const noteOf = (c: Context<Env>) => {
    const ct = contactOf(c.req.param('id') ?? '');
    const n = state.notes.get(c.req.param('noteId') ?? '');
    return ct && n && n.contactId === ct.id ? n : undefined;
  };
  app.patch('/contact/contacts/:id/notes/:noteId', async (c) => {
    const n = noteOf(c);
    if (!n) return notFound(c, 'note');
    const p = await parseBody(c, NoteBody);
    if (!p.ok) return p.res;
    Object.assign(n, p.data, { updateTime: rt.iso() });
    ctx.emit('contact.note.updated', 'contactNote', { ...n }, ownerOf(c));
    return c.json(n);
  });
  app.delete('/contact/contacts/:id/notes/:noteId', (c) => {
    const n = noteOf(c);
    if (!n) return notFound(c, 'note');
    state.notes.delete(n.id);
    ctx.emit('contact.note.deleted', 'contactNote', { ...n, updateTime: rt.iso() }, ownerOf(c));
    return c.json({ success: true, id: n.id });
  });

  const unsubView = (u: (typeof state.unsubscribers)[number]) => ({
    customer: u.customer,
    ...(E164_RE.test(u.customer) ? { phoneNumber: u.customer } : { email: u.customer }),
    channel: u.channel,
    source: u.source,
    updateTime: u.updateTime,
  });
  app.get('/unsubscribers', (c) => {
    const channel = c.req.query('channel');
    return cursorPage(c, state.unsubscribers.filter((u) => !channel || u.channel === channel).map(unsubView));
  });
  app.get('/unsubscribers/:customer', (c) => {
    const customer = customerParam(c.req.param('customer'));
    const items = state.unsubscribers.filter((u) => u.customer === customer).map(unsubView);
    return c.json({ customer, items, length: items.length });
  });
  app.get('/unsubscribers/:customer/:channel', (c) => {
    const customer = customerParam(c.req.param('customer'));
    const u = state.unsubscribers.find((x) => x.customer === customer && x.channel === c.req.param('channel'));
    return u ? c.json(unsubView(u)) : notFound(c, 'unsubscriber');
  });

  app.post('/event/events', async (c) => {
    const p = await parseBody(c, EventBody);
    if (!p.ok) return p.res;
    const b = p.data;
    if (b.contactId === undefined && b.phoneNumber === undefined) return badRequest(c, 'contactId: is required when phoneNumber is absent');
    if (b.contactId !== undefined && !state.contacts.has(b.contactId)) return badRequest(c, `contactId: no contact ${b.contactId}`);
    const ev = { id: ctx.newId('cev_'), ...b, createTime: rt.iso() };
    state.events.push(ev);
    return c.json(ev);
  });

  app.post('/verify/verifications', async (c) => {
    const p = await parseBody(c, VerificationBody);
    if (!p.ok) return p.res;
    const b = p.data;
    const channel = b.channel ?? (EMAIL_RE.test(b.to) ? 'email' : 'sms');
    if (channel === 'email' ? !EMAIL_RE.test(b.to) : !isE164(b.to)) {
      return badRequest(c, channel === 'email' ? 'to: must be an email address for channel email' : `to: must be an E.164 number for channel ${channel}`);
    }
    const now = ctx.clock.now();
    const v = {
      id: ctx.newId('ver_'),
      to: b.to,
      channel,
      status: 'pending',
      ...(b.externalId !== undefined ? { externalId: b.externalId } : {}),
      createTime: new Date(now).toISOString(),
      expireTime: new Date(now + 10 * 60_000).toISOString(),
    };
    state.verifications.set(v.id, v);
    return c.json(v);
  });

  // ---- flows
  const flowOf = (c: Context<Env>) => state.flows.get(c.req.param('flowId') ?? '');
  const wrongStatus = (c: Context<Env>, f: Json, allowed: string, action: string) =>
    badRequest(c, `status: flow is ${f.status}; only ${allowed} flows can be ${action}`);

  app.post('/chat/flows', async (c) => {
    const p = await parseBody(c, FlowCreate);
    if (!p.ok) return p.res;
    const { endpointUri, ...b } = p.data;
    const wabaId = b.wabaId ?? state.businessAccounts.keys().next().value!;
    if (!state.businessAccounts.has(wabaId)) return badRequest(c, `wabaId: unknown business account ${wabaId}`);
    const now = rt.iso();
    const f = { ...b, id: ctx.newId('flow_'), wabaId, status: 'DRAFT', ...(endpointUri !== undefined ? { endpointUrl: endpointUri } : {}), validationErrors: [], createTime: now, updateTime: now };
    state.flows.set(f.id, f);
    return c.json(f);
  });
  app.get('/chat/flows', (c) => pageNumber(c, [...state.flows.values()]));
  app.get('/chat/flows/:flowId', (c) => {
    const f = flowOf(c);
    return f ? c.json(f) : notFound(c, 'flow');
  });
  app.patch('/chat/flows/:flowId/metadata', async (c) => {
    const f = flowOf(c);
    if (!f) return notFound(c, 'flow');
    if (f.status === 'DEPRECATED') return wrongStatus(c, f, 'DRAFT or PUBLISHED', 'updated');
    const p = await parseBody(c, FlowMetadata);
    if (!p.ok) return p.res;
    const { endpointUri, ...rest } = p.data;
    Object.assign(f, rest, endpointUri !== undefined ? { endpointUrl: endpointUri } : {}, { updateTime: rt.iso() });
    return c.json(f);
  });
  // PATCH is what the client sends; PUT is kept for "replace the structure" readers.
  app.on(['PATCH', 'PUT'], '/chat/flows/:flowId/structure', async (c) => {
    const f = flowOf(c);
    if (!f) return notFound(c, 'flow');
    if (f.status !== 'DRAFT') return wrongStatus(c, f, 'DRAFT', 'restructured');
    const p = await parseBody(c, FlowStructure);
    if (!p.ok) return p.res;
    f.flowJson = p.data.flowJson;
    f.updateTime = rt.iso();
    return c.json(f);
  });
  app.post('/chat/flows/:flowId/publish', (c) => {
    const f = flowOf(c);
    if (!f) return notFound(c, 'flow');
    if (f.status !== 'DRAFT') return wrongStatus(c, f, 'DRAFT', 'published');
    if (f.flowJson === undefined) return badRequest(c, 'flowJson: a flow needs a structure before it can be published');
    Object.assign(f, { status: 'PUBLISHED', updateTime: rt.iso() });
    return c.json(f);
  });
  app.post('/chat/flows/:flowId/deprecate', (c) => {
    const f = flowOf(c);
    if (!f) return notFound(c, 'flow');
    if (f.status !== 'PUBLISHED') return wrongStatus(c, f, 'PUBLISHED', 'deprecated');
    Object.assign(f, { status: 'DEPRECATED', updateTime: rt.iso() });
    return c.json(f);
  });
  app.delete('/chat/flows/:flowId', (c) => {
    const f = flowOf(c);
    if (!f) return notFound(c, 'flow');
    if (f.status !== 'DRAFT') return wrongStatus(c, f, 'DRAFT', 'deleted');
    state.flows.delete(f.id);
    return c.json({ success: true, id: f.id });
  });
  app.get('/chat/flows/:flowId/preview', (c) => {
    const f = flowOf(c);
    if (!f) return notFound(c, 'flow');
    const name = String(f.name).replace(/[<>&"]/g, (ch) => `&#${ch.charCodeAt(0)};`);
    return c.html(`<!doctype html><html><head><title>${name}</title></head><body><h1>${name}</h1><p>Flow preview (emulated), status ${f.status}.</p></body></html>`);
  });
  return app;
}

/** A customer is a phone number (raw + or %2B) or an email address. */
const customerParam = (v: string) => (/^\+?\d+$/.test(v) ? phoneParam(v) : v);
