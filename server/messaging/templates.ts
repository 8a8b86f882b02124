/**
 * Template catalog, the pure part: what we know of each template (by business account,
 * name and language) from a `GET /chat/templates` sync and the `chat.template.reviewed`,
 * `chat.template.quality_updated` and `chat.template.category_updated` events; and the one
 * sending rule (interface part 3): only a template whose current status is `APPROVED` may
 * be offered or sent, every other status blocks.
 *
 * Events arrive late and out of order, so each part of an entry (status, quality, category)
 * remembers the time of what set it and an older report never overwrites a newer one. A
 * sync is the truth as of the moment it was fetched. No I/O, no clock.
 */
import { z } from 'zod';
import { ChatTemplateEvent } from '../../shared/events.ts';

/** Statuses of part 3, plus `UNARCHIVED`: the target an unarchive event names (what follows it is not shown). */
export const TEMPLATE_STATUSES = ['PENDING', 'APPROVED', 'REJECTED', 'PAUSED', 'DISABLED', 'IN_APPEAL', 'ARCHIVED', 'DELETED', 'UNARCHIVED'] as const;

export interface CatalogTemplate {
  wabaId: string;
  name: string;
  /** Exact, case-sensitive locale code. */
  language: string;
  officialTemplateId?: string;
  /** Upper case; any string the Service sends (only `APPROVED` is sendable). */
  status: string;
  category?: string;
  qualityRating?: string;
  components?: unknown[];
  /** Review reason of the latest status event, when given (e.g. `INVALID_FORMAT`). */
  reason?: string;
  /** Epoch ms of what set `status` (event time, or the sync's fetch time). */
  statusAt: number;
  qualityAt?: number;
  categoryAt?: number;
  /** The status we hold is not one to act on (after an unarchive): fetch the template list to learn it. */
  needsSync?: boolean;
}

export interface TemplateCatalog {
  /** By `templateKey(wabaId, name, language)`. */
  readonly templates: ReadonlyMap<string, CatalogTemplate>;
  /** Epoch ms of the last sync. */
  readonly syncedAt?: number;
  /** An event named a template we could not place: a sync would tell more. */
  readonly needsSync?: boolean;
}

export const templateKey = (wabaId: string, name: string, language: string) => `${wabaId}|${name}|${language}`;

export const emptyCatalog = (): TemplateCatalog => ({ templates: new Map() });

/** One template as `GET /chat/templates` lists it (part 2 field names; others pass). */
export const ListedTemplate = z.looseObject({
  wabaId: z.string().min(1),
  name: z.string().min(1),
  language: z.string().min(1),
  status: z.string().min(1),
  officialTemplateId: z.string().optional(),
  category: z.string().optional(),
  qualityRating: z.string().optional(),
  components: z.array(z.unknown()).optional(),
});
export type ListedTemplate = z.infer<typeof ListedTemplate>;

/**
 * The catalog after a full listing (every page, no status filter) fetched at `fetchedAt`.
 * An entry whose status an event set after `fetchedAt` keeps it (the event is newer than
 * the list); a template missing from the list is dropped unless an event after the fetch
 * announced it. Items that are not templates are skipped and counted.
 */
export function syncTemplates(catalog: TemplateCatalog, items: readonly unknown[], fetchedAt: number): { catalog: TemplateCatalog; skipped: number } {
  const next = new Map<string, CatalogTemplate>();
  let skipped = 0;
  for (const raw of items) {
    const p = ListedTemplate.safeParse(raw);
    if (!p.success) {
      skipped++;
      continue;
    }
    const t = p.data;
    const key = templateKey(t.wabaId, t.name, t.language);
    const cur = catalog.templates.get(key);
    const entry: CatalogTemplate = { ...cur, wabaId: t.wabaId, name: t.name, language: t.language, status: t.status.toUpperCase(), statusAt: fetchedAt };
    delete entry.needsSync;
    delete entry.reason;
    if (t.officialTemplateId !== undefined) entry.officialTemplateId = t.officialTemplateId;
    if (t.components !== undefined) entry.components = t.components;
    if (cur && cur.statusAt > fetchedAt) Object.assign(entry, pick(cur, ['status', 'statusAt', 'reason', 'needsSync']));
    if (t.category !== undefined && !(cur?.categoryAt !== undefined && cur.categoryAt > fetchedAt)) Object.assign(entry, { category: t.category, categoryAt: fetchedAt });
    if (t.qualityRating !== undefined && !(cur?.qualityAt !== undefined && cur.qualityAt > fetchedAt)) Object.assign(entry, { qualityRating: t.qualityRating, qualityAt: fetchedAt });
    next.set(key, entry);
  }
  for (const [key, cur] of catalog.templates) if (!next.has(key) && cur.statusAt > fetchedAt) next.set(key, cur);
  return { catalog: { templates: next, syncedAt: fetchedAt }, skipped };
}

function pick<T extends object, K extends keyof T>(o: T, keys: K[]): Partial<T> {
  const out: Partial<T> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

export type TemplateEventType = 'chat.template.reviewed' | 'chat.template.quality_updated' | 'chat.template.category_updated';

const timeOf = (v: unknown): number | undefined => {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v !== 'string') return undefined;
  const t = Date.parse(v);
  return Number.isFinite(t) ? t : undefined;
};
const str = (v: unknown) => (typeof v === 'string' && v.length > 0 ? v : undefined);

/**
 * A template event applied. `payload` is the event's payload object, `at` the envelope's
 * time in epoch ms (the payload's `updateTime` wins when present). Payload fields beyond
 * the template's identity are not shown by the interface: the status is `status` (or
 * `event`), the quality `qualityRating` (or `newQualityScore`), the category `category`
 * (or `newCategory`). A payload that names no template we can place marks the catalog
 * `needsSync` and changes nothing else.
 */
export function applyTemplateEvent(catalog: TemplateCatalog, type: TemplateEventType, payload: unknown, at: number): TemplateCatalog {
  const parsed = ChatTemplateEvent.safeParse(payload);
  if (!parsed.success) return { ...catalog, needsSync: true };
  const p = parsed.data as Record<string, unknown>;
  const when = timeOf(p.updateTime) ?? at;

  let key: string | undefined;
  const wabaId = str(p.wabaId);
  const name = str(p.name);
  const language = str(p.language);
  if (wabaId && name && language) key = templateKey(wabaId, name, language);
  else if (str(p.officialTemplateId)) {
    for (const [k, t] of catalog.templates) if (t.officialTemplateId === p.officialTemplateId) key = k;
  }
  const cur = key ? catalog.templates.get(key) : undefined;
  if (!key || (!cur && !(wabaId && name && language))) return { ...catalog, needsSync: true };

  const entry: CatalogTemplate = cur ? { ...cur } : { wabaId: wabaId!, name: name!, language: language!, status: 'PENDING', statusAt: 0, needsSync: true };
  if (str(p.officialTemplateId) && entry.officialTemplateId === undefined) entry.officialTemplateId = p.officialTemplateId as string;

  if (type === 'chat.template.reviewed') {
    const status = (str(p.status) ?? str(p.event))?.toUpperCase();
    if (!status) return { ...catalog, needsSync: true };
    // Newer wins; on a tie, the blocking status wins (never offer what might be blocked).
    if (when > entry.statusAt || (when === entry.statusAt && status !== 'APPROVED')) {
      entry.status = status;
      entry.statusAt = when;
      const reason = str(p.reason);
      if (reason) entry.reason = reason;
      else delete entry.reason;
      // What an unarchived template becomes is not shown: hold it blocked until a sync says.
      if (status === 'UNARCHIVED') entry.needsSync = true;
      else delete entry.needsSync;
    }
    if (str(p.category) && (entry.categoryAt === undefined || when > entry.categoryAt)) Object.assign(entry, { category: p.category, categoryAt: when });
  } else if (type === 'chat.template.quality_updated') {
    const q = str(p.qualityRating) ?? str(p.newQualityScore) ?? str(p.new_quality_score);
    if (q && (entry.qualityAt === undefined || when > entry.qualityAt)) Object.assign(entry, { qualityRating: q, qualityAt: when });
  } else {
    const c = str(p.newCategory) ?? str(p.new_category) ?? str(p.category);
    if (c && (entry.categoryAt === undefined || when > entry.categoryAt)) Object.assign(entry, { category: c, categoryAt: when });
  }
  const templates = new Map(catalog.templates);
  templates.set(key, entry);
  return { ...catalog, templates };
}

/** Why a status blocks sends, in words for the person who picked the template. */
const BLOCKED_BECAUSE: Record<string, string> = {
  PENDING: 'is waiting for review',
  REJECTED: 'was rejected in review',
  PAUSED: 'is paused (low quality)',
  DISABLED: 'is disabled',
  IN_APPEAL: 'is in appeal after a rejection',
  ARCHIVED: 'is archived',
  DELETED: 'was deleted',
  UNARCHIVED: 'was unarchived and its new status is not known yet',
};

export type Sendable =
  | { ok: true; template: CatalogTemplate }
  | { ok: false; code: 'UNKNOWN_TEMPLATE' | 'TEMPLATE_NOT_APPROVED'; status?: string; message: string };

/**
 * May this template be sent now? Only `APPROVED` may. With `wabaId` (the business
 * number's account) the answer is about that account's template; without it, any
 * account's APPROVED template of that name and language answers `ok`.
 */
export function sendableTemplate(catalog: TemplateCatalog, name: string, language: string, wabaId?: string): Sendable {
  const matches = [...catalog.templates.values()].filter((t) => t.name === name && t.language === language && (wabaId === undefined || t.wabaId === wabaId));
  const approved = matches.find((t) => t.status === 'APPROVED' && !t.needsSync);
  if (approved) return { ok: true, template: approved };
  const label = `template ${name} (${language})`;
  if (matches.length === 0) {
    const other = [...catalog.templates.values()].filter((t) => t.name === name && (wabaId === undefined || t.wabaId === wabaId)).map((t) => t.language);
    const hint = other.length ? `; it exists in ${[...new Set(other)].sort().join(', ')} (the language code is exact and case-sensitive)` : '';
    return { ok: false, code: 'UNKNOWN_TEMPLATE', message: `${label} is not known${wabaId ? ` for business account ${wabaId}` : ''}${hint}` };
  }
  // The most recently reported status says why.
  const latest = matches.reduce((a, b) => (b.statusAt > a.statusAt ? b : a));
  const why = BLOCKED_BECAUSE[latest.status] ?? `has status ${latest.status}`;
  return { ok: false, code: 'TEMPLATE_NOT_APPROVED', status: latest.status, message: `${label} ${why} (status ${latest.status}); only APPROVED templates can be sent` };
}

/** Templates that may be offered in a picker: APPROVED only (optionally one account's), by name then language. */
export function offerableTemplates(catalog: TemplateCatalog, wabaId?: string): CatalogTemplate[] {
  return [...catalog.templates.values()]
    .filter((t) => t.status === 'APPROVED' && !t.needsSync && (wabaId === undefined || t.wabaId === wabaId))
    .sort((a, b) => (a.name === b.name ? (a.language < b.language ? -1 : 1) : a.name < b.name ? -1 : 1));
}
