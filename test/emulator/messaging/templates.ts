/**
 * Message templates: create (PENDING, then a simulated review), list with `filter.status`,
 * retrieve, and delete one locale or every locale of a name.
 */
import { Hono } from 'hono';
import { z } from 'zod';
import { badRequest, notFound, pageNumber, serviceError, type Env } from '../http.ts';
import { templateKey, type Runtime, type TemplateRecord } from './state.ts';
import { COUNTRY_RE, decimalString, parseBody } from './validation.ts';

export const TEMPLATE_STATUSES = ['PENDING', 'APPROVED', 'REJECTED', 'PAUSED', 'DISABLED', 'IN_APPEAL', 'ARCHIVED', 'DELETED'] as const;

const Component = z.looseObject({
  type: z.string().min(1, 'must not be empty'),
  format: z.string().optional(),
  text: z.string().optional(),
});

export const TemplateBody = z.looseObject({
  wabaId: z.string().min(1, 'must not be empty'),
  name: z.string().regex(/^[a-z0-9_]{1,512}$/, 'must be 1 to 512 lowercase letters, digits or underscores'),
  language: z.string().min(2, 'must be a locale code such as en_US'),
  category: z.enum(['AUTHENTICATION', 'UTILITY', 'MARKETING']),
  components: z.array(Component).min(1, 'must have at least one component'),
  bidSpec: z
    .strictObject({
      maxBid: decimalString(),
      countryPriceAdjustments: z
        .array(z.strictObject({ countryCode: z.string().regex(COUNTRY_RE, 'must be an ISO 3166-1 alpha-2 code'), multiplier: decimalString({ max: 10 }) }))
        .max(50, 'at most 50 entries')
        .optional(),
    })
    .optional(),
  messageSendTtlSeconds: z.number().int().min(-1, 'must be -1 (unset) or a positive number of seconds').optional(),
  supported_apps: z.array(z.looseObject({})).max(5, 'at most 5 entries').optional(),
  ctaUrlLinkTrackingOptedOut: z.boolean().optional(),
});

const VARIABLE_RE = /\{\{\s*\d+\s*\}\}/g;

export function templateRoutes(rt: Runtime): Hono<Env> {
  const app = new Hono<Env>();
  const { state, ctx } = rt;

  app.post('/chat/templates', async (c) => {
    const p = await parseBody(c, TemplateBody);
    if (!p.ok) return p.res;
    const b = p.data;
    if (!state.businessAccounts.has(b.wabaId)) return badRequest(c, `wabaId: unknown business account ${b.wabaId}`);
    const idx = b.components.findIndex((comp) => comp.type.toUpperCase() === 'HEADER' && (comp.format ?? 'TEXT').toUpperCase() === 'TEXT');
    const header = idx >= 0 ? b.components[idx] : undefined;
    if (header && (header.text?.match(VARIABLE_RE)?.length ?? 0) > 1) {
      return badRequest(c, `components.${idx}.text: a text header has at most 1 variable`);
    }
    const key = templateKey(b.wabaId, b.name, b.language);
    if (state.templates.has(key)) return serviceError(c, 409, 'CONFLICT', `name: template ${b.name} already exists in language ${b.language}`);
    const now = rt.iso();
    const t: TemplateRecord = {
      ...b,
      officialTemplateId: ctx.newId('tpl_'),
      status: 'PENDING',
      qualityRating: 'UNKNOWN',
      messageSendTtlSeconds: b.messageSendTtlSeconds ?? -1,
      ctaUrlLinkTrackingOptedOut: b.ctaUrlLinkTrackingOptedOut ?? false,
      createTime: now,
      updateTime: now,
    } as TemplateRecord;
    state.templates.set(key, t);
    const owner = c.get('apiKey') ?? ctx.apiKeys[0];
    const review = rt.knobs.templateReview;
    if (review !== 'none') {
      rt.sched.after(rt.knobs.reviewDelayMs, () => {
        // Deleted (or moved by the control API) while under review: the review no longer applies.
        if (state.templates.get(key) !== t || t.status !== 'PENDING') return;
        setTemplateStatus(rt, t, review, owner, review === 'REJECTED' ? 'INVALID_FORMAT' : undefined);
      });
    }
    return c.json(t);
  });

  app.get('/chat/templates', (c) => {
    const statuses = c.req.query('filter.status')?.split(',').map((s) => s.trim());
    const bad = statuses?.find((s) => !(TEMPLATE_STATUSES as readonly string[]).includes(s));
    if (bad !== undefined) return badRequest(c, `filter.status: must be one of ${TEMPLATE_STATUSES.join(', ')}`);
    const wabaId = c.req.query('filter.wabaId');
    const name = c.req.query('filter.name');
    const all = [...state.templates.values()].filter(
      (t) => (!statuses || statuses.includes(t.status)) && (!wabaId || t.wabaId === wabaId) && (!name || t.name === name),
    );
    return pageNumber(c, all);
  });

  app.get('/chat/templates/:wabaId/:name/:language', (c) => {
    const t = state.templates.get(templateKey(c.req.param('wabaId'), c.req.param('name'), c.req.param('language')));
    return t ? c.json(t) : notFound(c, 'template');
  });

  app.delete('/chat/templates/:wabaId/:name/:language', (c) => {
    const key = templateKey(c.req.param('wabaId'), c.req.param('name'), c.req.param('language'));
    if (!state.templates.delete(key)) return notFound(c, 'template');
    return c.json({ success: true, deleted: [{ name: c.req.param('name'), language: c.req.param('language') }] });
  });

  app.delete('/chat/templates/:wabaId/:name', (c) => {
    const { wabaId, name } = c.req.param();
    const deleted: Array<{ name: string; language: string }> = [];
    for (const [key, t] of state.templates) {
      if (t.wabaId === wabaId && t.name === name) {
        state.templates.delete(key);
        deleted.push({ name, language: t.language });
      }
    }
    if (deleted.length === 0) return notFound(c, 'template');
    return c.json({ success: true, deleted });
  });
  return app;
}

/** Moves a template and announces it with `chat.template.reviewed`. */
export function setTemplateStatus(rt: Runtime, t: TemplateRecord, status: string, owner: string | undefined, reason?: string) {
  const previousStatus = t.status;
  t.status = status;
  t.updateTime = rt.iso();
  rt.ctx.emit(
    'chat.template.reviewed',
    'chatTemplate',
    {
      officialTemplateId: t.officialTemplateId,
      wabaId: t.wabaId,
      name: t.name,
      language: t.language,
      category: t.category,
      status,
      previousStatus,
      ...(reason ? { reason } : {}),
      updateTime: t.updateTime,
    },
    owner,
  );
}
