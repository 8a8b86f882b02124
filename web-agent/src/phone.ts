/**
 * The WebRTC side of one call in the browser, both directions: ONE media class,
 * `CallMedia`, made by `CallMedia.answer(offer)` (an incoming call on the agent page) or
 * `CallMedia.offer(mic)` (a callback from the supervisor's panel).
 *
 * Signaling is non-trickle: our SDP goes out once, complete, with every candidate in it,
 * byte-exact as the browser wrote it (the Service's `accept` must see the same SDP as its
 * `preAccept`). Gathering is bounded (`gatherWithin`): the SDP goes out at completion, ~1 s
 * after the first relay candidate, or at 4 s with what was found, so a TURN server that does
 * not answer costs at most the bound (the page then says so in words); a browser that found
 * nothing fails fast with a clear message instead of letting the ring run out. Every peer
 * connection uses the page's STUN/TURN servers and policy (`ice.ts`, from `welcome`).
 *
 * Sending is "live" only once the call is taken: incoming, after the server's ack (= the
 * Service's `accept` returned 200; before it the answer's sender has no track, so nothing
 * is sent and the caller is not played); outgoing, once the user picked up (before it the
 * offer's track is disabled, so the user does not hear the room). Mute disables the sending
 * track, which makes the browser send silence: the provider drops calls that receive no
 * media for 20-30 s, so the track is never set to null. A microphone chosen mid-call is
 * swapped in with `replaceTrack` (no renegotiation) and keeps the live and mute state.
 */
import { t } from './i18n/index.ts';

import type { IceConfig } from '../../shared/protocol.ts';
import { hasTurn, iceConfig, rtcConfiguration } from './ice.ts';
import { sampleConnection, type StatsSample } from './quality.ts';

export class CallSetupError extends Error {
  constructor(
    readonly code: 'GATHER_TIMEOUT' | 'NO_RELAY' | 'NO_AUDIO_IN_OFFER' | 'SDP_REJECTED',
    message: string,
  ) {
    super(message);
    this.name = 'CallSetupError';
  }
}

/**
 * The bound on non-trickle gathering: our SDP goes out when gathering completes,
 * or `afterRelayMs` after the first relay candidate (the TURN server answered: what else
 * comes is rarely better), or at `maxMs`, with whatever was gathered by then. A TURN server
 * that does not answer costs at most `maxMs`.
 */
export interface GatherBound {
  afterRelayMs: number;
  maxMs: number;
}
export const GATHER_BOUND: GatherBound = { afterRelayMs: 1_000, maxMs: 4_000 };

/** What gathering gave: how it ended, what it found, and in words what the page should say. */
export interface Gathered {
  /** `complete`: the browser finished; `relay`: cut after the first relay candidate; `bound`: cut at maxMs. */
  ended: 'complete' | 'relay' | 'bound';
  candidates: number;
  relay: boolean;
  ms: number;
  /** Set when a TURN server is configured and gave no relay candidate within the bound. */
  warning?: string;
}

const secs = (ms: number) => Math.round(ms / 100) / 10;

export const turnMissingWarning = (ms: number) => t('media.turnMissing', { seconds: secs(ms) });

/**
 * Run `describe` (setLocalDescription of an offer or answer) and wait for ICE gathering
 * within `bound`. Resolves with what was gathered; rejects with a worded `CallSetupError`
 * when there is nothing to send: no candidate at all (GATHER_TIMEOUT), or, with
 * `iceTransportPolicy: relay`, no relay candidate (NO_RELAY: the call could never connect).
 */
export function gatherWithin(pc: RTCPeerConnection, describe: () => Promise<void>, bound: Partial<GatherBound> = {}, o: { expectRelay?: boolean; relayOnly?: boolean } = {}): Promise<Gathered> {
  const { afterRelayMs, maxMs } = { ...GATHER_BOUND, ...bound };
  const t0 = performance.now();
  let candidates = 0;
  let relay = false;
  return new Promise<Gathered>((resolve, reject) => {
    let settled = false;
    let relayTimer: ReturnType<typeof setTimeout> | undefined;
    const finish = (ended: Gathered['ended']) => {
      if (settled) return;
      settled = true;
      clearTimeout(maxTimer);
      clearTimeout(relayTimer);
      pc.removeEventListener('icecandidate', onCandidate);
      pc.removeEventListener('icegatheringstatechange', onState);
      const ms = performance.now() - t0;
      if (o.relayOnly && !relay) {
        return reject(
          new CallSetupError(
            'NO_RELAY',
            t('media.noRelay', { seconds: secs(ms) }),
          ),
        );
      }
      if (candidates === 0) {
        return reject(
          new CallSetupError(
            'GATHER_TIMEOUT',
            t('media.gatherTimeout', { seconds: secs(ms) }),
          ),
        );
      }
      resolve({ ended, candidates, relay, ms, ...(o.expectRelay && !relay ? { warning: turnMissingWarning(ms) } : {}) });
    };
    const onCandidate = (e: RTCPeerConnectionIceEvent) => {
      if (!e.candidate || !e.candidate.candidate) return;
      candidates++;
      if (e.candidate.type === 'relay' && !relay) {
        relay = true;
        relayTimer = setTimeout(() => finish('relay'), afterRelayMs);
      }
    };
    const onState = () => {
      if (pc.iceGatheringState === 'complete') finish('complete');
    };
    const maxTimer = setTimeout(() => finish('bound'), maxMs);
    pc.addEventListener('icecandidate', onCandidate);
    pc.addEventListener('icegatheringstatechange', onState);
    describe().then(onState, (err: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(maxTimer);
      clearTimeout(relayTimer);
      reject(err);
    });
  });
}

/** A peer connection for one audio call or monitor (both sides): the page's STUN/TURN (ice.ts), one bundled transport. */
export function newPeerConnection(cfg: IceConfig = iceConfig()): RTCPeerConnection {
  return new RTCPeerConnection(rtcConfiguration(cfg));
}

/** Gather for `pc` made from `cfg`, within the bound: relay expected when TURN is configured. */
export function gatherFor(pc: RTCPeerConnection, describe: () => Promise<void>, cfg: IceConfig = iceConfig(), bound: Partial<GatherBound> = {}): Promise<Gathered> {
  return gatherWithin(pc, describe, bound, { expectRelay: hasTurn(cfg), relayOnly: cfg.iceTransportPolicy === 'relay' });
}

/** Play the remote side of `transceiver` in `audioEl`, unmuted. */
export async function playRemote(transceiver: RTCRtpTransceiver, audioEl: HTMLAudioElement): Promise<void> {
  audioEl.srcObject = new MediaStream([transceiver.receiver.track]);
  audioEl.muted = false;
  try {
    await audioEl.play();
  } catch {
    // Autoplay refused (no click yet on this page): the element keeps its source, so the
    // next user gesture on the page plays it (the agent page's ready-check unlocks it).
  }
}

export interface CallMediaEvents {
  /** `connectionState` changed (connected, disconnected, failed...). */
  onConnectionState(state: RTCPeerConnectionState): void;
}

export class CallMedia {
  private sendTrack: MediaStreamTrack | undefined;
  private muted = false;
  /** Sending the microphone (taken: acked, or the user picked up). */
  private live = false;
  private started = false;
  private answered = false;
  private closed = false;

  private constructor(
    readonly pc: RTCPeerConnection,
    private readonly transceiver: RTCRtpTransceiver,
    /** Our SDP (`localDescription.sdp` untouched): the answer or the offer. */
    readonly localSdp: string,
    readonly direction: 'answer' | 'offer',
    /** How gathering went (its `warning`, if any, is for the page to show). */
    readonly gathered: Gathered,
    track?: MediaStreamTrack,
  ) {
    this.sendTrack = track;
    pc.addEventListener('connectionstatechange', () => this.events?.onConnectionState(pc.connectionState));
  }

  private events: CallMediaEvents | undefined;

  /**
   * Incoming: build the answer to `offerSdp`: setRemoteDescription(offer), createAnswer,
   * setLocalDescription, wait for ICE gathering (with a timeout).
   */
  static async answer(offerSdp: string, events: CallMediaEvents, bound: Partial<GatherBound> = {}): Promise<CallMedia> {
    const cfg = iceConfig();
    const pc = newPeerConnection(cfg);
    try {
      try {
        await pc.setRemoteDescription({ type: 'offer', sdp: offerSdp });
      } catch (e) {
        throw new CallSetupError('SDP_REJECTED', t('media.offerUnusable', { detail: (e as Error).message }));
      }
      const audio = pc.getTransceivers().find((x) => x.receiver.track.kind === 'audio');
      if (!audio) throw new CallSetupError('NO_AUDIO_IN_OFFER', t('media.noAudioInOffer'));
      // sendrecv with no track yet: the answer promises audio, but nothing is sent before the ack.
      audio.direction = 'sendrecv';
      const gathered = await gatherFor(pc, async () => pc.setLocalDescription(await pc.createAnswer()), cfg, bound);
      const sdp = pc.localDescription?.sdp;
      if (!sdp) throw new CallSetupError('SDP_REJECTED', t('media.noAnswer'));
      const media = new CallMedia(pc, audio, sdp, 'answer', gathered);
      media.answered = true;
      media.events = events;
      return media;
    } catch (e) {
      pc.close();
      throw e;
    }
  }

  /**
   * Outgoing: a sendrecv audio transceiver carrying a clone of `micTrack` (disabled until
   * `setLive(true)`), createOffer, setLocalDescription, ICE gathering (with a timeout).
   */
  static async offer(micTrack: MediaStreamTrack, events: CallMediaEvents, bound: Partial<GatherBound> = {}): Promise<CallMedia> {
    const cfg = iceConfig();
    const pc = newPeerConnection(cfg);
    const track = micTrack.clone();
    track.enabled = false;
    try {
      const transceiver = pc.addTransceiver(track, { direction: 'sendrecv', streams: [new MediaStream([track])] });
      const gathered = await gatherFor(pc, async () => pc.setLocalDescription(await pc.createOffer()), cfg, bound);
      const sdp = pc.localDescription?.sdp;
      if (!sdp) throw new CallSetupError('SDP_REJECTED', t('media.noOffer'));
      const media = new CallMedia(pc, transceiver, sdp, 'offer', gathered, track);
      media.events = events;
      return media;
    } catch (e) {
      track.stop();
      pc.close();
      throw e;
    }
  }

  /** Incoming: the answer to send with `call.answer`. */
  get answerSdp(): string {
    return this.localSdp;
  }

  /** Outgoing: the offer to send with `call.dial`. */
  get offerSdp(): string {
    return this.localSdp;
  }

  /** Outgoing: apply the Service's answer (once; a repeat of the same frame is ignored). */
  async applyAnswer(sdp: string): Promise<void> {
    if (this.closed || this.answered) return;
    this.answered = true;
    try {
      await this.pc.setRemoteDescription({ type: 'answer', sdp });
    } catch (e) {
      throw new CallSetupError('SDP_REJECTED', t('media.answerUnusable', { detail: (e as Error).message }));
    }
  }

  /** The remote SDP is known (incoming: always; outgoing: after `call.remoteAnswer`). */
  get hasAnswer(): boolean {
    return this.answered;
  }

  /** Incoming, after the ack: send `micTrack` (a clone owned by this call) and play the caller in `audioEl`. */
  async start(micTrack: MediaStreamTrack, audioEl: HTMLAudioElement): Promise<void> {
    if (this.closed || this.started) return;
    this.started = true;
    this.live = true;
    await this.setMic(micTrack);
    await this.play(audioEl);
  }

  get isStarted(): boolean {
    return this.started;
  }

  /** Play the other side in `audioEl`, unmuted. */
  play(audioEl: HTMLAudioElement): Promise<void> {
    return playRemote(this.transceiver, audioEl);
  }

  /** Outgoing: the user answered (or the call ended): send the microphone, or silence. */
  setLive(live: boolean): void {
    this.live = live;
    if (this.sendTrack) this.sendTrack.enabled = live && !this.muted;
  }

  /** Replace the microphone mid-call (new device): `replaceTrack`, keeping the live and mute state. */
  async setMic(track: MediaStreamTrack): Promise<void> {
    const clone = track.clone();
    clone.enabled = this.live && !this.muted && !this.holdTrack;
    const old = this.sendTrack;
    // On hold the sender keeps the music; the new microphone waits for the resume.
    if (!this.holdTrack) await this.transceiver.sender.replaceTrack(clone);
    this.sendTrack = clone;
    old?.stop();
  }

  /** Muted = the track sends silence (enabled = false); the sender keeps its track. */
  setMuted(muted: boolean): void {
    this.muted = muted;
    if (this.sendTrack) this.sendTrack.enabled = this.live && !muted && !this.holdTrack;
  }

  private holdTrack: MediaStreamTrack | undefined;

  /** Hold: the sender carries `music` instead of the microphone, which is switched off (no renegotiation). */
  async hold(music: MediaStreamTrack): Promise<void> {
    this.holdTrack = music;
    if (this.sendTrack) this.sendTrack.enabled = false;
    await this.transceiver.sender.replaceTrack(music);
  }

  /** Resume: the microphone goes back on the sender, with the mute state it had. */
  async resume(): Promise<void> {
    if (!this.holdTrack) return;
    this.holdTrack = undefined;
    if (this.sendTrack) this.sendTrack.enabled = this.live && !this.muted;
    await this.transceiver.sender.replaceTrack(this.sendTrack ?? null);
  }

  get isMuted(): boolean {
    return this.muted;
  }

  /** The microphone the call sends (its deviceId), e.g. to notice it was unplugged. */
  get micDeviceId(): string | undefined {
    return this.sendTrack?.getSettings().deviceId;
  }

  /** What the test hooks report about the sender. */
  senderInfo(): { hasTrack: boolean; enabled: boolean | null; readyState: string | null; id: string | null; label: string | null } {
    const t = this.transceiver.sender.track;
    return { hasTrack: t !== null, enabled: t?.enabled ?? null, readyState: t?.readyState ?? null, id: t?.id ?? null, label: t?.label ?? null };
  }

  sample(): Promise<StatsSample> {
    return sampleConnection(this.pc);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.sendTrack?.stop();
    this.pc.close();
  }
}
