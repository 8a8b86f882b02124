/**
 * Webhook events of the Service (interface parts 2 and 6): the envelope and the payload of
 * every event type whose fields the interface names. zod schemas, types derived.
 *
 * Rules from the interface's versioning part, applied everywhere here:
 * - unknown fields pass through (`looseObject`): new fields are optional by contract;
 * - phone number, username and parent BSUID fields are optional in every payload;
 * - a BSUID is kept whole: no trimming, case change or splitting at its periods.
 *
 * Event types without a payload name in the interface carry one payload object whose name
 * is not shown; `payloadOf` finds it (the one object-valued field beside the envelope's).
 * The names used by our emulator for those are in `PAYLOAD_NAMES`.
 */
import { z } from 'zod';
import { LIMITS, clipped, nonEmptyUpTo, upTo } from './limits.ts';

const str = z.string();
const optStr = str.optional();
const optNum = z.number().optional();
const optBool = z.boolean().optional();
/** Epoch ms or an ISO string: the interface mixes both in a few places. */
const timeish = z.union([z.string(), z.number()]).optional();
/** BSUID or parent BSUID (`CC.<up to 128 alphanumerics>`, parent contains `.ENT.`), kept whole. */
export const Bsuid = nonEmptyUpTo(LIMITS.bsuid);

// Fields that reach a WebSocket frame carry the limits of shared/limits.ts, the same ones
// shared/protocol.ts applies: an event over one is refused here, not by the pages.
const wacid = nonEmptyUpTo(LIMITS.wacid);
const phoneId = nonEmptyUpTo(LIMITS.phoneId);
const phoneNumber = upTo(LIMITS.phoneNumber).optional();
const word = upTo(LIMITS.word);
/** Reasons are clipped, never refused: the event they come with (a terminate) must not be lost. */
const reasonText = clipped(LIMITS.reason);
/** Error codes and reasons come as strings or numbers; a number always fits. */
const codeOrNumber = z.union([word, z.number()]).optional();
const reasonOrNumber = z.union([reasonText, z.number()]).optional();

// ---- envelope ------------------------------------------------------------------------

/** The envelope; the payload object rides beside these fields under its own name. */
export const Envelope = z.looseObject({
  id: z.string({ error: 'is required (string)' }).min(1, 'must not be empty').max(256, 'must be at most 256 characters'),
  type: z.string({ error: 'is required (string)' }).min(1, 'must not be empty').max(128, 'must be at most 128 characters'),
  apiVersion: z.string({ error: 'is required (string)' }).min(1, 'must not be empty'),
  createTime: z.string({ error: 'is required (string)' }).min(1, 'must not be empty'),
});
export type Envelope = z.infer<typeof Envelope>;

const ENVELOPE_FIELDS = new Set(['id', 'type', 'apiVersion', 'createTime']);

// ---- chat messages -------------------------------------------------------------------

const customerProfile = z.looseObject({ name: optStr, username: optStr });

/** Outbound message status, echo messages (created and updated). */
export const ChatMessage = z.looseObject({
  id: str,
  wamid: optStr,
  wabaId: optStr,
  from: optStr,
  to: optStr,
  recipient: Bsuid.optional(),
  recipientUserId: Bsuid.optional(),
  parentRecipientUserId: Bsuid.optional(),
  type: optStr,
  text: z.looseObject({ body: optStr }).optional(),
  status: z.enum(['accepted', 'sent', 'delivered', 'read', 'failed']).or(str).optional(),
  errorCode: z.union([str, z.number()]).optional(),
  errorMessage: optStr,
  createTime: optStr,
  sendTime: optStr,
  updateTime: optStr,
  deliverTime: optStr,
  readTime: optStr,
  totalPrice: optNum,
  pricingCategory: optStr,
  bidPricingFlag: optBool,
  pricingType: optStr,
  pricingModel: optStr,
  currency: optStr,
  regionCode: optStr,
  bizType: optStr,
  externalId: optStr,
  customerProfile: customerProfile.optional(),
  conversation: z.looseObject({ type: optStr }).optional(),
  groupId: optStr,
});
export type ChatMessage = z.infer<typeof ChatMessage>;

export const CallPermissionReply = z.looseObject({
  response: z.enum(['accept', 'reject']).or(str),
  is_permanent: optBool,
  expiration_timestamp: z.union([z.number(), z.string()]).optional(),
  response_source: optStr,
});
export type CallPermissionReply = z.infer<typeof CallPermissionReply>;

export const SharedContact = z.looseObject({
  origin: optStr,
  phones: z.array(z.looseObject({ phone: optStr, wa_id: optStr, user_id: Bsuid.optional() })).optional(),
  name: z.looseObject({ formatted_name: optStr }).optional(),
});

/** `system.type: user_changed_number` with old and new BSUIDs (snake_case). */
export const SystemMessage = z.looseObject({
  type: str,
  body: optStr,
  user_id: Bsuid.optional(),
  new_user_id: Bsuid.optional(),
  old_user_id: Bsuid.optional(),
  parent_user_id: Bsuid.optional(),
  new_parent_user_id: Bsuid.optional(),
  old_parent_user_id: Bsuid.optional(),
  wa_id: optStr,
  new_wa_id: optStr,
});

export const ChatInboundMessage = z.looseObject({
  id: str,
  wamid: optStr,
  wabaId: optStr,
  /** The user's number; absent when the user is known by BSUID only. */
  from: phoneNumber,
  /** The business number. */
  to: phoneNumber,
  fromUserId: Bsuid.optional(),
  userId: Bsuid.optional(),
  parentUserId: Bsuid.optional(),
  type: optStr,
  text: z.looseObject({ body: optStr }).optional(),
  interactive: z
    .looseObject({
      type: optStr,
      call_permission_reply: CallPermissionReply.optional(),
    })
    .optional(),
  contacts: z.array(SharedContact).optional(),
  system: SystemMessage.optional(),
  customerProfile: customerProfile.optional(),
  groupId: optStr,
  createTime: optStr,
});
export type ChatInboundMessage = z.infer<typeof ChatInboundMessage>;

export const ChatProviderBusinessAgent = z.looseObject({
  agentId: optStr,
  providerAgentId: optStr,
  phoneNumberId: optStr,
  wabaId: optStr,
  consumerPhoneNumber: optStr,
  controlState: optStr,
  actor: z.unknown().optional(),
  reason: optStr,
  timestamp: optNum,
});

// ---- calls ---------------------------------------------------------------------------

export const CallDirection = z.enum(['USER_INITIATED', 'BUSINESS_INITIATED']);

export const CallingConnect = z.looseObject({
  wacid,
  phoneId,
  from: phoneNumber,
  to: phoneNumber,
  recipient: Bsuid.optional(),
  direction: CallDirection,
  dialTime: optNum,
  sdpType: z.enum(['offer', 'answer']),
  sdp: nonEmptyUpTo(LIMITS.sdp),
});
export type CallingConnect = z.infer<typeof CallingConnect>;

export const CallingStatus = z.looseObject({
  wacid,
  phoneId: phoneId.optional(),
  status: z.enum(['RINGING', 'ACCEPTED', 'REJECTED']).or(word),
  timestamp: timeish,
});
export type CallingStatus = z.infer<typeof CallingStatus>;

/**
 * Field names beyond wacid are not shown in the interface: kept optional and loose. The
 * reason the pages show is `errorMessage`, else `errors[0].message`, else `reason`; each
 * is clipped to the reason limit.
 */
export const CallingTerminate = z.looseObject({
  wacid,
  phoneId: phoneId.optional(),
  status: z.enum(['COMPLETED', 'FAILED']).or(word).optional(),
  duration: optNum,
  errorCode: codeOrNumber,
  errorMessage: reasonText.optional(),
  errors: z.array(z.looseObject({ code: codeOrNumber, message: reasonOrNumber })).optional(),
  reason: reasonOrNumber,
});
export type CallingTerminate = z.infer<typeof CallingTerminate>;

export const CallingMedia = z
  .looseObject({
    wacid,
    phoneId: phoneId.optional(),
    result: z.enum(['AVAILABLE', 'FAILED']),
    mediaAssetId: upTo(LIMITS.mediaAssetId).optional(),
  })
  .refine((m) => m.result !== 'AVAILABLE' || !!m.mediaAssetId, { message: 'mediaAssetId is required when result is AVAILABLE', path: ['mediaAssetId'] });
export type CallingMedia = z.infer<typeof CallingMedia>;

// ---- customer data -------------------------------------------------------------------

export const Contact = z.looseObject({
  id: str,
  remarkName: optStr,
  nickName: optStr,
  realName: optStr,
  phoneNumber: optStr,
  countryCode: optStr,
  countryName: optStr,
  email: optStr,
  ownerEmail: optStr,
  sourceType: optStr,
  sourceId: optStr,
  sourceUrl: optStr,
  lastSeen: optStr,
  createTime: optStr,
  updateTime: optStr,
  tags: z.array(str).optional(),
  blocked: optBool,
  customAttributes: z.record(z.string(), z.union([str, z.number()])).optional(),
});

export const ContactDeleted = z.looseObject({ id: str, remarkName: optStr, nickName: optStr, phoneNumber: optStr, updateTime: optStr });

export const ContactAttributesChanged = z.looseObject({
  id: str,
  updateTime: optStr,
  changedAttributes: z.record(
    z.string(),
    z.looseObject({
      oldValue: z.unknown().optional(),
      newValue: z.unknown().optional(),
      extra: z.array(z.looseObject({ action: optStr, id: optStr, value: z.unknown().optional() })).optional(),
    }),
  ),
});

export const ContactNote = z.looseObject({
  id: str,
  contactId: optStr,
  username: optStr,
  phoneNumber: optStr,
  content: optStr,
  createTime: optStr,
  updateTime: optStr,
});

export const UnsubscriberChanged = z.looseObject({ phoneNumber: optStr, source: optStr, updateTime: optStr });

// ---- phone numbers, business accounts, templates -------------------------------------

export const ChatPhoneNumber = z.looseObject({
  id: optStr,
  phoneNumber: optStr,
  displayPhoneNumber: optStr,
  wabaId: optStr,
  businessUsername: optStr,
  businessUsernameStatus: z.enum(['active', 'reserved', 'pending_review']).or(str).optional(),
  requestedBusinessUsername: optStr,
  businessUsernameUpdatedAt: timeish,
  updateEvent: optStr,
  qualityUpdateEvent: optStr,
  messagingLimit: optStr,
});

export const ChatBusinessAccount = z.looseObject({
  businessId: optStr,
  wabaId: optStr,
  businessStatus: optStr,
  businessName: optStr,
  updateEvent: optStr,
  removedReason: optStr,
  removedInitiatedBy: z.enum(['USER', 'SYSTEM']).or(str).optional(),
  removedTime: timeish,
  authIntlRateEligibilityCountries: z.array(str).optional(),
  primaryBusinessLocation: optStr,
});

export const ChatTemplateEvent = z.looseObject({
  officialTemplateId: optStr,
  wabaId: optStr,
  name: optStr,
  language: optStr,
  category: optStr,
  status: optStr,
  qualityRating: optStr,
  event: optStr,
  reason: optStr,
});

// ---- groups --------------------------------------------------------------------------

const errors = z.array(z.looseObject({ code: z.union([z.number(), str]).optional(), message: optStr })).optional();

export const ChatGroup = z.looseObject({
  type: optStr,
  requestId: optStr,
  status: optStr,
  groupId: optStr,
  inviteLink: optStr,
  joinRequestId: optStr,
  removedParticipants: z.array(z.unknown()).optional(),
  failedParticipants: z.array(z.looseObject({ errors })).optional(),
  settings: z.array(z.looseObject({ errors })).optional(),
  errors,
});

// ---- email, SMS ----------------------------------------------------------------------

export const EmailDelivery = z.looseObject({
  id: str,
  recipientAddress: optStr,
  status: z.enum(['sent', 'delivered', 'undelivered', 'failed']).or(str).optional(),
  updateTime: optStr,
});

export const SmsEvent = z.looseObject({
  id: optStr,
  externalId: optStr,
  from: optStr,
  to: optStr,
  status: z.enum(['accepted', 'sent', 'delivered', 'undelivered', 'failed']).or(str).optional(),
  text: optStr,
});

const AnyPayload = z.looseObject({});

// ---- the event table -----------------------------------------------------------------

/**
 * Payload schema and name per event type. `name` is the interface's payload object name;
 * `?` marks names the interface does not show (our emulator's choice; `payloadOf` does not
 * rely on them).
 */
export const EVENT_TYPES = {
  'chat.message.updated': { name: 'chatMessage', schema: ChatMessage },
  'chat.echo_message.created': { name: 'chatMessage', schema: ChatMessage },
  'chat.echo_message.updated': { name: 'chatMessage', schema: ChatMessage },
  'chat.inbound_message.received': { name: 'chatInboundMessage', schema: ChatInboundMessage },
  'chat.provider_business_agent.handover.updated': { name: 'chatProviderBusinessAgent', schema: ChatProviderBusinessAgent },
  'contact.created': { name: 'contactCreated', schema: Contact },
  'contact.deleted': { name: 'contactDeleted', schema: ContactDeleted },
  'contact.attributes_changed': { name: 'contactAttributesChanged', schema: ContactAttributesChanged },
  'contact.note.created': { name: 'contactNote', schema: ContactNote },
  'contact.note.updated': { name: 'contactNote', schema: ContactNote },
  'contact.note.deleted': { name: 'contactNote', schema: ContactNote },
  'contact.unsubscribe.created': { name: 'unsubscriberChanged', schema: UnsubscriberChanged },
  'contact.unsubscribe.deleted': { name: 'unsubscriberChanged', schema: UnsubscriberChanged },
  'chat.phone_number.business_username_updated': { name: 'chatPhoneNumber', schema: ChatPhoneNumber },
  'chat.phone_number.quality_updated': { name: 'chatPhoneNumber?', schema: ChatPhoneNumber },
  'chat.phone_number.deleted': { name: 'chatPhoneNumber?', schema: ChatPhoneNumber },
  'chat.business_account.deleted': { name: 'chatBusinessAccount?', schema: ChatBusinessAccount },
  'chat.business_account.updated': { name: 'chatBusinessAccount?', schema: ChatBusinessAccount },
  'chat.template.reviewed': { name: 'chatTemplate?', schema: ChatTemplateEvent },
  'chat.template.quality_updated': { name: 'chatTemplate?', schema: ChatTemplateEvent },
  'chat.template.category_updated': { name: 'chatTemplate?', schema: ChatTemplateEvent },
  'chat.call.connect': { name: 'callingConnect', schema: CallingConnect },
  'chat.call.status.updated': { name: 'callingStatus?', schema: CallingStatus },
  'chat.call.terminate': { name: 'callingTerminate?', schema: CallingTerminate },
  'chat.call.recording.updated': { name: 'callingMedia?', schema: CallingMedia },
  'chat.call.transcription.updated': { name: 'callingMedia?', schema: CallingMedia },
  'chat.group.lifecycle_update': { name: 'chatGroup', schema: ChatGroup },
  'chat.group.participants_update': { name: 'chatGroup', schema: ChatGroup },
  'chat.group.settings_update': { name: 'chatGroup', schema: ChatGroup },
  'chat.group.status_update': { name: 'chatGroup', schema: ChatGroup },
  'chat.user.preferences': { name: '?', schema: AnyPayload },
  'chat.payment.updated': { name: '?', schema: AnyPayload },
  'email.delivery.updated': { name: 'emailDelivery?', schema: EmailDelivery },
  'sms.message.updated': { name: 'sms?', schema: SmsEvent },
  'sms.inbound.received': { name: 'sms?', schema: SmsEvent },
} as const satisfies Record<string, { name: string; schema: z.ZodType }>;

export type KnownEventType = keyof typeof EVENT_TYPES;
export type PayloadOf<T extends KnownEventType> = z.infer<(typeof EVENT_TYPES)[T]['schema']>;

/** Payload object names, as used by our emulator (`?` stripped). */
export const PAYLOAD_NAMES: Record<KnownEventType, string> = Object.fromEntries(
  Object.entries(EVENT_TYPES).map(([t, v]) => [t, v.name.replace(/\?$/, '')]),
) as Record<KnownEventType, string>;

export function isKnownEventType(type: string): type is KnownEventType {
  return Object.hasOwn(EVENT_TYPES, type);
}

/**
 * The payload object of an envelope: the field named by the interface when present,
 * otherwise the single object-valued field beside the envelope fields.
 */
export function payloadOf(event: Record<string, unknown>): { name: string; value: unknown } | undefined {
  const type = typeof event.type === 'string' ? event.type : '';
  if (isKnownEventType(type)) {
    const name = EVENT_TYPES[type].name;
    if (!name.endsWith('?') && name in event) return { name, value: event[name] };
  }
  const candidates = Object.keys(event).filter((k) => !ENVELOPE_FIELDS.has(k) && typeof event[k] === 'object' && event[k] !== null);
  if (candidates.length === 1) return { name: candidates[0]!, value: event[candidates[0]!] };
  return undefined;
}

/**
 * A validated event of a known type, discriminated by `type`: its envelope and its payload
 * typed by the table above. Handlers get this (`server/webhooks/workers.ts`), never the body.
 */
export type EventOf<T extends KnownEventType> = T extends KnownEventType
  ? { known: true; type: T; id: string; envelope: Envelope; payloadName: string; payload: PayloadOf<T> }
  : never;
export type KnownEvent = EventOf<KnownEventType>;
/** A type this code does not know: stored, logged, ignored. */
export type UnknownEvent = { known: false; type: string; id: string; envelope: Envelope };
export type ParsedEvent = KnownEvent | UnknownEvent;

export class EventPayloadError extends Error {
  override readonly name = 'EventPayloadError';
}

/**
 * Validate a received event: envelope, and for known types its payload. The workers are
 * the one caller (each stream entry is parsed once, there).
 * Unknown types return `{ known: false }` (stored, logged, ignored). Throws
 * `EventPayloadError` naming the field and rule when a known type's payload is invalid.
 */
export function parseEvent(json: unknown): ParsedEvent {
  const env = Envelope.safeParse(json);
  if (!env.success) {
    const i = env.error.issues[0];
    throw new EventPayloadError(`envelope ${i?.path.join('.') || 'body'}: ${i?.message ?? 'invalid'}`);
  }
  const type = env.data.type;
  if (!isKnownEventType(type)) return { known: false, type, id: env.data.id, envelope: env.data };
  const p = payloadOf(env.data);
  if (!p) throw new EventPayloadError(`${type}: payload object ${EVENT_TYPES[type].name.replace(/\?$/, '')} is missing`);
  const r = EVENT_TYPES[type].schema.safeParse(p.value);
  if (!r.success) {
    const i = r.error.issues[0];
    throw new EventPayloadError(`${type}: ${p.name}.${i?.path.join('.') ?? ''}: ${i?.message ?? 'invalid'}`);
  }
  // The table pairs `type` with the schema that just validated the payload; TypeScript cannot
  // follow that pairing through the lookup, so the union is stated here, once.
  return { known: true, type, id: env.data.id, envelope: env.data, payloadName: p.name, payload: r.data } as KnownEvent;
}
