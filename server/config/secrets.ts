/** Single sign-on's settings, and the secrets of the configuration: redacted for printing, listed for log scrubbing. */
import { read } from './schemas.ts';
import type { Config } from './types.ts';
import { ConfigError } from './variables.ts';

/** OIDC_* and PASSWORD_LOGIN: the provider needs its client id and secret and a PUBLIC_URL to come back to; password login off needs single sign-on. */
export function readSso(env: Record<string, string | undefined>): Pick<Config, 'sso' | 'passwordLogin'> {
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
