/**
 * The emulator's HTTP app: `/v2` (the Service interface) and `/_emulator` (the control
 * API used by tests and demo tools). Both take the same `X-API-Key`.
 *
 * Order on `/v2`: request id → API key → part 8 rate limits → endpoint fault knobs →
 * routes, so an injected fault never hides an auth error and rate limits count every
 * authenticated request, as the real Service would.
 */
import { Hono } from 'hono';
import type { EmulatorContext, Faults, PermissionGrant } from './context.ts';
import { apiKeyAuth, badRequest, requestId, serviceError, type Env } from './http.ts';
import { endpointFaults, rateLimit } from './limits.ts';
import type { Webhooks } from './webhooks.ts';
import { readJson } from './webhooks.ts';

/** A piece of the emulator that adds routes: mounted under `/v2` and `/_emulator`. */
export interface EmulatorModule {
  routes: Hono<Env>;
  control: Hono<Env>;
}

export function createApp(ctx: EmulatorContext, webhooks: Webhooks, modules: EmulatorModule[]): Hono<Env> {
  const app = new Hono<Env>();
  app.use('*', requestId);

  const v2 = new Hono<Env>();
  v2.use('*', apiKeyAuth(ctx.apiKeys));
  v2.use('*', rateLimit(ctx));
  v2.use('*', endpointFaults(ctx));
  v2.route('/', webhooks.routes);
  for (const m of modules) v2.route('/', m.routes);

  const control = new Hono<Env>();
  control.use('*', apiKeyAuth(ctx.apiKeys));
  control.route('/', coreControl(ctx, webhooks));
  for (const m of modules) control.route('/', m.control);

  app.route('/v2', v2);
  app.route('/_emulator', control);
  app.notFound((c) => serviceError(c, 404, 'NOT_FOUND', `no route for ${c.req.method} ${c.req.path}`));
  app.onError((err, c) => {
    console.error('[emulator] unhandled error:', err);
    return serviceError(c, 500, 'INTERNAL_ERROR', 'internal error in the emulator');
  });
  return app;
}

/** Control routes of the core: faults, clock, events, deliveries, permissions, callees. */
function coreControl(ctx: EmulatorContext, webhooks: Webhooks): Hono<Env> {
  const r = new Hono<Env>();

  r.get('/faults', (c) => c.json(ctx.faults));
  // Merge: only the knobs given change; `endpoints` is replaced as a whole when given.
  r.patch('/faults', async (c) => {
    const b = await readJson(c.req.raw);
    if (!b) return badRequest(c, 'body: must be a JSON object');
    const err = validateFaults(b);
    if (err) return badRequest(c, err);
    ctx.faults = { ...ctx.faults, ...(b as Partial<Faults>) };
    return c.json(ctx.faults);
  });
  r.put('/faults', async (c) => {
    const b = await readJson(c.req.raw);
    if (!b) return badRequest(c, 'body: must be a JSON object');
    const err = validateFaults(b);
    if (err) return badRequest(c, err);
    ctx.faults = { duplicateRate: 0, reorderWindowMs: 0, reorderEvents: 3, deliveryDelayMs: 0, dropFirstAttempt: false, endpoints: {}, recordingResult: 'AVAILABLE', transcriptionResult: 'AVAILABLE', mediaDownloadHang: 'none', ...(b as Partial<Faults>) };
    return c.json(ctx.faults);
  });

  r.get('/clock', (c) => c.json({ now: ctx.clock.now(), iso: new Date(ctx.clock.now()).toISOString() }));
  r.post('/clock/advance', async (c) => {
    const b = await readJson(c.req.raw);
    const ms = b?.ms;
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) return badRequest(c, 'ms: required, a number >= 0');
    ctx.clock.advance(ms);
    return c.json({ now: ctx.clock.now(), iso: new Date(ctx.clock.now()).toISOString() });
  });

  r.get('/rateLimits', (c) => c.json(ctx.rateLimits));
  r.patch('/rateLimits', async (c) => {
    const b = await readJson(c.req.raw);
    if (!b) return badRequest(c, 'body: must be a JSON object');
    for (const [k, v] of Object.entries(b)) {
      if (!(k in ctx.rateLimits)) return badRequest(c, `${k}: unknown rate limit`);
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) return badRequest(c, `${k}: must be an integer >= 1`);
    }
    Object.assign(ctx.rateLimits, b);
    return c.json(ctx.rateLimits);
  });

  // Keyed by the envelope object, so dropping old events from ctx.events frees these too.
  const ownerOfEvent = new WeakMap<object, string>();
  ctx.onEmit((e, owner) => ownerOfEvent.set(e, owner));
  // Events are per tenant: a key sees only its own.
  r.get('/events', (c) => {
    const type = c.req.query('type');
    const wacid = c.req.query('wacid');
    const owned = ctx.events.filter((e) => (ownerOfEvent.get(e) ?? ctx.apiKeys[0]) === c.get('apiKey'));
    const items = owned.filter((e) => (!type || e.type === type) && (!wacid || JSON.stringify(e).includes(`"wacid":"${wacid}"`)));
    return c.json({ items, length: items.length });
  });

  // The Service's side of a fault case: the requests of this key, optionally one path / one call.
  r.get('/requests', (c) => {
    const path = c.req.query('path');
    const wacid = c.req.query('wacid');
    const items = ctx.requests.filter((q) => q.apiKey === c.get('apiKey') && (!path || q.path === path) && (!wacid || q.wacid === wacid)).map(({ apiKey: _k, ...q }) => q);
    return c.json({ items, length: items.length });
  });

  r.get('/webhooks/deliveries', (c) => {
    const eventId = c.req.query('eventId');
    const items = webhooks.log.filter((d) => (!eventId || d.eventId === eventId) && webhooks.endpoints.get(d.endpointId)?.owner === c.get('apiKey'));
    return c.json({ items, length: items.length });
  });
  r.post('/webhooks/flush', async (c) => {
    webhooks.flush();
    await webhooks.idle();
    return c.json({ success: true });
  });

  // Direct write of a call permission (skips the permission-request dance when a test
  // only needs "the user allowed calls").
  r.post('/callPermissions', async (c) => {
    const b = await readJson(c.req.raw);
    if (!b) return badRequest(c, 'body: must be a JSON object');
    if (typeof b.business !== 'string' || !b.business) return badRequest(c, 'business: required, the E.164 business number');
    if (typeof b.user !== 'string' || !b.user) return badRequest(c, 'user: required, the E.164 user number or BSUID');
    const response = b.response ?? 'accept';
    if (response !== 'accept' && response !== 'reject') return badRequest(c, "response: must be 'accept' or 'reject'");
    const grant: PermissionGrant = { business: b.business, user: b.user, response, isPermanent: b.isPermanent === true };
    if (!grant.isPermanent) {
      const exp = b.expirationTimestamp;
      if (exp !== undefined && (typeof exp !== 'number' || !Number.isFinite(exp))) return badRequest(c, 'expirationTimestamp: epoch seconds');
      grant.expirationTimestamp = typeof exp === 'number' ? exp : Math.floor(ctx.clock.now() / 1000) + 7 * 24 * 3600;
    }
    ctx.permissions.set(`${grant.business}|${grant.user}`, grant);
    return c.json(grant);
  });
  r.delete('/callPermissions', (c) => {
    const business = c.req.query('business');
    const user = c.req.query('user');
    if (!business || !user) return badRequest(c, 'business, user: required query parameters');
    return c.json({ deleted: ctx.permissions.delete(`${business}|${user}`) });
  });

  // Behaviour of simulated callees of business-initiated calls: default, or per user.
  r.get('/callee', (c) => c.json({ default: ctx.callee, overrides: Object.fromEntries(ctx.calleeOverrides) }));
  r.patch('/callee', async (c) => {
    const b = await readJson(c.req.raw);
    if (!b) return badRequest(c, 'body: must be a JSON object');
    const { user, ...rest } = b;
    const err = validateCallee(rest);
    if (err) return badRequest(c, err);
    if (typeof user === 'string') ctx.calleeOverrides.set(user, { ...ctx.calleeOverrides.get(user), ...rest });
    else Object.assign(ctx.callee, rest);
    return c.json({ default: ctx.callee, overrides: Object.fromEntries(ctx.calleeOverrides) });
  });
  return r;
}

function validateFaults(b: Record<string, unknown>): string | undefined {
  const num = (k: string, max = Infinity) => b[k] !== undefined && (typeof b[k] !== 'number' || !Number.isFinite(b[k]) || (b[k] as number) < 0 || (b[k] as number) > max);
  if (num('duplicateRate', 1)) return 'duplicateRate: a number from 0 to 1';
  for (const k of ['reorderWindowMs', 'reorderEvents', 'deliveryDelayMs']) if (num(k)) return `${k}: a number >= 0`;
  if (b.dropFirstAttempt !== undefined && typeof b.dropFirstAttempt !== 'boolean') return 'dropFirstAttempt: a boolean';
  for (const k of ['recordingResult', 'transcriptionResult'])
    if (b[k] !== undefined && b[k] !== 'AVAILABLE' && b[k] !== 'FAILED') return `${k}: 'AVAILABLE' or 'FAILED'`;
  if (b.mediaDownloadHang !== undefined && b.mediaDownloadHang !== 'none' && b.mediaDownloadHang !== 'headers' && b.mediaDownloadHang !== 'body')
    return "mediaDownloadHang: 'none', 'headers' or 'body'";
  if (b.endpoints !== undefined) {
    if (!b.endpoints || typeof b.endpoints !== 'object') return 'endpoints: an object of "METHOD /path" → fault';
    for (const [k, f] of Object.entries(b.endpoints as Record<string, unknown>)) {
      const kind = (f as { kind?: unknown } | null)?.kind;
      if (kind !== '429' && kind !== '5xx' && kind !== 'hang' && kind !== 'slow' && kind !== 'echoKey' && kind !== 'refuse') return `endpoints["${k}"].kind: one of 429, 5xx, hang, slow, echoKey, refuse`;
      const code = (f as { code?: unknown }).code;
      if (code !== undefined && (typeof code !== 'number' || !Number.isInteger(code) || code < 0)) return `endpoints["${k}"].code: a whole number`;
    }
  }
  return undefined;
}

function validateCallee(b: Record<string, unknown>): string | undefined {
  if (b.action !== undefined && b.action !== 'answer' && b.action !== 'reject' && b.action !== 'noAnswer') return "action: 'answer', 'reject' or 'noAnswer'";
  for (const k of ['answerAfterMs', 'hangupAfterMs', 'ringTimeoutMs'])
    if (b[k] !== undefined && (typeof b[k] !== 'number' || (b[k] as number) < 0)) return `${k}: a number >= 0`;
  return undefined;
}
