/**
 * Messages, the template catalog and opt-outs in the history database (migration 2), shared
 * by every node. The merging is the pure models' of `server/messaging/` (status ranking in
 * `status.ts`, catalog rules in `templates.ts`, opt-out rules in `optout.ts`); this file only
 * reads the current state under a lock, applies the model and writes the result, so
 * repeated, late and concurrent observations end in the record the model gives for the set.
 *
 * Locks: a transaction-level advisory lock per message id (also for a message that has no
 * row yet, which a row lock cannot cover), one for the catalog, one per opt-out customer.
 * Two nodes handling events of one message queue on the lock; nothing is lost.
 */
import type { ChatMessage } from '../../shared/events.ts';
import { MessageRecord, type MessageDirection } from '../../shared/records.ts';
import { applyChatMessage } from './status.ts';
import { groupCommit } from './group-commit.ts';
import { applyUnsubscribeEvent, syncUnsubscribers, type OptOutEntry, type OptOuts } from './optout.ts';
import { applyTemplateEvent, syncTemplates, templateKey, type CatalogTemplate, type TemplateCatalog } from './templates.ts';
import type { Db, Sql } from '../history/db.ts';

/** First key of this file's advisory locks (two-int form: apart from the migrations' bigint key). */
const LOCK_MESSAGE = 71_420_031;
const LOCK_CATALOG = 71_420_032;
const LOCK_OPTOUT = 71_420_033; // and + 1 per customer

/** One observation of a message: a status event, an echo, a send response, a fetch. */
export interface MessageFact {
  direction: MessageDirection;
  message: ChatMessage;
  /** The envelope's time (used when the payload carries none). */
  at: string;
  /** The Switchboard user who sent it (outbound sends from the product). */
  sentBy?: string;
}

export interface StoredMessage {
  record: MessageRecord;
  sentBy?: string;
}

export interface MessageChange extends StoredMessage {
  /** The record differs from what was stored (a duplicate changes nothing). */
  changed: boolean;
}

/** Statuses after which nothing more is expected (the reconcile loop leaves them). */
const SETTLED = new Set(['read', 'failed', 'received']);

/** The customer of a message: the user side (E.164 or BSUID). */
export function customerOf(r: MessageRecord): string | undefined {
  const v = r.direction === 'inbound' ? r.from : (r.to ?? r.recipient);
  return v === undefined || v === '' ? undefined : v;
}

interface MessageRow {
  id: string;
  record: MessageRecord;
  sent_by: string | null;
}

const lockIds = (sql: Sql, key: number, ids: string[]) =>
  sql.query('SELECT pg_advisory_xact_lock($1, hashtext(x)) FROM (SELECT DISTINCT unnest($2::text[]) AS x) u ORDER BY hashtext(x), x', [key, ids]);

/** Every changed message of a transaction in one statement (columns as arrays, one row each). */
const UPSERT_MESSAGES = `
INSERT INTO history_messages AS m (id, direction, customer, status, record, sent_by, created_at, touched_at, settled)
SELECT u.id, u.direction, u.customer, u.status, u.record::jsonb, u.sent_by, u.created_at, now(), u.settled
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::boolean[])
  AS u(id, direction, customer, status, record, sent_by, created_at, settled)
ON CONFLICT (id) DO UPDATE SET customer = COALESCE(m.customer, EXCLUDED.customer), status = EXCLUDED.status, record = EXCLUDED.record,
  sent_by = COALESCE(m.sent_by, EXCLUDED.sent_by), created_at = LEAST(m.created_at, EXCLUDED.created_at), touched_at = now(), settled = EXCLUDED.settled`;

/**
 * How long an observation in a stream of them waits for others (its status reaches the
 * supervisor's page 10 ms later): at 1,000 message events a second the bridge's CPU per event
 * fell by a fifth with the embedded history, with the `other` lane's 64 handlers in flight
 * to fill a batch, and the lane kept up (README "Performance").
 */
export const MESSAGE_LINGER_MS = 10;

const safeTime = (iso: string) => (Number.isFinite(Date.parse(iso)) ? new Date(iso).toISOString() : new Date().toISOString());

export class MessagingStore {
  /**
   * Observations that arrive while a transaction is open go together in the next one, and in
   * a steady stream wait `MESSAGE_LINGER_MS` for each other (`group-commit.ts`).
   */
  private readonly applyGrouped = groupCommit(
    async (facts: readonly MessageFact[]) => {
      const out = await this.applyMessages(facts);
      return facts.map((f) => out.get(f.message.id));
    },
    { lingerMs: MESSAGE_LINGER_MS },
  );

  constructor(readonly db: Db) {}

  // ---- messages ---------------------------------------------------------------------

  /**
   * Apply observations (any order, duplicates included) in ONE transaction; returns, per
   * message id, the record after all of them and whether it changed.
   */
  async applyMessages(facts: readonly MessageFact[]): Promise<Map<string, MessageChange>> {
    const out = new Map<string, MessageChange>();
    if (facts.length === 0) return out;
    const ids = [...new Set(facts.map((f) => f.message.id))];
    await this.db.tx(async (sql) => {
      await lockIds(sql, LOCK_MESSAGE, ids);
      const rows = await sql.query<MessageRow>('SELECT id, record, sent_by FROM history_messages WHERE id = ANY($1)', [ids]);
      const before = new Map(rows.map((r) => [r.id, r]));
      const cur = new Map<string, { record: MessageRecord | undefined; sentBy: string | undefined }>();
      for (const id of ids) cur.set(id, { record: before.get(id)?.record, sentBy: before.get(id)?.sent_by ?? undefined });
      for (const f of facts) {
        const c = cur.get(f.message.id)!;
        // Inbound messages have no delivery states: the first observation is the record.
        c.record = f.direction === 'inbound' ? (c.record ?? inboundRecord(f)) : (applyChatMessage(c.record, f.message, c.record?.direction ?? f.direction, f.at) ?? c.record);
        c.sentBy ??= f.sentBy;
      }
      const cols: unknown[][] = [[], [], [], [], [], [], [], []];
      for (const [id, c] of cur) {
        if (!c.record) continue;
        const old = before.get(id);
        const changed = !old || JSON.stringify(old.record) !== JSON.stringify(c.record) || (old.sent_by ?? undefined) !== c.sentBy;
        if (changed) {
          const r = MessageRecord.parse(c.record);
          [id, r.direction, customerOf(r) ?? null, r.status, JSON.stringify(r), c.sentBy ?? null, safeTime(r.createTime), SETTLED.has(r.status)].forEach((v, i) => cols[i]!.push(v));
        }
        const change: MessageChange = { record: c.record, changed };
        if (c.sentBy !== undefined) change.sentBy = c.sentBy;
        out.set(id, change);
      }
      if (cols[0]!.length > 0) await sql.query(UPSERT_MESSAGES, cols);
    });
    return out;
  }

  /**
   * One observation; undefined when it carried nothing to record (an update without a status
   * for an unknown message). Under load it shares a transaction with the observations that
   * came meanwhile (the result is then the record after all of them); one the database
   * refuses fails alone.
   */
  applyMessage(fact: MessageFact): Promise<MessageChange | undefined> {
    return this.applyGrouped(fact);
  }

  async getMessage(id: string): Promise<StoredMessage | null> {
    const [row] = await this.db.query<MessageRow>('SELECT id, record, sent_by FROM history_messages WHERE id = $1', [id]);
    if (!row) return null;
    return row.sent_by === null ? { record: row.record } : { record: row.record, sentBy: row.sent_by };
  }

  /** The customer's messages, newest first (the customer panel). */
  async messagesOf(customer: string, limit = 50): Promise<MessageRecord[]> {
    const rows = await this.db.query<{ record: MessageRecord }>('SELECT record FROM history_messages WHERE customer = $1 ORDER BY created_at DESC, id DESC LIMIT $2', [customer, limit]);
    return rows.map((r) => r.record);
  }

  /**
   * Messages still expecting a status (not read or failed) whose last change is older than
   * `idleBefore`, created after `notBefore` (older ones are left), oldest first.
   */
  async idleMessages(idleBefore: Date, notBefore: Date, limit = 100): Promise<string[]> {
    const rows = await this.db.query<{ id: string }>(
      'SELECT id FROM history_messages WHERE NOT settled AND touched_at < $1 AND created_at >= $2 ORDER BY touched_at LIMIT $3',
      [idleBefore.toISOString(), notBefore.toISOString(), limit],
    );
    return rows.map((r) => r.id);
  }

  /** A reconcile found nothing new: do not ask again before the idle time has passed once more. */
  async touchMessage(id: string): Promise<void> {
    await this.db.query('UPDATE history_messages SET touched_at = now() WHERE id = $1', [id]);
  }

  // ---- template catalog ----------------------------------------------------------------

  async catalog(): Promise<TemplateCatalog> {
    return this.readCatalog(this.db);
  }

  private async readCatalog(sql: Sql): Promise<TemplateCatalog> {
    const rows = await sql.query<{ entry: CatalogTemplate }>('SELECT entry FROM history_templates');
    const state = await sql.query<{ name: string; value: unknown }>('SELECT name, value FROM history_catalog_state');
    const templates = new Map(rows.map((r) => [templateKey(r.entry.wabaId, r.entry.name, r.entry.language), r.entry]));
    const cat: { templates: Map<string, CatalogTemplate>; syncedAt?: number; needsSync?: boolean } = { templates };
    for (const s of state) {
      if (s.name === 'syncedAt' && typeof s.value === 'number') cat.syncedAt = s.value;
      if (s.name === 'needsSync' && s.value === true) cat.needsSync = true;
    }
    return cat;
  }

  /** Read the catalog, change it with a pure function, write what changed: one transaction under the catalog lock. */
  async updateCatalog<T>(change: (c: TemplateCatalog) => { catalog: TemplateCatalog; result: T }): Promise<{ catalog: TemplateCatalog; result: T }> {
    return this.db.tx(async (sql) => {
      await sql.query('SELECT pg_advisory_xact_lock($1, 0)', [LOCK_CATALOG]);
      const before = await this.readCatalog(sql);
      const { catalog, result } = change(before);
      const gone = [...before.templates.keys()].filter((k) => !catalog.templates.has(k));
      if (gone.length) await sql.query('DELETE FROM history_templates WHERE key = ANY($1)', [gone]);
      const changed = [...catalog.templates].filter(([k, t]) => JSON.stringify(before.templates.get(k)) !== JSON.stringify(t));
      if (changed.length) {
        await sql.query(
          'INSERT INTO history_templates (key, entry) SELECT * FROM unnest($1::text[], $2::jsonb[]) ON CONFLICT (key) DO UPDATE SET entry = EXCLUDED.entry',
          [changed.map(([k]) => k), changed.map(([, t]) => JSON.stringify(t))],
        );
      }
      const setState = (name: string, value: unknown) =>
        sql.query('INSERT INTO history_catalog_state (name, value) VALUES ($1, $2::jsonb) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value', [name, JSON.stringify(value)]);
      if (catalog.syncedAt !== before.syncedAt && catalog.syncedAt !== undefined) await setState('syncedAt', catalog.syncedAt);
      if ((catalog.needsSync ?? false) !== (before.needsSync ?? false)) await setState('needsSync', catalog.needsSync ?? false);
      return { catalog, result };
    });
  }

  /** A full `GET /chat/templates` listing fetched at `fetchedAt` (epoch ms). */
  async syncTemplates(items: readonly unknown[], fetchedAt: number): Promise<{ catalog: TemplateCatalog; skipped: number }> {
    const r = await this.updateCatalog((c) => {
      const s = syncTemplates(c, items, fetchedAt);
      return { catalog: s.catalog, result: s.skipped };
    });
    return { catalog: r.catalog, skipped: r.result };
  }

  async applyTemplateEvent(type: Parameters<typeof applyTemplateEvent>[1], payload: unknown, at: number): Promise<TemplateCatalog> {
    return (await this.updateCatalog((c) => ({ catalog: applyTemplateEvent(c, type, payload, at), result: undefined }))).catalog;
  }

  // ---- opt-outs ----------------------------------------------------------------------

  /** The opt-out entries of these customer ids (every channel): enough for `mayMessage`. */
  async optOutsOf(ids: ReadonlyArray<string | undefined>): Promise<OptOuts> {
    const list = ids.filter((x): x is string => !!x);
    const rows = list.length ? await this.db.query<{ customer: string; channel: string; entry: OptOutEntry }>('SELECT customer, channel, entry FROM history_optouts WHERE customer = ANY($1)', [list]) : [];
    return { entries: new Map(rows.map((r) => [`${r.customer}|${r.channel}`, r.entry])) };
  }

  async applyUnsubscribeEvent(type: 'contact.unsubscribe.created' | 'contact.unsubscribe.deleted', payload: unknown, at: number): Promise<OptOutEntry | undefined> {
    return this.db.tx(async (sql) => {
      const customer = customerOfPayload(payload);
      if (!customer) return undefined;
      // Shared: events of different customers run side by side; a full sync (exclusive) waits for them.
      await sql.query('SELECT pg_advisory_xact_lock_shared($1, 0)', [LOCK_OPTOUT]);
      await sql.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [LOCK_OPTOUT + 1, customer]);
      const rows = await sql.query<{ customer: string; channel: string; entry: OptOutEntry }>('SELECT customer, channel, entry FROM history_optouts WHERE customer = $1', [customer]);
      const before: OptOuts = { entries: new Map(rows.map((r) => [`${r.customer}|${r.channel}`, r.entry])) };
      const after = applyUnsubscribeEvent(before, type, payload, at);
      if (after === before) return undefined;
      const [, entry] = [...after.entries].find(([k, e]) => before.entries.get(k) !== e)!;
      await writeOptOuts(sql, [entry]);
      return entry;
    });
  }

  /** A full `GET /unsubscribers` listing fetched at `fetchedAt` (epoch ms): the pure sync over every entry. */
  async syncUnsubscribers(items: readonly unknown[], fetchedAt: number): Promise<{ skipped: number; optedOut: number }> {
    return this.db.tx(async (sql) => {
      // Exclusive: no single event is being applied meanwhile (they hold it shared).
      await sql.query('SELECT pg_advisory_xact_lock($1, 0)', [LOCK_OPTOUT]);
      const rows = await sql.query<{ customer: string; channel: string; entry: OptOutEntry }>('SELECT customer, channel, entry FROM history_optouts');
      const before: OptOuts = { entries: new Map(rows.map((r) => [`${r.customer}|${r.channel}`, r.entry])) };
      const { state, skipped } = syncUnsubscribers(before, items, fetchedAt);
      // Someone no longer listed is kept as a tombstone (not opted out) rather than deleted:
      // an event older than the listing must not bring the opt-out back.
      const entries = new Map(state.entries);
      for (const [k, e] of before.entries) if (!entries.has(k)) entries.set(k, { ...e, optedOut: false, at: fetchedAt });
      const changed = [...entries].filter(([k, e]) => JSON.stringify(before.entries.get(k)) !== JSON.stringify(e)).map(([, e]) => e);
      await writeOptOuts(sql, changed);
      return { skipped, optedOut: [...entries.values()].filter((e) => e.optedOut).length };
    });
  }
}

function customerOfPayload(payload: unknown): string | undefined {
  const p = (payload ?? {}) as Record<string, unknown>;
  for (const k of ['phoneNumber', 'customer', 'email']) if (typeof p[k] === 'string' && p[k]) return p[k] as string;
  return undefined;
}

async function writeOptOuts(sql: Sql, entries: OptOutEntry[]): Promise<void> {
  if (entries.length === 0) return;
  await sql.query(
    'INSERT INTO history_optouts (customer, channel, entry) SELECT * FROM unnest($1::text[], $2::text[], $3::jsonb[]) ON CONFLICT (customer, channel) DO UPDATE SET entry = EXCLUDED.entry',
    [entries.map((e) => e.customer), entries.map((e) => e.channel), entries.map((e) => JSON.stringify(e))],
  );
}

/** An inbound message's record: status `received`, no delivery states. */
function inboundRecord(f: MessageFact): MessageRecord {
  const m = f.message as ChatMessage & { fromUserId?: string; userId?: string; interactive?: { type?: string } };
  const at = m.createTime ?? f.at;
  const r: MessageRecord = {
    id: m.id,
    direction: 'inbound',
    from: m.from ?? m.fromUserId ?? m.userId ?? '',
    type: m.type ?? 'unknown',
    status: 'received',
    statusHistory: [{ status: 'received', at }],
    createTime: at,
    updateTime: at,
  };
  if (m.to !== undefined) r.to = m.to;
  if (m.fromUserId ?? m.userId) r.recipient = (m.fromUserId ?? m.userId)!;
  if (m.wamid !== undefined) r.wamid = m.wamid;
  if (m.text?.body !== undefined) r.text = m.text.body;
  return r;
}
