/**
 * STUN/TURN for the pages: what each logged-in page's peer connections are built
 * with. With `TURN_SECRET` (coturn's REST API, `use-auth-secret`) every page gets its own
 * short-lived credentials: username `<expiry unix s>:<user>`, credential
 * base64(HMAC-SHA1(secret, username)); the gateway sends them in `welcome` and renews them
 * on the socket at half their life (`renewAt`). coturn checks the expiry when an allocation
 * is made, not when it is refreshed, so a call outlives its credentials; a connection made
 * later (a monitor, a call back, an ICE restart) uses the newest.
 *
 * The secret itself never leaves this file; the minted credential goes only to the user's
 * own sockets.
 */
import { createHmac } from 'node:crypto';
import type { IceConfig, IceServer } from '../../shared/protocol.ts';
import type { IceSettings } from '../config/config.ts';

/** coturn REST credentials for `user`, valid until `expiresAtS` (unix seconds). */
export function mintTurnCredential(secret: string, user: string, expiresAtS: number): { username: string; credential: string } {
  const username = `${expiresAtS}:${user}`;
  return { username, credential: createHmac('sha1', secret).update(username).digest('base64') };
}

export interface IssuedIce {
  config: IceConfig;
  /** When to send fresh credentials (epoch ms); undefined: they never expire (static or none). */
  renewAt: number | undefined;
}

export interface IceIssuer {
  /** The servers (and this user's credentials) for a page of `user`, now. */
  issue(user: string, now: number): IssuedIce;
}

export function createIceIssuer(settings: IceSettings): IceIssuer {
  const stun = settings.urls.filter((u) => u.startsWith('stun'));
  const turn = settings.urls.filter((u) => u.startsWith('turn'));
  const auth = settings.turnAuth;
  return {
    issue(user, now) {
      const iceServers: IceServer[] = [];
      if (stun.length) iceServers.push({ urls: [...stun] });
      let expiresAt: number | undefined;
      let renewAt: number | undefined;
      if (turn.length && auth.kind === 'secret') {
        const expiresAtS = Math.floor(now / 1000) + auth.ttlS;
        expiresAt = expiresAtS * 1000;
        renewAt = now + (auth.ttlS * 1000) / 2;
        iceServers.push({ urls: [...turn], ...mintTurnCredential(auth.secret, user, expiresAtS) });
      } else if (turn.length && auth.kind === 'static') {
        iceServers.push({ urls: [...turn], username: auth.username, credential: auth.password });
      }
      return { config: { iceServers, iceTransportPolicy: settings.transportPolicy, ...(expiresAt !== undefined ? { expiresAt } : {}) }, renewAt };
    },
  };
}
