/**
 * Webhook delivery of the emulated Service: endpoints (part 4 `/webhookEndpoints`),
 * signing (`Service-Signature: t=<unix s>,s=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`),
 * at-least-once delivery with the documented retry schedule, and the delivery fault
 * knobs (duplicates, reordering, fixed delay, dropped first attempts).
 *
 * Reproducibility: every random choice (duplicate or not, how far back to hold a
 * delivery) is drawn from a delivery-only RNG at emit time, and reordering holds a
 * delivery back by a number of *later emits* rather than by wall time. Each endpoint
 * sends one delivery at a time (default `deliveryConcurrency` 1), in release order. So
 * with the same seed and the same order of emits, a receiver sees the same sequence of
 * (event id, type) every run.
 */
import { createHmac } from 'node:crypto';
import { Hono } from 'hono';
import type { EmulatorContext, EventEnvelope } from './context.ts';
import { seededRng } from './context.ts';
import { badRequest, notFound, pageNumber, type Env } from './http.ts';

/** Delays before retries 1..7 of an unacknowledged delivery, in real seconds (× timeScale). */
export const RETRY_SCHEDULE_S = [10, 30, 300, 1800, 3600, 7200, 7200] as const;

export interface WebhookEndpoint {
  id: string;
  url: string;
  /** Event types delivered; `*` = all. */
  enabledEvents: string[];
  /** Stored and returned as given (the interface names it, without a schema). */
  eventProperties?: unknown;
  description?: string;
  status: 'enabled' | 'disabled';
  createTime: string;
  updateTime: string;
  /** Never returned by GET, never logged. */
  secret: string;
  /** API key of the tenant that owns the endpoint. */
  owner: string;
}

export interface DeliveryRecord {
  eventId: string;
  type: string;
  endpointId: string;
  /** 1 for the first attempt of a copy; duplicates are separate copies. */
  attempt: number;
  copy: number;
  outcome: 'delivered' | 'failed' | 'dropped' | 'gave_up';
  /** HTTP status, or 0 when no answer in time / connection refused. */
  status: number;
  time: number;
}

interface Delivery {
  event: EventEnvelope;
  body: string;
  endpoint: WebhookEndpoint;
  copy: number;
  attempt: number;
  /** Released when the emit counter reaches this (reordering). */
  releaseAt: number;
  seq: number;
  heldSince: number;
  /** Epoch ms before which this attempt is not sent (deliveryDelayMs). */
  notBefore?: number;
}

export interface Webhooks {
  routes: Hono<Env>;
  endpoints: Map<string, WebhookEndpoint>;
  /** Every attempt, in the order they finished. */
  log: DeliveryRecord[];
  addEndpoint(input: { url: string; secret?: string; enabledEvents?: string[]; owner?: string }): WebhookEndpoint;
  /** Release every held delivery now (in order) — handy at the end of a test. */
  flush(): void;
  /** Resolves when nothing is held, queued or in flight (retries scheduled later don't count). */
  idle(): Promise<void>;
}

/** `t=<unix seconds>,s=<hex>` over `<t>.<raw body>`. Exported for tests and demo tools. */
export function signatureHeader(secret: string, rawBody: string, unixSeconds: number): string {
  const s = createHmac('sha256', secret).update(`${unixSeconds}.${rawBody}`).digest('hex');
  return `t=${unixSeconds},s=${s}`;
}

export function createWebhooks(ctx: EmulatorContext): Webhooks {
  // Separate from ctx.rng so messaging's random choices can't shift delivery faults.
  const rng = seededRng((ctx.options.seed ^ 0x5eed) >>> 0);
  const endpoints = new Map<string, WebhookEndpoint>();
  const log: DeliveryRecord[] = [];
  const held: Delivery[] = [];
  // Per endpoint: deliveries in release order, sent by up to `deliveryConcurrency` workers.
  const queues = new Map<string, { items: Delivery[]; running: number }>();
  let emitCount = 0;
  let seq = 0;
  let holdTimer: (() => void) | undefined;
  let idleWaiters: Array<() => void> = [];
  const inflight = new Set<AbortController>();
  ctx.onClose(() => {
    for (const a of inflight) a.abort();
  });

  const pushLog = (r: DeliveryRecord) => {
    log.push(r);
    if (log.length > 100_000) log.splice(0, 20_000); // bounded for long demo / bench runs
  };

  const addEndpoint: Webhooks['addEndpoint'] = (input) => {
    const now = new Date(ctx.clock.now()).toISOString();
    const ep: WebhookEndpoint = {
      id: ctx.newId('we_'),
      url: input.url,
      enabledEvents: input.enabledEvents?.length ? input.enabledEvents : ['*'],
      status: 'enabled',
      createTime: now,
      updateTime: now,
      secret: input.secret ?? ctx.webhookSecret,
      owner: input.owner ?? ctx.apiKeys[0]!,
    };
    endpoints.set(ep.id, ep);
    return ep;
  };
  for (const e of ctx.options.webhookEndpoints ?? []) addEndpoint(e);

  const subscribed = (ep: WebhookEndpoint, type: string) =>
    ep.status === 'enabled' && ep.enabledEvents.some((p) => p === '*' || p === type || (p.endsWith('.*') && type.startsWith(p.slice(0, -1))));

  ctx.onEmit((event, owner) => {
    emitCount++;
    const body = JSON.stringify(event);
    const f = ctx.faults;
    const reorder = f.reorderWindowMs > 0;
    for (const ep of endpoints.values()) {
      if (ep.owner !== owner || !subscribed(ep, event.type)) continue;
      const copies = rng.next() < f.duplicateRate ? 2 : 1;
      for (let copy = 1; copy <= copies; copy++) {
        const hold = reorder ? Math.floor(rng.next() * (Math.max(0, f.reorderEvents) + 1)) : 0;
        held.push({ event, body, endpoint: ep, copy, attempt: 1, releaseAt: emitCount + hold, seq: seq++, heldSince: Date.now() });
      }
    }
    release();
  });

  /** Moves held deliveries whose turn has come to their endpoint queues, in (releaseAt, seq) order. */
  function release(force = false) {
    const now = Date.now();
    const window = ctx.faults.reorderWindowMs;
    // A delivery held past the window forces out everything ordered before it too, so
    // the relative order stays the one fixed at emit time.
    let cutoff = force ? Infinity : emitCount;
    for (const d of held) if (now - d.heldSince >= window && d.releaseAt > cutoff) cutoff = d.releaseAt;
    held.sort((a, b) => a.releaseAt - b.releaseAt || a.seq - b.seq);
    while (held.length && held[0]!.releaseAt <= cutoff) enqueue(held.shift()!);
    holdTimer?.();
    holdTimer = undefined;
    if (held.length) {
      let oldest = Infinity;
      for (const d of held) if (d.heldSince < oldest) oldest = d.heldSince;
      holdTimer = ctx.setTimer(() => release(), Math.max(1, oldest + window - now));
    }
    maybeIdle();
  }

  function enqueue(d: Delivery) {
    if (d.attempt === 1 && ctx.faults.deliveryDelayMs > 0) d.notBefore = Date.now() + ctx.faults.deliveryDelayMs;
    let q = queues.get(d.endpoint.id);
    if (!q) queues.set(d.endpoint.id, (q = { items: [], running: 0 }));
    q.items.push(d);
    if (q.running < Math.max(1, ctx.options.deliveryConcurrency ?? 1)) void run(q);
  }

  async function run(q: { items: Delivery[]; running: number }) {
    q.running++;
    try {
      while (q.items.length && !ctx.closed) {
        const d = q.items.shift()!;
        // The delay counts from release, not from the previous send: deliveries queued
        // together arrive together, each `deliveryDelayMs` late.
        const wait = (d.notBefore ?? 0) - Date.now();
        if (wait > 0) await new Promise<void>((r) => void ctx.setTimer(r, wait));
        if (ctx.closed) return;
        await attempt(d);
      }
    } finally {
      q.running--;
      maybeIdle();
    }
  }

  async function attempt(d: Delivery) {
    const rec = (outcome: DeliveryRecord['outcome'], status: number) =>
      pushLog({ eventId: d.event.id, type: d.event.type, endpointId: d.endpoint.id, attempt: d.attempt, copy: d.copy, outcome, status, time: Date.now() });
    if (d.attempt === 1 && ctx.faults.dropFirstAttempt) {
      rec('dropped', 0);
      return scheduleRetry(d);
    }
    const t = Math.floor(Date.now() / 1000); // real time: receivers check it against their own clock
    const ac = new AbortController();
    inflight.add(ac);
    const timer = setTimeout(() => ac.abort(), ctx.options.deliveryTimeoutMs ?? 6000);
    timer.unref();
    let status = 0;
    try {
      const res = await fetch(d.endpoint.url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'Service-Signature': signatureHeader(d.endpoint.secret, d.body, t), 'User-Agent': 'Service-Webhooks-Emulator/2' },
        body: d.body,
        signal: ac.signal,
      });
      status = res.status;
      await res.arrayBuffer().catch(() => undefined);
    } catch {
      status = 0; // refused, reset or no answer in time: all count as "not acknowledged"
    } finally {
      clearTimeout(timer);
      inflight.delete(ac);
    }
    if (ctx.closed) return;
    if (status >= 200 && status < 300) return rec('delivered', status);
    rec('failed', status);
    scheduleRetry(d);
  }

  function scheduleRetry(d: Delivery) {
    const delayS = RETRY_SCHEDULE_S[d.attempt - 1];
    if (delayS === undefined) {
      pushLog({ eventId: d.event.id, type: d.event.type, endpointId: d.endpoint.id, attempt: d.attempt, copy: d.copy, outcome: 'gave_up', status: 0, time: Date.now() });
      return;
    }
    ctx.setTimer(() => enqueue({ ...d, attempt: d.attempt + 1 }), delayS * 1000 * ctx.options.timeScale);
  }

  function maybeIdle() {
    const busy = held.length > 0 || [...queues.values()].some((q) => q.running > 0 || q.items.length > 0);
    if (busy) return;
    const w = idleWaiters;
    idleWaiters = [];
    for (const r of w) r();
  }

  const routes = new Hono<Env>();
  const view = (ep: WebhookEndpoint) => {
    const { secret: _s, owner: _o, ...rest } = ep;
    return rest;
  };
  const mine = (c: { get(k: 'apiKey'): string }, id: string) => {
    const ep = endpoints.get(id);
    return ep && ep.owner === c.get('apiKey') ? ep : undefined;
  };

  routes.post('/webhookEndpoints', async (c) => {
    const body = await readJson(c.req.raw);
    if (!body) return badRequest(c, 'body: must be a JSON object');
    const err = validateEndpoint(body, true);
    if (err) return badRequest(c, err);
    const ep = addEndpoint({ url: body.url as string, secret: body.secret as string | undefined, enabledEvents: body.enabledEvents as string[] | undefined, owner: c.get('apiKey') });
    if (body.eventProperties !== undefined) ep.eventProperties = body.eventProperties;
    if (typeof body.description === 'string') ep.description = body.description;
    return c.json(view(ep), 200);
  });
  routes.get('/webhookEndpoints', (c) => pageNumber(c, [...endpoints.values()].filter((e) => e.owner === c.get('apiKey')).map(view)));
  routes.get('/webhookEndpoints/:id', (c) => {
    const ep = mine(c, c.req.param('id'));
    return ep ? c.json(view(ep)) : notFound(c, 'webhook endpoint');
  });
  routes.patch('/webhookEndpoints/:id', async (c) => {
    const ep = mine(c, c.req.param('id'));
    if (!ep) return notFound(c, 'webhook endpoint');
    const body = await readJson(c.req.raw);
    if (!body) return badRequest(c, 'body: must be a JSON object');
    const err = validateEndpoint(body, false);
    if (err) return badRequest(c, err);
    if (typeof body.url === 'string') ep.url = body.url;
    if (typeof body.secret === 'string') ep.secret = body.secret;
    if (Array.isArray(body.enabledEvents)) ep.enabledEvents = body.enabledEvents.length ? (body.enabledEvents as string[]) : ['*'];
    if (body.eventProperties !== undefined) ep.eventProperties = body.eventProperties;
    if (typeof body.description === 'string') ep.description = body.description;
    if (body.status === 'enabled' || body.status === 'disabled') ep.status = body.status;
    ep.updateTime = new Date(ctx.clock.now()).toISOString();
    return c.json(view(ep));
  });

  return {
    routes,
    endpoints,
    log,
    addEndpoint,
    flush: () => release(true),
    idle: () =>
      new Promise<void>((r) => {
        idleWaiters.push(r);
        maybeIdle();
      }),
  };
}

function validateEndpoint(b: Record<string, unknown>, create: boolean): string | undefined {
  if (create || b.url !== undefined) {
    if (typeof b.url !== 'string') return 'url: required, an http(s) URL';
    let u: URL;
    try {
      u = new URL(b.url);
    } catch {
      return 'url: must be an absolute http(s) URL';
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'url: must be an absolute http(s) URL';
  }
  if (b.enabledEvents !== undefined && (!Array.isArray(b.enabledEvents) || !b.enabledEvents.every((e) => typeof e === 'string' && e.length > 0)))
    return 'enabledEvents: must be an array of event type strings';
  if (b.secret !== undefined && (typeof b.secret !== 'string' || b.secret.length < 8)) return 'secret: must be a string of at least 8 characters';
  if (b.status !== undefined && b.status !== 'enabled' && b.status !== 'disabled') return "status: must be 'enabled' or 'disabled'";
  if (b.description !== undefined && typeof b.description !== 'string') return 'description: must be a string';
  return undefined;
}

/** Parses a JSON object body; undefined when absent, malformed or not an object. */
export async function readJson(req: Request): Promise<Record<string, unknown> | undefined> {
  try {
    const v: unknown = await req.clone().json();
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
