/** `ICE_SERVERS` and the TURN credentials: the combinations that cannot work stop the start. */
import { read } from './schemas.ts';
import type { IceSettings, TurnAuth } from './types.ts';
import { ConfigError } from './variables.ts';

/**
 * ICE_SERVERS and its credentials. The combinations that cannot work stop the start: TURN
 * URLs without credentials (every allocation would be refused), both kinds of credentials,
 * credentials without a TURN URL, and `relay` without TURN (no call could connect).
 */
export function readIce(env: Record<string, string | undefined>): IceSettings {
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
