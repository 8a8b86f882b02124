/**
 * Records the server keeps and the pages show (design.md, "Wave 2 contracts"): zod
 * schemas, types derived, imported by both ends. Field names are fixed by the design;
 * fields may be added (marked "added" below).
 *
 * Times are ISO 8601 strings, as the Service writes them.
 */
import { z } from 'zod';

/**
 * Status of a message we sent (interface part 3): `accepted` → `sent` → `delivered` →
 * `read`, or `failed` from `accepted` or `sent`. `received` (added) is the status of an
 * inbound message, which has no delivery states.
 */
export const MESSAGE_STATUSES = ['accepted', 'sent', 'delivered', 'read', 'failed', 'received'] as const;
export const MessageStatus = z.enum(MESSAGE_STATUSES);
export type MessageStatus = z.infer<typeof MessageStatus>;

export const MESSAGE_DIRECTIONS = ['outbound', 'inbound', 'echo'] as const;
export const MessageDirection = z.enum(MESSAGE_DIRECTIONS);
export type MessageDirection = z.infer<typeof MessageDirection>;

const isoTime = z.string().min(1).max(64);
const text = z.string().max(4096);

/** One status observation, as reported by the Service (duplicates of one are kept once). */
export const MessageStatusEntry = z.object({
  status: MessageStatus,
  at: isoTime,
  /** On `failed`, when the Service gave one (a string; the provider's code, e.g. `131000`). */
  errorCode: z.string().max(64).optional(),
  errorMessage: z.string().max(1024).optional(),
});
export type MessageStatusEntry = z.infer<typeof MessageStatusEntry>;

export const MessageTemplateRef = z.object({
  name: z.string().min(1).max(512),
  language: z.string().min(1).max(32),
  /** Body parameters, in order (`{{1}}`, `{{2}}`, ...). */
  parameters: z.array(z.string().max(1024)).max(100).optional(),
});
export type MessageTemplateRef = z.infer<typeof MessageTemplateRef>;

export const MessageRecord = z.object({
  /** The Service's message id (status events are matched by it). */
  id: z.string().min(1).max(256),
  /** The provider's id (echo updates may carry only this). */
  wamid: z.string().max(256).optional(),
  direction: MessageDirection,
  /** Sender: the business number for outbound and echo messages, the user for inbound ones. */
  from: z.string().max(300),
  /** User number (E.164) of an outbound or echo message, business number of an inbound one. */
  to: z.string().max(300).optional(),
  /** The user's BSUID when addressed (or known) by it. */
  recipient: z.string().max(300).optional(),
  /** `text`, `template`, `interactive`, ...; `unknown` for an echo update seen before its content. */
  type: z.string().min(1).max(64),
  text: text.optional(),
  template: MessageTemplateRef.optional(),
  /** The current view: never lowered by a late or duplicated event (`statusHistory` keeps those). */
  status: MessageStatus,
  /** Every distinct status observation, oldest first (then by status rank). */
  statusHistory: z.array(MessageStatusEntry),
  /** An estimate while `accepted`; final once `delivered` or `read` (then `priceFinal`). */
  totalPrice: z.number().optional(),
  currency: z.string().max(8).optional(),
  /** (added) `totalPrice` came with a `delivered` or `read` status: it is the charge. */
  priceFinal: z.boolean().optional(),
  /** (added) The status whose event carried `totalPrice` (a later estimate never replaces a final price). */
  priceStatus: MessageStatus.optional(),
  createTime: isoTime,
  updateTime: isoTime,
});
export type MessageRecord = z.infer<typeof MessageRecord>;
