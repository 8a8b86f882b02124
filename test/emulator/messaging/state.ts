/**
 * In-memory state of the messaging surface and the runtime every route module shares.
 * Records are plain objects shaped like the interface's resources so a route can return
 * them as they are; history that the interface keeps out of the view (status history,
 * owner key) lives beside the view, not in it.
 */
import { createHash } from 'node:crypto';
import type { EmulatorContext } from '../context.ts';
import type { Knobs } from './knobs.ts';
import type { Scheduler } from './scheduler.ts';

export type Json = Record<string, unknown>;

export type MessageStatus = 'accepted' | 'sent' | 'delivered' | 'read' | 'failed';
/** Rank of a status for "never lower the view": failed sits with read as terminal. */
export const STATUS_RANK: Record<MessageStatus, number> = { accepted: 0, sent: 1, delivered: 2, read: 3, failed: 3 };

export interface MessageRecord {
  view: Json & { id: string; status: MessageStatus };
  /** Every status event emitted, in order, including duplicates and late ones. */
  history: MessageStatus[];
  owner: string;
  /** The final charge was taken (once, at the first delivered or read). */
  charged?: boolean;
}

export interface TemplateRecord extends Json {
  officialTemplateId: string;
  wabaId: string;
  name: string;
  language: string;
  category: 'AUTHENTICATION' | 'UTILITY' | 'MARKETING';
  status: string;
  components: Json[];
  bidSpec?: { maxBid: string; countryPriceAdjustments?: Array<{ countryCode: string; multiplier: string }> };
  createTime: string;
  updateTime: string;
}

export interface GroupRecord {
  groupId: string;
  businessNumber: string;
  subject: string;
  description: string;
  joinApprovalMode: 'auto_approve' | 'approval_required';
  inviteLink: string;
  participants: Array<{ user: string; joinTime: string }>;
  joinRequests: Array<{ joinRequestId: string; user: string; createTime: string }>;
  createTime: string;
  owner: string;
}

export interface GroupMessageRecord {
  view: Json & { id: string; groupId: string; status: 'accepted' | 'sent' | 'failed'; recipients: Array<Json & { status: MessageStatus }> };
  owner: string;
}

export interface Unsubscriber {
  customer: string;
  channel: string;
  source: string;
  updateTime: string;
}

export interface State {
  balance: { amount: number; currency: string };
  businessAccounts: Map<string, Json & { wabaId: string }>;
  /** phoneId → phone number object (interface field names). */
  phoneNumbers: Map<string, Json & { id: string; phoneNumber: string; wabaId: string }>;
  /** phoneId → API key of the owning tenant (kept out of the number's JSON). */
  numberOwners: Map<string, string>;
  profiles: Map<string, Json>;
  commerceSettings: Map<string, Json>;
  creativeOptimizations: Map<string, Json>;
  registered: Map<string, Json>;
  /** business E.164 → BSUIDs of users in its contact book. */
  contactBook: Map<string, Set<string>>;
  messages: Map<string, MessageRecord>;
  inbound: Map<string, Json & { id: string; owner: string; readTime?: string }>;
  /** `${business}|${user}` → epoch ms of each accepted call-permission request. */
  permissionRequests: Map<string, number[]>;
  /** `${wabaId}|${name}|${language}` → template. */
  templates: Map<string, TemplateRecord>;
  /** officialTemplateId → epoch ms of edits (all, and those that changed components). */
  templateEdits: Map<string, { all: number[]; content: number[] }>;
  sms: Json[];
  emails: Map<string, Json>;
  voices: Map<string, Json>;
  groups: Map<string, GroupRecord>;
  groupMessages: Map<string, GroupMessageRecord>;
  flows: Map<string, Json & { id: string; status: string }>;
  contacts: Map<string, Json & { id: string }>;
  attributes: Map<string, Json & { name: string }>;
  /** noteId → note (contactId inside). */
  notes: Map<string, Json & { id: string; contactId: string }>;
  unsubscribers: Unsubscriber[];
  events: Json[];
  verifications: Map<string, Json>;
}

/** What every route module gets. */
export interface Runtime {
  ctx: EmulatorContext;
  knobs: Knobs;
  sched: Scheduler;
  state: State;
  /** Emulated now as an ISO string with milliseconds. */
  iso(): string;
}

export const templateKey = (wabaId: string, name: string, language: string) => `${wabaId}|${name}|${language}`;

/** Default seed used when the core registered no phone number: one account, two numbers. */
export const SEED = {
  wabaId: '102290129340398',
  businessId: '504217399123456',
  numbers: [
    { id: '106540352242922', phoneNumber: '+15550100001' },
    { id: '106540352242923', phoneNumber: '+15550100002' },
  ],
} as const;

const COUNTRY_BY_PREFIX: Array<[string, string]> = [
  ['+1', 'US'], ['+44', 'GB'], ['+49', 'DE'], ['+33', 'FR'], ['+34', 'ES'], ['+39', 'IT'], ['+31', 'NL'],
  ['+91', 'IN'], ['+55', 'BR'], ['+52', 'MX'], ['+62', 'ID'], ['+86', 'CN'], ['+81', 'JP'], ['+61', 'AU'],
  ['+234', 'NG'], ['+27', 'ZA'], ['+971', 'AE'], ['+65', 'SG'],
];
/** Region of a user: the BSUID's prefix, or the country of the number's calling code. */
export function regionOf(user: string): string {
  if (!user.startsWith('+')) return user.slice(0, 2);
  const hit = COUNTRY_BY_PREFIX.filter(([p]) => user.startsWith(p)).sort((a, b) => b[0].length - a[0].length)[0];
  return hit ? hit[1] : 'ZZ';
}

/**
 * The BSUID the emulator gives a user number: derived from the number (not from the rng)
 * so the same user keeps the same BSUID whatever else happened in the run.
 */
export function bsuidFor(user: string): string {
  if (!user.startsWith('+')) return user;
  return `${regionOf(user)}.${createHash('sha256').update(user).digest('hex').slice(0, 24).toUpperCase()}`;
}

/**
 * A uniform [0, 1) number fixed by (seed, key). Used for choices made inside timers: the
 * shared ctx.rng would hand out values in whatever order concurrent messages' timers
 * happen to fire, so a message's price would depend on wall-clock interleaving.
 */
export function detRandom(seed: number, key: string): number {
  return createHash('sha256').update(`${seed}:${key}`).digest().readUIntBE(0, 6) / 2 ** 48;
}

export function createState(ctx: EmulatorContext, iso: string): State {
  const s: State = {
    balance: { amount: 1000, currency: 'USD' },
    businessAccounts: new Map(),
    phoneNumbers: new Map(),
    numberOwners: new Map(),
    profiles: new Map(),
    commerceSettings: new Map(),
    creativeOptimizations: new Map(),
    registered: new Map(),
    contactBook: new Map(),
    messages: new Map(),
    inbound: new Map(),
    permissionRequests: new Map(),
    templates: new Map(),
    templateEdits: new Map(),
    sms: [],
    emails: new Map(),
    voices: new Map(),
    groups: new Map(),
    groupMessages: new Map(),
    flows: new Map(),
    contacts: new Map(),
    attributes: new Map(),
    notes: new Map(),
    unsubscribers: [],
    events: [],
    verifications: new Map(),
  };
  // The core may have registered numbers already (its calls need them); reuse those and
  // only seed ours when there are none, so both halves agree on phoneId ↔ number.
  if (ctx.phoneNumbers.size === 0) {
    for (const n of SEED.numbers) ctx.phoneNumbers.set(n.id, { ...n, wabaId: SEED.wabaId });
  }
  for (const n of ctx.phoneNumbers.values()) {
    if (!s.businessAccounts.has(n.wabaId)) {
      s.businessAccounts.set(n.wabaId, {
        wabaId: n.wabaId,
        businessId: SEED.businessId,
        businessStatus: 'verified',
        businessName: 'Switchboard Demo Co',
        paymentMethodAttached: true,
        authIntlRateEligibilityCountries: ['IN', 'ID'],
        primaryBusinessLocation: 'US',
        chatBusinessManagerMessagingLimit: 'TIER_10K',
        currency: 'USD',
        createTime: iso,
      });
      s.creativeOptimizations.set(n.wabaId, { wabaId: n.wabaId, enabled: false, features: { imageEnhancement: false, textOptimization: false }, updateTime: iso });
    }
    if (n.owner) s.numberOwners.set(n.id, n.owner);
    const digits = n.phoneNumber.slice(1);
    s.phoneNumbers.set(n.id, {
      id: n.id,
      phoneNumber: n.phoneNumber,
      displayPhoneNumber: `+${digits.slice(0, 1)} ${digits.slice(1, 4)}-${digits.slice(4, 7)}-${digits.slice(7)}`,
      wabaId: n.wabaId,
      verifiedName: 'Switchboard Demo',
      nameStatus: 'APPROVED',
      messagingLimit: 'TIER_10K',
      chatBusinessManagerMessagingLimit: 'TIER_10K',
      qualityRating: 'GREEN',
      isOfficialBusinessAccount: false,
    });
    s.profiles.set(n.id, {
      verifiedName: 'Switchboard Demo',
      nameStatus: 'APPROVED',
      about: 'Calls answered by real people.',
      address: '1 Demo Street',
      description: 'Emulated business profile',
      email: 'support@example.com',
      websites: ['https://example.com'],
      vertical: 'PROF_SERVICES',
    });
    s.commerceSettings.set(n.id, { isCartEnabled: false, isCatalogVisible: false });
  }
  return s;
}

/**
 * The business phone number record for an E.164 number, if the tenant (`owner` API key)
 * has it: another tenant's number is as unknown as a missing one.
 */
export function businessNumber(s: State, e164: string, owner?: string) {
  for (const n of s.phoneNumbers.values()) {
    if (n.phoneNumber === e164 && (owner === undefined || (s.numberOwners.get(n.id) ?? owner) === owner)) return n;
  }
  return undefined;
}
