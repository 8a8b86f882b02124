import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { IceConfig } from '../../shared/protocol.ts';
import { loadConfig } from '../config/config.ts';
import { createIceIssuer, mintTurnCredential } from './ice.ts';

const secret = 'turn-secret-0123456789abcdef';
const T = Date.UTC(2026, 10, 27, 10, 0, 0);

describe('TURN REST credentials (coturn use-auth-secret)', () => {
  it('username <expiry>:<user>, credential base64 HMAC-SHA1 of the username with the secret', () => {
    // Worked by hand the way coturn's README does it: HMAC-SHA1 over the whole username.
    const { username, credential } = mintTurnCredential(secret, 'alice', 1_800_000_000);
    expect(username).toBe('1800000000:alice');
    expect(credential).toBe(createHmac('sha1', secret).update('1800000000:alice').digest('base64'));
    expect(Buffer.from(credential, 'base64')).toHaveLength(20);
  });

  it('an issuer groups STUN apart from TURN, mints per user with TURN_TTL_S, renews at half the life', () => {
    const c = loadConfig({ ICE_SERVERS: 'stun:t.example.com:3478,turn:t.example.com:3478?transport=udp,turns:t.example.com:443?transport=tcp', TURN_SECRET: secret, TURN_TTL_S: '600' });
    const { config, renewAt } = createIceIssuer(c.ice).issue('alice', T);
    expect(IceConfig.parse(config)).toEqual(config);
    expect(config.iceTransportPolicy).toBe('all');
    expect(config.iceServers[0]).toEqual({ urls: ['stun:t.example.com:3478'] });
    const turn = config.iceServers[1]!;
    expect(turn.urls).toEqual(['turn:t.example.com:3478?transport=udp', 'turns:t.example.com:443?transport=tcp']);
    expect(turn.username).toBe(`${T / 1000 + 600}:alice`);
    expect(config.expiresAt).toBe(T + 600_000);
    expect(renewAt).toBe(T + 300_000);
    expect(JSON.stringify(config)).not.toContain(secret);
    // Another user, another credential.
    expect(createIceIssuer(c.ice).issue('bob', T).config.iceServers[1]!.credential).not.toBe(turn.credential);
  });

  it('static credentials are handed as they are and never renewed; no servers: an empty list', () => {
    const c = loadConfig({ ICE_SERVERS: 'turn:t.example.com', TURN_USERNAME: 'agents', TURN_PASSWORD: 'static-pass-word', ICE_TRANSPORT_POLICY: 'relay' });
    expect(createIceIssuer(c.ice).issue('alice', T)).toEqual({
      config: { iceServers: [{ urls: ['turn:t.example.com'], username: 'agents', credential: 'static-pass-word' }], iceTransportPolicy: 'relay' },
      renewAt: undefined,
    });
    expect(createIceIssuer(loadConfig({}).ice).issue('alice', T)).toEqual({ config: { iceServers: [], iceTransportPolicy: 'all' }, renewAt: undefined });
  });
});
