/**
 * A real OpenID Connect provider for tests: the `oidc-provider` package on a free loopback
 * port, with its development login (any password) and consent pages, and the accounts a
 * test gives (claims per account id; `roles` is released with the `profile` scope).
 *
 *   const op = await startOidcProvider({ accounts: { olga: { roles: ['agent'] } } });
 *   ... OIDC_ISSUER: op.issuer, OIDC_CLIENT_ID: op.clientId, OIDC_CLIENT_SECRET: op.clientSecret
 *   op.register(`${bridge.url}/auth/sso/callback`);   // once the app's address is known
 *   await op.close();
 *
 * The port is bound first (the issuer names it); the provider answers once `register` has
 * named the client's redirect URI (discovery happens at the first sign-in).
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Build the provider with the client's redirect URI (call before the first sign-in). */
  register(redirectUri: string): void;
  close(): Promise<void>;
}

export async function startOidcProvider(o: { accounts: Record<string, Record<string, unknown>> }): Promise<TestOidcProvider> {
  let handler: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  const server = createServer((req, res) => {
    if (handler) return handler(req, res);
    res.statusCode = 503;
    res.end('provider not registered yet');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const clientId = `switchboard-${randomBytes(4).toString('hex')}`;
  const clientSecret = randomBytes(24).toString('base64url');
  return {
    issuer,
    clientId,
    clientSecret,
    register(redirectUri) {
      const provider = new Provider(issuer, {
        clients: [{ client_id: clientId, client_secret: clientSecret, redirect_uris: [redirectUri], grant_types: ['authorization_code'], response_types: ['code'] }],
        pkce: { required: () => true },
        claims: { openid: ['sub'], profile: ['name', 'preferred_username', 'roles'], email: ['email', 'email_verified'] },
        // The ID token carries the scopes' claims (the server also reads userinfo when it does not).
        conformIdTokenClaims: false,
        cookies: { keys: [randomBytes(16).toString('hex')] },
        findAccount: (_ctx: unknown, id: string) => (o.accounts[id] ? { accountId: id, claims: () => ({ sub: id, preferred_username: id, ...o.accounts[id] }) } : undefined),
      });
      handler = provider.callback();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
