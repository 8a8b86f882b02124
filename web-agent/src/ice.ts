/**
 * STUN/TURN for every RTCPeerConnection this page makes: the call leg in either
 * direction, both sides of a monitor, the preflight. The server sends them in `welcome`
 * (with this user's own TURN credentials) and renews minted credentials with `ice.servers`;
 * the page's one `Connection` hands each to `setIceConfig`, and `rtcConfiguration()` builds a
 * connection's settings from the newest. They are never put in the HTML, a URL or the console.
 *
 * A connection that is already up keeps its allocation: coturn checks a credential's expiry
 * when an allocation is made, not on its refreshes, so nothing live is reconfigured.
 */
import type { IceConfig } from '../../shared/protocol.ts';

let current: IceConfig = { iceServers: [], iceTransportPolicy: 'all' };
let version = 0;

/** The newest servers and credentials (the connection calls this; tests may too). */
export function setIceConfig(cfg: IceConfig): void {
  current = cfg;
  version++;
}

export function iceConfig(): IceConfig {
  return current;
}

/** How many times the servers were set (a renewal bumps it): for the tests' hooks. */
export function iceVersion(): number {
  return version;
}

/** Does this page use a TURN server (so a relay candidate is expected)? */
export function hasTurn(cfg: IceConfig = current): boolean {
  return cfg.iceServers.some((s) => s.urls.some((u) => u.startsWith('turn')));
}

/** An audio peer connection's settings: the configured servers and policy, one bundled transport. */
export function rtcConfiguration(cfg: IceConfig = current): RTCConfiguration {
  return {
    iceServers: cfg.iceServers.map((s) => ({ urls: [...s.urls], ...(s.username !== undefined ? { username: s.username } : {}), ...(s.credential !== undefined ? { credential: s.credential } : {}) })),
    iceTransportPolicy: cfg.iceTransportPolicy,
    bundlePolicy: 'max-bundle',
    rtcpMuxPolicy: 'require',
  };
}
