/**
 * What every part of the Service emulator shares: options, the adjustable clock, a
 * seeded random source, id generation, event emission and the cross-cutting state
 * (call permissions are written by the messaging routes and read by the call routes).
 *
 * Owned by the emulator core (calls + webhooks); the messaging surface adds its own
 * state in its own module and reaches shared things only through this context.
 */

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
   * Webhook retry delays are multiplied by this (1 = the real 10 s, 30 s, 5 min...).
   * Tests use e.g. 0.001.
   */
  timeScale?: number;
  /** User-initiated call accept window from the connect event, ms. Default 30000. */
  acceptWindowMs?: number;
  /** No business media for this long after accept → terminate FAILED (138021). Default 20000. */
  noMediaAtStartMs?: number;
  /** No business media for this long mid-call → terminate FAILED. Default 30000. */
  noMediaMidCallMs?: number;
  /** Fault knobs; also settable at runtime through the control API. */
  faults?: Partial<Faults>;
  /** Receiver URLs registered at start (demo mode registers the bridge's receiver). */
  webhookEndpoints?: Array<{ url: string; secret?: string; enabledEvents?: string[] }>;
}

export interface Faults {
  /** Probability that a delivery is sent twice. */
  duplicateRate: number;
  /** Each delivery is delayed by a random 0..reorderWindowMs (so events reorder). */
  reorderWindowMs: number;
  /** Fixed extra delay before each delivery. */
  deliveryDelayMs: number;
  /** Drop (do not send) the first attempt of each delivery; the retry schedule sends it later. */
  dropFirstAttempt: boolean;
  /**
   * Per-endpoint faults for the v2 API, keyed by `METHOD /path-pattern` (e.g.
   * `POST /chat/calls/accept`): answer 429 / 5xx, hang (never answer), or be slow.
   * `times` limits how many requests are hit (default unlimited).
   */
  endpoints: Record<string, EndpointFault>;
}

export interface EndpointFault {
  kind: '429' | '5xx' | 'hang' | 'slow';
  /** For 5xx: the status (default 503). For 429: Retry-After seconds (default 1). For slow: delay ms. */
  value?: number;
  times?: number;
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
  /** Call permissions by `${business}|${user}`. */
  permissions: Map<string, PermissionGrant>;
  /** Business phone numbers known to the emulator: phoneId → E.164 number, wabaId. */
  phoneNumbers: Map<string, { id: string; phoneNumber: string; wabaId: string }>;
}
