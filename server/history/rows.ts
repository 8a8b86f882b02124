/** History's read side: the rows the searches select, as records; search cursors. */
import { HistoryQueryError } from './errors.ts';
import type { CallLeg, CallRecord, Direction, MediaKind, MediaRecord, MediaStatus, Outcome } from './schema.ts';

export interface CallGroup {
  count: number;
  businessNumber?: string;
  direction: Direction;
  outcome: string;
  agent?: string;
  /** Every call of the group waited at most the SLA (waitMs is their sum). */
  withinSla: boolean;
  waitMs: number;
  /** Present when the calls were answered (a marker, not a time). */
  answeredAt?: string;
  /** Present when the calls ended with a talk time (a marker); talkMs and holdMs are then their sums. */
  endedAt?: string;
  talkMs?: number;
  holdMs?: number;
  /**
   * Calls with legs (anchor mode) form groups of their own, without `agent`: per agent who
   * talked in them, in how many of the group's calls, their talk and hold summed.
   */
  legs?: Array<{ agent: string; count: number; talkMs: number; holdMs: number }>;
}

export const CALL_COLUMNS = `c.wacid, c.phone_id, c.business_number, c.customer_phone, c.customer_user_id, c.direction, c.agent,
  c.outcome, c.received_at, c.answered_at, c.ended_at, c.wait_ms, c.talk_ms, c.hold_ms, c.end_reason, c.network_path, c.media_mode, c.media_server, c.legs, d.disposition, d.notes`;

export interface CallRow {
  wacid: string;
  phone_id: string;
  business_number: string | null;
  customer_phone: string | null;
  customer_user_id: string | null;
  direction: Direction;
  agent: string | null;
  outcome: Outcome;
  received_at: Date;
  answered_at: Date | null;
  ended_at: Date | null;
  wait_ms: number | null;
  talk_ms: number | null;
  hold_ms: number | null;
  end_reason: string | null;
  network_path: string | null;
  media_mode: string | null;
  media_server: string | null;
  legs: CallLeg[] | null;
  disposition: string | null;
  notes: string | null;
}

export interface MediaRow {
  wacid: string;
  media_asset_id: string;
  kind: MediaKind;
  status: MediaStatus;
  bytes: number | null;
  sha256: string | null;
  path: string | null;
}

export const iso = (d: Date | string) => new Date(d).toISOString();

export function toRecord(r: CallRow, media: MediaRecord[]): CallRecord {
  const customer: CallRecord['customer'] = {};
  if (r.customer_phone !== null) customer.phoneNumber = r.customer_phone;
  if (r.customer_user_id !== null) customer.userId = r.customer_user_id;
  const out: CallRecord = {
    wacid: r.wacid,
    phoneId: r.phone_id,
    businessNumber: r.business_number ?? '',
    customer,
    direction: r.direction,
    outcome: r.outcome,
    receivedAt: iso(r.received_at),
    media,
  };
  if (r.agent !== null) out.agent = r.agent;
  if (r.answered_at !== null) out.answeredAt = iso(r.answered_at);
  if (r.ended_at !== null) out.endedAt = iso(r.ended_at);
  if (r.wait_ms !== null) out.waitMs = r.wait_ms;
  if (r.talk_ms !== null) out.talkMs = r.talk_ms;
  if (r.hold_ms !== null) out.holdMs = r.hold_ms;
  if (r.end_reason !== null) out.endReason = r.end_reason;
  if (r.network_path !== null) out.networkPath = r.network_path as NonNullable<CallRecord['networkPath']>;
  if (r.media_mode !== null) out.mediaMode = r.media_mode === 'anchor' ? 'anchor' : 'direct';
  if (r.media_server !== null) out.mediaServer = r.media_server;
  if (r.legs !== null) out.legs = (typeof r.legs === 'string' ? JSON.parse(r.legs) : r.legs) as CallLeg[];
  if (r.disposition !== null) out.disposition = r.disposition;
  if (r.notes !== null) out.notes = r.notes;
  return out;
}

export function toMedia(r: MediaRow): MediaRecord {
  const m: MediaRecord = { kind: r.kind, mediaAssetId: r.media_asset_id, status: r.status };
  if (r.bytes !== null) m.bytes = Number(r.bytes);
  if (r.sha256 !== null) m.sha256 = r.sha256;
  if (r.path !== null) m.path = r.path;
  return m;
}

export function encodeCursor(receivedAt: string, wacid: string): string {
  return Buffer.from(JSON.stringify([receivedAt, wacid])).toString('base64url');
}

export function decodeCursor(cursor: string): [string, string] {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && !Number.isNaN(Date.parse(v[0]))) {
      return [v[0], v[1]];
    }
  } catch {
    // fall through
  }
  throw new HistoryQueryError('cursor', 'must be the cursor of a previous page');
}
