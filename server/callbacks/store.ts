/**
 * Callback tasks in the history database (migration 2): the missed-call callback queue.
 *
 * - one open (or claimed) task per (customer, business number): a unique partial index,
 *   so two nodes noting misses of one customer at once end with one task; later misses
 *   add to it; a call seen twice (same wacid) adds nothing (`history_callback_calls`);
 * - claim is one `UPDATE … WHERE id = $1 AND state = 'open' RETURNING`: of two claims,
 *   on any nodes, exactly one gets the row;
 * - an unanswered call back puts the task back to `open` with a later `dueAt` (the retry
 *   schedule); after the last step it is closed `unreachable`;
 * - done with an outcome (by hand, by an answered call back, by the customer's answered call).
 */
import { randomUUID } from 'node:crypto';
import type { CallbackAttempt, CallbackFollowup, CallbackMiss, CallbackReason, CallbackState, CallbackTask } from '../../shared/records.ts';
import { PREPARED, type Db } from '../history/db.ts';

const LOCK_PAIR = 71_420_040;
const UNIQUE_VIOLATION = '23505';

/** Misses a task keeps (the latest, one dropped as one is added); `missCount` counts them all. Migration 3 trims to the same. */
export const MISSES_KEPT = 20;
const MISSES_KEPT_SQL = String(MISSES_KEPT);

const NOTE_MISSED_CALL = `
WITH seen AS (
  SELECT t.* FROM history_callback_calls c JOIN history_callbacks t ON t.id = c.task_id WHERE c.wacid = $7
), up AS (
  INSERT INTO history_callbacks AS t (id, customer, business_number, reason, state, created_at, updated_at, misses, miss_count, last_call_wacid, followup)
  SELECT $1::text, $2::text, $3::text, $4::text, 'open', $5::timestamptz, now(), $6::jsonb, 1, $7::text, $8::jsonb WHERE NOT EXISTS (SELECT 1 FROM seen)
  ON CONFLICT (customer, business_number) WHERE state IN ('open', 'claimed') DO UPDATE SET
    misses = CASE WHEN jsonb_array_length(t.misses) >= ${MISSES_KEPT_SQL} THEN (t.misses - 0) || EXCLUDED.misses ELSE t.misses || EXCLUDED.misses END,
    miss_count = t.miss_count + 1, last_call_wacid = EXCLUDED.last_call_wacid, updated_at = now(), version = t.version + 1
  RETURNING t.*, (xmax = 0) AS inserted
), link AS (
  INSERT INTO history_callback_calls (wacid, task_id) SELECT $7, id FROM up
)
SELECT up.*, true AS added FROM up
UNION ALL
SELECT seen.*, false AS inserted, false AS added FROM seen`;

/** Waits after the 1st, 2nd, 3rd unanswered call back; after the last, the task closes `unreachable`. */
export const RETRY_SCHEDULE_MS: readonly number[] = [15 * 60_000, 60 * 60_000, 4 * 3600_000];

interface TaskRow {
  id: string;
  customer: string;
  business_number: string;
  reason: CallbackReason;
  state: CallbackState;
  created_at: Date;
  updated_at: Date;
  due_at: Date | null;
  attempts: CallbackAttempt[];
  misses: CallbackMiss[];
  miss_count: number;
  assignee: string | null;
  last_call_wacid: string | null;
  outcome: string | null;
  followup: CallbackFollowup | null;
  version: number;
}

const iso = (d: Date | string) => new Date(d).toISOString();

function toTask(r: TaskRow): CallbackTask {
  const t: CallbackTask = {
    id: r.id,
    customer: r.customer,
    businessNumber: r.business_number,
    reason: r.reason,
    createdAt: iso(r.created_at),
    state: r.state,
    attempts: r.attempts,
    misses: r.misses,
    missCount: r.miss_count,
    updatedAt: iso(r.updated_at),
    version: r.version,
  };
  if (r.due_at !== null) t.dueAt = iso(r.due_at);
  if (r.assignee !== null) t.assignee = r.assignee;
  if (r.last_call_wacid !== null) t.lastCallWacid = r.last_call_wacid;
  if (r.outcome !== null) t.outcome = r.outcome;
  if (r.followup !== null) t.followup = r.followup;
  return t;
}

export interface MissedCall {
  wacid: string;
  customer: string;
  businessNumber: string;
  reason: Exclude<CallbackReason, 'requested'>;
  /** ISO time the call ended. */
  at: string;
  /** Reason `voicemail`: where the message is in the archive (`/api/archive/…`). */
  voicemail?: string;
}

export type ClaimResult = { ok: true; task: CallbackTask } | { ok: false; code: 'NOT_FOUND' } | { ok: false; code: 'CONFLICT'; task: CallbackTask };

export class CallbackStore {
  constructor(readonly db: Db) {}

  /**
   * An unanswered inbound call: create the pair's task or add the call to its open one.
   * `created`: this call opened the task; `added`: the call was new to the task (false for a
   * repeated observation, which changes nothing). `followup`: the follow-up a task created by
   * this call starts with, when it is known without sending anything (`MISSED_CALL_FOLLOWUP`
   * off), so the queue does not write it in a second statement.
   *
   * One statement, one round trip (a missed call is the queue's hot path): the link table
   * says whether the call was seen; the upsert on the pair's unique partial index makes one
   * task of misses noted at once on several nodes (PostgreSQL waits on the other insert).
   * The same call noted at once on two nodes: the second's link insert breaks the wacid key,
   * its whole statement is undone (its miss too) and it runs again, finding the call seen.
   */
  async noteMissedCall(m: MissedCall, followup?: CallbackFollowup): Promise<{ task: CallbackTask; created: boolean; added: boolean }> {
    const miss: CallbackMiss = { wacid: m.wacid, at: iso(m.at), reason: m.reason, ...(m.voicemail !== undefined ? { voicemail: m.voicemail } : {}) };
    const params = [randomUUID(), m.customer, m.businessNumber, m.reason, iso(m.at), JSON.stringify([miss]), m.wacid, followup ? JSON.stringify(followup) : null];
    for (let attempt = 0; ; attempt++) {
      try {
        const [row] = await this.db.query<TaskRow & { inserted: boolean; added: boolean }>(NOTE_MISSED_CALL, params, PREPARED);
        return { task: toTask(row!), created: row!.inserted, added: row!.added };
      } catch (err) {
        if ((err as { code?: unknown }).code !== UNIQUE_VIOLATION || attempt > 0) throw err;
      }
    }
  }

  /** Atomic: only an `open` task is claimed; a second claim (any node) gets CONFLICT with the task as it is. */
  async claim(id: string, by: string): Promise<ClaimResult> {
    const [row] = await this.db.query<TaskRow>(
      `UPDATE history_callbacks SET state = 'claimed', assignee = $2, updated_at = now(), version = version + 1
       WHERE id = $1 AND state = 'open' RETURNING *`,
      [id, by],
    );
    if (row) return { ok: true, task: toTask(row) };
    const cur = await this.get(id);
    return cur ? { ok: false, code: 'CONFLICT', task: cur } : { ok: false, code: 'NOT_FOUND' };
  }

  /**
   * Close by hand with an outcome. Only an open or claimed task; a task claimed by someone
   * else only when `anyAssignee` (a supervisor).
   */
  async done(id: string, outcome: string, by: string, anyAssignee: boolean): Promise<ClaimResult> {
    const [row] = await this.db.query<TaskRow>(
      `UPDATE history_callbacks SET state = 'done', outcome = $2, assignee = COALESCE(assignee, $3), due_at = NULL, updated_at = now(), version = version + 1
       WHERE id = $1 AND state IN ('open', 'claimed') AND (state = 'open' OR assignee = $3 OR $4) RETURNING *`,
      [id, outcome, by, anyAssignee],
    );
    if (row) return { ok: true, task: toTask(row) };
    const cur = await this.get(id);
    return cur ? { ok: false, code: 'CONFLICT', task: cur } : { ok: false, code: 'NOT_FOUND' };
  }

  /**
   * A call back to the pair's customer ended. Answered: the task is done (`called-back`).
   * Otherwise it goes back to `open`, due after the next step of `schedule`, or is closed
   * `unreachable` after the last. The same call seen again changes nothing. Null: no open task.
   */
  async noteCallback(customer: string, businessNumber: string, a: Required<Pick<CallbackAttempt, 'wacid' | 'outcome'>> & CallbackAttempt, schedule: readonly number[] = RETRY_SCHEDULE_MS): Promise<CallbackTask | null> {
    return this.db.tx(async (sql) => {
      await sql.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_PAIR, `${customer}|${businessNumber}`]);
      const [cur] = await sql.query<TaskRow>(`SELECT * FROM history_callbacks WHERE customer = $1 AND business_number = $2 AND state IN ('open', 'claimed')`, [customer, businessNumber]);
      if (!cur) return null;
      if (cur.attempts.some((x) => x.wacid === a.wacid)) return toTask(cur);
      const attempts = [...cur.attempts, { ...a, at: iso(a.at) }];
      const answered = a.outcome === 'answered';
      const step = schedule[attempts.filter((x) => x.outcome !== 'answered').length - 1];
      const state: CallbackState = answered || step === undefined ? 'done' : 'open';
      const outcome = answered ? 'called-back' : step === undefined ? 'unreachable' : null;
      const dueAt = state === 'open' ? new Date(Date.parse(iso(a.at)) + step!).toISOString() : null;
      const [row] = await sql.query<TaskRow>(
        `UPDATE history_callbacks SET attempts = $2::jsonb, state = $3, outcome = $4, due_at = $5, last_call_wacid = $6,
           assignee = CASE WHEN $3 = 'open' THEN NULL ELSE assignee END, updated_at = now(), version = version + 1
         WHERE id = $1 RETURNING *`,
        [cur.id, JSON.stringify(attempts), state, outcome, dueAt, a.wacid],
      );
      return toTask(row!);
    });
  }

  /** The customer called in and was answered: their open task is done (`customer-called`). Null: none open. */
  async closeByInboundCall(customer: string, businessNumber: string, wacid: string): Promise<CallbackTask | null> {
    const [row] = await this.db.query<TaskRow>(
      `UPDATE history_callbacks SET state = 'done', outcome = 'customer-called', last_call_wacid = $3, due_at = NULL, updated_at = now(), version = version + 1
       WHERE customer = $1 AND business_number = $2 AND state IN ('open', 'claimed') RETURNING *`,
      [customer, businessNumber, wacid],
      PREPARED,
    );
    return row ? toTask(row) : null;
  }

  /**
   * Record the task's follow-up. With `once`, only when it has none yet: the first caller
   * (any node) gets the task back and sends; the others get null and send nothing.
   */
  async setFollowup(id: string, f: CallbackFollowup, once: boolean): Promise<CallbackTask | null> {
    const [row] = await this.db.query<TaskRow>(
      `UPDATE history_callbacks SET followup = $2::jsonb, updated_at = now(), version = version + 1 WHERE id = $1 ${once ? 'AND followup IS NULL' : ''} RETURNING *`,
      [id, JSON.stringify(f)],
      PREPARED,
    );
    return row ? toTask(row) : null;
  }

  async get(id: string): Promise<CallbackTask | null> {
    const [row] = await this.db.query<TaskRow>('SELECT * FROM history_callbacks WHERE id = $1', [id]);
    return row ? toTask(row) : null;
  }

  /**
   * Tasks in one state or several, read at once (open and claimed together: a task moving
   * between them is in one read or the other, never in neither): open and claimed ones by
   * when they are due (oldest first), closed ones newest first.
   */
  async list(state: CallbackState | readonly CallbackState[], limit = 200): Promise<CallbackTask[]> {
    const states = [...new Set(typeof state === 'string' ? [state] : state)];
    const order = states.every((x) => x === 'open' || x === 'claimed') ? 'COALESCE(due_at, created_at), id' : 'updated_at DESC, id';
    const among = states.map((_, i) => `$${i + 2}`).join(', ');
    const rows = await this.db.query<TaskRow>(`SELECT * FROM history_callbacks WHERE state IN (${among}) ORDER BY ${order} LIMIT $1`, [limit, ...states]);
    return rows.map(toTask);
  }

  /** A customer's tasks, newest first (the customer panel). */
  async tasksOf(customer: string, limit = 20): Promise<CallbackTask[]> {
    const rows = await this.db.query<TaskRow>('SELECT * FROM history_callbacks WHERE customer = $1 ORDER BY created_at DESC LIMIT $2', [customer, limit]);
    return rows.map(toTask);
  }
}
