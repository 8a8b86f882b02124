/** The variables the server reads, which of them are secrets, and the one error a bad value gives. */
/** How old a webhook's signature timestamp may be (the Service's rule); webhooks/signature.ts checks it. */
export const SIGNATURE_TOLERANCE_S = 300;

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

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
  'WEBHOOK_PORT',
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
  'VOICEMAIL_PROMPT_FILE',
  'CLOSED_GREETING_FILE',
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
