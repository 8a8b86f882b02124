/**
 * What every part of the Service emulator shares: options, the adjustable clock, a
 * seeded random source, id generation, event emission and the cross-cutting state
 * (call permissions are written by the messaging routes and read by the call routes).
 *
 * Owned by the emulator core (calls + webhooks); the messaging surface adds its own
 * state in its own module and reaches shared things only through this context.
 */
import { createHash, randomBytes } from 'node:crypto';

export interface EmulatorOptions {
  /** Port for the standalone server; 0 = any free port (default 0). */
  port?: number;
  host?: string;
  /** API keys accepted; the first is "the" key. Default: one random key. */
  apiKeys?: string[];
  /** Secret used to sign webhook deliveries to endpoints created without one. */
  webhookSecret?: string;
  /** Seed for every random choice (fault knobs, ids, jitter). Default 1. */
  seed?: number;
  /**
   * Mixed into every id (wacids, media ids, event ids...). Default without an explicit
   * `seed`: random per start, so two starts (demo mode) never share an id: a bridge that
   * keeps state across restarts (dedupe keys in Redis, the media archive on disk) must never
   * take a new call for an old one. With an explicit `seed` the default is fixed, so the
   * seed alone reproduces a run, ids included; give a value to tell such runs apart.
   */
  idSalt?: string;
  /**
   * Webhook retry delays are multiplied by this (1 = the real 10 s, 30 s, 5 min...).
   * Tests use e.g. 0.001.
   */
  timeScale?: number;
  /** User-initiated call accept window from the connect event, ms. Default 30000. */
  acceptWindowMs?: number;
  /**
   * No business media for this long after accept → terminate FAILED with provider
   * error 138023 ("accepted but no media"). Default 20000.
   */
  noMediaAtStartMs?: number;
  /** No business media for this long mid-call → terminate FAILED with 138021 (media receive timeout). Default 30000. */
  noMediaMidCallMs?: number;
  /** Fault knobs; also settable at runtime through the control API. */
  faults?: Partial<Faults>;
  /** Receiver URLs registered at start (demo mode registers the bridge's receiver). */
  webhookEndpoints?: Array<{ url: string; secret?: string; enabledEvents?: string[] }>;
  /**
   * Business phone numbers the emulator knows at start. Default: one number,
   * id `100000000000001`, `+15550100001`, wabaId `200000000000001`, owned by the first key.
   */
  businessNumbers?: Array<{ id: string; phoneNumber: string; wabaId: string; owner?: string }>;
  /**
   * Deliveries in flight at once per endpoint. Default 1: one at a time keeps the order a
   * receiver sees reproducible; more lets a slow receiver overlap (and reorder) them.
   */
  deliveryConcurrency?: number;
  /** How long one webhook delivery attempt may take before it counts as failed, ms. Default 6000. */
  deliveryTimeoutMs?: number;
  /** Rate limits of part 8 (override for tests). */
  rateLimits?: Partial<RateLimits>;
  /**
   * Calls a business number may have at once (ringing or active); one more is refused
   * with provider error 138002. Default unlimited.
   */
  maxConcurrentCalls?: number;
  /**
   * With recording or transcription on, the simulated user's audio opens with this long
   * an announcement (a two-note chime) that the business hears. Default 1500; 0 = none.
   */
  announcementMs?: number;
  /** Load werift and opusscript in the background after start (default true). */
  prewarm?: boolean;
  /** How the simulated user answers business-initiated calls unless told otherwise per user. */
  callee?: Partial<CalleeBehaviour>;
}

export interface RateLimits {
  /** POST /emails, /sms, /voices: per account, each its own bucket. Default 200 rps. */
  accountRps: number;
  /** POST /chat/messages per sender (body `from`). Default 200 rps. */
  chatMessagesRps: number;
  /** POST /chat/messages/sendDirectly per sender. Default 80 rps. */
  sendDirectlyRps: number;
  /** Everything else, per account, shared quota. Default 200 rps... */
  managementRps: number;
  /** ...and 10,000 per hour. */
  managementPerHour: number;
}

/** What the simulated user does when a business-initiated call reaches them. */
export interface CalleeBehaviour {
  /** `answer`: picks up after `answerAfterMs`; `reject`: declines after `answerAfterMs`; `noAnswer`: lets it ring. */
  action: 'answer' | 'reject' | 'noAnswer';
  /** Ringing time before the action, ms. Default 200. */
  answerAfterMs: number;
  /** After answering, hang up after this long, ms (0 = stay until the business ends). Default 0. */
  hangupAfterMs: number;
  /** A ringing, unanswered call ends as not answered after this long, ms. Default 30000. */
  ringTimeoutMs: number;
}

export interface Faults {
  /** Probability that a delivery is sent twice. */
  duplicateRate: number;
  /**
   * Reordering: when > 0, each delivery is held back behind a random 0..`reorderEvents`
   * later events (seeded), but never longer than this many ms. Holding back by *event
   * count* rather than by wall time is what makes the delivered sequence depend only on
   * the seed and the order of emits, so runs are reproducible.
   */
  reorderWindowMs: number;
  /** How many later events a delivery may be overtaken by (default 3). Used when reorderWindowMs > 0. */
  reorderEvents: number;
  /** Fixed extra delay before each delivery. */
  deliveryDelayMs: number;
  /** Drop (do not send) the first attempt of each delivery; the retry schedule sends it later. */
  dropFirstAttempt: boolean;
  /**
   * Per-endpoint faults for the v2 API, keyed by `METHOD /path-pattern` (e.g.
   * `POST /chat/calls/accept`, `GET /chat/messages/{id}`, `* /balance`): answer 429 /
   * 5xx, hang (never answer), or be slow. `times` limits how many requests are hit
   * (default unlimited).
   */
  endpoints: Record<string, EndpointFault>;
  /** Result of the recording after a captured call. Default AVAILABLE. */
  recordingResult: 'AVAILABLE' | 'FAILED';
  /** Result of the transcription after a captured call. Default AVAILABLE. */
  transcriptionResult: 'AVAILABLE' | 'FAILED';
  /**
   * Media downloads (`GET /chat/calls/media/{id}`) hang: `headers` — no answer at all (the
   * Service is stuck before it looks the asset up); `body` — a found asset is answered 200
   * with its headers and the first half of its bytes, then nothing more. Either way the
   * request is held until the client gives up (closes the connection) or the emulator
   * closes. Default `none`.
   */
  mediaDownloadHang: 'none' | 'headers' | 'body';
}

export interface EndpointFault {
  kind: '429' | '5xx' | 'hang' | 'slow' | 'echoKey' | 'refuse';
  /**
   * For 5xx: the status (default 503). For 429: Retry-After seconds (default 1). For slow:
   * delay ms. For echoKey: the status (default 400) of a refusal whose `message` and
   * `chatApiError.message` repeat the request's `X-API-Key` (a careless provider echoing
   * the request: the client must scrub it). For refuse: the status (default 400) of a
   * refusal that passes on the provider's `code` in `chatApiError` (e.g. accept refused
   * with 138019, call setup failed).
   */
  value?: number;
  /** For refuse: the provider's error code in `chatApiError.code` (default 138019). */
  code?: number;
  times?: number;
  /**
   * For 5xx and hang: run the request first, then fail or never answer — the
   * "a timeout does not prove failure" case. Default false (nothing is done).
   */
  afterProcessing?: boolean;
}

export interface Clock {
  /** Emulated epoch ms (real time + offset). */
  now(): number;
  /** Move the emulated clock forward (permission limits, media expiry). */
  advance(ms: number): void;
}

export interface Rng {
  /** Uniform [0, 1). Deterministic for a given seed and call sequence. */
  next(): number;
}

export interface PermissionGrant {
  /** E.164 business number. */
  business: string;
  /** E.164 user number or BSUID. */
  user: string;
  response: 'accept' | 'reject';
  isPermanent: boolean;
  /** Epoch seconds; absent when permanent. */
  expirationTimestamp?: number;
}

/** The webhook event envelope of part 2. */
export interface EventEnvelope {
  id: string;
  type: string;
  apiVersion: 'v2';
  createTime: string;
  [payloadName: string]: unknown;
}

export interface BusinessNumber {
  id: string;
  phoneNumber: string;
  wabaId: string;
  /** API key of the tenant owning the number (events and media of its calls belong to it). */
  owner?: string;
}

export interface EmulatorContext {
  readonly options: Required<Pick<EmulatorOptions, 'seed' | 'timeScale' | 'acceptWindowMs' | 'noMediaAtStartMs' | 'noMediaMidCallMs'>> & EmulatorOptions;
  readonly apiKeys: string[];
  readonly webhookSecret: string;
  readonly clock: Clock;
  readonly rng: Rng;
  faults: Faults;
  /** A new id with a prefix, deterministic per seed: `wacid.` + ..., `msg_` + ... */
  newId(prefix: string): string;
  /**
   * Emit a webhook event: builds the envelope `{id, type, apiVersion:'v2', createTime,
   * [payloadName]: payload}` and delivers it to every enabled endpoint subscribed to
   * `type`, with signing, retries and fault knobs. `owner` is the API key whose tenant
   * the event belongs to (default the first key).
   */
  emit(type: string, payloadName: string, payload: Record<string, unknown>, owner?: string): void;
  /**
   * Every `/v2` request as it arrived (method, path under `/v2`, the call's `wacid` for
   * `POST /chat/calls/*`, the API key): fault cases count the Service's side with it
   * (bounded retries, no repeated POST). At most 100,000 kept.
   */
  requests: Array<{ method: string; path: string; wacid?: string; apiKey: string; at: number }>;
  /** Call permissions by `${business}|${user}`. */
  permissions: Map<string, PermissionGrant>;
  /** Business phone numbers known to the emulator: phoneId → E.164 number, wabaId (and owner). */
  phoneNumbers: Map<string, BusinessNumber>;

  // ---- additions by the core (additive; the names above are relied on) ----
  /** Every event emitted so far, in emit order (the control API serves it). */
  readonly events: EventEnvelope[];
  /** Called for each emitted event (the webhook engine subscribes here). */
  onEmit(listener: (event: EventEnvelope, owner: string) => void): void;
  /** Rate limits in force (mutable through the control API). */
  rateLimits: RateLimits;
  /** Default behaviour of simulated callees; per-user overrides by E.164 / BSUID. */
  callee: CalleeBehaviour;
  calleeOverrides: Map<string, Partial<CalleeBehaviour>>;
  /** A timer that `close()` cancels; unref'd so it never keeps a process alive. */
  setTimer(fn: () => void, ms: number): () => void;
  /** Run `fn` on close (peers, servers); errors are logged, not thrown. */
  onClose(fn: () => void | Promise<void>): void;
  /** True once close() began: late callbacks check it and do nothing. */
  readonly closed: boolean;
  /** Cancels timers and runs close hooks; safe to call twice. */
  close(): Promise<void>;
  /** The owner (API key) of a business number, by phone id or E.164; first key when unknown. */
  ownerOf(phoneIdOrNumber: string): string;
  /** Finds a business number by phone id or E.164 (with or without '+'). */
  findNumber(phoneIdOrNumber: string): BusinessNumber | undefined;
}

/** `ctx.events` keeps at most this many (oldest dropped in chunks). */
export const MAX_KEPT_EVENTS = 50_000;

export const DEFAULT_FAULTS: Faults = Object.freeze({
  duplicateRate: 0,
  reorderWindowMs: 0,
  reorderEvents: 3,
  deliveryDelayMs: 0,
  dropFirstAttempt: false,
  endpoints: {},
  recordingResult: 'AVAILABLE',
  transcriptionResult: 'AVAILABLE',
  mediaDownloadHang: 'none',
}) as Faults;

export const DEFAULT_RATE_LIMITS: RateLimits = Object.freeze({
  accountRps: 200,
  chatMessagesRps: 200,
  sendDirectlyRps: 80,
  managementRps: 200,
  managementPerHour: 10_000,
});

/** mulberry32: tiny, fast, and good enough for fault injection; same seed, same sequence. */
export function seededRng(seed: number): Rng {
  let a = seed >>> 0;
  return {
    next() {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    },
  };
}

export function createContext(options: EmulatorOptions = {}): EmulatorContext {
  const seed = options.seed ?? 1;
  const idSalt = options.idSalt ?? (options.seed !== undefined ? 'seeded' : randomBytes(8).toString('hex'));
  const apiKeys = options.apiKeys?.length ? [...options.apiKeys] : [`emu_${randomBytes(18).toString('base64url')}`];
  const webhookSecret = options.webhookSecret ?? `whsec_${randomBytes(24).toString('base64url')}`;
  const firstKey = apiKeys[0]!;
  let offset = 0;
  const clock: Clock = {
    now: () => Date.now() + offset,
    advance(ms) {
      if (!Number.isFinite(ms) || ms < 0) throw new RangeError('clock can only move forward');
      offset += ms;
    },
  };
  const counters = new Map<string, number>();
  const listeners: Array<(e: EventEnvelope, owner: string) => void> = [];
  const events: EventEnvelope[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const closeHooks: Array<() => void | Promise<void>> = [];
  let closed = false;
  let closing: Promise<void> | undefined;

  const phoneNumbers = new Map<string, BusinessNumber>();
  const numbers = options.businessNumbers ?? [{ id: '100000000000001', phoneNumber: '+15550100001', wabaId: '200000000000001' }];
  for (const n of numbers) phoneNumbers.set(n.id, { ...n, owner: n.owner ?? firstKey });

  const findNumber = (x: string): BusinessNumber | undefined => {
    const direct = phoneNumbers.get(x);
    if (direct) return direct;
    const e164 = x.startsWith('+') ? x : `+${x}`;
    for (const n of phoneNumbers.values()) if (n.phoneNumber === e164) return n;
    return undefined;
  };

  const ctx: EmulatorContext = {
    options: {
      ...options,
      seed,
      timeScale: options.timeScale ?? 1,
      acceptWindowMs: options.acceptWindowMs ?? 30_000,
      noMediaAtStartMs: options.noMediaAtStartMs ?? 20_000,
      noMediaMidCallMs: options.noMediaMidCallMs ?? 30_000,
    },
    apiKeys,
    webhookSecret,
    clock,
    rng: seededRng(seed),
    faults: { ...DEFAULT_FAULTS, endpoints: {}, ...options.faults },
    requests: [],
    newId(prefix) {
      // Ids are a hash of (seed, idSalt, prefix, counter): unique, opaque-looking, unique
      // across starts (random salt), and identical across runs with the same seed, salt and
      // sequence of creations.
      const n = (counters.get(prefix) ?? 0) + 1;
      counters.set(prefix, n);
      return prefix + createHash('sha256').update(`${seed}:${idSalt}:${prefix}:${n}`).digest('hex').slice(0, 24);
    },
    emit(type, payloadName, payload, owner = firstKey) {
      if (closed) return;
      const envelope: EventEnvelope = {
        id: ctx.newId('evt_'),
        type,
        apiVersion: 'v2',
        createTime: new Date(clock.now()).toISOString(),
        [payloadName]: payload,
      };
      events.push(envelope);
      // A long demo or bench run must not grow without bound: keep the latest events.
      if (events.length > MAX_KEPT_EVENTS) events.splice(0, events.length - MAX_KEPT_EVENTS + 10_000);
      for (const l of listeners) {
        try {
          l(envelope, owner);
        } catch (err) {
          console.error('[emulator] event listener failed:', err);
        }
      }
    },
    permissions: new Map(),
    phoneNumbers,
    events,
    onEmit(l) {
      listeners.push(l);
    },
    rateLimits: { ...DEFAULT_RATE_LIMITS, ...options.rateLimits },
    callee: { action: 'answer', answerAfterMs: 200, hangupAfterMs: 0, ringTimeoutMs: 30_000, ...options.callee },
    calleeOverrides: new Map(),
    setTimer(fn, ms) {
      if (closed) return () => {};
      const t = setTimeout(() => {
        timers.delete(t);
        if (!closed) fn();
      }, Math.max(0, ms));
      t.unref();
      timers.add(t);
      return () => {
        clearTimeout(t);
        timers.delete(t);
      };
    },
    onClose(fn) {
      closeHooks.push(fn);
    },
    get closed() {
      return closed;
    },
    close() {
      closing ??= (async () => {
        closed = true;
        for (const t of timers) clearTimeout(t);
        timers.clear();
        // Teardown in reverse order of setup, like a stack.
        for (const fn of closeHooks.reverse()) {
          try {
            await fn();
          } catch (err) {
            console.error('[emulator] close hook failed:', err);
          }
        }
      })();
      return closing;
    },
    ownerOf(x) {
      return findNumber(x)?.owner ?? firstKey;
    },
    findNumber,
  };
  return ctx;
}
