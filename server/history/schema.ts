/**
 * History shapes: what the API returns (`CallRecord`,
 * timeline entries, media) and the facts the rest of the server records.
 *
 * Facts, not updates: events repeat and arrive out of order, so every fact is written
 * with merge rules that give the same row whatever the order and however many times it
 * comes (see `store.ts`). Facts travel through the durable queue as JSON, so each one is
 * validated again by the writer (`HistoryFact.parse`).
 */
import { z } from 'zod';

// The value lists are the records' (shared/records.ts): the pages validate the same ones.
// Media status moves forward only, in that list's order: announced → failed → available | missing.
import { CALL_DIRECTIONS, CALL_OUTCOMES, MEDIA_KINDS, MEDIA_STATUSES } from '../../shared/records.ts';
export { MEDIA_KINDS, MEDIA_STATUSES };
export const OUTCOMES = CALL_OUTCOMES;
export type Outcome = (typeof OUTCOMES)[number];
export const DIRECTIONS = CALL_DIRECTIONS;
export type Direction = (typeof DIRECTIONS)[number];
export type MediaKind = (typeof MEDIA_KINDS)[number];
export type MediaStatus = (typeof MEDIA_STATUSES)[number];

/** ISO 8601 time with an offset (what `Date.prototype.toISOString` gives). */
// Normalised to milliseconds in UTC, so what is stored compares exactly with what a cursor holds.
const isoTime = z.iso
  .datetime({ offset: true, message: 'must be an ISO 8601 time, e.g. 2026-01-01T00:00:00.000Z' })
  .transform((s) => new Date(s).toISOString());
const ms = z.number().int().min(0).max(2_000_000_000);
const id = z.string().min(1).max(300);

/** One agent's part of a call (anchor mode). */
export const CallLeg = z.object({
  agent: z.string().min(1).max(200),
  talkMs: ms,
  holdMs: ms,
  answered: z.boolean(),
});
export type CallLeg = z.infer<typeof CallLeg>;

/**
 * One observation of a call (what the engine knew at one moment). `version` orders the
 * observations of one call (the live record's compare-and-set version): of two facts the
 * higher version wins a field, but a known value is never replaced by an absent one.
 */
export const CallFact = z.object({
  wacid: id,
  phoneId: id,
  businessNumber: z.string().max(64).optional(),
  customer: z.object({ phoneNumber: z.string().max(64).optional(), userId: id.optional() }).default({}),
  direction: z.enum(DIRECTIONS),
  agent: z.string().min(1).max(200).optional(),
  outcome: z.enum(OUTCOMES),
  receivedAt: isoTime,
  answeredAt: isoTime.optional(),
  endedAt: isoTime.optional(),
  waitMs: ms.optional(),
  talkMs: ms.optional(),
  holdMs: ms.optional(),
  endReason: z.string().max(200).optional(),
  /** How the call's audio travelled: the selected pair the agent's page reported. */
  networkPath: z.enum(['direct', 'relay-udp', 'relay-tcp', 'relay-tls']).optional(),
  /** Where the caller's leg ended: the agent's page (`direct`) or a media server's room (`anchor`). */
  mediaMode: z.enum(['direct', 'anchor']).optional(),
  /** Anchor mode: the media server (its JANUS_URLS entry) holding the call's room. */
  mediaServer: z.string().max(500).optional(),
  /**
   * Anchor mode: one per agent who talked with the caller (a transfer, a consult, a
   * conference make several): their talk (holds included) and hold, and whether theirs was
   * the answer that connected the caller. The newer fact's list wins, as the other fields.
   */
  legs: z.array(CallLeg).max(50).optional(),
  version: z.number().int().min(0).default(0),
});
export type CallFact = z.input<typeof CallFact>;

/**
 * One timeline entry. `key` identifies the happening (the Service event id, or
 * `state:<version>` for a state change): the same key is stored once.
 */
export const TimelineFact = z.object({
  wacid: id,
  key: z.string().min(1).max(300),
  at: isoTime,
  event: z.string().min(1).max(200),
  detail: z.record(z.string(), z.unknown()).optional(),
});
export type TimelineFact = z.input<typeof TimelineFact>;

/** What is known of one media asset. `text` is a transcription's text (full-text search). */
export const MediaFact = z.object({
  wacid: id,
  mediaAssetId: id,
  kind: z.enum(MEDIA_KINDS),
  status: z.enum(MEDIA_STATUSES),
  bytes: z.number().int().min(0).optional(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits').optional(),
  /** File path under ARCHIVE_DIR (returned by retention so the file goes with the row). */
  path: z.string().min(1).max(4096).optional(),
  text: z.string().max(1_000_000).optional(),
  at: isoTime,
});
export type MediaFact = z.input<typeof MediaFact>;

/** Wrap-up: the latest `at` wins. */
export const DispositionFact = z.object({
  wacid: id,
  disposition: z.string().min(1).max(200),
  notes: z.string().max(10_000).optional(),
  at: isoTime,
});
export type DispositionFact = z.input<typeof DispositionFact>;

/** What goes through the queue: one fact with its type. */
export const HistoryFact = z.discriminatedUnion('type', [
  CallFact.extend({ type: z.literal('call') }),
  TimelineFact.extend({ type: z.literal('timeline') }),
  MediaFact.extend({ type: z.literal('media') }),
  DispositionFact.extend({ type: z.literal('disposition') }),
]);
export type HistoryFact = z.input<typeof HistoryFact>;
export type ParsedFact = z.output<typeof HistoryFact>;

// ---- what the API returns ---------------------------------------------------------

export interface MediaRecord {
  kind: MediaKind;
  mediaAssetId: string;
  status: MediaStatus;
  /** Filled by the HTTP layer (the archive's download route); absent here. */
  url?: string;
  bytes?: number;
  sha256?: string;
  path?: string;
}

export interface TimelineEntry {
  at: string;
  event: string;
  detail?: Record<string, unknown>;
}

export interface CallRecord {
  wacid: string;
  phoneId: string;
  businessNumber: string;
  customer: { phoneNumber?: string; userId?: string };
  direction: Direction;
  agent?: string;
  outcome: Outcome;
  receivedAt: string;
  answeredAt?: string;
  endedAt?: string;
  waitMs?: number;
  talkMs?: number;
  holdMs?: number;
  endReason?: string;
  /** Anchor mode: per agent who talked with the caller, their talk and hold (absent in direct mode and on older rows). */
  legs?: CallLeg[];
  /** `direct` or `relay-udp` / `relay-tcp` / `relay-tls`. */
  networkPath?: 'direct' | 'relay-udp' | 'relay-tcp' | 'relay-tls';
  mediaMode?: 'direct' | 'anchor';
  mediaServer?: string;
  disposition?: string;
  notes?: string;
  media: MediaRecord[];
}

export interface CallDetail extends CallRecord {
  timeline: TimelineEntry[];
}

/** Query of `GET /api/history/calls` (strings in, as from a URL query). */
export const CallSearch = z.object({
  from: isoTime.optional(),
  to: isoTime.optional(),
  /** E.164 (`+…`) or BSUID. */
  customer: z.string().min(1).max(300).optional(),
  agent: z.string().min(1).max(200).optional(),
  businessNumber: z.string().min(1).max(64).optional(),
  direction: z.enum(DIRECTIONS).optional(),
  outcome: z.enum(OUTCOMES).optional(),
  /** Transcript text (PostgreSQL full text, `plainto_tsquery`). */
  q: z.string().trim().min(1).max(500).optional(),
  limit: z.coerce.number().int('must be an integer from 1 to 100').min(1, 'must be an integer from 1 to 100').max(100, 'must be an integer from 1 to 100').default(25),
  /** Opaque: the `cursor` of the previous page. */
  cursor: z.string().min(1).max(500).optional(),
});
export type CallSearch = z.input<typeof CallSearch>;

export interface CallPage {
  items: CallRecord[];
  cursor?: string;
}
