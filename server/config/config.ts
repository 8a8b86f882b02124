/**
 * Configuration: read once from the environment (`loadConfig(process.env)` in `main.ts`),
 * validated with zod, frozen. Nothing else in the server reads `process.env`.
 *
 * Demo mode: when `SERVICE_BASE_URL` is unset the server starts the built-in Service
 * emulator. Demo mode only fills in what is unset (a random API key, webhook secret and
 * session secret, demo users); a variable that is set wins there too.
 *
 * An empty value (`PORT=`) counts as unset, so a copied `.env.example` works as is.
 */
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { readFileSync } from 'node:fs';
import { FollowupSettingError, parseFollowupSetting, type FollowupSetting } from './followup.ts';
import { HoursFileError, parseHoursFile, type HoursTable } from './hours.ts';
import { diskFiles, parseQueueAudioFile, QueueAudioFileError, type QueueAudioTable } from './queueAudio.ts';
import { parseVoicemailAfter, VoicemailAfterError, type VoicemailAfterTable } from './voicemail.ts';

/** How old a webhook's signature timestamp may be (the Service's rule); webhooks/signature.ts checks it. */
export const SIGNATURE_TOLERANCE_S = 300;

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  /** HTTP + WebSocket port (0 = any free port). */
  readonly port: number;
  readonly host: string;
  /** True when `SERVICE_BASE_URL` is unset: the built-in emulator plays the Service. */
  readonly demo: boolean;
  /**
   * The Service's version-2 root, without a trailing slash. Undefined only in demo mode
   * before the emulator has started (`main.ts` then calls `withServiceBaseUrl`).
   */
  readonly serviceBaseUrl: string | undefined;
  /** Sent as `X-API-Key`. Secret: never log it. */
  readonly serviceApiKey: string;
  /**
   * Demo mode made the key up (SERVICE_API_KEY unset): it opens only the in-process
   * emulator of this run, so the start may print it for the CLI. A key that was set is never printed.
   */
  readonly serviceApiKeyGenerated: boolean;
  /** Any one may verify a webhook signature (rotation). Secret: never log them. */
  readonly webhookSecrets: readonly string[];
  /** Undefined: in-memory store (single process, not durable). */
  readonly redisUrl: string | undefined;
  /**
   * Sentinels (`host:port`) that name the Redis primary; undefined: no Sentinel. With
   * sentinels, `redisUrl` (when set) gives only the password and database number.
   */
  readonly redisSentinels: ReadonlyArray<{ host: string; port: number }> | undefined;
  /** The primary's name the sentinels monitor (`mymaster` by default). */
  readonly redisSentinelName: string;
  readonly archiveDir: string;
  readonly acceptWindowMs: number;
  /** Signs login sessions. Secret: never log it. */
  readonly sessionSecret: string;
  /** Undefined only in demo mode (demo users). */
  readonly usersFile: string | undefined;
  readonly logLevel: LogLevel;
  /** How long one agent's offer rings before the call goes to the next agent. */
  readonly ringTimeoutMs: number;
  /** Time an agent stays unavailable after a call ends. */
  /** After-call work: ms; 0 = until the agent ends it; `off` = none (the agent is free at once). */
  readonly wrapUpMs: number | 'off';
  /** JSON file mapping phoneId → agent names; undefined: every agent takes every number. */
  readonly queuesFile: string | undefined;
  /** How long a webhook event id is remembered for deduplication. */
  readonly webhookDedupeTtlMs: number;
  /** Handler attempts before an event is dead-lettered. */
  readonly webhookMaxAttempts: number;
  /**
   * The origin browsers use (`https://host[:port]`, no path): the Host and Origin of
   * state-changing requests and of the WebSocket upgrade must match it. Undefined only in
   * demo mode, where a loopback name or the bind address (any port) is accepted.
   */
  readonly publicUrl: string | undefined;
  /** When set, `GET /metrics` needs `Authorization: Bearer <token>`. Secret: never log it. */
  readonly metricsToken: string | undefined;
  // ---- history ----
  /** PostgreSQL for history; undefined: embedded PGlite under `dataDir`. Secret (may hold a password): never log it. */
  readonly databaseUrl: string | undefined;
  /** Embedded history database (`<dataDir>/history`) and the default archive's parent. */
  readonly dataDir: string;
  /** Calls (with timeline, wrap-up, media rows) older than this are deleted. */
  readonly historyRetentionDays: number;
  /** Media files and their rows older than this are deleted. */
  readonly archiveRetentionDays: number;
  // ---- administration ----
  /** Audit rows older than this are deleted (the only deletion of audit rows). */
  readonly auditRetentionDays: number;
  /** Single sign-on (OpenID Connect); undefined: none. */
  readonly sso: SsoSettings | undefined;
  /** `PASSWORD_LOGIN` (default on): off, only single sign-on logs in. */
  readonly passwordLogin: boolean;
  // ---- messaging ----
  /** What goes to a customer after a missed call (`off`, an interactive permission request, or a template). */
  readonly missedCallFollowup: FollowupSetting;
  // ---- agent desktop ----
  /** The wrap-up codes an agent picks from after a call. */
  readonly dispositions: readonly string[];
  /** The reasons an agent may give for being away. */
  readonly awayReasons: readonly string[];
  /** Also write each wrap-up (disposition and notes) as a contact note at the Service. */
  readonly contactNotes: boolean;
  // ---- supervisor console ----
  /** Whether the agent's page shows a supervisor who only listens (whisper and barge always show). */
  readonly monitorShowListening: boolean;
  /** Service level: a call answered within this many seconds of arriving counts as within SLA. */
  readonly slaSeconds: number;
  // ---- real networks ----
  /** STUN/TURN for every peer connection the pages make (server/ice mints what a page gets). */
  readonly ice: IceSettings;
  // ---- media anchor ----
  /** Where the caller's audio ends: the agent's page (`direct`), or a Janus AudioBridge room (`anchor`). */
  readonly media: MediaSettings;
  // ---- business hours ----
  /** `HOURS_FILE` parsed (server/config/hours.ts): each number's weekly schedule and holidays; undefined: always open. */
  readonly hours: HoursTable | undefined;
  // ---- queue audio ----
  /**
   * `QUEUE_AUDIO_FILE` parsed (server/config/queueAudio.ts): per number, the greeting, the
   * position announcements' interval and the longest wait; undefined: off everywhere. Anchor
   * mode only: in direct mode the caller's audio ends in a page, so it is ignored (the start
   * log says so).
   */
  readonly queueAudio: QueueAudioTable | undefined;
}

/** `OIDC_*`: single sign-on with an OpenID Connect provider (authorization code + PKCE). */
export interface SsoSettings {
  /** `OIDC_ISSUER`: the provider's issuer URL (its discovery document is read at start). */
  readonly issuer: string;
  readonly clientId: string;
  /** `OIDC_CLIENT_SECRET`. Secret: never log it. */
  readonly clientSecret: string;
  /** `OIDC_ROLES_CLAIM` (default `roles`): the claim (a dotted path, e.g. `realm_access.roles`) listing the user's roles or groups. */
  readonly rolesClaim: string;
}

/** `MEDIA_MODE` and the Janus servers of anchor mode. */
export interface MediaSettings {
  readonly mode: 'direct' | 'anchor';
  /** `MEDIA_MODE` was set (demo mode picks the anchor by itself only when it was not). */
  readonly modeSet: boolean;
  /** `JANUS_URLS`: Janus WebSocket API URLs (`janus-protocol`); each call goes to the least loaded reachable one. Empty in direct mode. */
  readonly janusUrls: readonly string[];
  /** `JANUS_API_SECRET`: sent as `apisecret` on every Janus request. Secret: never log it. */
  readonly janusApiSecret: string | undefined;
  /** `AGENT_RECOVERY_MS`: anchor mode, how long the caller waits in the room for the agent's lost page to come back. */
  readonly agentRecoveryMs: number;
  /**
   * `HOLD_MUSIC_FILE`: anchor mode, the Ogg/Opus file Janus plays into a room while the caller
   * waits (on hold, or while the agent's page is away): a path on the Janus machine. Default
   * the bundled tune (`server/anchor/sounds/hold.opus`, where Janus runs beside the bridge).
   */
  readonly holdMusicFile: string;
  /**
   * Voicemail (anchor mode only; direct mode cannot record a caller nobody answered):
   * `VOICEMAIL_AFTER_S` — an inbound call no agent answered within this many seconds (for every
   * number, or per number: server/config/voicemail.ts) is answered by the bridge, the caller
   * hears the prompt and leaves a message; undefined: off (the call rings until the accept
   * window closes, as before). Out of hours the caller always hears the
   * closed greeting, then the prompt. `VOICEMAIL_MAX_S`: the longest message (default 120 s).
   */
  readonly voicemailAfter: VoicemailAfterTable | undefined;
  readonly voicemailMaxMs: number;
  /** `VOICEMAIL_SILENCE_S`: the message ends after this long without the caller's voice (default 5 s). */
  readonly voicemailSilenceMs: number;
}

/** The bundled hold music (made by scripts/make-hold-music.ts; the build copies it beside the compiled server). */
export const BUNDLED_HOLD_MUSIC = fileURLToPath(new URL('../anchor/sounds/hold.opus', import.meta.url));

/** A STUN/TURN URL as browsers take it: `stun:`, `turn:` or `turns:` host[:port][?transport=udp|tcp]. */
export const ICE_URL = /^(stun|stuns|turn|turns):(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?(\?transport=(udp|tcp))?$/;

/** How TURN credentials are made: none, minted per session from coturn's REST secret, or one static pair. */
export type TurnAuth =
  | { readonly kind: 'none' }
  /** coturn `use-auth-secret`: username `<expiry>:<user>`, credential base64(HMAC-SHA1(secret, username)). Secret: never log it. */
  | { readonly kind: 'secret'; readonly secret: string; readonly ttlS: number }
  /** coturn `lt-cred-mech` with one user. The password is a secret: only a logged-in page gets it. */
  | { readonly kind: 'static'; readonly username: string; readonly password: string };

export interface IceSettings {
  /** `ICE_SERVERS`, in order; empty: host candidates only (loopback / one LAN). */
  readonly urls: readonly string[];
  readonly turnAuth: TurnAuth;
  /** `relay`: only relayed candidates (hides agents' addresses; what the TURN tests use). */
  readonly transportPolicy: 'all' | 'relay';
}

/** Thrown by `loadConfig`; `message` is one line naming the variable and the rule. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly variable: string,
    readonly rule: string,
  ) {
    super(`${variable}: ${rule}`);
  }
}

/** Every variable the server reads, with its default, for docs and `.env.example` checks. */
export const VARIABLES = [
  'PORT',
  'HOST',
  'SERVICE_BASE_URL',
  'SERVICE_API_KEY',
  'SERVICE_WEBHOOK_SECRETS',
  'REDIS_URL',
  'REDIS_SENTINELS',
  'REDIS_SENTINEL_NAME',
  'ARCHIVE_DIR',
  'ACCEPT_WINDOW_MS',
  'SESSION_SECRET',
  'USERS_FILE',
  'LOG_LEVEL',
  'RING_TIMEOUT_MS',
  'WRAP_UP_MS',
  'QUEUES_FILE',
  'WEBHOOK_DEDUPE_TTL_MS',
  'WEBHOOK_MAX_ATTEMPTS',
  'PUBLIC_URL',
  'METRICS_TOKEN',
  // history
  'DATABASE_URL',
  'DATA_DIR',
  'HISTORY_RETENTION_DAYS',
  'ARCHIVE_RETENTION_DAYS',
  // messaging
  'MISSED_CALL_FOLLOWUP',
  // agent desktop
  'DISPOSITIONS',
  'AWAY_REASONS',
  'CONTACT_NOTES',
  // supervisor console
  'MONITOR_SHOW_LISTENING',
  'SLA_SECONDS',
  // real networks
  'ICE_SERVERS',
  'TURN_SECRET',
  'TURN_TTL_S',
  'TURN_USERNAME',
  'TURN_PASSWORD',
  'ICE_TRANSPORT_POLICY',
  // administration
  'AUDIT_RETENTION_DAYS',
  'OIDC_ISSUER',
  'OIDC_CLIENT_ID',
  'OIDC_CLIENT_SECRET',
  'OIDC_ROLES_CLAIM',
  'PASSWORD_LOGIN',
  // media anchor
  'MEDIA_MODE',
  'JANUS_URLS',
  'JANUS_API_SECRET',
  'AGENT_RECOVERY_MS',
  'HOLD_MUSIC_FILE',
  // business hours
  'HOURS_FILE',
  // voicemail (anchor mode)
  'VOICEMAIL_AFTER_S',
  'VOICEMAIL_MAX_S',
  'VOICEMAIL_SILENCE_S',
  // queue audio (anchor mode)
  'QUEUE_AUDIO_FILE',
] as const;
export type Variable = (typeof VARIABLES)[number];

/** Variables whose values are secrets: never echoed in errors or logs. */
export const SECRET_VARIABLES: ReadonlySet<Variable> = new Set([
  'SERVICE_API_KEY',
  'SERVICE_WEBHOOK_SECRETS',
  'SESSION_SECRET',
  'METRICS_TOKEN',
  'DATABASE_URL',
  'TURN_SECRET',
  'TURN_PASSWORD',
  'JANUS_API_SECRET',
  'OIDC_CLIENT_SECRET',
]);

const intIn = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `must be an integer from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().int().min(min, `must be an integer from ${min} to ${max}`).max(max, `must be an integer from ${min} to ${max}`));

const httpUrl = z
  .string()
  .refine((s) => {
    try {
      const u = new URL(s);
      return (u.protocol === 'http:' || u.protocol === 'https:') && !u.username && !u.password;
    } catch {
      return false;
    }
  }, 'must be an http(s) URL without credentials, e.g. https://host/v2')
  .transform((s) => s.replace(/\/+$/, ''));

const redisUrl = z.string().refine((s) => {
  try {
    const u = new URL(s);
    return u.protocol === 'redis:' || u.protocol === 'rediss:';
  } catch {
    return false;
  }
}, 'must be a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379/0');

const sentinelList = z
  .string()
  .transform((s) => s.split(',').map((x) => x.trim()).filter(Boolean))
  .pipe(
    z
      .array(
        z
          .string()
          .regex(/^[^\s:,/@]+:\d{1,5}$/, 'each sentinel must be host:port, e.g. 10.0.0.5:26379')
          .transform((hp) => {
            const i = hp.lastIndexOf(':');
            return { host: hp.slice(0, i), port: Number(hp.slice(i + 1)) };
          })
          .refine((a) => a.port >= 1 && a.port <= 65535, 'each sentinel port must be from 1 to 65535'),
      )
      .min(1, 'must be a comma-separated list of host:port'),
  );

const publicUrl = z
  .string()
  .refine((s) => {
    try {
      const u = new URL(s);
      return (u.protocol === 'http:' || u.protocol === 'https:') && !u.username && !u.password && u.pathname === '/' && !u.search && !u.hash;
    } catch {
      return false;
    }
  }, 'must be the origin browsers use: http(s)://host[:port] without a path, e.g. https://switchboard.example.com')
  .transform((s) => new URL(s).origin);

const databaseUrl = z.string().refine((s) => {
  try {
    const u = new URL(s);
    return (u.protocol === 'postgres:' || u.protocol === 'postgresql:') && u.hostname !== '' && u.pathname.length > 1;
  } catch {
    return false;
  }
}, 'must be a postgres:// URL with host and database, e.g. postgres://user:password@host:5432/switchboard');

/** A Janus WebSocket API URL: ws(s)://host[:port][/path], no credentials, query or fragment. */
function janusUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === 'ws:' || u.protocol === 'wss:') && u.hostname !== '' && !u.username && !u.password && !u.search && !u.hash;
  } catch {
    return false;
  }
}

const nonEmpty = (what: string) => z.string().min(1, `must be ${what}`);

/** A comma-separated list of short labels (shown on the pages, stored in history). */
const labelList = z
  .string()
  .transform((s) => s.split(',').map((x) => x.trim()).filter(Boolean))
  .pipe(
    z
      .array(z.string().max(60, 'each entry must be at most 60 characters'))
      .min(1, 'must be a comma-separated list of at least one entry')
      .refine((a) => new Set(a).size === a.length, 'must not list an entry twice'),
  );

const secret = z
  .string()
  .min(16, 'must be at least 16 characters')
  .refine((s) => !/\s/.test(s), 'must not contain whitespace');

const secretList = z
  .string()
  .transform((s) => s.split(',').map((x) => x.trim()).filter((x) => x.length > 0))
  .pipe(
    z
      .array(z.string().min(16, 'each secret must be at least 16 characters'))
      .min(1, 'must be a comma-separated list of at least one secret'),
  );

const schemas = {
  PORT: intIn(0, 65535),
  HOST: nonEmpty('a bind address, e.g. 127.0.0.1 or 0.0.0.0'),
  SERVICE_BASE_URL: httpUrl,
  SERVICE_API_KEY: nonEmpty('the Service API key').refine((s) => s === s.trim() && !/^["']|["']$/.test(s), 'must be the bare key, without spaces or quotes'),
  SERVICE_WEBHOOK_SECRETS: secretList,
  REDIS_URL: redisUrl,
  REDIS_SENTINELS: sentinelList,
  REDIS_SENTINEL_NAME: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be the primary name the sentinels monitor (letters, digits, . _ -), e.g. mymaster'),
  ARCHIVE_DIR: nonEmpty('a directory path'),
  ACCEPT_WINDOW_MS: intIn(1000, 60_000),
  SESSION_SECRET: secret,
  USERS_FILE: nonEmpty('a path to the users JSON file'),
  LOG_LEVEL: z.enum(LOG_LEVELS, `must be one of ${LOG_LEVELS.join(', ')}`),
  RING_TIMEOUT_MS: intIn(1000, 600_000),
  // `off`: no after-call work at all (program agents, benches); 0: until the agent ends it.
  WRAP_UP_MS: z.union([z.literal('off').transform(() => 'off' as const), intIn(0, 3_600_000)], { error: 'must be off or an integer from 0 to 3600000' }),
  QUEUES_FILE: nonEmpty('a path to the queues JSON file'),
  // A delivery stays valid for the signature tolerance: its id must be remembered at least that long.
  WEBHOOK_DEDUPE_TTL_MS: z
    .string()
    .regex(/^\d+$/, 'must be an integer (ms)')
    .transform(Number)
    .pipe(
      z
        .number()
        .min(SIGNATURE_TOLERANCE_S * 1000, `must be at least ${SIGNATURE_TOLERANCE_S * 1000} (the ${SIGNATURE_TOLERANCE_S} s signature tolerance: a redelivery that still verifies must still be known)`)
        .max(30 * 24 * 3600 * 1000, 'must be at most 2592000000 (30 days)'),
    ),
  WEBHOOK_MAX_ATTEMPTS: intIn(1, 100),
  PUBLIC_URL: publicUrl,
  METRICS_TOKEN: secret,
  DATABASE_URL: databaseUrl,
  DATA_DIR: nonEmpty('a directory path'),
  HISTORY_RETENTION_DAYS: intIn(1, 36_500),
  ARCHIVE_RETENTION_DAYS: intIn(1, 36_500),
  AUDIT_RETENTION_DAYS: intIn(1, 36_500),
  OIDC_ISSUER: httpUrl,
  OIDC_CLIENT_ID: z.string().regex(/^[\x21-\x7e]{1,256}$/, 'must be the client id the provider gave (printable, no spaces)'),
  OIDC_CLIENT_SECRET: z.string().min(1, 'must not be empty').max(1024).refine((s) => !/\s/.test(s), 'must not contain whitespace'),
  OIDC_ROLES_CLAIM: z.string().regex(/^[A-Za-z0-9_:/.-]{1,200}$/, 'must be a claim name or a dotted path to it, e.g. roles or realm_access.roles'),
  PASSWORD_LOGIN: z.enum(['on', 'off'], 'must be on or off').transform((v) => v === 'on'),
  DISPOSITIONS: labelList.refine((a) => !a.includes('Not set'), "must not list 'Not set' (recorded when none was given)"),
  AWAY_REASONS: labelList.refine((a) => !a.includes('Missed a call'), "must not list 'Missed a call' (set by the server)"),
  CONTACT_NOTES: z.enum(['on', 'off'], 'must be on or off').transform((v) => v === 'on'),
  MISSED_CALL_FOLLOWUP: z.string().transform((v, ctx): FollowupSetting => {
    try {
      return parseFollowupSetting(v);
    } catch (err) {
      if (!(err instanceof FollowupSettingError)) throw err;
      ctx.addIssue({ code: 'custom', message: err.message });
      return z.NEVER;
    }
  }),
  MONITOR_SHOW_LISTENING: z.enum(['true', 'false'], 'must be true or false').transform((v) => v === 'true'),
  SLA_SECONDS: intIn(1, 3600),
  ICE_SERVERS: z.string().transform((s, ctx) => {
    const urls = s.split(',').map((x) => x.trim()).filter(Boolean);
    if (urls.length === 0) ctx.addIssue({ code: 'custom', message: 'must be a comma-separated list of stun:, turn: or turns: URLs' });
    for (const u of urls) {
      if (!ICE_URL.test(u) || (/^stuns?:/.test(u) && u.includes('?'))) {
        ctx.addIssue({ code: 'custom', message: `${JSON.stringify(u.length > 80 ? u.slice(0, 80) + '…' : u)} is not a STUN/TURN URL: use stun:host[:port], turn:host[:port][?transport=udp|tcp] or turns:host[:port][?transport=tcp]` });
        return z.NEVER;
      }
    }
    if (urls.length > 8) ctx.addIssue({ code: 'custom', message: 'must list at most 8 URLs' });
    return urls;
  }),
  TURN_SECRET: secret,
  TURN_TTL_S: intIn(60, 7 * 24 * 3600),
  TURN_USERNAME: z.string().regex(/^[^\s:]{1,128}$/, 'must be the TURN user name (no spaces or colons, at most 128 characters)'),
  TURN_PASSWORD: z.string().min(1, 'must not be empty').max(256, 'must be at most 256 characters'),
  ICE_TRANSPORT_POLICY: z.enum(['all', 'relay'], 'must be all or relay'),
  MEDIA_MODE: z.enum(['direct', 'anchor'], 'must be direct or anchor'),
  HOLD_MUSIC_FILE: z.string().regex(/^\/[^\0\n]{0,4095}$/, 'must be an absolute path to an Ogg/Opus file (as the Janus machine sees it)').refine((p) => p.endsWith('.opus') || p.endsWith('.ogg'), 'must name an Ogg/Opus file (.opus or .ogg): the only format Janus plays'),
  JANUS_URLS: z.string().transform((s, ctx) => {
    const urls = s.split(',').map((x) => x.trim()).filter(Boolean);
    if (urls.length === 0) ctx.addIssue({ code: 'custom', message: 'must be a comma-separated list of Janus WebSocket API URLs, e.g. ws://10.0.0.7:8188' });
    for (const u of urls) {
      if (!janusUrl(u)) {
        ctx.addIssue({ code: 'custom', message: `${JSON.stringify(u.length > 80 ? u.slice(0, 80) + '…' : u)} is not a Janus WebSocket API URL: use ws://host:port or wss://host[:port][/path], without credentials` });
        return z.NEVER;
      }
    }
    if (new Set(urls).size !== urls.length) ctx.addIssue({ code: 'custom', message: 'must not list a URL twice' });
    return urls;
  }),
  AGENT_RECOVERY_MS: intIn(1000, 600_000),
  VOICEMAIL_AFTER_S: nonEmpty('an integer from 1 to 59 (seconds), or per number: +15550100001=20,*=30'),
  VOICEMAIL_MAX_S: intIn(5, 600),
  VOICEMAIL_SILENCE_S: intIn(1, 60),
  HOURS_FILE: nonEmpty('a path to the business hours JSON file'),
  QUEUE_AUDIO_FILE: nonEmpty('a path to the queue audio JSON file'),
  JANUS_API_SECRET: z.string().min(1, 'must not be empty').max(256, 'must be at most 256 characters').refine((s) => !/\s/.test(s), 'must not contain whitespace'),
} satisfies Record<Variable, z.ZodType<unknown, string>>;

type Parsed = { [K in Variable]: z.output<(typeof schemas)[K]> };

function read<K extends Variable>(env: Record<string, string | undefined>, name: K): Parsed[K] | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const r = schemas[name].safeParse(raw);
  if (r.success) return r.data as Parsed[K];
  const rule = r.error.issues[0]?.message ?? 'is invalid';
  // Secrets are never echoed; other values are, to make the mistake obvious.
  const shown = SECRET_VARIABLES.has(name) ? '' : ` (got ${JSON.stringify(raw.length > 80 ? raw.slice(0, 80) + '…' : raw)})`;
  throw new ConfigError(name, rule + shown);
}

function required<T>(value: T | undefined, name: Variable, why: string): T {
  if (value === undefined) throw new ConfigError(name, `is required ${why}`);
  return value;
}

export interface LoadOptions {
  /** Source of random bytes for demo-mode secrets (tests inject a fixed one). */
  randomBytes?: (n: number) => Buffer;
}

/**
 * Validate the environment and build the frozen configuration.
 * Throws `ConfigError` (one line: `VARIABLE: rule`) on the first invalid or missing value.
 */
export function loadConfig(env: Record<string, string | undefined>, opts: LoadOptions = {}): Config {
  const rnd = opts.randomBytes ?? randomBytes;
  const serviceBaseUrl = read(env, 'SERVICE_BASE_URL');
  const demo = serviceBaseUrl === undefined;
  const outside = 'outside demo mode (SERVICE_BASE_URL is set)';

  const apiKey = read(env, 'SERVICE_API_KEY');
  const secrets = read(env, 'SERVICE_WEBHOOK_SECRETS');
  const sessionSecret = read(env, 'SESSION_SECRET');
  const usersFile = read(env, 'USERS_FILE');

  // Sentinel mode still needs REDIS_URL: the rest of the server decides "shared store" by
  // it, and it carries the password and database number. Its host is not used then.
  const redisSentinels = read(env, 'REDIS_SENTINELS');
  if (redisSentinels && read(env, 'REDIS_URL') === undefined) {
    throw new ConfigError('REDIS_URL', 'is required with REDIS_SENTINELS (it gives the password and database number; the host is found through the sentinels), e.g. redis://:password@mymaster/0');
  }

  const config: Config = {
    port: read(env, 'PORT') ?? 8080,
    host: read(env, 'HOST') ?? '127.0.0.1',
    demo,
    serviceBaseUrl,
    serviceApiKey: demo ? (apiKey ?? `demo_${rnd(18).toString('base64url')}`) : required(apiKey, 'SERVICE_API_KEY', outside),
    serviceApiKeyGenerated: demo && apiKey === undefined,
    webhookSecrets: Object.freeze(
      demo ? (secrets ?? [`whsec_${rnd(24).toString('base64url')}`]) : required(secrets, 'SERVICE_WEBHOOK_SECRETS', outside),
    ),
    redisUrl: read(env, 'REDIS_URL'),
    redisSentinels: redisSentinels ? Object.freeze(redisSentinels) : undefined,
    redisSentinelName: read(env, 'REDIS_SENTINEL_NAME') ?? 'mymaster',
    archiveDir: read(env, 'ARCHIVE_DIR') ?? `${(read(env, 'DATA_DIR') ?? './data').replace(/\/+$/, '')}/archive`,
    acceptWindowMs: read(env, 'ACCEPT_WINDOW_MS') ?? 30_000,
    sessionSecret: demo ? (sessionSecret ?? rnd(32).toString('base64url')) : required(sessionSecret, 'SESSION_SECRET', outside),
    usersFile: demo ? usersFile : required(usersFile, 'USERS_FILE', outside),
    logLevel: read(env, 'LOG_LEVEL') ?? 'info',
    ringTimeoutMs: read(env, 'RING_TIMEOUT_MS') ?? 15_000,
    wrapUpMs: read(env, 'WRAP_UP_MS') ?? 60_000,
    queuesFile: read(env, 'QUEUES_FILE'),
    webhookDedupeTtlMs: read(env, 'WEBHOOK_DEDUPE_TTL_MS') ?? 48 * 3600 * 1000,
    webhookMaxAttempts: read(env, 'WEBHOOK_MAX_ATTEMPTS') ?? 5,
    publicUrl: demo ? read(env, 'PUBLIC_URL') : required(read(env, 'PUBLIC_URL'), 'PUBLIC_URL', outside),
    metricsToken: read(env, 'METRICS_TOKEN'),
    databaseUrl: read(env, 'DATABASE_URL'),
    dataDir: read(env, 'DATA_DIR') ?? './data',
    historyRetentionDays: read(env, 'HISTORY_RETENTION_DAYS') ?? 365,
    archiveRetentionDays: read(env, 'ARCHIVE_RETENTION_DAYS') ?? 90,
    auditRetentionDays: read(env, 'AUDIT_RETENTION_DAYS') ?? 400,
    ...readSso(env),
    missedCallFollowup: read(env, 'MISSED_CALL_FOLLOWUP') ?? { kind: 'off' },
    dispositions: Object.freeze(read(env, 'DISPOSITIONS') ?? ['Resolved', 'Follow-up needed', 'Wrong number', 'Escalated', 'Other']),
    awayReasons: Object.freeze(read(env, 'AWAY_REASONS') ?? ['Break', 'Lunch', 'Training', 'Meeting']),
    contactNotes: read(env, 'CONTACT_NOTES') ?? false,
    monitorShowListening: read(env, 'MONITOR_SHOW_LISTENING') ?? true,
    slaSeconds: read(env, 'SLA_SECONDS') ?? 20,
    ice: readIce(env),
    media: readMedia(env),
    hours: readHours(env),
    queueAudio: readQueueAudio(env),
  };
  return Object.freeze(config);
}

/**
 * ICE_SERVERS and its credentials. The combinations that cannot work stop the start: TURN
 * URLs without credentials (every allocation would be refused), both kinds of credentials,
 * credentials without a TURN URL, and `relay` without TURN (no call could connect).
 */
function readIce(env: Record<string, string | undefined>): IceSettings {
  const urls = read(env, 'ICE_SERVERS') ?? [];
  const secret = read(env, 'TURN_SECRET');
  const ttl = read(env, 'TURN_TTL_S');
  const username = read(env, 'TURN_USERNAME');
  const password = read(env, 'TURN_PASSWORD');
  const policy = read(env, 'ICE_TRANSPORT_POLICY') ?? 'all';
  const hasTurn = urls.some((u) => u.startsWith('turn'));
  if (secret !== undefined && (username !== undefined || password !== undefined)) {
    throw new ConfigError('TURN_SECRET', 'set either TURN_SECRET (coturn use-auth-secret) or TURN_USERNAME/TURN_PASSWORD, not both');
  }
  if ((username === undefined) !== (password === undefined)) {
    throw new ConfigError(username === undefined ? 'TURN_USERNAME' : 'TURN_PASSWORD', 'is required with ' + (username === undefined ? 'TURN_PASSWORD' : 'TURN_USERNAME'));
  }
  if (ttl !== undefined && secret === undefined) throw new ConfigError('TURN_TTL_S', 'is only used with TURN_SECRET');
  const turnAuth: TurnAuth =
    secret !== undefined ? { kind: 'secret', secret, ttlS: ttl ?? 3600 } : username !== undefined && password !== undefined ? { kind: 'static', username, password } : { kind: 'none' };
  if (hasTurn && turnAuth.kind === 'none') {
    throw new ConfigError('ICE_SERVERS', 'lists a turn:/turns: URL but neither TURN_SECRET nor TURN_USERNAME/TURN_PASSWORD is set (the TURN server would refuse every allocation)');
  }
  if (!hasTurn && turnAuth.kind !== 'none') {
    throw new ConfigError(secret !== undefined ? 'TURN_SECRET' : 'TURN_USERNAME', 'is set but ICE_SERVERS lists no turn:/turns: URL');
  }
  if (policy === 'relay' && !hasTurn) {
    throw new ConfigError('ICE_TRANSPORT_POLICY', 'relay needs a turn:/turns: URL in ICE_SERVERS (no call could connect without one)');
  }
  return Object.freeze({ urls: Object.freeze(urls), turnAuth: Object.freeze(turnAuth), transportPolicy: policy });
}

/** OIDC_* and PASSWORD_LOGIN: the provider needs its client id and secret and a PUBLIC_URL to come back to; password login off needs single sign-on. */
function readSso(env: Record<string, string | undefined>): Pick<Config, 'sso' | 'passwordLogin'> {
  const issuer = read(env, 'OIDC_ISSUER');
  const clientId = read(env, 'OIDC_CLIENT_ID');
  const clientSecret = read(env, 'OIDC_CLIENT_SECRET');
  const rolesClaim = read(env, 'OIDC_ROLES_CLAIM');
  const passwordLogin = read(env, 'PASSWORD_LOGIN') ?? true;
  if (issuer === undefined) {
    for (const [name, v] of [['OIDC_CLIENT_ID', clientId], ['OIDC_CLIENT_SECRET', clientSecret], ['OIDC_ROLES_CLAIM', rolesClaim]] as const) if (v !== undefined) throw new ConfigError(name, 'is only used with OIDC_ISSUER');
    if (!passwordLogin) throw new ConfigError('PASSWORD_LOGIN', 'off needs single sign-on (OIDC_ISSUER): nobody could log in');
    return { sso: undefined, passwordLogin };
  }
  if (clientId === undefined) throw new ConfigError('OIDC_CLIENT_ID', 'is required with OIDC_ISSUER');
  if (clientSecret === undefined) throw new ConfigError('OIDC_CLIENT_SECRET', 'is required with OIDC_ISSUER');
  if (read(env, 'PUBLIC_URL') === undefined) throw new ConfigError('PUBLIC_URL', 'is required with OIDC_ISSUER (the provider sends the browser back to PUBLIC_URL/auth/sso/callback)');
  return { sso: Object.freeze({ issuer, clientId, clientSecret, rolesClaim: rolesClaim ?? 'roles' }), passwordLogin };
}

/** MEDIA_MODE and its Janus servers: anchor mode needs JANUS_URLS; direct mode takes none (a set one would be a mistake). */
function readMedia(env: Record<string, string | undefined>): MediaSettings {
  const modeSet = read(env, 'MEDIA_MODE');
  const mode = modeSet ?? 'direct';
  const urls = read(env, 'JANUS_URLS');
  const secret = read(env, 'JANUS_API_SECRET');
  if (mode === 'anchor' && urls === undefined) throw new ConfigError('JANUS_URLS', 'is required with MEDIA_MODE=anchor (one or more Janus WebSocket API URLs, e.g. ws://10.0.0.7:8188)');
  if (mode === 'direct' && urls !== undefined) throw new ConfigError('JANUS_URLS', 'is only used with MEDIA_MODE=anchor');
  if (mode === 'direct' && secret !== undefined) throw new ConfigError('JANUS_API_SECRET', 'is only used with MEDIA_MODE=anchor');
  const recovery = read(env, 'AGENT_RECOVERY_MS');
  if (mode === 'direct' && recovery !== undefined) throw new ConfigError('AGENT_RECOVERY_MS', 'is only used with MEDIA_MODE=anchor (in direct mode the call ends with its page)');
  const music = read(env, 'HOLD_MUSIC_FILE');
  if (mode === 'direct' && music !== undefined) throw new ConfigError('HOLD_MUSIC_FILE', 'is only used with MEDIA_MODE=anchor (in direct mode the page plays the hold music)');
  const after = read(env, 'VOICEMAIL_AFTER_S');
  const max = read(env, 'VOICEMAIL_MAX_S');
  if (mode === 'direct' && after !== undefined) throw new ConfigError('VOICEMAIL_AFTER_S', 'is only used with MEDIA_MODE=anchor (in direct mode nobody can answer the caller to record a message: the audio ends in an agent\'s page)');
  if (mode === 'direct' && max !== undefined) throw new ConfigError('VOICEMAIL_MAX_S', 'is only used with MEDIA_MODE=anchor (direct mode has no voicemail)');
  const silence = read(env, 'VOICEMAIL_SILENCE_S');
  if (mode === 'direct' && silence !== undefined) throw new ConfigError('VOICEMAIL_SILENCE_S', 'is only used with MEDIA_MODE=anchor (direct mode has no voicemail)');
  let voicemailAfter: VoicemailAfterTable | undefined;
  if (after !== undefined) {
    // The bridge must answer before the Service's accept window closes (the call is refused REJECT_MARGIN before it).
    try {
      voicemailAfter = parseVoicemailAfter(after, read(env, 'ACCEPT_WINDOW_MS') ?? 30_000, VOICEMAIL_MARGIN_MS);
    } catch (err) {
      if (err instanceof VoicemailAfterError) throw new ConfigError('VOICEMAIL_AFTER_S', err.message);
      throw err;
    }
  }
  return Object.freeze({
    mode,
    modeSet: modeSet !== undefined,
    janusUrls: Object.freeze(urls ?? []),
    janusApiSecret: secret,
    agentRecoveryMs: recovery ?? 20_000,
    holdMusicFile: music ?? BUNDLED_HOLD_MUSIC,
    voicemailAfter,
    voicemailMaxMs: (max ?? 120) * 1000,
    voicemailSilenceMs: (silence ?? 5) * 1000,
  });
}

/** VOICEMAIL_AFTER_S leaves at least this much of the accept window: the bridge joins the caller and accepts before the call would be refused (3 s before the window closes). */
export const VOICEMAIL_MARGIN_MS = 5_000;

/** Demo mode with a private Janus (a `janus` binary on the PATH, MEDIA_MODE unset): anchor mode on it. Returns a new frozen config. */
export function withDemoAnchor(config: Config, janusUrl: string): Config {
  return Object.freeze({ ...config, media: Object.freeze({ ...config.media, mode: 'anchor' as const, janusUrls: Object.freeze([janusUrl]) }) });
}

/** HOURS_FILE, read and checked once at start: a mistake stops the start naming the file's field. */
function readHours(env: Record<string, string | undefined>): HoursTable | undefined {
  return readNumberFile(env, 'HOURS_FILE', parseHoursFile, HoursFileError);
}

/** A per-number JSON file's variable: undefined when unset; one that cannot be read or breaks a rule (`Rule` thrown by `parse`) stops the start naming it. */
function readNumberFile<T>(env: Record<string, string | undefined>, name: 'HOURS_FILE' | 'QUEUE_AUDIO_FILE', parse: (text: string) => T, Rule: new (message: string) => Error): T | undefined {
  const path = read(env, name);
  if (path === undefined) return undefined;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(name, `cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}: ${JSON.stringify(path)})`);
  }
  try {
    return parse(text);
  } catch (err) {
    if (err instanceof Rule) throw new ConfigError(name, err.message);
    throw err;
  }
}

/** The bundled queue greeting (scripts/make-voicemail-sounds.ts; the build copies it beside the compiled server). */
export const BUNDLED_QUEUE_GREETING = fileURLToPath(new URL('../anchor/sounds/greeting.opus', import.meta.url));

/** QUEUE_AUDIO_FILE, read and checked once at start (greetings' lengths included): a mistake stops the start naming the file's field. */
function readQueueAudio(env: Record<string, string | undefined>): QueueAudioTable | undefined {
  return readNumberFile(env, 'QUEUE_AUDIO_FILE', (text) => parseQueueAudioFile(text, diskFiles(BUNDLED_QUEUE_GREETING)), QueueAudioFileError);
}

/** Demo mode: the emulator's root is known only once it listens. Returns a new frozen config. */
export function withServiceBaseUrl(config: Config, baseUrl: string): Config {
  return Object.freeze({ ...config, serviceBaseUrl: baseUrl.replace(/\/+$/, '') });
}

/** The password of a `redis://user:password@host` URL (decoded), or undefined. */
function redisPassword(url: string | undefined): string | undefined {
  if (!url) return undefined;
  try {
    const p = new URL(url).password;
    return p ? decodeURIComponent(p) : undefined;
  } catch {
    return undefined;
  }
}

/** `REDIS_URL` with its password (if any) replaced by `[redacted]`: safe to log. */
export function maskedRedisUrl(url: string): string {
  try {
    const u = new URL(url);
    if (!u.password) return url;
    u.password = 'redacted';
    return u.href.replace(':redacted@', ':[redacted]@');
  } catch {
    return '[redacted]';
  }
}

/** The configuration with every secret replaced by `[redacted]`: safe to print or log. */
export function describeConfig(config: Config): Record<string, unknown> {
  return {
    ...config,
    serviceApiKey: '[redacted]',
    webhookSecrets: config.webhookSecrets.map(() => '[redacted]'),
    sessionSecret: '[redacted]',
    redisUrl: config.redisUrl === undefined ? undefined : maskedRedisUrl(config.redisUrl),
    metricsToken: config.metricsToken === undefined ? undefined : '[redacted]',
    databaseUrl: config.databaseUrl === undefined ? undefined : '[redacted]',
    sso: config.sso && { ...config.sso, clientSecret: '[redacted]' },
    media: config.media && {
      ...config.media,
      janusApiSecret: config.media.janusApiSecret === undefined ? undefined : '[redacted]',
      voicemailAfter: config.media.voicemailAfter && Object.fromEntries([...config.media.voicemailAfter].map(([n, ms]) => [n, ms === null ? 'off' : `${ms / 1000} s`])),
    },
    ice: config.ice && {
      ...config.ice,
      turnAuth:
        config.ice.turnAuth.kind === 'secret'
          ? { ...config.ice.turnAuth, secret: '[redacted]' }
          : config.ice.turnAuth.kind === 'static'
            ? { ...config.ice.turnAuth, password: '[redacted]' }
            : config.ice.turnAuth,
    },
  };
}

/** Every secret value of the configuration (for log scrubbing): the Redis password, the metrics token and the database URL too. */
export function secretsOf(
  config: Pick<Config, 'serviceApiKey' | 'sessionSecret' | 'webhookSecrets'> & { redisUrl?: string | undefined } & Partial<Pick<Config, 'metricsToken' | 'databaseUrl' | 'ice' | 'media' | 'sso'>>,
): string[] {
  const turn = config.ice?.turnAuth;
  const redis = redisPassword(config.redisUrl);
  return [
    config.serviceApiKey,
    config.sessionSecret,
    ...config.webhookSecrets,
    ...(redis ? [redis] : []),
    ...(config.metricsToken ? [config.metricsToken] : []),
    ...databaseSecrets(config.databaseUrl),
    ...(turn?.kind === 'secret' ? [turn.secret] : turn?.kind === 'static' ? [turn.password] : []),
    ...(config.media?.janusApiSecret ? [config.media.janusApiSecret] : []),
    ...(config.sso ? [config.sso.clientSecret] : []),
  ];
}

/** The database URL and its password (alone and URL-decoded), so neither ever reaches a log line. */
function databaseSecrets(url: string | undefined): string[] {
  if (!url) return [];
  const out = [url];
  try {
    const pw = new URL(url).password;
    if (pw) out.push(pw, decodeURIComponent(pw));
  } catch {
    // validated at load; nothing more to add
  }
  return out;
}
