/**
 * zod schemas of Service responses (part 2). Every object is loose: unknown fields are kept
 * and never fail a parse (part 9: new fields are additive). Only what the interface marks
 * as always present is required; phone number, username and parent BSUID fields are always
 * optional.
 */
import { z } from 'zod';
import { LIMITS, nonEmptyUpTo } from '../../shared/limits.ts';

const opt = <T extends z.ZodType>(t: T) => t.optional();
const s = () => z.string().optional();

/** Signaling response of all five call endpoints (the wacid of a dial reaches frames: the frames' limit). */
export const CallSignalResponse = z.looseObject({ wacid: nonEmptyUpTo(LIMITS.wacid), success: z.boolean() });
export type CallSignalResponse = z.infer<typeof CallSignalResponse>;

export const Balance = z.looseObject({ amount: z.number(), currency: z.string() });
export type Balance = z.infer<typeof Balance>;

/** Page-number style page (part 2). */
export const pageOf = <T extends z.ZodType>(item: T) =>
  z.looseObject({
    items: z.array(item),
    offset: opt(z.number()),
    limit: opt(z.number()),
    length: z.number(),
    total: opt(z.number()),
  });
export interface Page<T> {
  items: T[];
  offset?: number | undefined;
  limit?: number | undefined;
  length: number;
  total?: number | undefined;
}

/** Cursor style page (part 2). */
export const cursorPageOf = <T extends z.ZodType>(item: T) =>
  z.looseObject({
    items: z.array(item),
    limit: opt(z.number()),
    length: z.number(),
    cursor: opt(z.looseObject({ after: s(), before: s() })),
  });
export interface CursorPage<T> {
  items: T[];
  limit?: number | undefined;
  length: number;
  cursor?: { after?: string | undefined; before?: string | undefined } | undefined;
}

export const ChatMessage = z.looseObject({
  id: z.string(),
  wamid: s(),
  wabaId: s(),
  from: s(),
  to: s(),
  recipient: s(),
  recipientUserId: s(),
  type: s(),
  status: s(),
  errorCode: opt(z.union([z.string(), z.number()])),
  errorMessage: s(),
  createTime: s(),
  sendTime: s(),
  updateTime: s(),
  deliverTime: s(),
  readTime: s(),
  totalPrice: opt(z.number()),
  pricingCategory: s(),
  bidPricingFlag: opt(z.boolean()),
  currency: s(),
  externalId: s(),
});
export type ChatMessage = z.infer<typeof ChatMessage>;

export const Template = z.looseObject({
  officialTemplateId: s(),
  wabaId: s(),
  name: z.string(),
  language: z.string(),
  category: s(),
  status: s(),
  qualityRating: s(),
  components: opt(z.array(z.looseObject({ type: z.string() }))),
  messageSendTtlSeconds: opt(z.number()),
  createTime: s(),
  updateTime: s(),
});
export type Template = z.infer<typeof Template>;

export const Sms = z.looseObject({ id: z.string(), externalId: s() });
export type Sms = z.infer<typeof Sms>;

export const Email = z.looseObject({
  id: z.string(),
  from: opt(z.looseObject({ address: z.string(), name: s() })),
  to: opt(z.array(z.looseObject({ address: z.string() }))),
  subject: s(),
  externalId: s(),
  totalRecipients: opt(z.number()),
  totalPrice: opt(z.number()),
  currency: s(),
  createTime: s(),
});
export type Email = z.infer<typeof Email>;

export const VoiceCode = z.looseObject({ id: z.string() });
export type VoiceCode = z.infer<typeof VoiceCode>;

export const BusinessAccount = z.looseObject({ businessId: s(), businessName: s(), businessStatus: s() });
export type BusinessAccount = z.infer<typeof BusinessAccount>;

export const ReachEstimate = z.looseObject({
  waba_currency: s(),
  dateInterval: s(),
  estimates: z.array(
    z.looseObject({
      bid_amount: opt(z.number()),
      users: opt(z.number()),
      deliveries_lower_bound: s(),
      deliveries_upper_bound: s(),
      cost_lower_bound: opt(z.number()),
      cost_upper_bound: opt(z.number()),
    }),
  ),
});
export type ReachEstimate = z.infer<typeof ReachEstimate>;

/** Settings objects with shapes the interface does not show: any JSON object. */
export const AnyObject = z.looseObject({});
export type AnyObject = z.infer<typeof AnyObject>;

export const PhoneNumber = z.looseObject({
  id: s(),
  phoneNumber: s(),
  displayPhoneNumber: s(),
  wabaId: s(),
  businessUsername: s(),
  businessUsernameStatus: s(),
  verifiedName: s(),
  nameStatus: s(),
  messagingLimit: s(),
});
export type PhoneNumber = z.infer<typeof PhoneNumber>;

export const CallingSettings = z.looseObject({
  id: s(),
  status: opt(z.string()),
  iconVisibility: s(),
});
export const PhoneNumberSettings = z.looseObject({
  calling: opt(CallingSettings),
  capture: opt(
    z.looseObject({
      recordingEnabled: opt(z.boolean()),
      transcriptionEnabled: opt(z.boolean()),
      purpose: s(),
      announcementLanguage: s(),
    }),
  ),
});
export type PhoneNumberSettings = z.infer<typeof PhoneNumberSettings>;

export const ContactBookDelete = z.looseObject({ success: z.boolean(), deleted: z.boolean() });
export type ContactBookDelete = z.infer<typeof ContactBookDelete>;

export const GroupPending = z.looseObject({ requestId: s(), status: z.string() });
export type GroupPending = z.infer<typeof GroupPending>;

export const Group = z.looseObject({
  groupId: s(),
  id: s(),
  subject: s(),
  description: s(),
  joinApprovalMode: s(),
  inviteLink: s(),
  status: s(),
});
export type Group = z.infer<typeof Group>;

export const JoinRequest = z.looseObject({ joinRequestId: z.string() });
export type JoinRequest = z.infer<typeof JoinRequest>;

export const JoinRequestsResult = z.looseObject({
  failedJoinRequests: opt(z.array(z.unknown())),
  errors: opt(z.array(z.unknown())),
});
export type JoinRequestsResult = z.infer<typeof JoinRequestsResult>;

export const ParticipantsRemoved = z.looseObject({
  removedParticipants: opt(z.array(z.unknown())),
  failedParticipants: opt(z.array(z.looseObject({ errors: opt(z.array(z.unknown())) }))),
});
export type ParticipantsRemoved = z.infer<typeof ParticipantsRemoved>;

export const GroupMessage = z.looseObject({
  id: z.string(),
  status: s(),
  recipients: opt(z.array(z.looseObject({ status: s() }))),
});
export type GroupMessage = z.infer<typeof GroupMessage>;

export const Flow = z.looseObject({ id: s(), name: s(), status: s(), endpointUrl: s() });
export type Flow = z.infer<typeof Flow>;

export const Contact = z.looseObject({
  id: z.string(),
  remarkName: s(),
  nickName: s(),
  realName: s(),
  phoneNumber: s(),
  email: s(),
  sourceType: s(),
  tags: opt(z.array(z.string())),
  blocked: opt(z.boolean()),
  customAttributes: opt(z.record(z.string(), z.union([z.string(), z.number(), z.null()]))),
  createTime: s(),
  updateTime: s(),
});
export type Contact = z.infer<typeof Contact>;

export const Unsubscriber = z.looseObject({ phoneNumber: s(), customer: s(), channel: s(), source: s(), updateTime: s() });
export type Unsubscriber = z.infer<typeof Unsubscriber>;

export const WebhookEndpoint = z.looseObject({ id: z.string(), url: s(), eventProperties: opt(z.unknown()) });
export type WebhookEndpoint = z.infer<typeof WebhookEndpoint>;

export const Verification = z.looseObject({ id: s(), externalId: s(), status: s() });
export type Verification = z.infer<typeof Verification>;

/** Unsubscriber lists per customer: an array, or an object with items (not shown). */
export const ListOrItems = <T extends z.ZodType>(item: T) =>
  z.union([z.array(item), z.looseObject({ items: z.array(item) }).transform((v) => v.items)]);
