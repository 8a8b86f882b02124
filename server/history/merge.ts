/**
 * History's write side as SQL: the statements that merge facts into rows (each rule
 * commutative: see store.ts) and the folding of a batch's call facts into as few row
 * writes as the rules allow.
 */
import { MEDIA_STATUSES, type MediaStatus, type ParsedFact } from './schema.ts';

export type CallFactP = Extract<ParsedFact, { type: 'call' }>;

export const statusRank = (s: MediaStatus) => Math.min(MEDIA_STATUSES.indexOf(s), 2);

// Newer (higher version) wins a field; a known value is never replaced by an absent one.
export const pick = (col: string) =>
  `${col} = CASE WHEN EXCLUDED.version >= c.version THEN COALESCE(EXCLUDED.${col}, c.${col}) ELSE COALESCE(c.${col}, EXCLUDED.${col}) END`;

export const TRANSCRIPT_OF = (param: string) =>
  `(SELECT string_agg(text, E'\\n' ORDER BY media_asset_id) FROM history_media WHERE wacid = ${param} AND text IS NOT NULL)`;

// Many facts per statement: rows come from unnest() of one array per column.
export const UPSERT_CALLS = `
INSERT INTO history_calls AS c (wacid, phone_id, business_number, customer_phone, customer_user_id, direction, agent,
  outcome, outcome_rank, received_at, answered_at, ended_at, wait_ms, talk_ms, hold_ms, end_reason, version, network_path, media_mode, media_server, legs, transcript)
SELECT u.*, ${TRANSCRIPT_OF('u.wacid')}
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::smallint[],
  $10::timestamptz[], $11::timestamptz[], $12::timestamptz[], $13::int[], $14::int[], $15::int[], $16::text[], $17::int[], $18::text[], $19::text[], $20::text[], $21::jsonb[])
  AS u(wacid, phone_id, business_number, customer_phone, customer_user_id, direction, agent, outcome, outcome_rank,
  received_at, answered_at, ended_at, wait_ms, talk_ms, hold_ms, end_reason, version, network_path, media_mode, media_server, legs)
ON CONFLICT (wacid) DO UPDATE SET
  phone_id = CASE WHEN EXCLUDED.version >= c.version THEN EXCLUDED.phone_id ELSE c.phone_id END,
  direction = CASE WHEN EXCLUDED.version >= c.version THEN EXCLUDED.direction ELSE c.direction END,
  ${['business_number', 'customer_phone', 'customer_user_id', 'agent', 'wait_ms', 'talk_ms', 'hold_ms', 'end_reason', 'network_path', 'media_mode', 'media_server', 'legs'].map(pick).join(',\n  ')},
  outcome = CASE WHEN (EXCLUDED.outcome_rank, EXCLUDED.version) > (c.outcome_rank, c.version) THEN EXCLUDED.outcome ELSE c.outcome END,
  outcome_rank = GREATEST(c.outcome_rank, EXCLUDED.outcome_rank),
  received_at = LEAST(c.received_at, EXCLUDED.received_at),
  answered_at = LEAST(c.answered_at, EXCLUDED.answered_at),
  ended_at = LEAST(c.ended_at, EXCLUDED.ended_at),
  version = GREATEST(c.version, EXCLUDED.version)`;

export const mediaPick = (col: string) =>
  `${col} = CASE WHEN EXCLUDED.status_rank >= m.status_rank THEN COALESCE(EXCLUDED.${col}, m.${col}) ELSE COALESCE(m.${col}, EXCLUDED.${col}) END`;

export const UPSERT_MEDIA = `
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

export const INSERT_TIMELINE = `
INSERT INTO history_timeline (wacid, key, at, event, detail)
SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::jsonb[])
ON CONFLICT DO NOTHING`;

export const UPSERT_DISPOSITIONS = `
INSERT INTO history_dispositions AS d (wacid, disposition, notes, at)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[])
ON CONFLICT (wacid) DO UPDATE SET disposition = EXCLUDED.disposition, notes = EXCLUDED.notes, at = EXCLUDED.at
WHERE EXCLUDED.at > d.at`;

/**
 * Split facts into rounds in which no key repeats: one INSERT … ON CONFLICT DO UPDATE may
 * not touch a row twice. The merge rules are commutative, so the rounds' order is free.
 */
export function rounds<T>(facts: readonly T[], key: (f: T) => string): T[][] {
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
export const PICKED: Array<(f: CallFactP) => unknown> = [
  (f) => f.businessNumber,
  (f) => f.customer.phoneNumber,
  (f) => f.customer.userId,
  (f) => f.agent,
  (f) => f.waitMs,
  (f) => f.talkMs,
  (f) => f.holdMs,
  (f) => f.endReason,
  (f) => f.networkPath,
  (f) => f.mediaMode,
  (f) => f.mediaServer,
  (f) => f.legs,
];
export const rankOf = (f: CallFactP) => (f.outcome === 'in-progress' ? 0 : 1);
export const earliest = (a: string | undefined, b: string | undefined) => (a === undefined ? b : b === undefined ? a : a < b ? a : b);

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
export function folded(acc: CallFactP, f: CallFactP): CallFactP {
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
export const cols = <T>(rows: readonly T[], getters: Array<(f: T) => unknown>) => getters.map((g) => rows.map((r) => g(r) ?? null));

/** A group of alike calls (`callGroups`): the shape the wallboard's figures read, with a count and sums. */
