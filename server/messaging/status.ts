/**
 * Message status, the pure part (interface part 3, "Message status" and "Echo message"):
 * how one status observation changes a `MessageRecord`, and how a `chatMessage` payload
 * (`chat.message.updated`, `chat.echo_message.created` / `.updated`) becomes one.
 *
 * Events repeat, arrive late and out of order (a late `sent` can follow `read`), so the
 * result must not depend on the order: the view is the highest-ranked status seen, the
 * history is the set of distinct observations kept sorted, `updateTime` is the latest
 * observation, and the price comes from the highest-ranked status that carried one. Any
 * order of the same events (duplicates included) gives the same record. No I/O, no clock.
 */
import type { ChatMessage } from '../../shared/events.ts';
import { MESSAGE_STATUSES, type MessageDirection, type MessageRecord, type MessageStatus, type MessageStatusEntry } from '../../shared/records.ts';

/**
 * Rank of each status in the view. `failed` sits above `sent` (it can follow `accepted` or
 * `sent`) and below `delivered`: a failure reported after delivery or read is recorded but
 * never lowers the view (part 3: a failed echo is a separate message, not a move from
 * read), and since the view must not depend on the order, `delivered` / `read` also win
 * over a `failed` that arrived before them (reconcile by fetching the message if it matters).
 * `read` counts as evidence of delivery, so `read` without `delivered` is fine.
 */
export const STATUS_RANK: Readonly<Record<MessageStatus, number>> = { received: 0, accepted: 0, sent: 1, failed: 2, delivered: 3, read: 4 };

/** Statuses whose event carries the final price (part 2: final once `delivered` or `read`). */
const PRICE_FINAL = new Set<MessageStatus>(['delivered', 'read']);

/** One status observation, as taken from an event or a fetch of the message. */
export interface StatusUpdate {
  status: MessageStatus;
  /** ISO time of the observation (the status's own timestamp when the Service gave one). */
  at: string;
  errorCode?: string;
  errorMessage?: string;
  totalPrice?: number;
  currency?: string;
  wamid?: string;
}

const timeOf = (iso: string): number => {
  const t = Date.parse(iso);
  return Number.isFinite(t) ? t : Number.NaN;
};

/** Order of history entries: time, then status rank, then the error fields (a total order). */
function compareEntries(a: MessageStatusEntry, b: MessageStatusEntry): number {
  const ta = timeOf(a.at);
  const tb = timeOf(b.at);
  if (ta !== tb && !(Number.isNaN(ta) && Number.isNaN(tb))) {
    if (Number.isNaN(ta)) return 1; // unreadable times last
    if (Number.isNaN(tb)) return -1;
    return ta - tb;
  }
  return (
    STATUS_RANK[a.status] - STATUS_RANK[b.status] ||
    cmp(a.status, b.status) ||
    cmp(a.at, b.at) ||
    cmp(a.errorCode ?? '', b.errorCode ?? '') ||
    cmp(a.errorMessage ?? '', b.errorMessage ?? '')
  );
}
const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

const sameEntry = (a: MessageStatusEntry, b: MessageStatusEntry) =>
  a.status === b.status && a.at === b.at && a.errorCode === b.errorCode && a.errorMessage === b.errorMessage;

const later = (a: string, b: string) => (timeOf(b) > timeOf(a) || (Number.isNaN(timeOf(a)) && !Number.isNaN(timeOf(b))) ? b : a);

/**
 * Apply one status observation. Returns a new record (the input is not changed):
 * - `statusHistory` gains the observation unless the same one is there already (a
 *   redelivered event, or a dead letter replayed, changes nothing);
 * - `status` moves only up the rank (`accepted < sent < failed < delivered < read`);
 * - `updateTime` is the latest observation's time;
 * - `totalPrice` / `currency`: a price from `delivered` or `read` is final and is never
 *   replaced by an estimate; otherwise the price of the higher-ranked status wins.
 */
export function applyStatus(record: MessageRecord, update: StatusUpdate): MessageRecord {
  const entry: MessageStatusEntry = { status: update.status, at: update.at };
  if (update.errorCode !== undefined) entry.errorCode = update.errorCode;
  if (update.errorMessage !== undefined) entry.errorMessage = update.errorMessage;

  const next: MessageRecord = { ...record };
  if (!record.statusHistory.some((e) => sameEntry(e, entry))) {
    next.statusHistory = [...record.statusHistory, entry].sort(compareEntries);
  }
  if (STATUS_RANK[update.status] > STATUS_RANK[record.status]) next.status = update.status;
  next.updateTime = later(record.updateTime, update.at);
  if (update.wamid !== undefined && record.wamid === undefined) next.wamid = update.wamid;

  if (update.totalPrice !== undefined && takesPrice(record, update)) {
    next.totalPrice = update.totalPrice;
    if (update.currency !== undefined) next.currency = update.currency;
    else delete next.currency;
    next.priceStatus = update.status;
    if (PRICE_FINAL.has(update.status)) next.priceFinal = true;
    else delete next.priceFinal;
  }
  return next;
}

function takesPrice(record: MessageRecord, update: StatusUpdate): boolean {
  if (record.totalPrice === undefined) return true;
  const final = PRICE_FINAL.has(update.status);
  if (final !== (record.priceFinal === true)) return final;
  const cur = record.priceStatus ?? 'accepted';
  // Same rank (two observations of one status): the smaller price (a deterministic tie-break).
  if (STATUS_RANK[update.status] === STATUS_RANK[cur]) return update.totalPrice! < record.totalPrice;
  return STATUS_RANK[update.status] > STATUS_RANK[cur];
}

const isStatus = (s: unknown): s is Exclude<MessageStatus, 'received'> => typeof s === 'string' && s !== 'received' && (MESSAGE_STATUSES as readonly string[]).includes(s);

/** The status's own timestamp in a chat message, when the Service gave it. */
function statusTime(m: ChatMessage, status: MessageStatus): string | undefined {
  switch (status) {
    case 'accepted':
      return m.createTime ?? m.updateTime;
    case 'sent':
      return m.sendTime ?? m.updateTime;
    case 'delivered':
      return m.deliverTime ?? m.updateTime;
    case 'read':
      return m.readTime ?? m.updateTime;
    default:
      return m.updateTime;
  }
}

/**
 * The status observation a `chatMessage` payload carries, or undefined when it carries
 * none (no status, or a status this model does not know: kept out rather than guessed).
 * `fallbackAt` (the envelope's `createTime`) is used when the payload has no time.
 */
export function statusUpdateOf(m: ChatMessage, fallbackAt: string): StatusUpdate | undefined {
  if (!isStatus(m.status)) return undefined;
  const u: StatusUpdate = { status: m.status, at: statusTime(m, m.status) ?? fallbackAt };
  if (m.errorCode !== undefined) u.errorCode = String(m.errorCode);
  if (m.errorMessage !== undefined) u.errorMessage = m.errorMessage;
  if (m.totalPrice !== undefined) u.totalPrice = m.totalPrice;
  if (m.currency !== undefined) u.currency = m.currency;
  if (m.wamid !== undefined) u.wamid = m.wamid;
  return u;
}

type TemplatePayload = { name?: unknown; language?: { code?: unknown } | unknown; components?: unknown };

/** `template` of a send body or chat message → the record's `{name, language, parameters?}`. */
function templateOf(t: unknown): MessageRecord['template'] | undefined {
  if (!t || typeof t !== 'object') return undefined;
  const tp = t as TemplatePayload;
  const lang = typeof tp.language === 'string' ? tp.language : (tp.language as { code?: unknown } | undefined)?.code;
  if (typeof tp.name !== 'string' || typeof lang !== 'string') return undefined;
  const ref: NonNullable<MessageRecord['template']> = { name: tp.name, language: lang };
  const body = Array.isArray(tp.components) ? tp.components.find((c) => (c as { type?: unknown })?.type === 'body' || (c as { type?: unknown })?.type === 'BODY') : undefined;
  const params = (body as { parameters?: unknown } | undefined)?.parameters;
  if (Array.isArray(params)) ref.parameters = params.map((p) => (p as { text?: unknown })?.text).filter((x): x is string => typeof x === 'string');
  return ref;
}

/**
 * The content a chat message payload carries (echo `created` events and send responses
 * do; status updates and echo updates omit it), as record fields.
 */
function contentOf(m: ChatMessage): Partial<MessageRecord> {
  const c: Partial<MessageRecord> = {};
  if (m.from !== undefined) c.from = m.from;
  if (m.to !== undefined) c.to = m.to;
  const recipient = m.recipient ?? m.recipientUserId;
  if (recipient !== undefined) c.recipient = recipient;
  if (m.type !== undefined) c.type = m.type;
  if (m.text?.body !== undefined) c.text = m.text.body;
  const template = templateOf((m as Record<string, unknown>).template);
  if (template) c.template = template;
  if (m.wamid !== undefined) c.wamid = m.wamid;
  return c;
}

/**
 * A chat message payload applied to what we know of that message (undefined: nothing yet,
 * e.g. an echo update that came before its `created` event). Content fields fill only what
 * is absent (updates carry none, `created` carries it once), then the status is applied.
 * Returns undefined only when there is no record and the payload has no status either.
 */
export function applyChatMessage(record: MessageRecord | undefined, m: ChatMessage, direction: MessageDirection, fallbackAt: string): MessageRecord | undefined {
  const update = statusUpdateOf(m, fallbackAt);
  const content = contentOf(m);
  let base: MessageRecord;
  if (record) {
    base = { ...record };
    if (base.type === 'unknown' && content.type) base.type = content.type;
    for (const k of ['from', 'to', 'recipient', 'text', 'template', 'wamid'] as const) {
      if ((base[k] === undefined || base[k] === '') && content[k] !== undefined) (base as Record<string, unknown>)[k] = content[k];
    }
    // The earliest time seen is the creation (an update may come before its `created`).
    const created = m.createTime ?? update?.at;
    if (created !== undefined && timeOf(created) < timeOf(base.createTime)) base.createTime = created;
  } else {
    if (!update) return undefined;
    const createTime = m.createTime ?? update.at;
    base = {
      id: m.id,
      direction,
      from: content.from ?? '',
      type: content.type ?? 'unknown',
      status: update.status,
      statusHistory: [],
      createTime,
      updateTime: createTime,
    };
    for (const k of ['to', 'recipient', 'text', 'template', 'wamid'] as const) if (content[k] !== undefined) (base as Record<string, unknown>)[k] = content[k];
  }
  return update ? applyStatus(base, update) : base;
}

/** A new outbound record from the Service's send response (status `accepted`, estimated price). */
export function recordFromSend(response: ChatMessage, sentAt: string): MessageRecord {
  const rec = applyChatMessage(undefined, { ...response, status: isStatus(response.status) ? response.status : 'accepted' }, 'outbound', sentAt);
  return rec!;
}
