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

/** Edit replaces all contents: everything of create but the identifying wabaId, name, language. */
const EditBody = TemplateBody.omit({ wabaId: true, name: true, language: true });

const HOUR = 3600_000;
const DAY = 24 * HOUR;
/** Part 8 edit limits of an APPROVED template; REJECTED and PAUSED templates edit freely. */
const EDIT_LIMITS: Array<{ content: boolean; max: number; windowMs: number; label: string }> = [
  { content: false, max: 100, windowMs: HOUR, label: '100 edits per hour' },
  { content: false, max: 2400, windowMs: DAY, label: '2,400 edits per day' },
  { content: true, max: 1, windowMs: DAY, label: '1 content edit per day' },
  { content: true, max: 10, windowMs: 30 * DAY, label: '10 content edits per 30 days' },
];
const EDITABLE = new Set(['APPROVED', 'REJECTED', 'PAUSED']);

const VARIABLE_RE = /\{\{\s*\d+\s*\}\}/g;

/** `components.<i>.text: …` when a text header holds more than one variable. */
function textHeaderProblem(components: Array<{ type: string; format?: string | undefined; text?: string | undefined }>): string | undefined {
  const idx = components.findIndex((comp) => comp.type.toUpperCase() === 'HEADER' && (comp.format ?? 'TEXT').toUpperCase() === 'TEXT');
  const header = idx >= 0 ? components[idx] : undefined;
  if (header && (header.text?.match(VARIABLE_RE)?.length ?? 0) > 1) return `components.${idx}.text: a text header has at most 1 variable`;
  return undefined;
}

export function templateRoutes(rt: Runtime): Hono<Env> {
  const app = new Hono<Env>();
  const { state, ctx } = rt;

  /** Simulated review after `reviewDelayMs`, per the `templateReview` knob. */
  const startReview = (t: TemplateRecord, key: string, owner: string | undefined, moveTo?: string) => {
    if (moveTo) setTemplateStatus(rt, t, moveTo, owner);
    const review = rt.knobs.templateReview;
    if (review === 'none') return;
    const version = t.updateTime;
    rt.sched.after(rt.knobs.reviewDelayMs, () => {
      // Deleted, edited again or moved by the control API meanwhile: this review no longer applies.
      if (state.templates.get(key) !== t || t.status !== 'PENDING' || t.updateTime !== version) return;
      setTemplateStatus(rt, t, review, owner, review === 'REJECTED' ? 'INVALID_FORMAT' : undefined);
    });
  };

  app.post('/chat/templates', async (c) => {
    const p = await parseBody(c, TemplateBody);
    if (!p.ok) return p.res;
    const b = p.data;
    if (!state.businessAccounts.has(b.wabaId)) return badRequest(c, `wabaId: unknown business account ${b.wabaId}`);
    const headerProblem = textHeaderProblem(b.components);
    if (headerProblem) return badRequest(c, headerProblem);
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
    startReview(t, key, c.get('apiKey') ?? ctx.apiKeys[0]);
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

  app.put('/chat/templates/:wabaId/:name/:language', async (c) => {
    const key = templateKey(c.req.param('wabaId'), c.req.param('name'), c.req.param('language'));
    const t = state.templates.get(key);
    if (!t) return notFound(c, 'template');
    const p = await parseBody(c, EditBody);
    if (!p.ok) return p.res;
    const b = p.data;
    if (!EDITABLE.has(t.status)) return badRequest(c, `status: template is ${t.status}; only APPROVED, REJECTED or PAUSED templates can be edited`);
    if (b.bidSpec && !t.bidSpec) return badRequest(c, 'bidSpec: cannot be added to a template created without bidSpec');
    const headerProblem = textHeaderProblem(b.components);
    if (headerProblem) return badRequest(c, headerProblem);
    const now = ctx.clock.now();
    const contentChanged = JSON.stringify(b.components) !== JSON.stringify(t.components);
    const edits = state.templateEdits.get(t.officialTemplateId) ?? { all: [], content: [] };
    if (t.status === 'APPROVED') {
      for (const l of EDIT_LIMITS) {
        if (l.content && !contentChanged) continue;
        const recent = (l.content ? edits.content : edits.all).filter((x) => x > now - l.windowMs);
        if (recent.length >= l.max) {
          const retryAfter = Math.ceil((recent[0]! + l.windowMs - now) / 1000);
          c.header('Retry-After', String(retryAfter));
          return serviceError(c, 429, 'TOO_MANY_REQUESTS', `template edit limit reached (${l.label} for an approved template); retry after ${retryAfter} s`);
        }
      }
    }
    edits.all.push(now);
    if (contentChanged) edits.content.push(now);
    state.templateEdits.set(t.officialTemplateId, edits);
    // Replaces all contents: fields not given fall back to their defaults, not to the old values.
    for (const k of ['bidSpec', 'supported_apps'] as const) delete t[k];
    Object.assign(t, b, {
      messageSendTtlSeconds: b.messageSendTtlSeconds ?? -1,
      ctaUrlLinkTrackingOptedOut: b.ctaUrlLinkTrackingOptedOut ?? false,
      updateTime: rt.iso(),
    });
    // An edited template is reviewed again; sends are blocked meanwhile.
    if (contentChanged) startReview(t, key, c.get('apiKey') ?? ctx.apiKeys[0], 'PENDING');
    return c.json(t);
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
