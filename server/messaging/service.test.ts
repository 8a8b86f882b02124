/**
 * Messaging and the callback queue against the emulated Service (on a port, the real
 * Service client), the history on PGlite / PostgreSQL, sessions in a private redis-server,
 * real logins. Events the emulator emits go through `parseEvent` to the real handlers, as
 * the webhook workers hand them.
 */
import { errorHandler } from '../app.ts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Hono } from 'hono';
import { parseEvent, type KnownEventType } from '../../shared/events.ts';
import type { ServerMsg } from '../../shared/protocol.ts';
import type { CallbackTask } from '../../shared/records.ts';
import { openTestHistory, type TestHistory } from '../../test/support/history.ts';
import { createTestDatabase, type TestDatabase } from '../../test/support/postgres.ts';
import { startRedis, uniquePrefix, type TestRedis } from '../../test/support/redis.ts';
import { startEmulator, type Emulator } from '../../test/emulator/index.ts';
import { createAuth, demoUsers, Sessions, type AuthEnv } from '../auth/index.ts';
import { createCallbacks, type Callbacks } from '../callbacks/index.ts';
import { createCallbackRoutes } from '../callbacks/routes.ts';
import { CallbackStore } from '../callbacks/store.ts';
import { openPostgres, type Db } from '../history/db.ts';
import { MessagingStore } from './store.ts';
import { migrate } from '../history/migrations.ts';
import { createLogger, memoryDestination } from '../log/logger.ts';
import { PermissionBook } from '../permissions/book.ts';
import { createServiceClient, type ServiceClient } from '../service/index.ts';
import { RedisStore } from '../store/redis.ts';
import type { FollowupSetting } from './followup.ts';
import { createMessagingRoutes } from './routes.ts';
import { createMessaging, type Messaging, type TypedEvent } from './service.ts';

const KEY = 'msg-key-1';
const BIZ = '+15550100001';
const WABA = '300000000000001';
const HOST = 'sb.test';

let emu: Emulator;
let client: ServiceClient;
let redis: TestRedis;
let kv: RedisStore;
let h: TestHistory;
const log = createLogger({ level: 'warn', destination: memoryDestination() });
const pushed: Array<{ to: string; msg: ServerMsg }> = [];
const push = { toUser: (name: string, msg: ServerMsg) => void pushed.push({ to: `user:${name}`, msg }), toRole: (role: string, msg: ServerMsg) => void pushed.push({ to: `role:${role}`, msg }) };

beforeAll(async () => {
  emu = await startEmulator({ apiKeys: [KEY], timeScale: 0.001, businessNumbers: [{ id: '400000000000001', phoneNumber: BIZ, wabaId: WABA }] });
  client = createServiceClient({ baseUrl: emu.baseUrl, apiKey: KEY });
  await control('PATCH', '/messaging/knobs', { stepDelayMs: 5, reviewDelayMs: 5 });
  redis = await startRedis();
  kv = new RedisStore({ url: redis.url, prefix: uniquePrefix() });
  h = await openTestHistory();
}, 60_000);

afterAll(async () => {
  await emu?.close();
  await kv?.close();
  await redis?.close();
  await h?.close();
});

async function control(method: string, path: string, body?: unknown) {
  // In-process (the control API needs no port; a kept-alive socket the server closed meanwhile would reset).
  const res = await emu.app.request(`/_emulator${path}`, { method, headers: { 'X-API-Key': KEY, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = (await res.json().catch(() => undefined)) as any;
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Emitted events → parseEvent → the handler of their type (awaited in order, as one worker lane would). */
function wire(messaging: Messaging) {
  const seen: Array<{ type: string; payload: Record<string, any> }> = [];
  let chain = Promise.resolve();
  const errors: unknown[] = [];
  emu.ctx.onEmit((e) => {
    const p = parseEvent(JSON.parse(JSON.stringify(e)));
    if (!p.known) return;
    seen.push({ type: p.type, payload: p.payload });
    const handler = (messaging.handlers as Record<string, ((ev: TypedEvent<KnownEventType>, ctx: { signal: AbortSignal }) => Promise<void>) | undefined>)[p.type];
    if (handler) chain = chain.then(() => handler({ type: p.type, envelope: p.envelope, payload: p.payload } as TypedEvent<KnownEventType>, { signal: new AbortController().signal }).catch((err) => void errors.push(err)));
  });
  return { seen, errors, settled: () => chain };
}

async function until<T>(f: () => Promise<T | undefined | null | false>, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

function services(followup: FollowupSetting, db: Db = h.db) {
  const store = new MessagingStore(db);
  const messaging = createMessaging({ store, client, push, log });
  const callbacks = createCallbacks({ store: new CallbackStore(db), messages: store, messaging, client, book: new PermissionBook(kv, log), push, log, followup });
  return { store, messaging, callbacks };
}

async function appFor(messaging: Messaging, store: MessagingStore, callbacks: Callbacks) {
  const auth = createAuth({ users: await demoUsers(), sessions: new Sessions(kv, 'messaging_routes_session_secret'), store: kv, log, origin: { publicUrl: `http://${HOST}` } });
  const app = new Hono<AuthEnv>();
  app.onError(errorHandler(log));
  app.route('/', auth.routes);
  app.route('/', createMessagingRoutes({ auth, messaging, store, log }));
  app.route('/', createCallbackRoutes({ auth, callbacks }));
  const cookies: Record<string, string> = {};
  for (const name of ['agent1', 'agent2', 'supervisor', 'ops']) {
    const res = await app.request(`http://${HOST}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json', host: HOST, origin: `http://${HOST}` }, body: JSON.stringify({ name, password: name }) });
    expect(res.status).toBe(200);
    cookies[name] = res.headers.get('set-cookie')!.split(';')[0]!;
  }
  const req = (user: string, method: string, path: string, body?: unknown) =>
    app.request(`http://${HOST}${path}`, {
      method,
      headers: { host: HOST, origin: `http://${HOST}`, cookie: cookies[user]!, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
  return req;
}

const missed = (wacid: string, customer: string, outcome: 'missed' | 'abandoned' | 'rejected' = 'missed') => ({
  wacid,
  direction: 'inbound' as const,
  outcome,
  businessNumber: BIZ,
  customer: { phoneNumber: customer },
  endedAt: new Date().toISOString(),
});

describe('missed-call follow-up against the emulated Service', () => {
  it('an opted-out customer gets a task but no follow-up; another customer gets the permission request once per task', async () => {
    const { store, messaging, callbacks } = services({ kind: 'interactive' });
    const w = wire(messaging);
    const out = '+15550170001';
    const ok = '+15550170002';
    await control('POST', '/messaging/unsubscribers', { customer: out, channel: 'chat', source: 'USER_REQUEST' });
    await until(async () => w.seen.some((e) => e.type === 'contact.unsubscribe.created'));
    await w.settled();
    expect(w.errors).toEqual([]);

    await callbacks.onCallEnded(missed('wc-out-1', out));
    const [t] = (await callbacks.list('open')).filter((x) => x.customer === out);
    expect(t).toMatchObject({ reason: 'missed', state: 'open', followup: { code: 'OPTED_OUT' } });
    expect(t!.followup!.reason).toMatch(/unsubscribed/);
    // Nothing reached the Service for that customer.
    await new Promise((r) => setTimeout(r, 100));
    expect(w.seen.filter((e) => e.type === 'chat.message.updated' && (e.payload.to === out || e.payload.recipient === out))).toEqual([]);

    await callbacks.onCallEnded(missed('wc-ok-1', ok, 'abandoned'));
    await callbacks.onCallEnded(missed('wc-ok-2', ok, 'rejected'));
    await callbacks.onCallEnded(missed('wc-ok-1', ok, 'abandoned'));
    const [u] = (await callbacks.list('open')).filter((x) => x.customer === ok);
    expect(u).toMatchObject({ reason: 'abandoned', followup: { code: 'SENT' }, misses: [{ wacid: 'wc-ok-1' }, { wacid: 'wc-ok-2' }] });
    expect(u!.permission).toMatchObject({ state: 'requested', callAllowed: true, requestAllowed: false });
    const sent = await until(async () => (await store.getMessage(u!.followup!.messageId!))?.record);
    expect(sent).toMatchObject({ direction: 'outbound', type: 'interactive', to: ok });
    // Its status events arrive through the handler; exactly one request went to that customer.
    await until(async () => ['delivered', 'read'].includes((await store.getMessage(sent.id))!.record.status) && true);
    expect(new Set(w.seen.filter((e) => e.type === 'chat.message.updated' && e.payload.to === ok).map((e) => e.payload.id)).size).toBe(1);
    // A task's changes are pushed once per 100 ms window (its latest state).
    await until(async () => pushed.some((p) => p.to === 'role:agent' && p.msg.type === 'callback.updated' && p.msg.task.customer === ok));
  });
});

describe('callback tasks always carry their permission', () => {
  it('pushed, listed, claimed and closed tasks each have it; when the permission store cannot be read it is unknown and nothing is allowed', async () => {
    const store = new MessagingStore(h.db);
    const messaging = createMessaging({ store, client, push, log });
    const book = new PermissionBook(kv, log);
    let down = false;
    const flaky: typeof book = Object.assign(Object.create(book) as typeof book, {
      read: (...a: Parameters<typeof book.read>) => (down ? Promise.reject(new Error('store down')) : book.read(...a)),
    });
    const callbacks = createCallbacks({ store: new CallbackStore(h.db), messages: store, messaging, client, book: flaky, push, log, followup: { kind: 'off' }, announceMs: 20 });
    const c = '+15550170031';
    const from = pushed.length;
    await callbacks.onCallEnded(missed('wc-perm-1', c));
    const ofC = () => pushed.slice(from).flatMap((p) => (p.msg.type === 'callback.updated' && p.msg.task.customer === c ? [p.msg.task] : []));
    await until(async () => ofC().length > 0);
    expect(ofC()[0]!.permission).toMatchObject({ state: 'unknown', callAllowed: true });
    down = true;
    const [t] = (await callbacks.list('open')).filter((x) => x.customer === c);
    const unreadable = { state: 'unknown', callAllowed: false, requestAllowed: false, text: expect.stringMatching(/could not be read/) };
    expect(t!.permission).toMatchObject(unreadable);
    const claimed = await callbacks.claim(t!.id, 'agent1');
    expect(claimed).toMatchObject({ ok: true, task: { permission: unreadable } });
    expect(await callbacks.claim(t!.id, 'agent2')).toMatchObject({ ok: false, code: 'CONFLICT', task: { permission: unreadable } });
    const done = await callbacks.done(t!.id, 'resolved', 'agent1', false);
    expect(done).toMatchObject({ ok: true, task: { state: 'done', permission: unreadable } });
    await until(async () => ofC().some((x) => x.state === 'done'));
    for (const x of ofC()) expect(x.permission, `pushed ${x.state}`).toBeDefined();
  });
});

describe('POST /api/messages against the emulated Service', () => {
  it('a PAUSED template is refused naming its status, nothing sent; an APPROVED one goes out as accepted and its status follows', async () => {
    const { store, messaging, callbacks } = services({ kind: 'off' });
    const w = wire(messaging);
    const req = await appFor(messaging, store, callbacks);
    for (const name of ['pause_me', 'keep_me']) {
      await client.templates.create({ wabaId: WABA, name, language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Hello {{1}}' }] });
    }
    await until(async () => w.seen.filter((e) => e.type === 'chat.template.reviewed' && e.payload.status === 'APPROVED').length >= 2);
    await messaging.syncTemplates();
    await control('POST', `/messaging/templates/${WABA}/pause_me/en_US/status`, { status: 'PAUSED' });
    await until(async () => w.seen.some((e) => e.type === 'chat.template.reviewed' && e.payload.status === 'PAUSED'));
    await w.settled();
    expect((await messaging.offerable()).map((t) => t.name)).toEqual(['keep_me']);

    const before = w.seen.filter((e) => e.type === 'chat.message.updated').length;
    const res = await req('agent1', 'POST', '/api/messages', { from: BIZ, to: '+15550170010', template: { name: 'pause_me', language: 'en_US', parameters: ['Ann'] } });
    expect(res.status).toBe(409);
    const body = (await res.json()) as any;
    expect(body.error).toMatchObject({ code: 'TEMPLATE_NOT_APPROVED' });
    expect(body.error.message).toMatch(/pause_me \(en_US\) is paused .*status PAUSED/);
    await new Promise((r) => setTimeout(r, 100));
    expect(w.seen.filter((e) => e.type === 'chat.message.updated').length).toBe(before);

    const ok = await req('agent1', 'POST', '/api/messages', { from: BIZ, to: '+15550170010', template: { name: 'keep_me', language: 'en_US', parameters: ['Ann'] } });
    expect(ok.status, await ok.clone().text()).toBe(202);
    const rec = (await ok.json()) as any;
    // Accepted by the send; a status event handled before the response was recorded may already have moved it on.
    expect(rec.statusHistory[0]).toMatchObject({ status: 'accepted' });
    expect(rec).toMatchObject({ direction: 'outbound', template: { name: 'keep_me', language: 'en_US', parameters: ['Ann'] } });
    await until(async () => (await store.getMessage(rec.id))!.record.status === 'read');
    const got = await req('supervisor', 'GET', `/api/messages/${rec.id}`);
    expect(await got.json()).toMatchObject({ id: rec.id, status: 'read' });
    expect(pushed.some((p) => p.to === 'user:agent1' && p.msg.type === 'message.updated' && p.msg.message.id === rec.id && p.msg.message.status === 'read')).toBe(true);

    // Bad input names the field and the rule; ops may not send.
    const bad = await req('agent1', 'POST', '/api/messages', { from: BIZ, to: '5550170010', text: 'hi' });
    expect(((await bad.json()) as any).error.message).toMatch(/^to: must be an E\.164/);
    const both = await req('agent1', 'POST', '/api/messages', { from: BIZ, to: '+15550170010', text: 'hi', template: { name: 'keep_me', language: 'en_US' } });
    expect(((await both.json()) as any).error.message).toBe('text: give exactly one of text or template');
    expect((await req('ops', 'POST', '/api/messages', { from: BIZ, to: '+15550170010', text: 'hi' })).status).toBe(403);

    // An opted-out customer: refused before the Service.
    await control('POST', '/messaging/unsubscribers', { customer: '+15550170011', channel: 'chat', source: 'USER_REQUEST' });
    await until(async () => w.seen.some((e) => e.type === 'contact.unsubscribe.created' && e.payload.phoneNumber === '+15550170011'));
    await w.settled();
    const opted = await req('agent2', 'POST', '/api/messages', { from: BIZ, to: '+15550170011', text: 'hi' });
    expect(opted.status).toBe(409);
    expect(((await opted.json()) as any).error).toMatchObject({ code: 'OPTED_OUT' });
    expect(w.errors).toEqual([]);
  });
});

describe('callback claims across two nodes on one PostgreSQL database', () => {
  let pg: TestDatabase;
  const dbs: Db[] = [];
  afterAll(async () => {
    await Promise.all(dbs.map((d) => d.close()));
    await pg?.drop();
  });

  it('two agents claim the same task at once on two nodes: one 200, one 409 naming the holder; done by the holder', async () => {
    pg = await createTestDatabase();
    for (let i = 0; i < 2; i++) dbs.push(openPostgres({ url: pg.url }));
    await migrate(dbs[0]!);
    const nodes = await Promise.all(dbs.map(async (db) => {
      const s = services({ kind: 'off' }, db);
      return { ...s, req: await appFor(s.messaging, s.store, s.callbacks) };
    }));
    await nodes[0]!.callbacks.onCallEnded(missed('wc-claim-1', '+15550170020'));
    const list = await nodes[1]!.req('agent2', 'GET', '/api/callbacks?state=open');
    const [task] = ((await list.json()) as { items: CallbackTask[] }).items;
    expect(task).toMatchObject({ customer: '+15550170020', state: 'open', followup: { code: 'OFF' }, permission: { state: 'unknown' } });
    const [a, b] = await Promise.all([nodes[0]!.req('agent1', 'POST', `/api/callbacks/${task!.id}/claim`), nodes[1]!.req('agent2', 'POST', `/api/callbacks/${task!.id}/claim`)]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const [win, lose] = a.status === 200 ? [a, b] : [b, a];
    const holder = ((await win.json()) as CallbackTask).assignee!;
    expect(((await lose.json()) as any).error.message).toBe(`callback task ${task!.id} cannot be claimed: it is claimed by ${holder}`);
    const other = holder === 'agent1' ? 'agent2' : 'agent1';
    expect((await nodes[0]!.req(other, 'POST', `/api/callbacks/${task!.id}/done`, { outcome: 'resolved' })).status).toBe(409);
    const noOutcome = await nodes[0]!.req(holder, 'POST', `/api/callbacks/${task!.id}/done`, {});
    expect(((await noOutcome.json()) as any).error.message).toMatch(/^outcome: is required/);
    const done = await nodes[1]!.req(holder, 'POST', `/api/callbacks/${task!.id}/done`, { outcome: 'resolved by phone' });
    expect(await done.json()).toMatchObject({ state: 'done', outcome: 'resolved by phone', assignee: holder });
    expect((await nodes[0]!.req('agent1', 'GET', '/api/callbacks?state=later')).status).toBe(400);
  });
});

describe('a missed call while the history database is down', () => {
  it('is kept and taken once the database is back: one task with its miss, pushed; nothing while it is down', async () => {
    const pgdb = await createTestDatabase();
    const db = openPostgres({ url: pgdb.url, connectTimeoutMs: 500 });
    try {
      await migrate(db);
      const { callbacks } = services({ kind: 'off' }, db);
      const [c1, c2] = ['+15550170041', '+15550170042'];
      const from = pushed.length;
      const tasksOf = (c: string) => pushed.slice(from).flatMap((p) => (p.to === 'role:agent' && p.msg.type === 'callback.updated' && p.msg.task.customer === c ? [p.msg.task] : []));
      await pgdb.cutOff();
      callbacks.take(missed('wc-down-1', c1));
      callbacks.take(missed('wc-down-2', c2));
      callbacks.take(missed('wc-down-1', c1)); // observed again meanwhile: still one miss
      await new Promise((r) => setTimeout(r, 1000));
      expect([...tasksOf(c1), ...tasksOf(c2)]).toEqual([]);
      await pgdb.reopen();
      await until(async () => tasksOf(c1).length > 0 && tasksOf(c2).length > 0, 20_000);
      const open = (await callbacks.list('open')).filter((t) => t.customer === c1 || t.customer === c2);
      expect(open.map((t) => [t.customer, t.misses.map((m) => m.wacid)]).sort()).toEqual([
        [c1, ['wc-down-1']],
        [c2, ['wc-down-2']],
      ]);
    } finally {
      await db.close();
      await pgdb.drop();
    }
  });
});
