/**
 * Test harness for the messaging surface: the core's real emulator app (`createEmulator`:
 * request id, X-API-Key auth, rate limits, this module mounted) driven in-process with
 * `app.request`, no port. Events are read from the context as they are emitted (the
 * same envelopes the webhook engine signs and delivers). Knobs are set through the
 * real control API. Tests over a real port with a signed receiver: integration.test.ts.
 */
import { createEmulator } from '../index.ts';
import type { Knobs } from './knobs.ts';

export const KEY = 'test-key-1';
export const OTHER_KEY = 'test-key-2';
export const BIZ = '+15550100001';
export const BIZ2 = '+15550100002';
/** A number of the second tenant. */
export const OTHER_BIZ = '+15550100009';
export const WABA = '102290129340398';
export const OTHER_WABA = '102290129340399';

export interface Recorded {
  id: string;
  type: string;
  createTime: string;
  owner: string;
  payloadName: string;
  payload: Record<string, any>;
}

export async function makeApp(knobs: Partial<Knobs> = {}, seed = 1) {
  const { ctx, app } = createEmulator({
    apiKeys: [KEY, OTHER_KEY],
    seed,
    timeScale: 1,
    businessNumbers: [
      { id: '106540352242922', phoneNumber: BIZ, wabaId: WABA, owner: KEY },
      { id: '106540352242923', phoneNumber: BIZ2, wabaId: WABA, owner: KEY },
      { id: '106540352242929', phoneNumber: OTHER_BIZ, wabaId: OTHER_WABA, owner: OTHER_KEY },
    ],
  });
  const events: Recorded[] = [];
  ctx.onEmit((e, owner) => {
    const { id, type, createTime, apiVersion: _v, ...rest } = e;
    const [payloadName, payload] = Object.entries(rest)[0]!;
    events.push({ id, type, createTime, owner, payloadName, payload: structuredClone(payload) as Record<string, any> });
  });

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
      await sleep(5);
    }
  }

  // Small real delays: steps stay ordered and the whole flow takes a few ms.
  const set = await call('PATCH', '/_emulator/messaging/knobs', { stepDelayMs: 5, reviewDelayMs: 5, ...knobs });
  if (set.status !== 200) throw new Error(`knobs refused: ${JSON.stringify(set.body)}`);
  return { app, ctx, events, call, waitFor, close: () => ctx.close() };
}
export type Harness = Awaited<ReturnType<typeof makeApp>>;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Creates a template and waits until its review made it APPROVED. */
export async function approvedTemplate(h: Harness, body: Record<string, unknown>) {
  const res = await h.call('POST', '/chat/templates', { wabaId: WABA, language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Hello {{1}}' }], ...body });
  if (res.status !== 200) throw new Error(`template create failed: ${JSON.stringify(res.body)}`);
  await h.waitFor((e) => e.type === 'chat.template.reviewed' && e.payload.name === body.name && e.payload.status === 'APPROVED');
  return res.body;
}
