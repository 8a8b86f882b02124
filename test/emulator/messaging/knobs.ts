/**
 * Knobs of the simulated far side of messaging: how messages progress, how the user
 * answers a call-permission request, how template reviews end. Set through the
 * `createMessaging(ctx, { knobs })` options or at runtime with
 * `PATCH /_emulator/messaging/knobs`.
 */
import { z } from 'zod';

export const MessageOutcome = z.enum(['read', 'delivered', 'sent', 'failed', 'accepted']);
export type MessageOutcome = z.infer<typeof MessageOutcome>;

export const Knobs = z.strictObject({
  /** Delay between simulated steps, ms, multiplied by the emulator's timeScale. */
  stepDelayMs: z.number().min(0),
  /** Delay before a template review result, ms (times timeScale). */
  reviewDelayMs: z.number().min(0),
  /**
   * How far an outbound chat message gets: `read` (sent → delivered → read), `delivered`,
   * `sent`, `accepted` (nothing after the response) or `failed` (sent → failed).
   */
  messageOutcome: MessageOutcome,
  /** Per-recipient override of messageOutcome, keyed by E.164 number or BSUID. */
  outcomeByRecipient: z.record(z.string(), MessageOutcome),
  /** errorCode / errorMessage of a failed message. */
  failErrorCode: z.string(),
  failErrorMessage: z.string(),
  /** Emit every status event twice (two events, two event ids, same status). */
  duplicateStatusEvents: z.boolean(),
  /** After the last status, emit a late `sent` event (lower-ranked; GET must not go back). */
  lateLowerStatus: z.boolean(),
  /** Skip the `delivered` event: read arrives straight after sent (read counts as delivered). */
  skipDelivered: z.boolean(),
  /** The simulated user's answer to a call-permission request; `none` never answers. */
  permissionReply: z.enum(['accept', 'reject', 'none']),
  permissionPermanent: z.boolean(),
  /** Lifetime of a temporary permission, seconds (7 days by default). */
  permissionExpirySeconds: z.number().int().positive(),
  /** Result of a template review; `none` leaves the template PENDING. */
  templateReview: z.enum(['APPROVED', 'REJECTED', 'none']),
  /** Outcome of SMS: final state after `sent`. */
  smsOutcome: z.enum(['delivered', 'undelivered', 'failed']),
  /** Outcome per email recipient: final state after `sent`. */
  emailOutcome: z.enum(['delivered', 'undelivered', 'failed']),
  /** Result of group creation: `created` or `failed` (lifecycle event with errors). */
  groupCreateOutcome: z.enum(['created', 'failed']),
  /** Sender domains that are "activated" for email (`from` must be on one). */
  emailDomains: z.array(z.string()),
});
export type Knobs = z.infer<typeof Knobs>;

export const defaultKnobs = (): Knobs => ({
  stepDelayMs: 1000,
  reviewDelayMs: 2000,
  messageOutcome: 'read',
  outcomeByRecipient: {},
  failErrorCode: '131026',
  failErrorMessage: 'Message undeliverable',
  duplicateStatusEvents: false,
  lateLowerStatus: false,
  skipDelivered: false,
  permissionReply: 'accept',
  permissionPermanent: false,
  permissionExpirySeconds: 7 * 24 * 3600,
  templateReview: 'APPROVED',
  smsOutcome: 'delivered',
  emailOutcome: 'delivered',
  groupCreateOutcome: 'created',
  emailDomains: ['example.com', 'switchboard.test'],
});
