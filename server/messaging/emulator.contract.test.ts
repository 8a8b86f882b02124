/**
 * The messaging models fed with what the emulated Service really sends: send responses,
 * `chat.message.updated` / echo events, `GET /chat/messages/{id}`, template listings and
 * `chat.template.reviewed`, unsubscriber listings and `contact.unsubscribe.*` — every event
 * passed through the bridge's own `parseEvent` first, as the webhook path does.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ChatMessage, parseEvent } from '../../shared/events.ts';
import { BIZ, makeApp, WABA, approvedTemplate, type Harness, type Recorded } from '../../test/emulator/messaging/harness.ts';
import type { MessageRecord } from '../../shared/records.ts';
import { applyUnsubscribeEvent, emptyOptOuts, mayMessage, syncUnsubscribers } from './optout.ts';
import { applyChatMessage, recordFromSend } from './status.ts';
import { applyTemplateEvent, emptyCatalog, sendableTemplate, syncTemplates } from './templates.ts';

const USER = '+15550123456';
let h: Harness;
afterEach(async () => h?.close());

/** The recorded event as the receiver would parse it. */
const parsed = (e: Recorded) => {
  const p = parseEvent({ id: e.id, type: e.type, apiVersion: 'v2', createTime: e.createTime, [e.payloadName]: e.payload });
  if (!p.known) throw new Error(`unknown event type ${e.type}`);
  return p;
};

describe('messaging models against the emulated Service', () => {
  it('a text message: send response, then its status events, end read with the final price; the fetched message agrees', async () => {
    h = await makeApp();
    const res = await h.call('POST', '/chat/messages/sendDirectly', { from: BIZ, to: USER, type: 'text', text: { body: 'We missed your call' } });
    expect(res.status).toBe(200);
    let rec: MessageRecord = recordFromSend(ChatMessage.parse(res.body), new Date().toISOString());
    expect(rec).toMatchObject({ status: 'accepted', direction: 'outbound', text: 'We missed your call' });
    const updates = await h.waitFor((e) => e.type === 'chat.message.updated' && e.payload.id === rec.id && e.payload.status === 'read');
    for (const e of h.events.filter((x) => x.type === 'chat.message.updated' && x.payload.id === rec.id)) {
      const p = parsed(e);
      rec = applyChatMessage(rec, ChatMessage.parse(p.payload), 'outbound', p.envelope.createTime)!;
    }
    expect(updates).toHaveLength(1);
    expect(rec.status).toBe('read');
    expect(rec.statusHistory.map((s) => s.status)).toEqual(['accepted', 'sent', 'delivered', 'read']);
    const fetched = await h.call('GET', `/chat/messages/${rec.id}`);
    expect(fetched.body.status).toBe(rec.status);
    if (fetched.body.totalPrice !== undefined) expect(rec.totalPrice).toBe(fetched.body.totalPrice);
  });

  it('an echo message: created with content, updates without, matched by id', async () => {
    h = await makeApp();
    const echo = await h.call('POST', '/_emulator/messaging/echo', { from: BIZ, to: USER, text: 'sent from the phone', outcome: 'read' });
    expect(echo.status).toBe(200);
    await h.waitFor((e) => e.type === 'chat.echo_message.updated' && e.payload.id === echo.body.id && e.payload.status === 'read');
    let rec: MessageRecord | undefined;
    for (const e of h.events.filter((x) => x.type.startsWith('chat.echo_message.') && x.payload.id === echo.body.id)) {
      const p = parsed(e);
      rec = applyChatMessage(rec, ChatMessage.parse(p.payload), 'echo', p.envelope.createTime);
    }
    expect(rec).toMatchObject({ direction: 'echo', status: 'read', type: 'text', text: 'sent from the phone' });
  });

  it('templates: a listing plus the reviewed events decide what may be sent; archived blocks', async () => {
    h = await makeApp();
    await approvedTemplate(h, { name: 'missed_call_followup' });
    const fetchedAt = Date.now();
    const list = await h.call('GET', '/chat/templates?limit=100');
    expect(list.body.items.length).toBeGreaterThan(0);
    let catalog = syncTemplates(emptyCatalog(), list.body.items, fetchedAt).catalog;
    expect(sendableTemplate(catalog, 'missed_call_followup', 'en_US', WABA)).toMatchObject({ ok: true });
    const archived = await h.call('POST', `/_emulator/messaging/templates/${WABA}/missed_call_followup/en_US/status`, { status: 'ARCHIVED' });
    expect(archived.status).toBe(200);
    const [ev] = await h.waitFor((e) => e.type === 'chat.template.reviewed' && e.payload.status === 'ARCHIVED');
    const p = parsed(ev!);
    catalog = applyTemplateEvent(catalog, 'chat.template.reviewed', p.payload, Date.parse(p.envelope.createTime));
    expect(sendableTemplate(catalog, 'missed_call_followup', 'en_US', WABA)).toMatchObject({ ok: false, code: 'TEMPLATE_NOT_APPROVED', status: 'ARCHIVED' });
  });

  it('unsubscribers: the event and the listing both refuse messages to the customer; the delete event allows them again', async () => {
    h = await makeApp();
    expect((await h.call('POST', '/_emulator/messaging/unsubscribers', { customer: USER, channel: 'chat', source: 'USER_REQUEST' })).status).toBe(200);
    const [created] = await h.waitFor((e) => e.type === 'contact.unsubscribe.created');
    const pc = parsed(created!);
    let s = applyUnsubscribeEvent(emptyOptOuts(), 'contact.unsubscribe.created', pc.payload, Date.parse(pc.envelope.createTime));
    expect(mayMessage(s, [USER])).toMatchObject({ ok: false, code: 'OPTED_OUT', source: 'USER_REQUEST' });

    const listing = await h.call('GET', '/unsubscribers');
    const items = listing.body.items;
    expect(items.length).toBe(1);
    expect(mayMessage(syncUnsubscribers(emptyOptOuts(), items, Date.now()).state, [USER])).toMatchObject({ ok: false });

    expect((await h.call('DELETE', `/_emulator/messaging/unsubscribers/${encodeURIComponent(USER)}/chat`)).status).toBe(200);
    const [deleted] = await h.waitFor((e) => e.type === 'contact.unsubscribe.deleted');
    const pd = parsed(deleted!);
    s = applyUnsubscribeEvent(s, 'contact.unsubscribe.deleted', pd.payload, Date.parse(pd.envelope.createTime));
    expect(mayMessage(s, [USER])).toEqual({ ok: true });
  });
});
