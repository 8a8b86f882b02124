/**
 * Opt-outs (unsubscribers), the pure part: who must not be sent messages on which channel,
 * from the initial `GET /unsubscribers` listing and the `contact.unsubscribe.created` /
 * `contact.unsubscribe.deleted` events; and `mayMessage`, asked before any send (a direct
 * send does not filter: "caller must check suppression itself", part 4).
 *
 * The interface keys an unsubscriber by customer and channel (`/unsubscribers/{customer}/
 * {channel}`), not by business number: an opt-out holds for every business number of the
 * account. Event payloads name `phoneNumber`, `source`, `updateTime`; the channel is not
 * shown in them, so an event without one counts for every channel (`*`) — the safe
 * reading: when unsure, don't send. Events arrive late and out of order: each entry keeps
 * the time of what set it and an older report never overwrites a newer one (a delete
 * leaves a tombstone for that reason). No I/O, no clock.
 */
import { UnsubscriberChanged } from '../../shared/events.ts';

/** The channel an event or item without one applies to: all of them. */
export const ANY_CHANNEL = '*';
/** The chat channel's name in the unsubscriber endpoints (our emulator's; the interface does not show the values). */
export const CHAT_CHANNEL = 'chat';

export interface OptOutEntry {
  customer: string;
  /** Lower case, or `*` for every channel. */
  channel: string;
  optedOut: boolean;
  source?: string;
  /** Epoch ms of what set this entry (event `updateTime`, or the listing's fetch time). */
  at: number;
}

export interface OptOuts {
  readonly entries: ReadonlyMap<string, OptOutEntry>;
  readonly syncedAt?: number;
}

const keyOf = (customer: string, channel: string) => `${customer}|${channel}`;
const normChannel = (c: unknown) => (typeof c === 'string' && c.trim() ? c.trim().toLowerCase() : ANY_CHANNEL);
const str = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);
const timeOf = (v: unknown): number | undefined => {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  const t = typeof v === 'string' ? Date.parse(v) : Number.NaN;
  return Number.isFinite(t) ? t : undefined;
};

export const emptyOptOuts = (): OptOuts => ({ entries: new Map() });

/** Newer wins; on a tie the opt-out wins (never send when two reports disagree at one instant). */
const wins = (cur: OptOutEntry | undefined, next: OptOutEntry) => !cur || next.at > cur.at || (next.at === cur.at && next.optedOut && !cur.optedOut);

/**
 * After a full `GET /unsubscribers` listing (every page) fetched at `fetchedAt`: every
 * listed customer and channel is opted out; entries an event set after the fetch are kept
 * as they are; anyone else is no longer opted out. Items naming no customer are skipped.
 */
export function syncUnsubscribers(state: OptOuts, items: readonly unknown[], fetchedAt: number): { state: OptOuts; skipped: number } {
  const next = new Map<string, OptOutEntry>();
  let skipped = 0;
  for (const raw of items) {
    const it = (raw ?? {}) as Record<string, unknown>;
    const customer = str(it.customer) ?? str(it.phoneNumber) ?? str(it.email);
    if (!customer) {
      skipped++;
      continue;
    }
    const channel = normChannel(it.channel);
    const e: OptOutEntry = { customer, channel, optedOut: true, at: fetchedAt };
    const source = str(it.source);
    if (source) e.source = source;
    next.set(keyOf(customer, channel), e);
  }
  for (const [k, cur] of state.entries) if (cur.at > fetchedAt) next.set(k, cur);
  return { state: { entries: next, syncedAt: fetchedAt }, skipped };
}

/**
 * An unsubscribe event applied (`payload` is `unsubscriberChanged`, `at` the envelope's time
 * in epoch ms; the payload's `updateTime` wins when present). A payload naming no customer
 * changes nothing.
 */
export function applyUnsubscribeEvent(state: OptOuts, type: 'contact.unsubscribe.created' | 'contact.unsubscribe.deleted', payload: unknown, at: number): OptOuts {
  const parsed = UnsubscriberChanged.safeParse(payload);
  if (!parsed.success) return state;
  const p = parsed.data as Record<string, unknown>;
  const customer = str(p.phoneNumber) ?? str(p.customer) ?? str(p.email);
  if (!customer) return state;
  const channel = normChannel(p.channel);
  const entry: OptOutEntry = { customer, channel, optedOut: type === 'contact.unsubscribe.created', at: timeOf(p.updateTime) ?? at };
  const source = str(p.source);
  if (source) entry.source = source;
  const key = keyOf(customer, channel);
  if (!wins(state.entries.get(key), entry)) return state;
  const entries = new Map(state.entries);
  entries.set(key, entry);
  return { ...state, entries };
}

export type MayMessage = { ok: true } | { ok: false; code: 'OPTED_OUT'; customer: string; channel: string; source?: string; since: number; message: string };

/**
 * May this customer be sent a message on `channel` (default the chat channel)? `ids` are
 * every identifier we have for the customer (E.164 number, BSUID): an opt-out under any of
 * them refuses. An opt-out for every channel (`*`) refuses too.
 */
export function mayMessage(state: OptOuts, ids: ReadonlyArray<string | undefined>, channel: string = CHAT_CHANNEL): MayMessage {
  const ch = normChannel(channel);
  for (const id of ids) {
    if (!id) continue;
    for (const c of ch === ANY_CHANNEL ? [ANY_CHANNEL] : [ch, ANY_CHANNEL]) {
      const e = state.entries.get(keyOf(id, c));
      if (e?.optedOut) {
        const where = c === ANY_CHANNEL ? 'all messages' : `${c} messages`;
        const from = e.source ? ` (source ${e.source})` : '';
        const r: MayMessage = {
          ok: false,
          code: 'OPTED_OUT',
          customer: id,
          channel: c,
          since: e.at,
          message: `${id} unsubscribed from ${where}${from} on ${new Date(e.at).toISOString()}; nothing is sent to an unsubscribed customer`,
        };
        if (e.source) r.source = e.source;
        return r;
      }
    }
  }
  return { ok: true };
}
