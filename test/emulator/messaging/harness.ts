/**
 * Test harness for the messaging routes alone: the real HTTP conventions of http.ts
 * (request id, X-API-Key auth) in a Hono app, with a small hand-built EmulatorContext
 * whose `emit` records envelopes instead of delivering them. Tests through the core's
 * real server and signed webhooks live in integration.test.ts.
 */
import { Hono } from 'hono';
import type { EmulatorContext, PermissionGrant } from '../context.ts';
import { apiKeyAuth, requestId, type Env } from '../http.ts';
import { createMessaging, type Messaging } from './index.ts';
import type { Knobs } from './knobs.ts';

export const KEY = 'test-key-1';
export const OTHER_KEY = 'test-key-2';
export const BIZ = '+15550100001';
export const WABA = '102290129340398';

export interface Recorded {
  id: string;
  type: string;
  apiVersion: 'v2';
  createTime: string;
  owner: string;
  payloadName: string;
  payload: Record<string, any>;
}

/** mulberry32: tiny, seedable, good enough to make runs repeatable. */
function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function makeContext(seed = 1) {
  const events: Recorded[] = [];
  let offset = 0;
  let n = 0;
  const next = rng(seed);
  const ctx: EmulatorContext = {
    options: { seed, timeScale: 0.001, acceptWindowMs: 30_000, noMediaAtStartMs: 20_000, noMediaMidCallMs: 30_000 },
    apiKeys: [KEY, OTHER_KEY],
    webhookSecret: 'whsec_test',
    clock: { now: () => Date.now() + offset, advance: (ms) => void (offset += ms) },
    rng: { next },
    faults: { duplicateRate: 0, reorderWindowMs: 0, deliveryDelayMs: 0, dropFirstAttempt: false, endpoints: {} },
    newId: (prefix) => `${prefix}${(++n).toString(36).padStart(6, '0')}${Math.floor(next() * 36 ** 4).toString(36)}`,
    emit: (type, payloadName, payload, owner) => {
      events.push({ id: `evt_${events.length + 1}`, type, apiVersion: 'v2', createTime: new Date(Date.now() + offset).toISOString(), owner: owner ?? KEY, payloadName, payload: structuredClone(payload) as Record<string, any> });
    },
    permissions: new Map<string, PermissionGrant>(),
    phoneNumbers: new Map(),
  };
  return { ctx, events };
}

export function makeApp(knobs: Partial<Knobs> = {}, seed = 1) {
  const { ctx, events } = makeContext(seed);
  const messaging: Messaging = createMessaging(ctx, { knobs: { stepDelayMs: 5, reviewDelayMs: 5, ...knobs } });
  // Tests run at timeScale 0.001 in the core; here delays are small real ms so steps stay ordered.
  (ctx.options as { timeScale: number }).timeScale = 1;
  const app = new Hono<Env>();
  app.use('*', requestId);
  app.use('*', apiKeyAuth(ctx.apiKeys));
  app.route('/v2', messaging.routes);
  app.route('/_emulator', messaging.control);

  async function call(method: string, path: string, body?: unknown, key = KEY) {
    const init: RequestInit = { method, headers: { 'X-API-Key': key } };
    if (body !== undefined) {
      init.body = typeof body === 'string' ? body : JSON.stringify(body);
      (init.headers as Record<string, string>)['Content-Type'] = 'application/json';
    }
    const res = await app.request(path.startsWith('/_emulator') ? path : `/v2${path}`, init);
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.status, body: json, headers: res.headers };
  }

  /** Polls the recorded events until `pred` matches `count` of them (default 1). */
  async function waitFor(pred: (e: Recorded) => boolean, count = 1, timeoutMs = 3000): Promise<Recorded[]> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const hits = events.filter(pred);
      if (hits.length >= count) return hits;
      if (Date.now() > until) throw new Error(`timed out waiting for ${count} matching events; have ${hits.length}: ${JSON.stringify(events.map((e) => e.type))}`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  return { app, ctx, events, messaging, call, waitFor, close: () => messaging.close() };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Creates a template and waits until its review made it APPROVED. */
export async function approvedTemplate(h: ReturnType<typeof makeApp>, body: Record<string, unknown>) {
  const res = await h.call('POST', '/chat/templates', { wabaId: WABA, language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Hello {{1}}' }], ...body });
  if (res.status !== 200) throw new Error(`template create failed: ${JSON.stringify(res.body)}`);
  await h.waitFor((e) => e.type === 'chat.template.reviewed' && e.payload.name === body.name && e.payload.status === 'APPROVED');
  return res.body;
}
