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
import { readIce } from './ice.ts';
import { readMedia } from './media.ts';
import { readHours, readQueueAudio } from './numbers.ts';
import { read, required } from './schemas.ts';
import { readSso } from './secrets.ts';
import type { Config } from './types.ts';
import { ConfigError } from './variables.ts';

export { BUNDLED_CLOSED_GREETING, BUNDLED_HOLD_MUSIC, BUNDLED_VOICEMAIL_PROMPT, VOICEMAIL_MARGIN_MS, withDemoAnchor } from './media.ts';
export { BUNDLED_QUEUE_GREETING } from './numbers.ts';
export { ICE_URL } from './schemas.ts';
export { describeConfig, maskedRedisUrl, secretsOf } from './secrets.ts';
export type { Config, IceSettings, MediaSettings, SsoSettings, TurnAuth } from './types.ts';
export { ConfigError, LOG_LEVELS, SECRET_VARIABLES, SIGNATURE_TOLERANCE_S, VARIABLES, type LogLevel, type Variable } from './variables.ts';

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
    webhookPort: read(env, 'WEBHOOK_PORT'),
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

/** Demo mode: the emulator's root is known only once it listens. Returns a new frozen config. */
export function withServiceBaseUrl(config: Config, baseUrl: string): Config {
  return Object.freeze({ ...config, serviceBaseUrl: baseUrl.replace(/\/+$/, '') });
}
