import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../store/memory.ts';
import { createLogger } from '../log/logger.ts';
import { PermissionBook, permissionKey } from './book.ts';
import {
  DEFAULT_GRANT_MS,
  KEEP_MS,
  applyReply,
  applyRequest,
  callOutcomeOf,
  dialRefusal,
  expirationMs,
  rejectionHold,
  replyOf as replyOfEvent,
  toView,
  ttlFor,
  type Reply,
  type StoredPermission,
} from './model.ts';
import { parseRequestBody } from './routes.ts';
import { parseEvent } from '../../shared/events.ts';

/** `replyOf` on a raw envelope, parsed first as the workers do. */
function replyOf(raw: unknown, receivedAt: number): Reply | undefined {
  const event = parseEvent(raw);
  if (!event.known || event.type !== 'chat.inbound_message.received') throw new Error('not an inbound message event');
  return replyOfEvent(event, receivedAt);
}

const BIZ = '+15550100001';
const USER = '+15550123456';
const BSUID = 'US.13491208655302741918';
const T0 = Date.parse('2031-01-01T00:00:00.000Z');
const H = 3600_000;
const DAY = 24 * H;

const reply = (over: Partial<Reply> = {}): Reply => ({ from: BIZ, users: [USER], response: 'accept', permanent: false, expiresAt: T0 + 7 * DAY, at: T0, id: 'inb_1', ...over });

describe('permission model', () => {
  it('unknown without a record; granted; expired once expiresAt has passed (computed on read)', () => {
    expect(toView(undefined, BIZ, USER, T0)).toEqual({ from: BIZ, user: USER, state: 'unknown', updatedAt: T0 });
    const rec = applyReply(undefined, USER, reply({ expiresAt: T0 + H }), T0)!;
    expect(toView(rec, BIZ, USER, T0 + H - 1)).toMatchObject({ state: 'granted', permanent: false, expiresAt: T0 + H });
    expect(toView(rec, BIZ, USER, T0 + H)).toMatchObject({ state: 'expired', expiresAt: T0 + H });
    const perm = applyReply(undefined, USER, reply({ permanent: true, expiresAt: undefined }), T0)!;
    expect(toView(perm, BIZ, USER, T0 + 400 * DAY)).toMatchObject({ state: 'granted', permanent: true });
    expect(toView(perm, BIZ, USER, T0).expiresAt).toBeUndefined();
  });

  it('a request sets requested with who asked; the view shows no internal fields', () => {
    const rec = applyRequest(undefined, { from: BIZ, user: USER, by: 'boss', at: T0 });
    expect(rec).toMatchObject({ state: 'requested', requestedBy: 'boss', requests: [T0] });
    expect(toView(rec, BIZ, USER, T0)).toEqual({ from: BIZ, user: USER, state: 'requested', updatedAt: T0, requestedBy: 'boss' });
  });

  it('a reply keeps the requester; the same reply twice changes nothing', () => {
    const req = applyRequest(undefined, { from: BIZ, user: USER, by: 'agent1', at: T0 - H });
    const granted = applyReply(req, USER, reply(), T0 + 5)!;
    expect(granted).toMatchObject({ state: 'granted', requestedBy: 'agent1', replyAt: T0, replyId: 'inb_1', updatedAt: T0 + 5 });
    expect(applyReply(granted, USER, reply(), T0 + 10)).toBeUndefined();
  });

  it('an older reply does not overwrite a newer one (events arrive out of order)', () => {
    const rejected = applyReply(undefined, USER, reply({ response: 'reject', at: T0 + 1000, id: 'inb_2' }), T0 + 1000)!;
    expect(rejected.state).toBe('rejected');
    // The accept of an earlier request arrives late: ignored.
    expect(applyReply(rejected, USER, reply({ at: T0, id: 'inb_1' }), T0 + 2000)).toBeUndefined();
    // Same time, other id: not newer, ignored too.
    expect(applyReply(rejected, USER, reply({ at: T0 + 1000, id: 'inb_3' }), T0 + 2000)).toBeUndefined();
    // A newer one wins.
    expect(applyReply(rejected, USER, reply({ at: T0 + 3000, id: 'inb_4' }), T0 + 3000)).toMatchObject({ state: 'granted' });
  });

  it('a new request after a reply keeps the reply time, so the old reply replayed stays ignored', () => {
    const granted = applyReply(undefined, USER, reply(), T0)!;
    const again = applyRequest(granted, { from: BIZ, user: USER, by: 'boss', at: T0 + 2 * DAY });
    expect(again).toMatchObject({ state: 'requested', replyAt: T0, replyId: 'inb_1' });
    expect(applyReply(again, USER, reply(), T0 + 2 * DAY)).toBeUndefined();
  });

  it('ration: 1 request per 24 h and 2 per 7 days (the book reserves a slot in the store, atomically)', async () => {
    const book = new PermissionBook(new MemoryStore(), createLogger({ level: 'silent' }));
    expect(await book.reserveRequest(BIZ, USER, 'r1', T0)).toEqual({ ok: true });
    expect(await book.reserveRequest(BIZ, USER, 'r2', T0 + H)).toEqual({ ok: false, rule: '1 per 24 hours', nextAt: T0 + DAY });
    expect(await book.reserveRequest(BIZ, USER, 'r3', T0 + DAY)).toEqual({ ok: true });
    expect(await book.reserveRequest(BIZ, USER, 'r4', T0 + 3 * DAY)).toEqual({ ok: false, rule: '2 per 7 days', nextAt: T0 + 7 * DAY });
    expect(await book.reserveRequest(BIZ, USER, 'r5', T0 + 7 * DAY)).toEqual({ ok: true });
    expect(await book.reserveRequest(BIZ, BSUID, 'r6', T0)).toEqual({ ok: true });
    // A request the Service surely did not send gives its slot back.
    await book.releaseRequest(BIZ, BSUID, 'r6');
    expect(await book.reserveRequest(BIZ, BSUID, 'r7', T0 + 1)).toEqual({ ok: true });
  });

  it('a rejection holds re-asking for 24 h', () => {
    const rejected = applyReply(undefined, USER, reply({ response: 'reject' }), T0)!;
    expect(rejectionHold(rejected, T0 + H)).toEqual({ until: T0 + DAY });
    expect(rejectionHold(rejected, T0 + DAY)).toBeUndefined();
    expect(rejectionHold(applyReply(undefined, USER, reply(), T0), T0 + H)).toBeUndefined();
  });

  it('dial refusal only for rejected and expired, saying which and when', () => {
    const at = (state: string, extra: object = {}) => ({ from: BIZ, user: USER, state, updatedAt: T0, ...extra }) as Parameters<typeof dialRefusal>[0];
    expect(dialRefusal(at('unknown'))).toBeUndefined();
    expect(dialRefusal(at('requested'))).toBeUndefined();
    expect(dialRefusal(at('granted'))).toBeUndefined();
    expect(dialRefusal(at('rejected'))).toMatch(/rejected.*2031-01-01T00:00:00.000Z/);
    expect(dialRefusal(at('expired', { expiresAt: T0 + H }))).toMatch(/expired at 2031-01-01T01:00:00.000Z/);
  });

  it('TTL: grants are kept past their expiry; others a bounded time', () => {
    const g = applyReply(undefined, USER, reply({ expiresAt: T0 + H }), T0)!;
    expect(ttlFor(g, T0)).toBe(H + KEEP_MS);
    const r = applyRequest(undefined, { from: BIZ, user: USER, by: 'x', at: T0 });
    expect(ttlFor(r, T0)).toBe(KEEP_MS);
    expect(ttlFor(r, T0 + KEEP_MS + 1)).toBe(60_000);
  });

  it('expiration_timestamp: epoch seconds (the emulator, the provider), ms, numeric strings, ISO', () => {
    expect(expirationMs(1_924_992_000)).toBe(1_924_992_000_000);
    expect(expirationMs(1_924_992_000_000)).toBe(1_924_992_000_000);
    expect(expirationMs('1924992000')).toBe(1_924_992_000_000);
    expect(expirationMs('2031-01-01T00:00:00Z')).toBe(T0);
    expect(expirationMs(undefined)).toBeUndefined();
    expect(expirationMs('soon')).toBeUndefined();
  });

  it('replyOf reads the emulator\'s inbound payload: user number and BSUID, business number, seconds → ms', () => {
    const event = {
      id: 'evt_1',
      type: 'chat.inbound_message.received',
      apiVersion: 'v2',
      createTime: '2031-01-01T00:00:05.000Z',
      chatInboundMessage: {
        id: 'inb_9',
        from: USER,
        fromUserId: BSUID,
        to: BIZ,
        type: 'interactive',
        interactive: { type: 'call_permission_reply', call_permission_reply: { response: 'accept', is_permanent: false, expiration_timestamp: T0 / 1000 + 3600, response_source: 'user_action' } },
        createTime: '2031-01-01T00:00:01.000Z',
      },
    };
    expect(replyOf(event, 0)).toEqual({ from: BIZ, users: [USER, BSUID], response: 'accept', permanent: false, expiresAt: T0 + H, at: T0 + 1000, id: 'inb_9' });
    // Without an expiration: the default temporary lifetime from the reply time.
    const noExp = structuredClone(event);
    delete (noExp.chatInboundMessage.interactive.call_permission_reply as { expiration_timestamp?: number }).expiration_timestamp;
    expect(replyOf(noExp, 0)?.expiresAt).toBe(T0 + 1000 + DEFAULT_GRANT_MS);
    // A plain text message, or one without the business number: not a reply.
    expect(replyOf({ ...event, chatInboundMessage: { id: 'x', from: USER, to: BIZ, type: 'text', text: { body: 'hi' } } }, 0)).toBeUndefined();
    expect(replyOf({ ...event, chatInboundMessage: { ...event.chatInboundMessage, to: undefined } }, 0)).toBeUndefined();
    // Rejection: no grant fields.
    const rej = structuredClone(event);
    rej.chatInboundMessage.interactive.call_permission_reply = { response: 'reject', response_source: 'user_action' } as never;
    expect(replyOf(rej, 0)).toMatchObject({ response: 'reject', permanent: false });
    expect(replyOf(rej, 0)?.expiresAt).toBeUndefined();
  });
});

describe('request body', () => {
  it('names the field and the rule', () => {
    const bad = (b: unknown) => {
      try {
        parseRequestBody(b);
      } catch (err) {
        return (err as Error).message;
      }
      return 'accepted';
    };
    expect(bad({ to: USER })).toMatch(/^from: is required/);
    expect(bad({ from: '5550100001', to: USER })).toMatch(/^from: must be an E\.164/);
    expect(bad({ from: BIZ })).toMatch(/^to: to \(E\.164 phone number\) or recipient \(BSUID\) is required/);
    expect(bad({ from: BIZ, to: '123' })).toMatch(/^to: must be an E\.164/);
    expect(bad({ from: BIZ, recipient: 'nope' })).toMatch(/^recipient: must be a BSUID/);
    expect(bad({ from: BIZ, to: USER, body: '' })).toMatch(/^body: must be a non-empty string/);
    expect(bad({ from: BIZ, to: USER, body: 'x'.repeat(1025) })).toMatch(/^body: must be at most 1024 characters/);
    expect(bad({ from: BIZ, to: USER, body: 'x', template: { name: 't', language: 'en' } })).toMatch(/^template: give either body/);
    expect(bad({ from: BIZ, to: USER, template: { language: 'en' } })).toMatch(/^template\.name: is required/);
    expect(bad({ from: BIZ, to: USER, template: { name: 't', language: 'english please' } })).toMatch(/^template\.language: must be a language code/);
    expect(bad({ from: BIZ, to: USER, bdy: 'typo' })).toMatch(/^bdy: unknown field/);
    expect(bad([])).toMatch(/^body: must be a JSON object/);
  });

  it('to wins over recipient (interface part 4); recipient alone is the user', () => {
    expect(parseRequestBody({ from: BIZ, to: USER, recipient: BSUID })).toMatchObject({ user: USER, address: { to: USER } });
    expect(parseRequestBody({ from: BIZ, recipient: BSUID, body: 'Call?' })).toEqual({ from: BIZ, user: BSUID, address: { recipient: BSUID }, body: 'Call?' });
    expect(parseRequestBody({ from: BIZ, to: USER, template: { name: 'callback_ok', language: 'en_US' } }).template).toEqual({ name: 'callback_ok', language: 'en_US' });
  });
});

describe('permission book (memory store)', () => {
  it('stores under perm:<from>|<user> with a TTL; concurrent updates of one pair do not lose each other', async () => {
    const store = new MemoryStore();
    let now = T0;
    const book = new PermissionBook(store, createLogger({ level: 'silent' }), () => now);
    expect(await book.get(BIZ, USER)).toMatchObject({ state: 'unknown' });
    await Promise.all(
      Array.from({ length: 10 }, (_, i) => book.update(BIZ, USER, (cur) => applyRequest(cur, { from: BIZ, user: USER, by: `u${i}`, at: T0 + i }))),
    );
    const rec = await book.read(BIZ, USER);
    expect(rec?.requests).toHaveLength(10);
    expect(JSON.parse((await store.get(permissionKey(BIZ, USER)))!)).toMatchObject({ state: 'requested' });
    await book.update(BIZ, USER, (cur) => applyReply(cur, USER, reply({ expiresAt: T0 + H }), now));
    expect(await book.get(BIZ, USER)).toMatchObject({ state: 'granted' });
    now = T0 + 2 * H;
    expect(await book.get(BIZ, USER)).toMatchObject({ state: 'expired', expiresAt: T0 + H });
    await store.close();
  });
});

describe('business-initiated call outcomes (the permission budget\'s call facts)', () => {
  const call = (state: string, extra: object = {}) => ({ wacid: 'w1', direction: 'BUSINESS_INITIATED' as const, from: BIZ, to: USER, state, ...extra });

  it('connected when it becomes active; unanswered when it rings out; not when we hung up, the user declined, or it was inbound', () => {
    expect(callOutcomeOf(call('connected'), call('active', { startedAt: T0 }))).toEqual({ outcome: 'connected', at: T0 });
    expect(callOutcomeOf(call('active', { startedAt: T0 }), call('active', { startedAt: T0 }))).toBeUndefined(); // a repeat
    expect(callOutcomeOf(call('connected'), call('ended', { endedAt: T0 + 5 }))).toEqual({ outcome: 'unanswered', at: T0 + 5 });
    expect(callOutcomeOf(call('ending'), call('ended', { endedAt: T0 }))).toBeUndefined(); // we hung up while it rang
    expect(callOutcomeOf(call('connected', { remoteStatus: 'REJECTED' }), call('ended', { remoteStatus: 'REJECTED', endedAt: T0 }))).toBeUndefined();
    expect(callOutcomeOf(call('active', { startedAt: T0 }), call('ended', { startedAt: T0, endedAt: T0 + 9 }))).toBeUndefined(); // already counted
    expect(callOutcomeOf({ ...call('ringing'), direction: 'USER_INITIATED' }, { ...call('ended', { endedAt: T0 }), direction: 'USER_INITIATED' })).toBeUndefined();
  });

  it('the book keeps them per pair; a run that revoked the permission no longer counts once the user allowed calls again', async () => {
    const store = new MemoryStore();
    const book = new PermissionBook(store, createLogger({ level: 'silent' }), () => T0);
    for (let i = 1; i <= 4; i++) await book.recordCall(BIZ, USER, `u${i}`, 'unanswered', T0 + i);
    expect(await book.callFacts(BIZ, USER, { state: 'granted', updatedAt: T0 })).toEqual({ connectedCalls: [], unansweredInARow: 4 });
    // Granted again after the 4th: the run starts afresh (as at the Service).
    expect(await book.callFacts(BIZ, USER, { state: 'granted', updatedAt: T0 + 10 })).toEqual({ connectedCalls: [], unansweredInARow: 0 });
    await book.recordCall(BIZ, USER, 'u5', 'unanswered', T0 + 20);
    expect((await book.callFacts(BIZ, USER, { state: 'granted', updatedAt: T0 + 10 })).unansweredInARow).toBe(1);
    // A grant after 2 unanswered (no revocation) does not reset the run.
    await book.recordCall(BIZ, 'other', 'x1', 'unanswered', T0 + 1);
    await book.recordCall(BIZ, 'other', 'x2', 'unanswered', T0 + 2);
    expect((await book.callFacts(BIZ, 'other', { state: 'granted', updatedAt: T0 + 10 })).unansweredInARow).toBe(2);
    await book.recordCall(BIZ, 'other', 'x3', 'connected', T0 + 30);
    expect(await book.callFacts(BIZ, 'other', { state: 'granted', updatedAt: T0 + 10 })).toEqual({ connectedCalls: [T0 + 30], unansweredInARow: 0 });
    await store.close();
  });
});
