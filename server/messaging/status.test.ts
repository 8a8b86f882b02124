import { describe, expect, it } from 'vitest';
import { ChatMessage } from '../../shared/events.ts';
import { MessageRecord, type MessageStatus } from '../../shared/records.ts';
import { applyChatMessage, applyStatus, recordFromSend, statusUpdateOf, STATUS_RANK, type StatusUpdate } from './status.ts';
import { seededRandom as rng } from '../../shared/random.ts';

const T = (s: number) => new Date(Date.UTC(2026, 10, 24, 12, 0, 0) + s * 1000).toISOString();

function sent(over: Partial<MessageRecord> = {}): MessageRecord {
  return {
    id: 'msg_1',
    direction: 'outbound',
    from: '+15550100001',
    to: '+15550123456',
    type: 'text',
    text: 'Hello',
    status: 'accepted',
    statusHistory: [{ status: 'accepted', at: T(0) }],
    totalPrice: 0.05,
    currency: 'USD',
    priceStatus: 'accepted',
    createTime: T(0),
    updateTime: T(0),
    ...over,
  };
}

const OUTBOUND: Exclude<MessageStatus, 'received'>[] = ['accepted', 'sent', 'delivered', 'read', 'failed'];

/** What the view shows after `a` then `b` (and after `b` then `a`): the contract, spelled out. */
const VIEW_AFTER: Record<string, Record<string, MessageStatus>> = {
  accepted: { accepted: 'accepted', sent: 'sent', delivered: 'delivered', read: 'read', failed: 'failed' },
  sent: { accepted: 'sent', sent: 'sent', delivered: 'delivered', read: 'read', failed: 'failed' },
  delivered: { accepted: 'delivered', sent: 'delivered', delivered: 'delivered', read: 'read', failed: 'delivered' },
  read: { accepted: 'read', sent: 'read', delivered: 'read', read: 'read', failed: 'read' },
  failed: { accepted: 'failed', sent: 'failed', delivered: 'delivered', read: 'read', failed: 'failed' },
};

describe('applyStatus: every pair of statuses', () => {
  for (const a of OUTBOUND) {
    for (const b of OUTBOUND) {
      it(`${a} then ${b} shows ${VIEW_AFTER[a]![b]}, keeps both observations, and the reverse order gives the same record`, () => {
        const base = sent({ status: 'accepted', statusHistory: [], totalPrice: undefined, currency: undefined, priceStatus: undefined });
        const ua: StatusUpdate = { status: a, at: T(10), ...(a === 'failed' ? { errorCode: '131026', errorMessage: 'undeliverable' } : {}) };
        const ub: StatusUpdate = { status: b, at: T(20), ...(b === 'failed' ? { errorCode: '131026', errorMessage: 'undeliverable' } : {}) };
        const ab = applyStatus(applyStatus(base, ua), ub);
        const ba = applyStatus(applyStatus(base, ub), ua);
        expect(ab.status).toBe(VIEW_AFTER[a]![b]);
        expect(ab).toEqual(ba);
        expect(ab.statusHistory.map((e) => e.status)).toEqual([a, b]);
        expect(ab.updateTime).toBe(T(20));
        expect(() => MessageRecord.parse(ab)).not.toThrow();
      });
    }
  }

  it('the rank is accepted < sent < failed < delivered < read', () => {
    const order = [...OUTBOUND].sort((x, y) => STATUS_RANK[x] - STATUS_RANK[y]);
    expect(order).toEqual(['accepted', 'sent', 'failed', 'delivered', 'read']);
  });
});

describe('applyStatus: duplicates, late and failed events', () => {
  it('the same observation twice changes nothing (redelivery, dead-letter replay)', () => {
    const once = applyStatus(sent(), { status: 'delivered', at: T(5), totalPrice: 0.04, currency: 'USD' });
    const twice = applyStatus(once, { status: 'delivered', at: T(5), totalPrice: 0.04, currency: 'USD' });
    expect(twice).toEqual(once);
    expect(twice.statusHistory).toHaveLength(2);
  });

  it('a repeated status with another time is kept in the history but changes nothing else', () => {
    const a = applyStatus(sent(), { status: 'sent', at: T(2) });
    const b = applyStatus(a, { status: 'sent', at: T(3) });
    expect(b.status).toBe('sent');
    expect(b.statusHistory.map((e) => [e.status, e.at])).toEqual([
      ['accepted', T(0)],
      ['sent', T(2)],
      ['sent', T(3)],
    ]);
  });

  it('a late sent after read is recorded (in time order) without lowering the view', () => {
    let r = sent();
    r = applyStatus(r, { status: 'delivered', at: T(3) });
    r = applyStatus(r, { status: 'read', at: T(9) });
    r = applyStatus(r, { status: 'sent', at: T(1) });
    expect(r.status).toBe('read');
    expect(r.statusHistory.map((e) => e.status)).toEqual(['accepted', 'sent', 'delivered', 'read']);
    expect(r.updateTime).toBe(T(9));
  });

  it('failed after sent: the view is failed and the history entry keeps errorCode and errorMessage', () => {
    let r = applyStatus(sent(), { status: 'sent', at: T(1) });
    r = applyStatus(r, { status: 'failed', at: T(2), errorCode: '131049', errorMessage: 'not delivered to maintain healthy ecosystem engagement' });
    expect(r.status).toBe('failed');
    expect(r.statusHistory.at(-1)).toEqual({ status: 'failed', at: T(2), errorCode: '131049', errorMessage: 'not delivered to maintain healthy ecosystem engagement' });
  });

  it('read without delivered counts as delivered: read view, final price from the read event', () => {
    let r = applyStatus(sent(), { status: 'sent', at: T(1) });
    r = applyStatus(r, { status: 'read', at: T(4), totalPrice: 0.0312, currency: 'USD' });
    expect(r).toMatchObject({ status: 'read', totalPrice: 0.0312, priceFinal: true, priceStatus: 'read' });
  });

  it('totalPrice: an estimate while accepted, final on delivered; a later estimate never replaces the final price', () => {
    let r = sent();
    expect(r).toMatchObject({ totalPrice: 0.05 });
    expect(r.priceFinal).toBeUndefined();
    r = applyStatus(r, { status: 'delivered', at: T(3), totalPrice: 0.0417, currency: 'USD' });
    expect(r).toMatchObject({ totalPrice: 0.0417, priceFinal: true });
    r = applyStatus(r, { status: 'sent', at: T(1), totalPrice: 0.05, currency: 'USD' });
    r = applyStatus(r, { status: 'failed', at: T(5), totalPrice: 0.05, currency: 'USD' });
    expect(r).toMatchObject({ status: 'delivered', totalPrice: 0.0417, priceFinal: true, priceStatus: 'delivered' });
  });

  it('the input record is not changed', () => {
    const r = sent();
    const copy = structuredClone(r);
    applyStatus(r, { status: 'read', at: T(9), totalPrice: 0.01 });
    expect(r).toEqual(copy);
  });
});

describe('chat message payloads', () => {
  const payload = (over: Record<string, unknown>) => ChatMessage.parse({ id: 'msg_7', from: '+15550100001', to: '+15550123456', ...over });

  it('a status event takes the status time the Service gave (deliverTime for delivered) and its pricing', () => {
    const u = statusUpdateOf(payload({ status: 'delivered', deliverTime: T(7), updateTime: T(8), totalPrice: 0.02, currency: 'EUR' }), T(99));
    expect(u).toEqual({ status: 'delivered', at: T(7), totalPrice: 0.02, currency: 'EUR' });
    expect(statusUpdateOf(payload({ status: 'failed', errorCode: 131000 }), T(99))).toEqual({ status: 'failed', at: T(99), errorCode: '131000' });
    expect(statusUpdateOf(payload({ status: 'teleported' }), T(99))).toBeUndefined();
  });

  it('the send response makes an accepted outbound record with the estimated price and the template', () => {
    const r = recordFromSend(
      payload({ status: 'accepted', type: 'template', createTime: T(0), totalPrice: 0.025, currency: 'USD', template: { name: 'callback_offer', language: { code: 'en_US' }, components: [{ type: 'body', parameters: [{ type: 'text', text: 'Ann' }] }] } }),
      T(0),
    );
    expect(r).toMatchObject({ id: 'msg_7', direction: 'outbound', status: 'accepted', type: 'template', totalPrice: 0.025, template: { name: 'callback_offer', language: 'en_US', parameters: ['Ann'] } });
    expect(() => MessageRecord.parse(r)).not.toThrow();
  });

  it('echo: created carries content with status sent; updates carry none and are matched to it', () => {
    const created = payload({ id: 'echo_1', status: 'sent', type: 'text', text: { body: 'sent from the phone app' }, createTime: T(0), sendTime: T(0) });
    let r = applyChatMessage(undefined, created, 'echo', T(0))!;
    expect(r).toMatchObject({ direction: 'echo', status: 'sent', type: 'text', text: 'sent from the phone app' });
    r = applyChatMessage(r, ChatMessage.parse({ id: 'echo_1', status: 'delivered', updateTime: T(2) }), 'echo', T(2))!;
    r = applyChatMessage(r, ChatMessage.parse({ id: 'echo_1', status: 'read', updateTime: T(3) }), 'echo', T(3))!;
    expect(r).toMatchObject({ status: 'read', text: 'sent from the phone app' });
  });

  it('echo: an update before its created event makes a record the created event then fills (same record as in order)', () => {
    const created = payload({ id: 'echo_2', status: 'sent', type: 'text', text: { body: 'hi' }, createTime: T(0), sendTime: T(0) });
    const update = ChatMessage.parse({ id: 'echo_2', status: 'delivered', updateTime: T(2) });
    const inOrder = applyChatMessage(applyChatMessage(undefined, created, 'echo', T(0)), update, 'echo', T(2));
    const early = applyChatMessage(undefined, update, 'echo', T(2));
    expect(early).toMatchObject({ type: 'unknown', status: 'delivered' });
    const reversed = applyChatMessage(early, created, 'echo', T(0));
    expect(reversed).toEqual(inOrder);
  });

  it('echo: a failed update after read is recorded (131000) but is no move from read', () => {
    let r = applyChatMessage(undefined, payload({ id: 'echo_3', status: 'sent', type: 'text', text: { body: 'x' }, createTime: T(0), sendTime: T(0) }), 'echo', T(0))!;
    r = applyChatMessage(r, ChatMessage.parse({ id: 'echo_3', status: 'read', updateTime: T(5) }), 'echo', T(5))!;
    r = applyChatMessage(r, ChatMessage.parse({ id: 'echo_3', status: 'failed', errorCode: '131000', updateTime: T(6) }), 'echo', T(6))!;
    expect(r.status).toBe('read');
    expect(r.statusHistory.at(-1)).toMatchObject({ status: 'failed', errorCode: '131000' });
  });

  it('a payload without a status and no record yields nothing', () => {
    expect(applyChatMessage(undefined, ChatMessage.parse({ id: 'm' }), 'outbound', T(0))).toBeUndefined();
  });
});


describe('order does not matter', () => {
  it('10,000 status events for 1,000 messages, shuffled and 30 % duplicated, end as the ordered stream does', () => {
    const rand = rng(16);
    const PATHS: MessageStatus[][] = [
      ['accepted', 'sent', 'delivered', 'read'],
      ['accepted', 'sent', 'read'],
      ['accepted', 'sent', 'failed'],
      ['accepted', 'sent', 'delivered'],
      ['accepted', 'failed'],
    ];
    const events: Array<{ at: number; payload: ChatMessage }> = [];
    const expected = new Map<string, MessageStatus>();
    const t0 = Date.UTC(2026, 10, 24);
    for (let i = 0; i < 1000; i++) {
      const id = `msg_${i}`;
      const path = PATHS[Math.floor(rand() * PATHS.length)]!;
      expected.set(id, path.reduce((a, b) => (STATUS_RANK[b] > STATUS_RANK[a] ? b : a)));
      const base = t0 + i * 60_000;
      const make = (status: MessageStatus, at: number) => {
        const iso = new Date(at).toISOString();
        const p: Record<string, unknown> = { id, from: '+15550100001', to: '+15550123456', type: 'text', status, createTime: new Date(base).toISOString(), updateTime: iso };
        if (status === 'accepted') p.totalPrice = 0.02;
        if (status === 'delivered' || status === 'read') p.totalPrice = 0.0125;
        if (status === 'failed') Object.assign(p, { errorCode: '131026', errorMessage: 'Message undeliverable' });
        if (status === 'delivered' || status === 'read' || status === 'failed' || status === 'sent') p.currency = 'USD';
        if (status === 'accepted') p.currency = 'USD';
        events.push({ at, payload: ChatMessage.parse(p) });
      };
      path.forEach((s, k) => make(s, base + k * 1000));
      // Distinct repeated reports of the path's statuses (the Service re-reporting later), up to 10 per message.
      for (let k = path.length; k < 10; k++) make(path[Math.floor(rand() * path.length)]!, base + k * 1000 + 7);
    }
    expect(events).toHaveLength(10_000);

    const run = (stream: typeof events) => {
      const records = new Map<string, MessageRecord>();
      const start = performance.now();
      for (const e of stream) {
        const next = applyChatMessage(records.get(e.payload.id), e.payload, 'outbound', new Date(e.at).toISOString());
        if (next) records.set(e.payload.id, next);
      }
      return { records, ms: performance.now() - start };
    };

    const ordered = run([...events].sort((a, b) => a.at - b.at));
    const shuffled = [...events];
    for (let n = 0; n < 3000; n++) shuffled.push(events[Math.floor(rand() * events.length)]!);
    for (let i = shuffled.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [shuffled[i], shuffled[j]] = [shuffled[j]!, shuffled[i]!];
    }
    const mixed = run(shuffled);

    expect(mixed.records.size).toBe(1000);
    for (const [id, rec] of ordered.records) {
      expect(rec.status, id).toBe(expected.get(id));
      expect(mixed.records.get(id), id).toEqual(rec); // status, statusHistory (as a set and in order), price, times
      expect(new Set(rec.statusHistory.map((e) => e.status))).toEqual(new Set(events.filter((e) => e.payload.id === id).map((e) => e.payload.status)));
    }
    const finals = [...ordered.records.values()].filter((r) => r.priceFinal);
    expect(finals.length).toBeGreaterThan(0);
    for (const r of finals) expect(r.totalPrice).toBe(0.0125);
    console.log(`message status: ${events.length} ordered events in ${ordered.ms.toFixed(1)} ms; ${shuffled.length} shuffled + duplicated in ${mixed.ms.toFixed(1)} ms`);
  });
});
