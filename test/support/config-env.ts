/** The config tests' production environment and a helper that expects loadConfig to refuse one (server/config/*.test.ts). */
import { expect } from 'vitest';
import { ConfigError, loadConfig } from '../../server/config/config.ts';

export const prod = {
  SERVICE_BASE_URL: 'https://service.example/v2/',
  SERVICE_API_KEY: 'key_abcdefghijklmnop',
  SERVICE_WEBHOOK_SECRETS: 'whsec_aaaaaaaaaaaaaaaa, whsec_bbbbbbbbbbbbbbbb',
  SESSION_SECRET: 'session-secret-0123456789',
  USERS_FILE: './users.json',
  PUBLIC_URL: 'https://switchboard.example',
};

/** The one-line message loadConfig throws for `env` (it must throw a ConfigError). */
export function failure(env: Record<string, string>): string {
  try {
    loadConfig(env);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error('loadConfig accepted an invalid environment');
}
