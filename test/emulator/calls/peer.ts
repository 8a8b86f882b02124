/**
 * A werift peer that speaks and listens like a chat user's phone: only Opus (PT 111,
 * in-band FEC) and telephone-event (PT 126), non-trickle SDP; ICE on loopback (test agents)
 * or on this machine's addresses (the emulator's users, `network.ts`).
 *
 * It plays a tone (or the silence frame) in 20 ms Opus frames and keeps what it
 * receives: RTP counts, arrival times and the decoded level, and the packets themselves
 * so a recording can be made after the call.
 *
 * werift is imported on first use: it takes ~0.5 s to load, which must not land on
 * `startEmulator()` (demo mode starts the emulator lazily).
 */
import type * as Werift from 'werift';
import { toneLevel } from '../../../web-agent/src/monitor/energy.ts';
import { machineLinks, onLink } from './network.ts';
import { withHelloVerifyFix } from './werift-dtls.ts';
import { FRAME_MS, FRAME_SAMPLES, LevelWindow, OPUS_SILENCE, OpusDecoder, SAMPLE_RATE, packetSource, rms, type AudioSource, type WindowStats } from './audio.ts';
import { wrapMethod } from '../../support/internals.ts';

/** How much decoded audio a peer keeps for `hears` (what the simulated user heard lately). */
const RECENT_MS = 3_000;
/** Goertzel block, as the pages' meters (4096 samples at 48 kHz ≈ 85 ms). */
const BLOCK = 4096;

export type { AudioSource } from './audio.ts';

let weriftModule: Promise<typeof Werift> | undefined;
/**
 * werift, loaded once, its DTLS client answering every HelloVerifyRequest (`werift-dtls.ts`:
 * without it a retransmitted ClientHello answered twice fails the DTLS client's side of the
 * call on a slow or loaded path).
 */
export const loadWerift = () => (weriftModule ??= import('werift').then(withoutMdnsQueries).then(withHelloVerifyFix));

/**
 * werift looks a remote `<name>.local` candidate up with a multicast DNS query (through every
 * interface, the outside one included, and up to 10 s). Our peers never do: such a candidate
 * is dropped, and the browser's own checks, sent from its real address, teach the peer that
 * address as a peer-reflexive candidate (`network.ts`). Applies to every werift connection
 * in this process (emulator users and test agents alike; the server never loads werift).
 */
const NO_MDNS = Symbol.for('switchboard.weriftNoMdns');

function withoutMdnsQueries(w: typeof Werift): typeof Werift {
  type Add = (this: unknown, c?: { host: string }) => Promise<void>;
  wrapMethod<Add>(w.Connection.prototype, 'addRemoteCandidate', NO_MDNS, (add) =>
    async function (this: unknown, c?: { host: string }) {
      if (c && c.host.toLowerCase().endsWith('.local')) return;
      return add.call(this, c);
    },
  );
  return w;
}

export interface PeerOptions {
  /** Advertise ICE lite (the provider's side of a chat call is ice-lite). Default false. */
  iceLite?: boolean;
  /**
   * Where the peer's media may go. `loopback` (default): 127.0.0.1 only (test agents and
   * business peers beside the emulator). `machine`: every IPv4 address of this machine and
   * neighbours on its links, never through a router (`network.ts`): what a browser on this
   * machine, or in a network namespace joined to it, offers without test flags. The
   * emulator's callers and callees use `machine`.
   */
  network?: 'loopback' | 'machine';
  /** Gathering must finish within this, or creation fails (non-trickle: we can't hand out half an SDP). Default 5000. */
  gatheringTimeoutMs?: number;
}

export async function createPeerConnection(opts: PeerOptions = {}): Promise<Werift.RTCPeerConnection> {
  const w = await loadWerift();
  const codecs = {
    audio: [
      w.useOPUS({ payloadType: 111, parameters: 'minptime=10;useinbandfec=1' }),
      new w.RTCRtpCodecParameters({ mimeType: 'audio/telephone-event', clockRate: 8000, payloadType: 126 }),
    ],
  };
  if (opts.network === 'machine') {
    const links = machineLinks();
    return new w.RTCPeerConnection({
      iceServers: [],
      iceUseIpv6: false,
      iceLite: opts.iceLite ?? false,
      // werift leaves loopback and veth links out of its host candidates: name them all.
      iceAdditionalHostAddresses: links.map((l) => l.address),
      codecs,
      // Sockets on the wildcard address (one per candidate): a check is answered only when
      // the reply leaves from the address it was sent to, on this machine's links.
      iceFilterStunResponse: (_m, addr, protocol) => onLink(links, protocol.localCandidate?.host, addr[0]),
      iceFilterCandidatePair: (p) => onLink(links, p.protocol.localCandidate?.host, p.remoteCandidate.host),
    });
  }
  return new w.RTCPeerConnection({
    iceServers: [],
    // One host candidate, 127.0.0.1: the emulator and its peers all live there. werift's
    // own address list (its interfaces, loopback left out) is turned off, not filtered: its
    // `iceInterfaceAddresses` filter matches nothing in that list and then keeps all of it,
    // so the peer offered every address of the machine (other tests' veth links included),
    // each a socket bound to 127.0.0.1 that no check to that address could reach. A browser
    // then spent its checks on those dead pairs (and re-gathered as veth links came and
    // went) and the call sat in `checking`.
    iceUseIpv4: false,
    iceUseIpv6: false,
    iceLite: opts.iceLite ?? false,
    iceAdditionalHostAddresses: ['127.0.0.1'],
    // Bind to loopback only: otherwise an ice-lite caller may nominate its non-loopback
    // socket (e.g. 192.0.2.2) for a 127.0.0.1 remote, and Chromium's DTLS never completes.
    iceInterfaceAddresses: { udp4: '127.0.0.1' },
    codecs,
    iceFilterStunResponse: (_m, addr) => addr[0] === '127.0.0.1',
    iceFilterCandidatePair: (p) => p.remoteCandidate.host === '127.0.0.1',
  });
}

/** Resolves when ICE gathering is complete, so the local SDP carries every candidate. */
export function gatheringComplete(pc: Werift.RTCPeerConnection, timeoutMs = 5000): Promise<void> {
  return new Promise((resolve, reject) => {
    if (pc.iceGatheringState === 'complete') return resolve();
    const timer = setTimeout(() => {
      sub.unSubscribe();
      reject(new Error(`ICE gathering did not complete in ${timeoutMs} ms`));
    }, timeoutMs);
    const sub = pc.iceGatheringStateChange.subscribe((s) => {
      if (s !== 'complete') return;
      clearTimeout(timer);
      sub.unSubscribe();
      resolve();
    });
  });
}

export interface ReceivedPacket {
  /** Epoch ms (real clock) of arrival. */
  at: number;
  seq: number;
  timestamp: number;
  payload: Buffer;
}

export interface MediaStats {
  packetsSent: number;
  packetsReceived: number;
  bytesReceived: number;
  /** Epoch ms of the first / last received RTP packet. */
  firstReceivedAt?: number;
  lastReceivedAt?: number;
  /** Frames decoded with Opus. */
  decodedFrames: number;
  /** Mean RMS (0..1 full scale) of all decoded frames; a 0.3-peak tone gives ~0.21, silence 0. */
  meanLevel: number;
  /** Highest frame RMS seen. */
  peakLevel: number;
  /** Frames whose RMS is above 0.01 (i.e. not silence). */
  audibleFrames: number;
  /** Connection state of the peer. */
  connectionState: string;
  /** The nominated candidate pair (`address:port`), once ICE chose one: where the audio goes. */
  path?: { local: string; remote: string; remoteType: string };
}


/**
 * One side of a call: the RTCPeerConnection, a sending track and a receive meter.
 * Sending starts only when `startSending()` is called (after accept, like a real phone).
 */
export class AudioPeer {
  readonly received: ReceivedPacket[] = [];
  private readonly stats = { packetsSent: 0, packetsReceived: 0, bytesReceived: 0, decodedFrames: 0, levelSum: 0, peakLevel: 0, audibleFrames: 0 } as {
    packetsSent: number;
    packetsReceived: number;
    bytesReceived: number;
    decodedFrames: number;
    levelSum: number;
    peakLevel: number;
    audibleFrames: number;
    firstReceivedAt?: number;
    lastReceivedAt?: number;
  };
  private decoder: OpusDecoder | undefined;
  /** What was heard since `markWindow()` (hold music vs speech vs silence). */
  private readonly window = new LevelWindow();
  /** Decoded frames of the last RECENT_MS (for `hears`). */
  private recent: Array<{ at: number; pcm: Int16Array }> = [];
  private sendTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private encodeErrorLogged = false;
  /** Called on every received packet (media watchdogs hook here). */
  onPacket: ((p: ReceivedPacket) => void) | undefined;
  /** When this peer started sending (epoch ms), for the recording timeline. */
  sendStartedAt: number | undefined;
  sendSource: AudioSource = { kind: 'tone' };
  private nextPacket: () => Buffer | undefined = () => undefined;

  private constructor(
    readonly pc: Werift.RTCPeerConnection,
    private readonly track: Werift.MediaStreamTrack,
    private readonly w: typeof Werift,
    /** Keep every received packet (for the recording). */
    private readonly keepPackets: boolean,
  ) {
    pc.onTrack.subscribe((t) => {
      t.onReceiveRtp.subscribe((rtp) => this.receive(rtp));
    });
  }

  /** The offering side (a user dialling a business, or a business dialling a user). */
  static async offerer(opts: PeerOptions & { keepPackets?: boolean } = {}): Promise<{ peer: AudioPeer; sdp: string }> {
    const w = await loadWerift();
    const pc = await createPeerConnection(opts);
    const track = new w.MediaStreamTrack({ kind: 'audio' });
    pc.addTransceiver(track, { direction: 'sendrecv' });
    const peer = new AudioPeer(pc, track, w, opts.keepPackets ?? false);
    try {
      await pc.setLocalDescription(await pc.createOffer());
      await gatheringComplete(pc, opts.gatheringTimeoutMs);
    } catch (err) {
      await peer.close();
      throw err;
    }
    return { peer, sdp: pc.localDescription!.sdp };
  }

  /** The answering side: applies the remote offer and produces a complete answer. */
  static async answerer(offerSdp: string, opts: PeerOptions & { keepPackets?: boolean; dtlsRole?: 'client' | 'server' } = {}): Promise<{ peer: AudioPeer; sdp: string }> {
    const w = await loadWerift();
    const pc = await createPeerConnection(opts);
    const track = new w.MediaStreamTrack({ kind: 'audio' });
    const peer = new AudioPeer(pc, track, w, opts.keepPackets ?? false);
    try {
      await pc.setRemoteDescription({ type: 'offer', sdp: offerSdp });
      const tr = pc.getTransceivers().find((t) => t.kind === 'audio');
      if (!tr) throw new Error('the offer has no audio section');
      await tr.sender.replaceTrack(track);
      tr.setDirection('sendrecv');
      const answer = await pc.createAnswer();
      // Answer as the DTLS server (setup:passive) unless told otherwise: the server is
      // listening before the offerer even has our answer (it applies it after an HTTP round
      // trip), so no ClientHello is lost on the way and the handshake needs no retransmission.
      const role = opts.dtlsRole ?? 'server';
      const sdp = role === 'server' ? answer.sdp.replace(/^a=setup:active(?=\r?$)/gm, 'a=setup:passive') : answer.sdp;
      await pc.setLocalDescription({ type: 'answer', sdp });
      await gatheringComplete(pc, opts.gatheringTimeoutMs);
    } catch (err) {
      await peer.close();
      throw err;
    }
    return { peer, sdp: pc.localDescription!.sdp };
  }

  /** Applies the remote answer (offerer side). Throws on an SDP werift can't use. */
  async applyAnswer(sdp: string): Promise<void> {
    await this.pc.setRemoteDescription({ type: 'answer', sdp });
  }

  /** Starts the 20 ms send clock. Drift-corrected: frames due are computed from elapsed time. */
  startSending(source: AudioSource = this.sendSource): void {
    if (this.closed || this.sendTimer) return;
    this.sendSource = source;
    if (source.kind === 'none') return; // one-way audio: nothing ever leaves this side
    this.nextPacket = this.packets(source);
    const w = this.w;
    const start = Date.now();
    this.sendStartedAt = start;
    let sent = 0;
    let seq = Math.floor(Math.random() * 0xffff);
    let ts = Math.floor(Math.random() * 0xffffffff);
    const tick = () => {
      if (this.closed) return;
      const due = Math.floor((Date.now() - start) / FRAME_MS) + 1;
      // After a stall, skip ahead instead of bursting more than 5 frames.
      if (due - sent > 5) {
        const skip = due - sent - 5;
        sent += skip;
        ts = (ts + skip * FRAME_SAMPLES) >>> 0;
      }
      while (sent < due) {
        const payload = this.nextPacket() ?? OPUS_SILENCE;
        const header = new w.RtpHeader({ payloadType: 111, sequenceNumber: seq, timestamp: ts, marker: sent === 0 });
        try {
          this.track.writeRtp(new w.RtpPacket(header, payload));
          this.stats.packetsSent++;
        } catch {
          // transport not ready yet: a real phone's packets are lost the same way
        }
        seq = (seq + 1) & 0xffff;
        ts = (ts + FRAME_SAMPLES) >>> 0;
        sent++;
      }
    };
    tick();
    this.sendTimer = setInterval(tick, FRAME_MS);
    this.sendTimer.unref();
  }

  /**
   * Play another source from the next frame on, on the same clock and RTP stream (hold
   * music in place of the voice: no gap, no new sequence numbers, like `replaceTrack`).
   */
  switchSource(source: AudioSource): void {
    this.sendSource = source;
    this.nextPacket = this.packets(source);
  }

  /** The source's packets; silence when they cannot be encoded (said once: a peer never throws from its clock). */
  private packets(source: AudioSource): () => Buffer | undefined {
    try {
      return packetSource(source);
    } catch (err) {
      if (!this.encodeErrorLogged) console.error('[emulator] Opus encode failed, sending silence:', (err as Error).message);
      this.encodeErrorLogged = true;
      return () => undefined;
    }
  }

  stopSending(): void {
    if (this.sendTimer) clearInterval(this.sendTimer);
    this.sendTimer = undefined;
  }

  private receive(rtp: Werift.RtpPacket) {
    if (this.closed || rtp.header.payloadType !== 111) return;
    const now = Date.now();
    const p: ReceivedPacket = { at: now, seq: rtp.header.sequenceNumber, timestamp: rtp.header.timestamp, payload: Buffer.from(rtp.payload) };
    const s = this.stats;
    s.packetsReceived++;
    s.bytesReceived += rtp.payload.length;
    s.firstReceivedAt ??= now;
    s.lastReceivedAt = now;
    if (this.keepPackets) this.received.push(p);
    try {
      this.decoder ??= new OpusDecoder();
      const pcm = this.decoder.decode(p.payload);
      this.window.add(pcm);
      this.recent.push({ at: now, pcm });
      while (this.recent.length > 0 && this.recent[0]!.at < now - RECENT_MS) this.recent.shift();
      const level = rms(pcm);
      s.decodedFrames++;
      s.levelSum += level;
      if (level > s.peakLevel) s.peakLevel = level;
      if (level > 0.01) s.audibleFrames++;
    } catch {
      // undecodable payload: counted as received, not as decoded
    }
    this.onPacket?.(p);
  }

  /** Start a new listening window (e.g. when the agent presses Hold). */
  markWindow(): void {
    this.window.reset();
  }

  /** What was heard since `markWindow()`: level, how continuous, which pitches (a tune has several). */
  windowStats(): WindowStats {
    return this.window.stats();
  }

  /**
   * What this user heard in the last `ms` (at most 3 s), tone by tone: the amplitude of each
   * frequency (Goertzel), the median over 4096-sample blocks; `blocks` says how much audio
   * that was (0: nothing arrived).
   */
  hears(hz: readonly number[], ms: number): { levels: number[]; blocks: number } {
    const since = Date.now() - ms;
    const pcm: number[] = [];
    for (const f of this.recent) if (f.at >= since) for (const v of f.pcm) pcm.push(v / 32768);
    const blocks: number[][] = [];
    for (let i = 0; i + BLOCK <= pcm.length; i += BLOCK) {
      const block = pcm.slice(i, i + BLOCK);
      blocks.push(hz.map((f) => toneLevel(block, SAMPLE_RATE, f)));
    }
    const median = (i: number) => (blocks.length === 0 ? 0 : blocks.map((b) => b[i]!).sort((a, b) => a - b)[Math.floor(blocks.length / 2)]!);
    return { levels: hz.map((_, i) => median(i)), blocks: blocks.length };
  }

  mediaStats(): MediaStats {
    const s = this.stats;
    return {
      packetsSent: s.packetsSent,
      packetsReceived: s.packetsReceived,
      bytesReceived: s.bytesReceived,
      ...(s.firstReceivedAt !== undefined ? { firstReceivedAt: s.firstReceivedAt, lastReceivedAt: s.lastReceivedAt } : {}),
      decodedFrames: s.decodedFrames,
      meanLevel: s.decodedFrames ? s.levelSum / s.decodedFrames : 0,
      peakLevel: s.peakLevel,
      audibleFrames: s.audibleFrames,
      connectionState: this.pc.connectionState,
      ...this.path(),
    };
  }

  /** Where the connection is, transport by transport (ICE, DTLS, the nominated pair): said when a connection stalls. */
  transportStates(): { connection: string; ice: string; dtls: string | undefined; nominated: string | undefined } {
    const path = this.path().path;
    return {
      connection: this.pc.connectionState,
      ice: this.pc.iceConnectionState,
      dtls: this.pc.dtlsTransports[0]?.state,
      nominated: path ? `${path.local} → ${path.remote}` : undefined,
    };
  }

  private path(): { path?: MediaStats['path'] } {
    const pair = this.pc.iceTransports[0]?.connection.nominated;
    if (!pair) return {};
    const l = pair.protocol.localCandidate;
    const r = pair.remoteCandidate;
    return l ? { path: { local: `${l.host}:${l.port}`, remote: `${r.host}:${r.port}`, remoteType: r.type } } : {};
  }

  /** Closes the peer connection and the codecs. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopSending();
    this.decoder?.close();
    try {
      await this.pc.close();
    } catch {
      // already torn down
    }
  }
}
