/** One zod schema per variable, and `read`: a variable's value parsed, or a `ConfigError` naming it and the rule. */
import { z } from 'zod';
import { FollowupSettingError, parseFollowupSetting, type FollowupSetting } from './followup.ts';
import { ConfigError, LOG_LEVELS, SECRET_VARIABLES, SIGNATURE_TOLERANCE_S, type Variable } from './variables.ts';

/** A STUN/TURN URL as browsers take it: `stun:`, `turn:` or `turns:` host[:port][?transport=udp|tcp]. */
export const ICE_URL = /^(stun|stuns|turn|turns):(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?(\?transport=(udp|tcp))?$/;

/** A voicemail announcement: read here at start (its length) and played by Janus at the same path. */
const announcementPath = z.string().regex(/^\/[^\0\n]{0,4095}$/, 'must be an absolute path to an Ogg/Opus file, readable here and by Janus at the same path').refine((p) => p.endsWith('.opus') || p.endsWith('.ogg'), 'must name an Ogg/Opus file (.opus or .ogg): the only format Janus plays');
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
  WEBHOOK_PORT: intIn(0, 65535),
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
  VOICEMAIL_PROMPT_FILE: announcementPath,
  CLOSED_GREETING_FILE: announcementPath,
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

export function read<K extends Variable>(env: Record<string, string | undefined>, name: K): Parsed[K] | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const r = schemas[name].safeParse(raw);
  if (r.success) return r.data as Parsed[K];
  const rule = r.error.issues[0]?.message ?? 'is invalid';
  // Secrets are never echoed; other values are, to make the mistake obvious.
  const shown = SECRET_VARIABLES.has(name) ? '' : ` (got ${JSON.stringify(raw.length > 80 ? raw.slice(0, 80) + '…' : raw)})`;
  throw new ConfigError(name, rule + shown);
}

export function required<T>(value: T | undefined, name: Variable, why: string): T {
  if (value === undefined) throw new ConfigError(name, `is required ${why}`);
  return value;
}
