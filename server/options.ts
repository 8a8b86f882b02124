/**
 * What `createSwitchboard` takes (server/switchboard.ts): the config, the store, the log, and
 * the parts and timings tests and `main.ts` may hand in instead of the defaults.
 */
import type { ReadinessCheck } from './ops/readiness.ts';
import type { LoginLimits, Users } from './auth/index.ts';
import type { Policy } from './calls/lifecycle.ts';
import type { ServiceCalls } from './calls/engine.ts';
import type { Config } from './config/config.ts';
import type { SocketLimits } from './gateway/index.ts';
import type { History } from './history/index.ts';
import type { Logger } from './log/logger.ts';
import type { MessagingClient } from './messaging/service.ts';
import type { Metrics } from './ops/metrics.ts';
import type { PermissionMessages, PermissionNumbers } from './permissions/index.ts';
import type { RateLimiter, RateLimitOptions } from './service/ratelimit.ts';
import type { Calls } from './service/resources/calls.ts';
import type { ContactsResource } from './service/resources/contacts.ts';
import type { Store } from './store/store.ts';
import type { DemoCaller, WebAsset } from './web/index.ts';
import type { HandlerRegistry, WorkersOptions } from './webhooks/workers.ts';

/** The Service client parts the calling half uses (tests may hand in their own). */
export interface ServiceParts {
  calls: ServiceCalls;
  /** Media download: with it, recording and transcription events are archived and announced. */
  media?: Pick<Calls, 'downloadMedia'>;
  /** Messages: `POST /api/permissions/request` sends with it; without it that route answers 503. */
  messages?: PermissionMessages;
  /** Phone numbers: `GET /api/numbers`; without it 503. */
  phoneNumbers?: PermissionNumbers;
  /** Messaging and the callback queue; without it their routes answer 503. */
  messaging?: MessagingClient;
  /** Contacts: the customer panel's contact, and wrap-ups as contact notes (CONTACT_NOTES). */
  contacts?: Pick<ContactsResource, 'get' | 'addNote'>;
  /** The client's rate limiter: `/metrics` shows the management quota's use and signalling's reserved share. */
  limiter?: Pick<RateLimiter, 'usage' | 'signallingReserve'>;
}

export interface SwitchboardOptions {
  config: Config;
  store: Store;
  log: Logger;
  /** Default: a Service client built from the config (none without SERVICE_BASE_URL). */
  service?: ServiceParts;
  /** Pages and assets; default: `loadPages()` (the build's, or bundled from web-agent/ at start; an empty map: API only). */
  assets?: Map<string, WebAsset>;
  /** Demo mode: starts a simulated call for the page's button. */
  demo?: DemoCaller;
  /** The app's metrics registry. Default: a new one. */
  metrics?: Metrics;
  /** More `/readyz` checks (e.g. the Service is reachable). */
  readiness?: ReadinessCheck[];
  /** Set once shutdown begins: `/readyz` answers 503. */
  isShuttingDown?: () => boolean;
  /** Pre-built users (tests); default: USERS_FILE, or the demo users in demo mode. */
  users?: Users;
  /** Worker settings beyond the config (tests shorten reads and claims). */
  workers?: Partial<Omit<WorkersOptions, 'store' | 'handlers' | 'log' | 'metrics'>>;
  /** Replace the webhook handlers (tests of the workers and dead letters). */
  handlers?: HandlerRegistry;
  /** Lifecycle timing beyond the config (tests shorten margins). */
  policy?: Partial<Policy>;
  /** Anchor mode: the Ogg Opus file a room plays while its caller waits (hold, a transfer; Janus reads it). Default HOLD_MUSIC_FILE. */
  musicFile?: string;
  heartbeatMs?: number;
  deadAfterMs?: number;
  /** Life of minted TURN credentials, seconds, instead of TURN_TTL_S (tests make it short). */
  iceTtlS?: number;
  /** Per-socket bounds beyond the defaults (tests make them small). */
  socketLimits?: SocketLimits;
  reconnectGraceMs?: number;
  /** Period of the engine's sweep over stored calls (default 2 s). */
  sweepMs?: number;
  /** Login session lifetime (default 12 h; tests shorten it). */
  sessionTtlMs?: number;
  /** Login limits (default `LOGIN_LIMITS`). */
  loginLimits?: Partial<LoginLimits>;
  /**
   * Call history. Default: opened from the config (`DATABASE_URL`, else PGlite under
   * `DATA_DIR`) when there is a Service; `null`: none (tests that do not look at history).
   * One handed in is closed by `close()` too.
   */
  history?: History | null;
  now?: () => number;
  /** Wallboard push period (default 5 s; 0: only on call changes). */
  wallboardMs?: number;
  /** Client-side Service limits for the client built from the config (tests match an emulator's smaller quotas). */
  serviceLimits?: RateLimitOptions;
}
