import { describe, expect, it } from 'vitest';
import { EVENT_TYPES, Envelope, EventPayloadError, parseEvent, payloadOf } from './events.ts';

const env = (type: string, payloadName: string, payload: Record<string, unknown>) => ({
  id: 'evt_1',
  type,
  apiVersion: 'v2',
  createTime: '2026-03-13T10:00:00.000Z',
  [payloadName]: payload,
});

describe('event envelope', () => {
  it.each(['id', 'type', 'apiVersion', 'createTime'])('an envelope without %s is refused', (field) => {
    const e: Record<string, unknown> = env('chat.message.updated', 'chatMessage', { id: 'm1' });
    delete e[field];
    expect(Envelope.safeParse(e).success).toBe(false);
    expect(() => parseEvent(e)).toThrow(new RegExp(`envelope ${field}: is required`));
  });

  it('unknown envelope fields pass through', () => {
    const e = { ...env('x.y', 'p', {}), futureField: 1 };
    expect(Envelope.parse(e)).toMatchObject({ futureField: 1 });
  });

  it('an unknown event type is accepted as unknown, not an error', () => {
    expect(parseEvent(env('chat.brand_new.event', 'whatever', { a: 1 }))).toMatchObject({ known: false, type: 'chat.brand_new.event' });
  });
});

describe('event payloads', () => {
  it('an outbound status update keeps unknown fields and accepts a payload without phone number or username', () => {
    const p = parseEvent(
      env('chat.message.updated', 'chatMessage', {
        id: 'm1',
        from: '+15550001',
        recipient: 'US.13491208655302741918',
        status: 'delivered',
        totalPrice: 0.01,
        customerProfile: { name: 'Ann' },
        newField2027: { nested: true },
      }),
    );
    expect(p.known).toBe(true);
    if (p.known) {
      expect(p.payload.newField2027).toEqual({ nested: true });
      expect(p.payload.to).toBeUndefined();
    }
  });

  it('a BSUID is kept whole, parent BSUIDs with .ENT. included', () => {
    const parent = 'US.ENT.11815799212886844830';
    const p = parseEvent(env('chat.message.updated', 'chatMessage', { id: 'm', recipient: 'GB.AbC123xyz', parentRecipientUserId: parent }));
    expect(p.known && p.payload.recipient).toBe('GB.AbC123xyz');
    expect(p.known && p.payload.parentRecipientUserId).toBe(parent);
  });

  it('an inbound call permission reply is parsed', () => {
    const p = parseEvent(
      env('chat.inbound_message.received', 'chatInboundMessage', {
        id: 'in1',
        fromUserId: 'US.123',
        type: 'interactive',
        interactive: {
          type: 'call_permission_reply',
          call_permission_reply: { response: 'accept', is_permanent: false, expiration_timestamp: 1800000000, response_source: 'user_action' },
        },
      }),
    );
    expect(p.known && (p.payload.interactive as { call_permission_reply: { response: string } }).call_permission_reply.response).toBe('accept');
  });

  it('a user_changed_number system message keeps old and new BSUIDs, parent optional', () => {
    const p = parseEvent(
      env('chat.inbound_message.received', 'chatInboundMessage', {
        id: 'in2',
        type: 'system',
        system: { type: 'user_changed_number', old_user_id: 'US.old1', new_user_id: 'US.new2' },
      }),
    );
    expect(p.known && p.payload.system).toEqual({ type: 'user_changed_number', old_user_id: 'US.old1', new_user_id: 'US.new2' });
  });

  it('shared contacts answering a request carry origin contact_request', () => {
    const p = parseEvent(env('chat.inbound_message.received', 'chatInboundMessage', { id: 'in3', contacts: [{ origin: 'contact_request' }] }));
    expect(p.known && (p.payload.contacts as Array<{ origin: string }>)[0]!.origin).toBe('contact_request');
  });

  it('a call connect needs wacid, phoneId, direction, sdpType and sdp', () => {
    const ok = parseEvent(
      env('chat.call.connect', 'callingConnect', {
        wacid: 'wacid.1', phoneId: 'p1', from: '+1', to: '+2', direction: 'USER_INITIATED', dialTime: 1, sdpType: 'offer', sdp: 'v=0\r\n',
      }),
    );
    expect(ok.known).toBe(true);
    expect(() => parseEvent(env('chat.call.connect', 'callingConnect', { wacid: 'w', phoneId: 'p', direction: 'SIDEWAYS', sdpType: 'offer', sdp: 'x' }))).toThrow(
      /chat\.call\.connect: callingConnect\.direction/,
    );
    expect(() => parseEvent({ id: 'e', type: 'chat.call.connect', apiVersion: 'v2', createTime: 't' })).toThrow(EventPayloadError);
  });

  it('call status, terminate, recording and transcription payloads are found under any payload name', () => {
    expect(parseEvent(env('chat.call.status.updated', 'callStatus', { wacid: 'w', status: 'RINGING' })).known).toBe(true);
    expect(parseEvent(env('chat.call.terminate', 'callingTerminate', { wacid: 'w', status: 'COMPLETED', duration: 12 })).known).toBe(true);
    expect(parseEvent(env('chat.call.recording.updated', 'callingMedia', { wacid: 'w', result: 'AVAILABLE', mediaAssetId: 'ma1' })).known).toBe(true);
    expect(() => parseEvent(env('chat.call.transcription.updated', 'callingMedia', { wacid: 'w', result: 'AVAILABLE' }))).toThrow(/mediaAssetId is required/);
    expect(parseEvent(env('chat.call.transcription.updated', 'callingMedia', { wacid: 'w', result: 'FAILED' })).known).toBe(true);
  });

  it.each([
    ['contact.created', 'contactCreated', { id: 'c1', phoneNumber: '+1', sourceType: 'WHATSAPP', customAttributes: { tier: 'gold', n: 2 } }],
    ['contact.deleted', 'contactDeleted', { id: 'c1', updateTime: 't' }],
    ['contact.attributes_changed', 'contactAttributesChanged', { id: 'c1', changedAttributes: { tier: { oldValue: 'a', newValue: 'b', extra: [{ action: 'ADDED', id: 'x', value: 1 }] } } }],
    ['contact.note.created', 'contactNote', { id: 'n1', contactId: 'c1', content: 'hi' }],
    ['contact.unsubscribe.created', 'unsubscriberChanged', { phoneNumber: '+1', source: 'chat', updateTime: 't' }],
    ['chat.phone_number.business_username_updated', 'chatPhoneNumber', { id: 'p', businessUsername: 'acme', businessUsernameStatus: 'reserved' }],
    ['chat.business_account.deleted', 'chatBusinessAccount', { removedReason: 'x', removedInitiatedBy: 'USER' }],
    ['chat.template.reviewed', 'chatTemplate', { name: 't', language: 'en_US', status: 'APPROVED' }],
    ['chat.group.lifecycle_update', 'chatGroup', { type: 'group_create', requestId: 'r', status: 'created', groupId: 'G', inviteLink: 'https://x', errors: [] }],
    ['email.delivery.updated', 'emailDelivery', { id: 'em1', recipientAddress: 'a@b.c', status: 'delivered' }],
    ['sms.message.updated', 'sms', { id: 's1', status: 'delivered' }],
    ['sms.inbound.received', 'sms', { from: '+1', text: 'hi' }],
    ['chat.provider_business_agent.handover.updated', 'chatProviderBusinessAgent', { agentId: 'a', controlState: 'APP_CONTROL_TAKEN', timestamp: 1 }],
  ])('%s parses', (type, name, payload) => {
    expect(parseEvent(env(type, name, payload as Record<string, unknown>)).known).toBe(true);
  });

  it('the table covers every event type of interface part 6', () => {
    expect(Object.keys(EVENT_TYPES)).toHaveLength(35);
  });

  it('payloadOf prefers the named payload and otherwise finds the single object field', () => {
    expect(payloadOf(env('chat.message.updated', 'chatMessage', { id: 'x' }))?.name).toBe('chatMessage');
    expect(payloadOf({ id: 'e', type: 'unknown', apiVersion: 'v2', createTime: 't', a: {}, b: {} })).toBeUndefined();
  });
});
