/**
 * The one set of versioned migrations of the history database (PostgreSQL and PGlite
 * alike). Append only: a released migration never changes; a change is a new version.
 *
 * `migrate(db)` applies the pending ones in ONE transaction holding a transaction-level
 * advisory lock, so nodes starting together queue on the lock and the second finds
 * everything applied: each migration runs once.
 */
import type { Db } from './db.ts';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'calls, timeline, media',
    sql: `
CREATE TABLE history_calls (
  wacid            text PRIMARY KEY,
  phone_id         text NOT NULL,
  business_number  text,
  customer_phone   text,
  customer_user_id text,
  direction        text NOT NULL,
  agent            text,
  outcome          text NOT NULL,
  -- 0 in progress, 1 terminal: a terminal outcome never reverts (see store.ts)
  outcome_rank     smallint NOT NULL,
  received_at      timestamptz NOT NULL,
  answered_at      timestamptz,
  ended_at         timestamptz,
  wait_ms          integer,
  talk_ms          integer,
  hold_ms          integer,
  end_reason       text,
  -- the call's version of the last fact merged (the live record's CAS version)
  version          integer NOT NULL DEFAULT 0,
  -- every transcription's text of the call, for full-text search
  transcript       text,
  transcript_tsv   tsvector GENERATED ALWAYS AS (to_tsvector('simple', coalesce(transcript, ''))) STORED
);
-- Newest first, keyset pagination on (received_at, wacid); each filter has its own
-- index leading with the filter column, so "customer + dates + outcome" reads only that
-- customer's calls.
CREATE INDEX history_calls_received ON history_calls (received_at DESC, wacid DESC);
CREATE INDEX history_calls_customer_phone ON history_calls (customer_phone, received_at DESC) WHERE customer_phone IS NOT NULL;
CREATE INDEX history_calls_customer_user ON history_calls (customer_user_id, received_at DESC) WHERE customer_user_id IS NOT NULL;
CREATE INDEX history_calls_agent ON history_calls (agent, received_at DESC) WHERE agent IS NOT NULL;
CREATE INDEX history_calls_business ON history_calls (business_number, received_at DESC) WHERE business_number IS NOT NULL;
CREATE INDEX history_calls_outcome ON history_calls (outcome, received_at DESC);
CREATE INDEX history_calls_transcript ON history_calls USING gin (transcript_tsv);

CREATE TABLE history_timeline (
  wacid  text NOT NULL,
  -- the happening's identity (Service event id, or state:<version>): stored once
  key    text NOT NULL,
  at     timestamptz NOT NULL,
  event  text NOT NULL,
  detail jsonb,
  PRIMARY KEY (wacid, key)
);
CREATE INDEX history_timeline_at ON history_timeline (at);

CREATE TABLE history_media (
  media_asset_id text PRIMARY KEY,
  wacid          text NOT NULL,
  kind           text NOT NULL,
  status         text NOT NULL,
  status_rank    smallint NOT NULL,
  bytes          bigint,
  sha256         text,
  path           text,
  text           text,
  first_at       timestamptz NOT NULL,
  updated_at     timestamptz NOT NULL
);
CREATE INDEX history_media_wacid ON history_media (wacid);
CREATE INDEX history_media_first_at ON history_media (first_at);

-- Wrap-up apart from the call row: it may be recorded before the call's own fact arrives.
CREATE TABLE history_dispositions (
  wacid       text PRIMARY KEY,
  disposition text NOT NULL,
  notes       text,
  at          timestamptz NOT NULL
);
CREATE INDEX history_dispositions_at ON history_dispositions (at);
`,
  },
  {
    version: 2,
    name: 'messages, templates, opt-outs, callback tasks',
    sql: `
-- One row per message (outbound, inbound, echo). The record is the MessageRecord the pure
-- model of server/messaging/status.ts computes (its statusHistory included); the columns
-- beside it are for lookups. Written read-modify-write under a row lock, so concurrent and
-- repeated events merge (the model is order-free).
CREATE TABLE history_messages (
  id          text PRIMARY KEY,
  direction   text NOT NULL,
  -- the customer's E.164 number or BSUID (the customer panel's key)
  customer    text,
  status      text NOT NULL,
  record      jsonb NOT NULL,
  -- the Switchboard user who sent it (message.updated goes to them)
  sent_by     text,
  created_at  timestamptz NOT NULL,
  -- server time of the last change: the reconcile loop fetches messages idle too long
  touched_at  timestamptz NOT NULL,
  -- no later status can come (read, or failed)
  settled     boolean NOT NULL DEFAULT false
);
CREATE INDEX history_messages_customer ON history_messages (customer, created_at DESC) WHERE customer IS NOT NULL;
CREATE INDEX history_messages_unsettled ON history_messages (touched_at) WHERE NOT settled;
CREATE INDEX history_messages_created ON history_messages (created_at);

-- The template catalog (server/messaging/templates.ts entries), shared by every node.
CREATE TABLE history_templates (
  key    text PRIMARY KEY,
  entry  jsonb NOT NULL
);
CREATE TABLE history_catalog_state (
  name  text PRIMARY KEY,
  value jsonb NOT NULL
);

-- Opt-outs (server/messaging/optout.ts entries), tombstones included.
CREATE TABLE history_optouts (
  customer text NOT NULL,
  channel  text NOT NULL,
  entry    jsonb NOT NULL,
  PRIMARY KEY (customer, channel)
);

CREATE TABLE history_callbacks (
  id              text PRIMARY KEY,
  customer        text NOT NULL,
  business_number text NOT NULL,
  reason          text NOT NULL,
  state           text NOT NULL,
  created_at      timestamptz NOT NULL,
  updated_at      timestamptz NOT NULL,
  due_at          timestamptz,
  attempts        jsonb NOT NULL DEFAULT '[]',
  misses          jsonb NOT NULL DEFAULT '[]',
  assignee        text,
  last_call_wacid text,
  outcome         text,
  followup        jsonb,
  version         integer NOT NULL DEFAULT 0
);
-- One open (or claimed) task per customer and business number: later misses add to it.
CREATE UNIQUE INDEX history_callbacks_active ON history_callbacks (customer, business_number) WHERE state IN ('open', 'claimed');
CREATE INDEX history_callbacks_state ON history_callbacks (state, created_at);
-- Which call fed which task: a repeated call-ended observation adds nothing.
CREATE TABLE history_callback_calls (
  wacid   text PRIMARY KEY,
  task_id text NOT NULL
);
`,
  },
  {
    version: 3,
    name: 'callback tasks keep their latest misses and count them all',
    sql: `
-- A customer who calls again and again made one task's misses (and every push of it) grow
-- without bound: a task keeps its latest misses (MISSES_KEPT in callbacks.ts) and counts all.
ALTER TABLE history_callbacks ADD COLUMN miss_count integer NOT NULL DEFAULT 0;
UPDATE history_callbacks SET miss_count = jsonb_array_length(misses);
UPDATE history_callbacks SET misses = (
  SELECT COALESCE(jsonb_agg(e ORDER BY i), '[]'::jsonb) FROM jsonb_array_elements(misses) WITH ORDINALITY AS x(e, i)
  WHERE i > jsonb_array_length(misses) - 20)
WHERE jsonb_array_length(misses) > 20;
`,
  },
  {
    version: 4,
    name: 'each call keeps the network path its audio took',
    sql: `
-- direct, relay-udp, relay-tcp or relay-tls: the selected candidate pair the agent's page saw.
ALTER TABLE history_calls ADD COLUMN network_path text;
`,
  },
  {
    version: 5,
    name: 'audit trail (server/audit)',
    sql: `
-- Append-only: who did what, when (server/audit owns it). Never updated; deleted only by
-- retention (AUDIT_RETENTION_DAYS, at least 1 day): the trigger refuses any UPDATE, and
-- any DELETE of a row younger than a day, whoever sends it.
CREATE TABLE audit_log (
  id       text PRIMARY KEY,
  at       timestamptz NOT NULL,
  -- who acted (a user name; for a failed login the name tried; 'system' for the server)
  actor    text NOT NULL,
  action   text NOT NULL,
  -- whose thing it was (the agent monitored, the user whose sessions ended), when another's
  subject  text,
  -- what it was done to (a call's wacid, a media file, a report range)
  target   text,
  -- the client's address
  address  text,
  detail   jsonb
);
CREATE INDEX audit_log_at ON audit_log (at DESC, id DESC);
CREATE INDEX audit_log_actor ON audit_log (actor, at DESC);
CREATE INDEX audit_log_subject ON audit_log (subject, at DESC) WHERE subject IS NOT NULL;
CREATE INDEX audit_log_action ON audit_log (action, at DESC);
CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    RAISE EXCEPTION 'audit_log is append-only: rows are never updated';
  END IF;
  IF OLD.at > now() - interval '1 day' THEN
    RAISE EXCEPTION 'audit_log is append-only: only retention deletes, and only rows older than a day';
  END IF;
  RETURN OLD;
END $$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
CREATE FUNCTION audit_log_no_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only: never truncated';
END $$;
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log FOR EACH STATEMENT EXECUTE FUNCTION audit_log_no_truncate();
`,
  },
  {
    version: 6,
    name: 'users, teams and skills (server/admin)',
    sql: `
CREATE TABLE admin_users (
  name          text PRIMARY KEY,
  display_name  text NOT NULL DEFAULT '',
  email         text NOT NULL DEFAULT '',
  roles         text[] NOT NULL,
  enabled       boolean NOT NULL DEFAULT true,
  -- scrypt (salt and cost inside); NULL: single sign-on only
  password_hash text,
  -- '<issuer>|<sub>' of the linked OpenID identity
  sso_subject   text UNIQUE,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE admin_teams (
  name         text PRIMARY KEY,
  display_name text NOT NULL DEFAULT ''
);
CREATE TABLE admin_team_members (
  team      text NOT NULL REFERENCES admin_teams (name) ON DELETE CASCADE,
  user_name text NOT NULL REFERENCES admin_users (name) ON DELETE CASCADE,
  PRIMARY KEY (team, user_name)
);
CREATE TABLE admin_skills (
  name        text PRIMARY KEY,
  description text NOT NULL DEFAULT ''
);
CREATE TABLE admin_user_skills (
  user_name text NOT NULL REFERENCES admin_users (name) ON DELETE CASCADE,
  skill     text NOT NULL REFERENCES admin_skills (name) ON DELETE CASCADE,
  level     smallint NOT NULL CHECK (level BETWEEN 1 AND 10),
  PRIMARY KEY (user_name, skill)
);
`,
  },
  {
    version: 7,
    name: 'queues (server/admin)',
    sql: `
CREATE TABLE admin_queues (
  name             text PRIMARY KEY,
  -- the Service's phone ids whose calls it takes; '*': every number no queue names
  numbers          text[] NOT NULL DEFAULT '{}',
  ring_timeout_s   integer,
  overflow_to      text REFERENCES admin_queues (name) ON DELETE SET NULL,
  overflow_after_s integer,
  skill            text REFERENCES admin_skills (name) ON DELETE SET NULL,
  skill_level      smallint CHECK (skill_level BETWEEN 1 AND 10)
);
CREATE TABLE admin_queue_members (
  queue     text NOT NULL REFERENCES admin_queues (name) ON DELETE CASCADE,
  user_name text NOT NULL REFERENCES admin_users (name) ON DELETE CASCADE,
  priority  smallint NOT NULL CHECK (priority BETWEEN 1 AND 9),
  PRIMARY KEY (queue, user_name)
);
`,
  },
  {
    // Versions 6–11 belong to other changes of this wave; numbers need not be contiguous.
    version: 12,
    name: 'user language',
    sql: `
-- The language each user picked for the pages (server/language/); none: the browser's.
CREATE TABLE user_language (
  user_name  text PRIMARY KEY,
  language   text NOT NULL,
  updated_at timestamptz NOT NULL
);
`,
  },
  {
    version: 13,
    name: 'each call names its media mode and, anchored, its media server',
    sql: `
ALTER TABLE history_calls ADD COLUMN media_mode text;
ALTER TABLE history_calls ADD COLUMN media_server text;
`,
  },
  {
    version: 14,
    name: 'each call keeps its legs: per agent who talked with the caller, talk and hold',
    sql: `
-- Anchor mode: [{agent, talkMs, holdMs, answered}] (server/calls/legs.ts); NULL in direct mode and on older rows.
ALTER TABLE history_calls ADD COLUMN legs jsonb;
`,
  },
  {
    version: 15,
    name: 'a search by agent finds each call the agent had a leg of (a transfer, a conference), by index',
    sql: `
CREATE INDEX history_calls_legs ON history_calls USING gin (legs jsonb_path_ops) WHERE legs IS NOT NULL;
`,
  },
];

/** Any constant: the advisory lock key of the migrations. */
const LOCK_KEY = 7_142_003_001;

/** Apply the pending migrations; returns the versions applied by this call. */
export async function migrate(db: Db, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  return db.tx(async (sql) => {
    await sql.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
    await sql.exec(`CREATE TABLE IF NOT EXISTS history_migrations (
      version    integer PRIMARY KEY,
      name       text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now())`);
    const done = new Set((await sql.query<{ version: number }>('SELECT version FROM history_migrations')).map((r) => r.version));
    const applied: number[] = [];
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(m.version)) continue;
      await sql.exec(m.sql);
      await sql.query('INSERT INTO history_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.version);
    }
    return applied;
  });
}
