import { describe, expect, it } from 'vitest';
import { applyUnsubscribeEvent, emptyOptOuts, mayMessage, syncUnsubscribers } from './optout.ts';

const USER = '+15550123456';
const BSUID = 'US.13491208655302741918';
const t0 = Date.UTC(2026, 10, 24, 9);
const iso = (ms: number) => new Date(ms).toISOString();

describe('opt-outs', () => {
  it('an unsubscribe event refuses chat messages to that customer, naming the source and time; a delete allows them again', () => {
    let s = applyUnsubscribeEvent(emptyOptOuts(), 'contact.unsubscribe.created', { phoneNumber: USER, channel: 'chat', source: 'USER_REQUEST', updateTime: iso(t0) }, t0);
    const r = mayMessage(s, [USER]);
    expect(r).toMatchObject({ ok: false, code: 'OPTED_OUT', customer: USER, channel: 'chat', source: 'USER_REQUEST', since: t0 });
    expect(r.ok === false && r.message).toBe(`${USER} unsubscribed from chat messages (source USER_REQUEST) on ${iso(t0)}; nothing is sent to an unsubscribed customer`);
    expect(mayMessage(s, ['+15550000000'])).toEqual({ ok: true });
    s = applyUnsubscribeEvent(s, 'contact.unsubscribe.deleted', { phoneNumber: USER, channel: 'chat', updateTime: iso(t0 + 1000) }, t0 + 1000);
    expect(mayMessage(s, [USER])).toEqual({ ok: true });
  });

  it('out of order: a late created event older than the delete does not opt the customer out again', () => {
    let s = applyUnsubscribeEvent(emptyOptOuts(), 'contact.unsubscribe.deleted', { phoneNumber: USER, channel: 'chat', updateTime: iso(t0 + 5000) }, t0 + 5000);
    s = applyUnsubscribeEvent(s, 'contact.unsubscribe.created', { phoneNumber: USER, channel: 'chat', updateTime: iso(t0) }, t0 + 6000);
    expect(mayMessage(s, [USER])).toEqual({ ok: true });
    // And in the other order the same answer.
    let o = applyUnsubscribeEvent(emptyOptOuts(), 'contact.unsubscribe.created', { phoneNumber: USER, channel: 'chat', updateTime: iso(t0) }, t0);
    o = applyUnsubscribeEvent(o, 'contact.unsubscribe.deleted', { phoneNumber: USER, channel: 'chat', updateTime: iso(t0 + 5000) }, t0 + 5000);
    expect(o.entries).toEqual(s.entries);
  });

  it('per channel: an sms opt-out does not stop chat; an event without a channel stops every channel', () => {
    let s = applyUnsubscribeEvent(emptyOptOuts(), 'contact.unsubscribe.created', { phoneNumber: USER, channel: 'SMS', source: 'STOP' }, t0);
    expect(mayMessage(s, [USER], 'chat')).toEqual({ ok: true });
    expect(mayMessage(s, [USER], 'sms')).toMatchObject({ ok: false, channel: 'sms' });
    s = applyUnsubscribeEvent(s, 'contact.unsubscribe.created', { phoneNumber: USER, source: 'USER_REQUEST' }, t0 + 1);
    expect(mayMessage(s, [USER], 'chat')).toMatchObject({ ok: false, channel: '*' });
    expect(mayMessage(s, [USER], 'chat').ok === false && (mayMessage(s, [USER], 'chat') as { message: string }).message).toMatch(/unsubscribed from all messages/);
  });

  it('any of the customer\'s identifiers counts (number or BSUID)', () => {
    const s = applyUnsubscribeEvent(emptyOptOuts(), 'contact.unsubscribe.created', { phoneNumber: BSUID, channel: 'chat' }, t0);
    expect(mayMessage(s, [USER])).toEqual({ ok: true });
    expect(mayMessage(s, [USER, BSUID])).toMatchObject({ ok: false, customer: BSUID });
    expect(mayMessage(s, [undefined, BSUID])).toMatchObject({ ok: false });
  });

  it('the initial listing opts out everyone listed; a later listing drops who left it, but keeps what events set after its fetch', () => {
    let { state, skipped } = syncUnsubscribers(
      emptyOptOuts(),
      [
        { customer: USER, phoneNumber: USER, channel: 'chat', source: 'USER_REQUEST', updateTime: iso(t0 - 1000) },
        { customer: 'a@example.com', email: 'a@example.com', channel: 'email', source: 'LINK' },
        { channel: 'chat' },
      ],
      t0,
    );
    expect(skipped).toBe(1);
    expect(mayMessage(state, [USER])).toMatchObject({ ok: false, source: 'USER_REQUEST' });
    expect(mayMessage(state, ['a@example.com'], 'email')).toMatchObject({ ok: false });
    state = applyUnsubscribeEvent(state, 'contact.unsubscribe.created', { phoneNumber: '+15550777777', channel: 'chat', updateTime: iso(t0 + 3000) }, t0 + 3000);
    // Fetched at t0 + 2000 (before that event): USER and the email are gone, the event's opt-out stays.
    state = syncUnsubscribers(state, [], t0 + 2000).state;
    expect(mayMessage(state, [USER])).toEqual({ ok: true });
    expect(mayMessage(state, ['a@example.com'], 'email')).toEqual({ ok: true });
    expect(mayMessage(state, ['+15550777777'])).toMatchObject({ ok: false });
  });

  it('a payload that names no customer changes nothing', () => {
    const s = emptyOptOuts();
    expect(applyUnsubscribeEvent(s, 'contact.unsubscribe.created', { source: 'X' }, t0)).toBe(s);
    expect(applyUnsubscribeEvent(s, 'contact.unsubscribe.created', 'not an object', t0)).toBe(s);
  });
});
