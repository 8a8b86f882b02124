import { describe, expect, test } from 'vitest';
import type { MessageRecord } from '../../../shared/records.ts';
import { initialMessages, messageBody, messageProblem, parameterCount, reduceMessages, sendRefusal, statusWords, templateKey, type MessageEvent, type MessageState } from './message.ts';
import { inLanguage } from '../i18n/testing.ts';

// The pages' words in English (the catalogue the server serves).
inLanguage('en');

const FROM = '+15550100001';
const CUSTOMER = '+15550123456';
const ORDER = { name: 'order_update', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Hi {{1}}, your order {{2}} is ready.' }] };
const HELLO = { name: 'hello', language: 'en', components: [{ type: 'BODY', text: 'Hello!' }] };

const run = (...evs: MessageEvent[]) => evs.reduce<MessageState>(reduceMessages, initialMessages);
const record = (status: MessageRecord['status'], id = 'm1'): MessageRecord => ({
  id,
  direction: 'outbound',
  from: FROM,
  to: CUSTOMER,
  type: 'text',
  text: 'Hello',
  status,
  statusHistory: [],
  createTime: '2031-01-01T00:00:00.000Z',
  updateTime: '2031-01-01T00:00:00.000Z',
});

describe('Send a message (customer panel form)', () => {
  test('text: empty is refused in words; the body names the customer as `to` (a BSUID as `recipient`)', () => {
    let s = run({ type: 'msg.open', customer: CUSTOMER });
    expect(messageProblem(s)).toBe('Write the message first.');
    expect(messageBody(s, FROM)).toBeUndefined();
    expect(reduceMessages(s, { type: 'msg.sending' })).toBe(s); // nothing to send
    s = reduceMessages(s, { type: 'msg.edit', text: '  Your order is ready  ' });
    expect(messageProblem(s)).toBeUndefined();
    expect(messageBody(s, FROM)).toEqual({ from: FROM, to: CUSTOMER, text: 'Your order is ready' });
    const bsuid = run({ type: 'msg.open', customer: 'US.abc123' }, { type: 'msg.edit', text: 'Hi' });
    expect(messageBody(bsuid, FROM)).toEqual({ from: FROM, recipient: 'US.abc123', text: 'Hi' });
    expect(messageProblem(reduceMessages(s, { type: 'msg.edit', text: 'x'.repeat(4097) }))).toMatch(/too long/);
  });

  test('template: chosen from the APPROVED list, one field per {{n}}, all required, sent with its parameters', () => {
    expect(parameterCount(ORDER)).toBe(2);
    expect(parameterCount(HELLO)).toBe(0);
    let s = run({ type: 'templates.loaded', items: [ORDER, HELLO] }, { type: 'msg.open', customer: CUSTOMER }, { type: 'msg.edit', mode: 'template' });
    expect(messageProblem(s)).toBe('Choose a template.');
    s = reduceMessages(s, { type: 'msg.edit', template: templateKey(ORDER) });
    expect(s.form?.parameters).toEqual(['', '']);
    expect(messageProblem(s)).toBe('Fill in field 1 of the template.');
    s = reduceMessages(s, { type: 'msg.edit', parameter: { index: 0, value: 'Ann' } });
    expect(messageProblem(s)).toBe('Fill in field 2 of the template.');
    s = reduceMessages(s, { type: 'msg.edit', parameter: { index: 1, value: 'A-17' } });
    s = reduceMessages(s, { type: 'msg.edit', parameter: { index: 5, value: 'ignored' } });
    expect(messageBody(s, FROM)).toEqual({ from: FROM, to: CUSTOMER, template: { name: 'order_update', language: 'en_US', parameters: ['Ann', 'A-17'] } });
    s = reduceMessages(s, { type: 'msg.edit', template: templateKey(HELLO) });
    expect(messageBody(s, FROM)).toEqual({ from: FROM, to: CUSTOMER, template: { name: 'hello', language: 'en' } });
  });

  test('sending → sent; the status follows message.updated frames of that message only; editing starts the next message', () => {
    let s = run({ type: 'msg.open', customer: CUSTOMER }, { type: 'msg.edit', text: 'Hello' }, { type: 'msg.sending' });
    expect(s.form?.status).toBe('sending');
    expect(reduceMessages(s, { type: 'msg.edit', text: 'changed' })).toBe(s); // locked while sending
    s = reduceMessages(s, { type: 'msg.sent', message: record('accepted') });
    expect(s.form).toMatchObject({ status: 'sent', sent: { id: 'm1', status: 'accepted' } });
    // the box is cleared, and the message is listed at once under "Recent messages".
    expect(s.form?.text).toBe('');
    expect(s.recent.map((m) => [m.id, m.status])).toEqual([['m1', 'accepted']]);
    expect(reduceMessages(s, { type: 'msg.updated', message: record('read', 'other') })).toBe(s);
    s = reduceMessages(s, { type: 'msg.updated', message: record('delivered') });
    expect(statusWords(s.form!.sent!)).toBe('Delivered');
    s = reduceMessages(s, { type: 'msg.updated', message: record('read') });
    expect(statusWords(s.form!.sent!)).toBe('Read');
    expect(s.recent.map((m) => m.status)).toEqual(['read']);
    s = reduceMessages(s, { type: 'msg.edit', text: 'Next one' });
    expect(s.form).toMatchObject({ status: 'editing', text: 'Next one' });
    expect(s.form?.sent).toBeUndefined();
  });

  test('a refusal is shown in words and the text kept to retry; another customer gets a fresh form', () => {
    let s = run({ type: 'msg.open', customer: CUSTOMER }, { type: 'msg.edit', text: 'Hello' }, { type: 'msg.sending' });
    s = reduceMessages(s, { type: 'msg.failed', error: sendRefusal('OPTED_OUT', 'the customer unsubscribed') });
    expect(s.form).toMatchObject({ status: 'failed', text: 'Hello', error: 'Not sent: the customer unsubscribed from messages.' });
    expect(reduceMessages(s, { type: 'msg.sending' }).form?.status).toBe('sending');
    expect(sendRefusal('TOO_MANY_REQUESTS', 'no slot')).toMatch(/too many messages .*Try again/);
    expect(sendRefusal('TEMPLATE_NOT_APPROVED', 'template: PAUSED')).toBe("Not sent: this template can't be used right now.");
    expect(reduceMessages(s, { type: 'msg.open', customer: CUSTOMER })).toBe(s);
    expect(reduceMessages(s, { type: 'msg.open', customer: '+15550000000' }).form).toMatchObject({ customer: '+15550000000', text: '', status: 'editing' });
  });
});
