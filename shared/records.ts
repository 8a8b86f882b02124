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

// ---- calls (GET /api/history/calls, GET /api/history/calls/:wacid) -------------------------
// The same fields and values as server/history/schema.ts (`CallRecord`, `CallDetail`,
// `MediaRecord`, `TimelineEntry`, which are TypeScript interfaces there): the pages validate
// what the history routes answer with these.

/** `answered`, `missed` (rang, nobody answered), `abandoned` (caller hung up first), `rejected` (no agent could take it), `failed`, `no-answer` (a callback not picked up), `in-progress`. */
/**
 * `no-audio`: accepted, but the Service dropped it because no audio ever flowed (138023,
 * `shared/callErrors.ts` `NO_AUDIO_CODES`): not answered for the figures, no talk time.
 */
export const CALL_OUTCOMES = ['answered', 'missed', 'abandoned', 'rejected', 'failed', 'no-answer', 'no-audio', 'in-progress'] as const;
export const CallOutcome = z.enum(CALL_OUTCOMES);
export type CallOutcome = z.infer<typeof CallOutcome>;

export const CALL_DIRECTIONS = ['inbound', 'outbound'] as const;
export const CallDirection = z.enum(CALL_DIRECTIONS);
export type CallDirection = z.infer<typeof CallDirection>;

export const MEDIA_KINDS = ['recording', 'transcription'] as const;
export const MediaKind = z.enum(MEDIA_KINDS);
export type MediaKind = z.infer<typeof MediaKind>;

/** `announced` (the Service said it exists), `failed` (a download failed; may still succeed), `available` (on disk), `missing` (404 at the Service: final). */
export const MEDIA_STATUSES = ['announced', 'failed', 'available', 'missing'] as const;
export const MediaStatus = z.enum(MEDIA_STATUSES);
export type MediaStatus = z.infer<typeof MediaStatus>;

const id = z.string().min(1).max(300);
const ms = z.number().int().min(0);

/** One media asset of a call; `url` (the archive's download route) once it is on disk. */
export const MediaRecord = z.object({
  kind: MediaKind,
  mediaAssetId: id,
  status: MediaStatus,
  url: z.string().max(2048).optional(),
  bytes: z.number().int().min(0).optional(),
  /** (added) SHA-256 of the file, hex. */
  sha256: z.string().max(64).optional(),
});
export type MediaRecord = z.infer<typeof MediaRecord>;

export const TimelineEntry = z.object({
  at: isoTime,
  event: z.string().min(1).max(200),
  detail: z.record(z.string(), z.unknown()).optional(),
});
export type TimelineEntry = z.infer<typeof TimelineEntry>;

/** One agent's part of a call: their talk (holds included) and hold, and whether theirs was the answer that connected the caller. */
export const CallLeg = z.object({
  agent: z.string().max(200),
  talkMs: ms,
  holdMs: ms,
  answered: z.boolean(),
});
export type CallLeg = z.infer<typeof CallLeg>;

export const CallRecord = z.object({
  wacid: id,
  phoneId: id,
  businessNumber: z.string().max(64),
  /** The customer: E.164 number and/or BSUID. */
  customer: z.object({ phoneNumber: z.string().max(64).optional(), userId: id.optional() }),
  direction: CallDirection,
  /** The agent who took the call (or placed the callback). */
  agent: z.string().max(200).optional(),
  outcome: CallOutcome,
  receivedAt: isoTime,
  answeredAt: isoTime.optional(),
  endedAt: isoTime.optional(),
  waitMs: ms.optional(),
  talkMs: ms.optional(),
  holdMs: ms.optional(),
  endReason: z.string().max(200).optional(),
  /** How the audio travelled: `direct`, `relay-udp`, `relay-tcp` or `relay-tls`. */
  networkPath: z.enum(['direct', 'relay-udp', 'relay-tcp', 'relay-tls']).optional(),
  /** `direct`: the caller's leg ended in the agent's page; `anchor`: in a media server's room (`mediaServer`). */
  mediaMode: z.enum(['direct', 'anchor']).optional(),
  mediaServer: z.string().optional(),
  disposition: z.string().max(200).optional(),
  notes: z.string().max(10_000).optional(),
  media: z.array(MediaRecord),
  /** (added) Anchor mode: one per agent who talked with the caller (a transfer, a consult, a conference); absent in direct mode and on older calls. */
  legs: z.array(CallLeg).optional(),
});
export type CallRecord = z.infer<typeof CallRecord>;

/** `GET /api/history/calls/:wacid`: the record with its timeline, oldest first. */
export const CallDetail = CallRecord.extend({ timeline: z.array(TimelineEntry) });
export type CallDetail = z.infer<typeof CallDetail>;

/** `GET /api/history/calls`: newest first; `cursor` fetches the next page. */
export const CallPage = z.object({ items: z.array(CallRecord), cursor: z.string().max(500).optional() });
export type CallPage = z.infer<typeof CallPage>;

/** The query of `GET /api/history/calls` (all optional; `from`/`to` ISO 8601). */
export const CALL_SEARCH_FIELDS = ['from', 'to', 'customer', 'agent', 'businessNumber', 'direction', 'outcome', 'q'] as const;
export type CallSearchField = (typeof CALL_SEARCH_FIELDS)[number];

/** Why a callback task exists: an unanswered inbound call (outcome), or asked for by hand. */
/** `cut-off`: an inbound call that was taken but lost its audio (no audio ever, or the agent's page lost mid-call). */
/** `out-of-hours`: refused at once outside the number's business hours (`HOURS_FILE`); `voicemail`: the caller left a message. */
export const CALLBACK_REASONS = ['missed', 'abandoned', 'rejected', 'cut-off', 'out-of-hours', 'voicemail', 'requested'] as const;
export const CallbackReason = z.enum(CALLBACK_REASONS);
export type CallbackReason = z.infer<typeof CallbackReason>;

/** `open` (waiting, or waiting for its `dueAt`), `claimed` (an agent took it), `done`, `cancelled`. */
export const CALLBACK_STATES = ['open', 'claimed', 'done', 'cancelled'] as const;
export const CallbackState = z.enum(CALLBACK_STATES);
export type CallbackState = z.infer<typeof CallbackState>;

/** One call back we placed for the task (a dial from the customer panel), with how it ended. */
export const CallbackAttempt = z.object({
  at: isoTime,
  /** The call's id once the Service gave one. */
  wacid: z.string().max(300).optional(),
  /** The Switchboard user who dialled. */
  by: z.string().max(200).optional(),
  /** `answered`, `no-answer`, `failed` (the history outcome of the call). */
  outcome: z.string().max(64).optional(),
});
export type CallbackAttempt = z.infer<typeof CallbackAttempt>;

/** (added) One unanswered inbound call the task gathered (the first created it, later ones add). */
export const CallbackMiss = z.object({
  wacid: z.string().max(300),
  at: isoTime,
  reason: CallbackReason,
  /** (added) Reason `voicemail`: the message's URL in the archive (Ogg/Opus, `/api/archive/<wacid>/voicemail-<wacid>.ogg`). */
  voicemail: z.string().max(1000).optional(),
});
export type CallbackMiss = z.infer<typeof CallbackMiss>;

/**
 * The calling permission as the task list shows it, in words: what the budget allows now
 * and from when (epoch ms; the page turns `nextAt` into local time after `nextText`).
 */
export const CallbackPermission = z.object({
  state: z.enum(['unknown', 'requested', 'granted', 'rejected', 'expired']),
  text: z.string().max(1024),
  callAllowed: z.boolean(),
  requestAllowed: z.boolean(),
  nextAt: z.number().optional(),
  nextText: z.string().max(200).optional(),
  /** (added) Unanswered business calls in a row reached the review prompt (2): the warning in words (also in `text`). */
  warning: z.string().max(1024).optional(),
  /**
   * (added) For pages that word it themselves (`text` is English): the budget's codes of the
   * call and of a permission request (server/permissions/budget.ts `Allowance.code`, or
   * `UNREADABLE`), which one `nextAt` is for, and the unanswered calls in a row.
   */
  callCode: z.string().max(64).optional(),
  requestCode: z.string().max(64).optional(),
  nextFor: z.enum(['call', 'request']).optional(),
  unanswered: z.number().int().min(0).optional(),
});
export type CallbackPermission = z.infer<typeof CallbackPermission>;

/** (added) The missed-call follow-up of the task: sent once, or why not. */
export const CallbackFollowup = z.object({
  at: isoTime,
  /** `sent`, or the decision's code (`OFF`, `OPTED_OUT`, `RATION`, `TEMPLATE_NOT_APPROVED`, `FAILED`, ...). */
  code: z.string().max(64),
  reason: z.string().max(1024).optional(),
  messageId: z.string().max(256).optional(),
});
export type CallbackFollowup = z.infer<typeof CallbackFollowup>;

export const CallbackTask = z.object({
  id: z.string().min(1).max(64),
  /** E.164 number or BSUID of the customer to call back. */
  customer: z.string().min(1).max(300),
  /** The business number the customer called (and the call back comes from). */
  businessNumber: z.string().min(1).max(64),
  reason: CallbackReason,
  createdAt: isoTime,
  /** Not before this time (the retry schedule after an unanswered call back). */
  dueAt: isoTime.optional(),
  state: CallbackState,
  attempts: z.array(CallbackAttempt),
  /** (added) The task's latest unanswered inbound calls (at most 20), oldest first. */
  misses: z.array(CallbackMiss).max(20),
  /** (added) How many unanswered inbound calls the task has had in all (absent from servers before it). */
  missCount: z.number().int().min(0).optional(),
  assignee: z.string().max(200).optional(),
  /** Always present in what the server hands out (list, `callback.updated`, claim, done, the customer panel): `unknown`, nothing allowed, when it could not be read. Optional in the schema: the store keeps tasks without it (it is read at the time of asking). */
  permission: CallbackPermission.optional(),
  lastCallWacid: z.string().max(300).optional(),
  /** How it was closed: `called-back`, `customer-called`, `unreachable`, or a supervisor's word. */
  outcome: z.string().max(200).optional(),
  followup: CallbackFollowup.optional(),
  /** (added) Last change; `version` counts the changes. */
  updatedAt: isoTime,
  version: z.number().int().min(0),
});
export type CallbackTask = z.infer<typeof CallbackTask>;
