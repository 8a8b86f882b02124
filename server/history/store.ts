/**
 * The history store: writes facts with merge rules that make order and repetition
 * irrelevant, and answers the history search.
 *
 * Merge rules (every one commutative, so a replay or a late fact changes nothing):
 * - call: `receivedAt`, `answeredAt`, `endedAt` keep the earliest known value; other
 *   fields take the value of the fact with the higher `version`, and a known value is
 *   never replaced by an absent one; a terminal `outcome` never reverts to `in-progress`
 *   (between two terminal ones the higher version wins);
 * - timeline: one row per (wacid, key), the first stored stays;
 * - media: `status` only moves forward (announced → failed → available | missing);
 * - disposition: the latest `at` wins.
 */
import { PREPARED, type Db, type Sql } from './db.ts';
import {
  CallSearch,
  HistoryFact,
  MEDIA_STATUSES,
  type CallDetail,
  type CallPage,
  type CallRecord,
  type Direction,
  type MediaKind,
  type MediaRecord,
  type MediaStatus,
  type Outcome,
  type ParsedFact,
} from './schema.ts';

type CallFactP = Extract<ParsedFact, { type: 'call' }>;
type TimelineFactP = Extract<ParsedFact, { type: 'timeline' }>;
type MediaFactP = Extract<ParsedFact, { type: 'media' }>;
type DispositionFactP = Extract<ParsedFact, { type: 'disposition' }>;

/** Bad input to the search: names the field and the rule (the route answers 400). */
export class HistoryQueryError extends Error {
  override readonly name = 'HistoryQueryError';
  constructor(
    readonly field: string,
    readonly rule: string,
  ) {
    super(`${field}: ${rule}`);
  }
}

export interface RetentionResult {
  calls: number;
  media: number;
  /** Files of the deleted media rows: the archive deletes them (their rows are gone). */
  paths: string[];
}

const statusRank = (s: MediaStatus) => Math.min(MEDIA_STATUSES.indexOf(s), 2);

// Newer (higher version) wins a field; a known value is never replaced by an absent one.
const pick = (col: string) =>
  `${col} = CASE WHEN EXCLUDED.version >= c.version THEN COALESCE(EXCLUDED.${col}, c.${col}) ELSE COALESCE(c.${col}, EXCLUDED.${col}) END`;

const TRANSCRIPT_OF = (param: string) =>
  `(SELECT string_agg(text, E'\\n' ORDER BY media_asset_id) FROM history_media WHERE wacid = ${param} AND text IS NOT NULL)`;

// Many facts per statement: rows come from unnest() of one array per column.
const UPSERT_CALLS = `
INSERT INTO history_calls AS c (wacid, phone_id, business_number, customer_phone, customer_user_id, direction, agent,
  outcome, outcome_rank, received_at, answered_at, ended_at, wait_ms, talk_ms, hold_ms, end_reason, version, network_path, transcript)
SELECT u.*, ${TRANSCRIPT_OF('u.wacid')}
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::smallint[],
  $10::timestamptz[], $11::timestamptz[], $12::timestamptz[], $13::int[], $14::int[], $15::int[], $16::text[], $17::int[], $18::text[])
  AS u(wacid, phone_id, business_number, customer_phone, customer_user_id, direction, agent, outcome, outcome_rank,
  received_at, answered_at, ended_at, wait_ms, talk_ms, hold_ms, end_reason, version, network_path)
ON CONFLICT (wacid) DO UPDATE SET
  phone_id = CASE WHEN EXCLUDED.version >= c.version THEN EXCLUDED.phone_id ELSE c.phone_id END,
  direction = CASE WHEN EXCLUDED.version >= c.version THEN EXCLUDED.direction ELSE c.direction END,
  ${['business_number', 'customer_phone', 'customer_user_id', 'agent', 'wait_ms', 'talk_ms', 'hold_ms', 'end_reason', 'network_path'].map(pick).join(',\n  ')},
  outcome = CASE WHEN (EXCLUDED.outcome_rank, EXCLUDED.version) > (c.outcome_rank, c.version) THEN EXCLUDED.outcome ELSE c.outcome END,
  outcome_rank = GREATEST(c.outcome_rank, EXCLUDED.outcome_rank),
  received_at = LEAST(c.received_at, EXCLUDED.received_at),
  answered_at = LEAST(c.answered_at, EXCLUDED.answered_at),
  ended_at = LEAST(c.ended_at, EXCLUDED.ended_at),
  version = GREATEST(c.version, EXCLUDED.version)`;

const mediaPick = (col: string) =>
  `${col} = CASE WHEN EXCLUDED.status_rank >= m.status_rank THEN COALESCE(EXCLUDED.${col}, m.${col}) ELSE COALESCE(m.${col}, EXCLUDED.${col}) END`;

const UPSERT_MEDIA = `
INSERT INTO history_media AS m (media_asset_id, wacid, kind, status, status_rank, bytes, sha256, path, text, first_at, updated_at)
SELECT u.*, u.first_at
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::smallint[], $6::bigint[], $7::text[], $8::text[], $9::text[], $10::timestamptz[])
  AS u(media_asset_id, wacid, kind, status, status_rank, bytes, sha256, path, text, first_at)
ON CONFLICT (media_asset_id) DO UPDATE SET
  status = CASE WHEN EXCLUDED.status_rank > m.status_rank THEN EXCLUDED.status ELSE m.status END,
  status_rank = GREATEST(m.status_rank, EXCLUDED.status_rank),
  ${['bytes', 'sha256', 'path', 'text'].map(mediaPick).join(',\n  ')},
  first_at = LEAST(m.first_at, EXCLUDED.first_at),
  updated_at = GREATEST(m.updated_at, EXCLUDED.updated_at)`;

const INSERT_TIMELINE = `
INSERT INTO history_timeline (wacid, key, at, event, detail)
SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::jsonb[])
ON CONFLICT DO NOTHING`;

const UPSERT_DISPOSITIONS = `
INSERT INTO history_dispositions AS d (wacid, disposition, notes, at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[])
ON CONFLICT (wacid) DO UPDATE SET disposition = EXCLUDED.disposition, notes = EXCLUDED.notes, at = EXCLUDED.at
WHERE EXCLUDED.at > d.at`;

/**
 * Split facts into rounds in which no key repeats: one INSERT … ON CONFLICT DO UPDATE may
 * not touch a row twice. The merge rules are commutative, so the rounds' order is free.
 */
function rounds<T>(facts: readonly T[], key: (f: T) => string): T[][] {
  const out: Array<{ keys: Set<string>; facts: T[] }> = [];
  for (const f of facts) {
    const k = key(f);
    let r = out.find((x) => !x.keys.has(k));
    if (!r) out.push((r = { keys: new Set(), facts: [] }));
    r.keys.add(k);
    r.facts.push(f);
  }
  return out.map((r) => r.facts);
}

/** The call fact fields merged by version (`pick`): newer wins, a known value is never lost. */
const PICKED: Array<(f: CallFactP) => unknown> = [
  (f) => f.businessNumber,
  (f) => f.customer.phoneNumber,
  (f) => f.customer.userId,
  (f) => f.agent,
  (f) => f.waitMs,
  (f) => f.talkMs,
  (f) => f.holdMs,
  (f) => f.endReason,
  (f) => f.networkPath,
];
const rankOf = (f: CallFactP) => (f.outcome === 'in-progress' ? 0 : 1);
const earliest = (a: string | undefined, b: string | undefined) => (a === undefined ? b : b === undefined ? a : a < b ? a : b);

/**
 * A batch's call facts as rounds of statements (one INSERT … ON CONFLICT DO UPDATE may not
 * touch a row twice), each call's facts merged wherever that is exact, so a batch usually
 * writes each call once.
 *
 * A call's facts, in version order, fold into one while each next fact dominates what is
 * folded so far: a version and an outcome rank no lower, and every field known so far
 * known too. Writing the folded fact (with the earliest of the times) gives the row writing
 * them one by one would, whatever the stored row is: every other rule takes the newer
 * value. A fact that knows less (a call taken back from its agent) starts the call's next
 * round, so rounds go in version order. The engine's facts carry everything known of the
 * call, so a batch is one round.
 */
export function foldCalls(facts: readonly CallFactP[]): CallFactP[][] {
  const groups = new Map<string, CallFactP[]>();
  for (const f of facts) {
    const g = groups.get(f.wacid);
    if (g) g.push(f);
    else groups.set(f.wacid, [f]);
  }
  const out: CallFactP[][] = [];
  for (const g of groups.values()) {
    // Stable: of equal versions the later fact stays later, as written one by one.
    g.sort((a, b) => a.version - b.version || rankOf(a) - rankOf(b));
    let round = 0;
    let acc = g[0]!;
    for (const f of g.slice(1)) {
      if (rankOf(f) >= rankOf(acc) && PICKED.every((get) => get(f) !== undefined || get(acc) === undefined)) {
        acc = folded(acc, f);
        continue;
      }
      (out[round++] ??= []).push(acc);
      acc = f;
    }
    (out[round] ??= []).push(acc);
  }
  return out;
}

/** `f` written after `acc` (`f` dominates it), as one fact. */
function folded(acc: CallFactP, f: CallFactP): CallFactP {
  // The outcome moves only to a higher (rank, version), as the upsert's rule has it.
  const outcome = rankOf(f) > rankOf(acc) || f.version > acc.version ? f.outcome : acc.outcome;
  const out: CallFactP = { ...f, outcome, receivedAt: earliest(f.receivedAt, acc.receivedAt)! };
  const answeredAt = earliest(f.answeredAt, acc.answeredAt);
  const endedAt = earliest(f.endedAt, acc.endedAt);
  if (answeredAt !== undefined) out.answeredAt = answeredAt;
  if (endedAt !== undefined) out.endedAt = endedAt;
  return out;
}

/** Column arrays for unnest(): `cols(rows, [f => a, f => b])` → `[[a…], [b…]]`. */
const cols = <T>(rows: readonly T[], getters: Array<(f: T) => unknown>) => getters.map((g) => rows.map((r) => g(r) ?? null));

/** A group of alike calls (`callGroups`): the shape the wallboard's figures read, with a count and sums. */
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
}

const CALL_COLUMNS = `c.wacid, c.phone_id, c.business_number, c.customer_phone, c.customer_user_id, c.direction, c.agent,
  c.outcome, c.received_at, c.answered_at, c.ended_at, c.wait_ms, c.talk_ms, c.hold_ms, c.end_reason, c.network_path, d.disposition, d.notes`;

interface CallRow {
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
  disposition: string | null;
  notes: string | null;
}

interface MediaRow {
  wacid: string;
  media_asset_id: string;
  kind: MediaKind;
  status: MediaStatus;
  bytes: number | null;
  sha256: string | null;
  path: string | null;
}

const iso = (d: Date | string) => new Date(d).toISOString();

function toRecord(r: CallRow, media: MediaRecord[]): CallRecord {
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
  if (r.disposition !== null) out.disposition = r.disposition;
  if (r.notes !== null) out.notes = r.notes;
  return out;
}

function toMedia(r: MediaRow): MediaRecord {
  const m: MediaRecord = { kind: r.kind, mediaAssetId: r.media_asset_id, status: r.status };
  if (r.bytes !== null) m.bytes = Number(r.bytes);
  if (r.sha256 !== null) m.sha256 = r.sha256;
  if (r.path !== null) m.path = r.path;
  return m;
}

function encodeCursor(receivedAt: string, wacid: string): string {
  return Buffer.from(JSON.stringify([receivedAt, wacid])).toString('base64url');
}

function decodeCursor(cursor: string): [string, string] {
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

export class HistoryStore {
  constructor(readonly db: Db) {}

  // ---- writing ----------------------------------------------------------------------

  /**
   * Write facts (already parsed with `HistoryFact`) in ONE transaction: all or none. A few
   * statements per batch, not one per fact: rows travel as arrays (unnest).
   */
  async apply(facts: readonly ParsedFact[]): Promise<void> {
    if (facts.length === 0) return;
    const of = <K extends ParsedFact['type']>(t: K) => facts.filter((f): f is Extract<ParsedFact, { type: K }> => f.type === t);
    const calls = of('call');
    const timeline = of('timeline');
    const media = of('media');
    const dispositions = of('disposition');
    await this.db.tx(async (sql) => {
      // Media first: a call row created in this batch then picks up its transcript.
      for (const r of rounds(media, (f) => f.mediaAssetId)) await this.writeMedia(sql, r);
      const texts = [...new Set(media.filter((f) => f.text !== undefined).map((f) => f.wacid))];
      if (texts.length > 0) await sql.query(`UPDATE history_calls c SET transcript = ${TRANSCRIPT_OF('c.wacid')} WHERE c.wacid = ANY($1)`, [texts]);
      for (const r of foldCalls(calls)) await this.writeCalls(sql, r);
      if (timeline.length > 0) await this.writeTimeline(sql, timeline);
      for (const r of rounds(dispositions, (f) => f.wacid)) await this.writeDispositions(sql, r);
    });
  }

  /** Validate and write one fact of any type (tests and tools; the writer uses `apply`). */
  async record(fact: HistoryFact): Promise<void> {
    await this.apply([HistoryFact.parse(fact)]);
  }

  private async writeCalls(sql: Sql, rows: CallFactP[]): Promise<void> {
    await sql.query(
      UPSERT_CALLS,
      cols(rows, [
        (f) => f.wacid,
        (f) => f.phoneId,
        (f) => f.businessNumber,
        (f) => f.customer.phoneNumber,
        (f) => f.customer.userId,
        (f) => f.direction,
        (f) => f.agent,
        (f) => f.outcome,
        rankOf,
        (f) => f.receivedAt,
        (f) => f.answeredAt,
        (f) => f.endedAt,
        (f) => f.waitMs,
        (f) => f.talkMs,
        (f) => f.holdMs,
        (f) => f.endReason,
        (f) => f.version,
        (f) => f.networkPath,
      ]),
      PREPARED,
    );
  }

  private async writeTimeline(sql: Sql, rows: TimelineFactP[]): Promise<void> {
    await sql.query(
      INSERT_TIMELINE,
      cols(rows, [(f) => f.wacid, (f) => f.key, (f) => f.at, (f) => f.event, (f) => (f.detail === undefined ? null : JSON.stringify(f.detail))]),
      PREPARED,
    );
  }

  private async writeMedia(sql: Sql, rows: MediaFactP[]): Promise<void> {
    await sql.query(
      UPSERT_MEDIA,
      cols(rows, [
        (f) => f.mediaAssetId,
        (f) => f.wacid,
        (f) => f.kind,
        (f) => f.status,
        (f) => statusRank(f.status),
        (f) => f.bytes,
        (f) => f.sha256,
        (f) => f.path,
        (f) => f.text,
        (f) => f.at,
      ]),
      PREPARED,
    );
  }

  private async writeDispositions(sql: Sql, rows: DispositionFactP[]): Promise<void> {
    await sql.query(UPSERT_DISPOSITIONS, cols(rows, [(f) => f.wacid, (f) => f.disposition, (f) => f.notes, (f) => f.at]), PREPARED);
  }

  // ---- reading ----------------------------------------------------------------------

  /**
   * `GET /api/history/calls`: newest first, `limit` per page, `cursor` from the previous
   * page. `from` is inclusive, `to` exclusive. Throws `HistoryQueryError` on bad input.
   */
  async searchCalls(input: CallSearch): Promise<CallPage> {
    const parsed = CallSearch.safeParse(input);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new HistoryQueryError(issue.path.join('.') || 'query', issue.message);
    }
    const q = parsed.data;
    const where: string[] = [];
    const params: unknown[] = [];
    const p = (v: unknown) => {
      params.push(v);
      return `$${params.length}`;
    };
    if (q.from) where.push(`c.received_at >= ${p(q.from)}`);
    if (q.to) where.push(`c.received_at < ${p(q.to)}`);
    // E.164 starts with '+'; a BSUID never does.
    if (q.customer) where.push(q.customer.startsWith('+') ? `c.customer_phone = ${p(q.customer)}` : `c.customer_user_id = ${p(q.customer)}`);
    if (q.agent) where.push(`c.agent = ${p(q.agent)}`);
    if (q.businessNumber) where.push(`c.business_number = ${p(q.businessNumber)}`);
    if (q.direction) where.push(`c.direction = ${p(q.direction)}`);
    if (q.outcome) where.push(`c.outcome = ${p(q.outcome)}`);
    if (q.q) where.push(`c.transcript_tsv @@ plainto_tsquery('simple', ${p(q.q)})`);
    if (q.cursor) {
      const [at, wacid] = decodeCursor(q.cursor);
      where.push(`(c.received_at, c.wacid) < (${p(at)}::timestamptz, ${p(wacid)})`);
    }
    // Searches people type may be slow (words matching nothing over many rows): they run on
    // the search pool (its own connections, a statement timeout), never on the connections the
    // writer and the callback queue use. One customer's calls without words (the customer
    // panel) are an index lookup: the main pool.
    const run = q.customer && !q.q ? this.db.query.bind(this.db) : (this.db.search ?? this.db.query).bind(this.db);
    const rows = await run<CallRow>(
      `SELECT ${CALL_COLUMNS} FROM history_calls c LEFT JOIN history_dispositions d ON d.wacid = c.wacid
       ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
       ORDER BY c.received_at DESC, c.wacid DESC LIMIT ${q.limit + 1}`,
      params,
    );
    const page = rows.slice(0, q.limit);
    const media = await this.mediaOf(page.map((r) => r.wacid));
    const items = page.map((r) => toRecord(r, media.get(r.wacid) ?? []));
    const last = items[items.length - 1];
    return rows.length > q.limit && last ? { items, cursor: encodeCursor(last.receivedAt, last.wacid) } : { items };
  }

  /**
   * The calls received in [from, to) folded into groups alike in every field the figures of
   * server/wallboard/compute.ts read (number, direction, agent, outcome, answered, ended
   * with talk time, wait within `slaMs`), each with its count and its wait / talk / hold
   * sums: one statement and a few hundred rows at most, however many calls the day had.
   */
  async callGroups(range: { from: string; to?: string }, slaMs: number): Promise<CallGroup[]> {
    const rows = await this.db.query<{
      business_number: string | null;
      direction: Direction;
      agent: string | null;
      outcome: string;
      answered: boolean;
      handled: boolean;
      within_sla: boolean;
      n: number;
      wait_sum: number;
      talk_sum: number;
      hold_sum: number;
    }>(
      `SELECT business_number, direction, agent, outcome, (answered_at IS NOT NULL) AS answered,
         (ended_at IS NOT NULL AND talk_ms IS NOT NULL) AS handled, (COALESCE(wait_ms, 0) <= $3) AS within_sla,
         count(*)::int AS n, COALESCE(sum(wait_ms), 0)::float8 AS wait_sum, COALESCE(sum(talk_ms), 0)::float8 AS talk_sum,
         COALESCE(sum(hold_ms), 0)::float8 AS hold_sum
       FROM history_calls WHERE received_at >= $1 AND ($2::timestamptz IS NULL OR received_at < $2)
       GROUP BY 1, 2, 3, 4, 5, 6, 7`,
      [range.from, range.to ?? null, slaMs],
      PREPARED,
    );
    return rows.map((r) => ({
      count: r.n,
      direction: r.direction,
      outcome: r.outcome,
      withinSla: r.within_sla,
      waitMs: Number(r.wait_sum),
      ...(r.business_number !== null ? { businessNumber: r.business_number } : {}),
      ...(r.agent !== null ? { agent: r.agent } : {}),
      ...(r.answered ? { answeredAt: 'yes' } : {}),
      ...(r.handled ? { endedAt: 'yes', talkMs: Number(r.talk_sum), holdMs: Number(r.hold_sum) } : {}),
    }));
  }

  /** `GET /api/history/calls/:wacid`: the call with its timeline (oldest first) and media; null if unknown. */
  async getCall(wacid: string): Promise<CallDetail | null> {
    const [row] = await this.db.query<CallRow>(
      `SELECT ${CALL_COLUMNS} FROM history_calls c LEFT JOIN history_dispositions d ON d.wacid = c.wacid WHERE c.wacid = $1`,
      [wacid],
    );
    if (!row) return null;
    const media = (await this.mediaOf([wacid])).get(wacid) ?? [];
    const timeline = await this.db.query<{ at: Date; event: string; detail: Record<string, unknown> | null }>(
      'SELECT at, event, detail FROM history_timeline WHERE wacid = $1 ORDER BY at, key',
      [wacid],
    );
    return {
      ...toRecord(row, media),
      timeline: timeline.map((t) => (t.detail === null ? { at: iso(t.at), event: t.event } : { at: iso(t.at), event: t.event, detail: t.detail })),
    };
  }

  private async mediaOf(wacids: string[]): Promise<Map<string, MediaRecord[]>> {
    const out = new Map<string, MediaRecord[]>();
    if (wacids.length === 0) return out;
    const rows = await this.db.query<MediaRow>(
      'SELECT wacid, media_asset_id, kind, status, bytes, sha256, path FROM history_media WHERE wacid = ANY($1) ORDER BY first_at, media_asset_id',
      [wacids],
    );
    for (const r of rows) {
      const list = out.get(r.wacid) ?? [];
      list.push(toMedia(r));
      out.set(r.wacid, list);
    }
    return out;
  }

  // ---- retention --------------------------------------------------------------------

  /**
   * Delete calls (with their timeline, wrap-up and media) received more than
   * `historyDays` ago, and media first seen more than `archiveDays` ago, in one
   * transaction. Returns the files of the deleted media rows for the archive to delete
   * (rows first: a crash between leaves a stray file, never a row pointing at nothing).
   */
  async purge(o: { now?: Date; historyDays: number; archiveDays: number }): Promise<RetentionResult> {
    const now = (o.now ?? new Date()).getTime();
    const day = 24 * 3600 * 1000;
    const historyCut = new Date(now - o.historyDays * day).toISOString();
    const archiveCut = new Date(now - o.archiveDays * day).toISOString();
    return this.db.tx(async (sql) => {
      const calls = await sql.query<{ wacid: string }>('DELETE FROM history_calls WHERE received_at < $1 RETURNING wacid', [historyCut]);
      const gone = calls.map((r) => r.wacid);
      await sql.query('DELETE FROM history_timeline WHERE wacid = ANY($1) OR at < $2', [gone, historyCut]);
      await sql.query('DELETE FROM history_dispositions WHERE wacid = ANY($1) OR at < $2', [gone, historyCut]);
      const media = await sql.query<{ wacid: string; path: string | null; text: string | null }>(
        'DELETE FROM history_media WHERE wacid = ANY($1) OR first_at < $2 RETURNING wacid, path, text',
        [gone, archiveCut],
      );
      // A transcription that is gone is no longer searchable either.
      const touched = [...new Set(media.filter((m) => m.text !== null).map((m) => m.wacid))];
      if (touched.length > 0) await sql.query(`UPDATE history_calls c SET transcript = ${TRANSCRIPT_OF('c.wacid')} WHERE c.wacid = ANY($1)`, [touched]);
      return { calls: gone.length, media: media.length, paths: media.flatMap((m) => (m.path === null ? [] : [m.path])) };
    });
  }

  /**
   * Media the Service announced but we never downloaded (announced or failed) whose
   * `days` (the Service keeps an asset 30 days) ran out since it was first seen: now
   * `missing`, returned once each so the caller logs and counts them.
   */
  async expireUndownloaded(o: { now?: Date; days?: number } = {}): Promise<Array<{ wacid: string; mediaAssetId: string; kind: string }>> {
    const now = o.now ?? new Date();
    const cut = new Date(now.getTime() - (o.days ?? 30) * 24 * 3600 * 1000).toISOString();
    return this.db.query<{ wacid: string; mediaAssetId: string; kind: string }>(
      `UPDATE history_media SET status = 'missing', status_rank = ${statusRank('missing')}, updated_at = $2
       WHERE status_rank < ${statusRank('available')} AND first_at < $1
       RETURNING wacid, media_asset_id AS "mediaAssetId", kind`,
      [cut, now.toISOString()],
    );
  }

  /** For `/readyz`: resolves when the database answers. */
  async ping(): Promise<void> {
    await this.db.query('SELECT 1');
  }

  close(): Promise<void> {
    return this.db.close();
  }
}
