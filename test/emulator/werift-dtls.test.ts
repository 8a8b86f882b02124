/**
 * werift ↔ werift DTLS on a slow path (calls/werift-dtls.ts): the ice-lite caller (as
 * the emulator makes it) and an answering werift agent, the caller's handshake packets
 * 1.2 s late (past the DTLS client's retransmission timers), so the DTLS client's
 * ClientHello goes out twice and is answered twice. werift 0.24.4 without the fix fails
 * every such connect, in either DTLS role: the DTLS client's side goes `failed` on the second
 * HelloVerifyRequest (timed out, "caller failed, agent connected" / "caller connected, agent
 * failed"). The fix is pinned to the installed werift version (last case).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AudioPeer, loadWerift } from './calls/peer.ts';
import { WERIFT_VERSION, assertWeriftVersion, helloVerifyCookie, installedWeriftVersion } from './calls/werift-dtls.ts';
import { lagCallerDtls } from '../support/dtls-lag.ts';
import { sleep, until } from '../support/wait.ts';
import { internal } from '../support/internals.ts';

const peers: AudioPeer[] = [];
afterEach(async () => {
  await Promise.all(peers.splice(0).map((p) => p.close()));
  lagCallerDtls(0, 'server');
});

async function connect(agentRole: 'client' | 'server'): Promise<{ caller: AudioPeer; agent: AudioPeer }> {
  const { peer: caller, sdp: offer } = await AudioPeer.offerer({ iceLite: true });
  peers.push(caller);
  const { peer: agent, sdp: answer } = await AudioPeer.answerer(offer, { dtlsRole: agentRole });
  peers.push(agent);
  expect(answer).toMatch(agentRole === 'server' ? /\r\na=setup:passive\r\n/ : /\r\na=setup:active\r\n/);
  await sleep(200); // the answer travels to the Service (preAccept / accept) meanwhile
  await caller.applyAnswer(answer);
  caller.startSending({ kind: 'tone', hz: 400 });
  agent.startSending({ kind: 'tone', hz: 730 });
  return { caller, agent };
}

describe('werift DTLS with retransmitted hellos (caller 1.2 s away)', () => {
  for (const role of ['client', 'server'] as const) {
    it(`agent as DTLS ${role}: both sides connect and hear each other`, async () => {
      lagCallerDtls(1200, role);
      const { caller, agent } = await connect(role);
      await until('both connected, RTP both ways', () => {
        const c = caller.mediaStats();
        const a = agent.mediaStats();
        if (c.connectionState === 'failed' || a.connectionState === 'failed') throw new Error(`failed: caller ${c.connectionState}, agent ${a.connectionState}`);
        return c.connectionState === 'connected' && a.connectionState === 'connected' && c.audibleFrames > 10 && a.audibleFrames > 10;
      }, 30_000);
      expect(caller.hears([730], 200).levels[0]).toBeGreaterThan(0.05);
      expect(agent.hears([400], 200).levels[0]).toBeGreaterThan(0.05);
    }, 45_000);
  }
});

describe('the HelloVerifyRequest fix is pinned to werift ' + WERIFT_VERSION, () => {
  it('runs on the installed version only, and is installed on the DtlsClient werift peers use', async () => {
    expect(installedWeriftVersion()).toBe(WERIFT_VERSION);
    expect(() => assertWeriftVersion('0.25.2')).toThrow(/written for werift 0\.24\.4, found 0\.25\.2/);
    const w = await loadWerift();
    expect(internal(w.DtlsClient.prototype, Symbol.for('switchboard.weriftHelloVerify'))).toBe(true);
  });

  it('reads the cookie of a HelloVerifyRequest (version, length, cookie)', () => {
    expect(helloVerifyCookie(Buffer.from([0xfe, 0xfd, 3, 1, 2, 3, 9])).toString('hex')).toBe('010203');
    expect(() => helloVerifyCookie(Buffer.from([0xfe, 0xfd, 5, 1]))).toThrow(/too short/);
  });
});
