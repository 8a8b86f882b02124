/** The shape of the frozen configuration `loadConfig` builds (config.ts), by concern. */
import type { FollowupSetting } from './followup.ts';
import type { HoursTable } from './hours.ts';
import type { QueueAudioTable } from './queueAudio.ts';
import type { VoicemailAfterTable } from './voicemail.ts';
import type { LogLevel } from './variables.ts';

export interface Config {
  /** HTTP + WebSocket port (0 = any free port). */
  readonly port: number;
  /**
   * Webhooks on a thread and port of their own (server/webhooks/intake.ts; 0 = any free port);
   * undefined: on `port`, on the node's event loop.
   */
  readonly webhookPort: number | undefined;
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
  /** `VOICEMAIL_PROMPT_FILE`: what the caller hears before leaving a message, ending with the tone (default the bundled spoken prompt). */
  readonly voicemailPrompt: Announcement;
  /** `CLOSED_GREETING_FILE`: out of hours, the closed greeting followed by the prompt, one file (default the bundled one). */
  readonly closedGreeting: Announcement;
}
/** An Ogg/Opus file Janus plays (a path it sees) and its length, read at start. */
export interface Announcement {
  readonly file: string;
  readonly ms: number;
}
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
