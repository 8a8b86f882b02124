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
import { HistoryQueryError } from './errors.ts';
import { type CallFactP, INSERT_TIMELINE, TRANSCRIPT_OF, UPSERT_CALLS, UPSERT_DISPOSITIONS, UPSERT_MEDIA, cols, foldCalls, rankOf, rounds, statusRank } from './merge.ts';
import { CALL_COLUMNS, type CallGroup, type CallRow, type MediaRow, decodeCursor, encodeCursor, iso, toMedia, toRecord } from './rows.ts';
import {
  CallSearch,
  HistoryFact,
  type CallDetail,
  type CallPage,
  type Direction,
  type MediaRecord,
  type ParsedFact,
} from './schema.ts';

type TimelineFactP = Extract<ParsedFact, { type: 'timeline' }>;
type MediaFactP = Extract<ParsedFact, { type: 'media' }>;
type DispositionFactP = Extract<ParsedFact, { type: 'disposition' }>;

export { HistoryQueryError } from './errors.ts';
export type { CallGroup } from './rows.ts';

/** Transfers made by one agent in calls to one business number (`transferCounts`). */
export interface TransferCount {
  count: number;
  businessNumber?: string;
  agent?: string;
}

export interface RetentionResult {
  calls: number;
  media: number;
  /** Files of the deleted media rows: the archive deletes them (their rows are gone). */
  paths: string[];
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
        (f) => f.mediaMode,
        (f) => f.mediaServer,
        (f) => (f.legs === undefined ? undefined : JSON.stringify(f.legs)),
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
    // The agent who held the call last, or any agent who had a leg of it (anchor mode: a transfer, a conference).
    if (q.agent) {
      const a = p(q.agent);
      where.push(`(c.agent = ${a} OR (c.legs IS NOT NULL AND c.legs @> jsonb_build_array(jsonb_build_object('agent', ${a}::text))))`);
    }
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
    type Key = { business_number: string | null; direction: Direction; agent: string | null; outcome: string; answered: boolean; handled: boolean; within_sla: boolean; legged: boolean };
    // Calls with legs group without their agent (the legs name the agents); their legs are summed per group and agent.
    const KEY = `business_number, direction, CASE WHEN legs IS NULL THEN agent END AS agent, outcome, (answered_at IS NOT NULL) AS answered,
         (ended_at IS NOT NULL AND talk_ms IS NOT NULL) AS handled, (COALESCE(wait_ms, 0) <= $3) AS within_sla, (legs IS NOT NULL) AS legged`;
    const RANGE = 'received_at >= $1 AND ($2::timestamptz IS NULL OR received_at < $2)';
    const params = [range.from, range.to ?? null, slaMs];
    const rows = await this.db.query<Key & { n: number; wait_sum: number; talk_sum: number; hold_sum: number }>(
      `SELECT ${KEY},
         count(*)::int AS n, COALESCE(sum(wait_ms), 0)::float8 AS wait_sum, COALESCE(sum(talk_ms), 0)::float8 AS talk_sum,
         COALESCE(sum(hold_ms), 0)::float8 AS hold_sum
       FROM history_calls WHERE ${RANGE}
       GROUP BY 1, 2, 3, 4, 5, 6, 7, 8`,
      params,
      PREPARED,
    );
    const keyOf = (r: Key) => JSON.stringify([r.business_number, r.direction, r.agent, r.outcome, r.answered, r.handled, r.within_sla]);
    const legs = new Map<string, NonNullable<CallGroup['legs']>>();
    if (rows.some((r) => r.legged)) {
      const legRows = await this.db.query<Key & { leg_agent: string; n: number; talk_sum: number; hold_sum: number }>(
        `SELECT ${KEY}, l->>'agent' AS leg_agent, count(DISTINCT wacid)::int AS n,
           COALESCE(sum((l->>'talkMs')::bigint), 0)::float8 AS talk_sum, COALESCE(sum((l->>'holdMs')::bigint), 0)::float8 AS hold_sum
         FROM history_calls, jsonb_array_elements(legs) AS l
         WHERE ${RANGE} AND legs IS NOT NULL AND jsonb_typeof(legs) = 'array'
         GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9 ORDER BY 9`,
        params,
        PREPARED,
      );
      for (const r of legRows) {
        const k = keyOf(r);
        const list = legs.get(k) ?? [];
        list.push({ agent: r.leg_agent, count: r.n, talkMs: Number(r.talk_sum), holdMs: Number(r.hold_sum) });
        legs.set(k, list);
      }
    }
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
      ...(r.legged ? { legs: legs.get(keyOf(r)) ?? [] } : {}),
    }));
  }

  /**
   * The transfers made in the calls received in [from, to), per business number and the
   * agent who transferred: a cold transfer sent (timeline `transfer`, mode cold) or a warm
   * one completed (`transferAction` complete). A consult cancelled or made a conference is
   * no transfer. One statement; the timeline's rows of the range's calls only.
   */
  async transferCounts(range: { from: string; to?: string }): Promise<TransferCount[]> {
    const rows = await this.db.query<{ business_number: string | null; agent: string | null; n: number }>(
      `SELECT c.business_number, t.detail->>'agent' AS agent, count(*)::int AS n
       FROM history_timeline t JOIN history_calls c ON c.wacid = t.wacid
       WHERE c.received_at >= $1 AND ($2::timestamptz IS NULL OR c.received_at < $2)
         AND ((t.event = 'transfer' AND COALESCE(t.detail->>'mode', 'cold') = 'cold') OR (t.event = 'transferAction' AND t.detail->>'action' = 'complete'))
       GROUP BY 1, 2`,
      [range.from, range.to ?? null],
      PREPARED,
    );
    return rows.map((r) => ({ count: r.n, ...(r.business_number !== null ? { businessNumber: r.business_number } : {}), ...(r.agent !== null ? { agent: r.agent } : {}) }));
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
