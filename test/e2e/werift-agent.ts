/**
 * An agent that is a program, media and all, in Node: werift for WebRTC, opusscript for the
 * audio. Signaling goes through a `ProtocolClient` (ws) like any agent client; this is the
 * media half. It answers the offer pushed in `call.offered` with a complete (non-trickle)
 * answer, speaks a steady tone once the call is accepted, plays hold music while the call is
 * held (packets keep flowing: the Service drops a call that sends nothing for 20–30 s) and
 * counts what it receives from the caller.
 *
 * The peer is the emulator's `AudioPeer` (the same werift set-up as the chat user's phone),
 * answering as the DTLS server by default. werift's DTLS handshake bugs (a retransmitted
 * ClientHello answered twice) are fixed at load by `test/emulator/calls/werift-dtls.ts`.
 */
import { AudioPeer, type MediaStats } from '../emulator/calls/peer.ts';
import { HOLD_NOTE_S, HOLD_TUNE_HZ } from '../../web-agent/src/hold-music.ts';

/** The agent's voice: a steady tone the caller can pick out by frequency. */
export const AGENT_HZ = 730;
/** Hold music: the pages' tune (web-agent/src/hold-music.ts), note for note. */
export const HOLD_MUSIC = { kind: 'tune', hz: HOLD_TUNE_HZ, noteMs: HOLD_NOTE_S * 1000, amplitude: 0.25 } as const;

export interface WeriftAgentOptions {
  /** DTLS role of the answer (`a=setup`): `server` → passive (default), `client` → active. */
  dtlsRole?: 'client' | 'server';
  /** The agent's voice (default AGENT_HZ). */
  hz?: number;
  /**
   * Where its media may go (the emulator's `PeerOptions.network`): `loopback` (default), or
   * `machine` — every address of this machine and its links' neighbours, e.g. a Janus in a
   * test's network namespace (anchor mode).
   */
  network?: 'loopback' | 'machine';
}

export class WeriftAgent {
  private constructor(
    readonly peer: AudioPeer,
    /** The answer SDP, byte-exact as it goes into `call.answer`. */
    readonly sdp: string,
    private readonly voice: { kind: 'tone'; hz: number },
  ) {}

  /** Apply `offer` and build a complete answer (ICE gathering finished, with a timeout). */
  static async answer(offer: string, opts: WeriftAgentOptions = {}): Promise<WeriftAgent> {
    const { peer, sdp } = await AudioPeer.answerer(offer, { dtlsRole: opts.dtlsRole ?? 'server', ...(opts.network ? { network: opts.network } : {}) });
    return new WeriftAgent(peer, sdp, { kind: 'tone', hz: opts.hz ?? AGENT_HZ });
  }

  /** Start talking (after the ack of `call.answer`: audio before accept clips the caller). */
  speak(): void {
    this.peer.startSending(this.voice);
  }

  /** On hold: music in place of the voice, on the same RTP stream (never nothing). */
  hold(): void {
    this.peer.switchSource(HOLD_MUSIC);
  }

  resume(): void {
    this.peer.switchSource(this.voice);
  }

  /** Resolves when ICE and DTLS are up; rejects when the connection fails or after `timeoutMs`. */
  connected(timeoutMs = 10_000): Promise<void> {
    const pc = this.peer.pc;
    return new Promise((resolve, reject) => {
      const settle = (s: string): boolean => {
        if (s === 'connected') resolve();
        else if (s === 'failed' || s === 'closed') reject(new Error(`werift agent: connection ${s}`));
        else return false;
        clearTimeout(timer);
        sub.unSubscribe();
        return true;
      };
      const timer = setTimeout(() => {
        sub.unSubscribe();
        reject(new Error(`werift agent: not connected within ${timeoutMs} ms (${pc.connectionState})`));
      }, timeoutMs);
      const sub = pc.connectionStateChange.subscribe((s) => settle(s));
      settle(pc.connectionState);
    });
  }

  stats(): MediaStats {
    return this.peer.mediaStats();
  }

  close(): Promise<void> {
    return this.peer.close();
  }
}
