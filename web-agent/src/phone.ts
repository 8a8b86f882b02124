/**
 * The WebRTC side of one call in the agent's browser.
 *
 * Signaling is non-trickle: the answer goes out once, complete, with every candidate in it,
 * byte-exact as the browser wrote it (the Service's `accept` must see the same SDP as its
 * `preAccept`). Gathering gets a timeout so a browser that cannot gather fails fast with a
 * clear message instead of letting the ring run out.
 *
 * Audio starts only after the server's ack (= the Service's `accept` returned 200): before
 * it, the answer's audio sender has no track, so nothing is sent and the caller's audio is
 * not played. Mute disables the sending track, which makes the browser send silence: the
 * provider drops calls that receive no media for 20-30 s, so the track is never set to null.
 */
import { sampleConnection, type StatsSample } from './quality.ts';

export class CallSetupError extends Error {
  constructor(
    readonly code: 'GATHER_TIMEOUT' | 'NO_AUDIO_IN_OFFER' | 'SDP_REJECTED',
    message: string,
  ) {
    super(message);
    this.name = 'CallSetupError';
  }
}

export const GATHER_TIMEOUT_MS = 3_000;

/** Resolve when ICE gathering is complete; reject with a clear error after `timeoutMs`. */
export function waitForGathering(pc: RTCPeerConnection, timeoutMs = GATHER_TIMEOUT_MS): Promise<void> {
  if (pc.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const done = () => {
      if (pc.iceGatheringState !== 'complete') return;
      clearTimeout(timer);
      pc.removeEventListener('icegatheringstatechange', done);
      resolve();
    };
    const timer = setTimeout(() => {
      pc.removeEventListener('icegatheringstatechange', done);
      reject(
        new CallSetupError(
          'GATHER_TIMEOUT',
          `Could not prepare the network path for the call within ${timeoutMs / 1000} s ` +
            '(ICE gathering did not finish). Check the network or VPN, then try again.',
        ),
      );
    }, timeoutMs);
    pc.addEventListener('icegatheringstatechange', done);
  });
}

/** A peer connection for one audio call (both sides): no STUN/TURN, one bundled transport. */
export function newPeerConnection(): RTCPeerConnection {
  // The Service's SDP carries its candidates (ice-lite, host candidates): no STUN/TURN needed on our side.
  return new RTCPeerConnection({ iceServers: [], bundlePolicy: 'max-bundle', rtcpMuxPolicy: 'require' });
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
  private readonly transceiver: RTCRtpTransceiver;
  private sendTrack: MediaStreamTrack | undefined;
  private muted = false;
  private started = false;
  private closed = false;

  private constructor(
    readonly pc: RTCPeerConnection,
    readonly answerSdp: string,
  ) {
    const t = pc.getTransceivers().find((x) => x.receiver.track.kind === 'audio');
    if (!t) throw new CallSetupError('NO_AUDIO_IN_OFFER', 'The call offer has no audio.');
    this.transceiver = t;
  }

  /**
   * Build the answer to `offerSdp`: setRemoteDescription(offer), createAnswer,
   * setLocalDescription, wait for ICE gathering (with a timeout). The returned
   * `answerSdp` is `localDescription.sdp` untouched.
   */
  static async answer(offerSdp: string, events: CallMediaEvents, gatherTimeoutMs = GATHER_TIMEOUT_MS): Promise<CallMedia> {
    const pc = newPeerConnection();
    try {
      try {
        await pc.setRemoteDescription({ type: 'offer', sdp: offerSdp });
      } catch (e) {
        throw new CallSetupError('SDP_REJECTED', `This browser cannot use the call's offer: ${(e as Error).message}`);
      }
      const audio = pc.getTransceivers().find((x) => x.receiver.track.kind === 'audio');
      if (!audio) throw new CallSetupError('NO_AUDIO_IN_OFFER', 'The call offer has no audio.');
      // sendrecv with no track yet: the answer promises audio, but nothing is sent before the ack.
      audio.direction = 'sendrecv';
      await pc.setLocalDescription(await pc.createAnswer());
      await waitForGathering(pc, gatherTimeoutMs);
      const sdp = pc.localDescription?.sdp;
      if (!sdp) throw new CallSetupError('SDP_REJECTED', 'The browser produced no answer.');
      const media = new CallMedia(pc, sdp);
      pc.addEventListener('connectionstatechange', () => events.onConnectionState(pc.connectionState));
      return media;
    } catch (e) {
      pc.close();
      throw e;
    }
  }

  /** After the ack: send `micTrack` (a clone owned by this call) and play the caller in `audioEl`. */
  async start(micTrack: MediaStreamTrack, audioEl: HTMLAudioElement): Promise<void> {
    if (this.closed || this.started) return;
    this.started = true;
    await this.setMic(micTrack);
    await playRemote(this.transceiver, audioEl);
  }

  get isStarted(): boolean {
    return this.started;
  }

  /** Replace the microphone mid-call (new device). The new track keeps the mute state. */
  async setMic(track: MediaStreamTrack): Promise<void> {
    const clone = track.clone();
    clone.enabled = !this.muted;
    const old = this.sendTrack;
    await this.transceiver.sender.replaceTrack(clone);
    this.sendTrack = clone;
    old?.stop();
  }

  /** Muted = the track sends silence (enabled = false); the sender keeps its track. */
  setMuted(muted: boolean): void {
    this.muted = muted;
    if (this.sendTrack) this.sendTrack.enabled = !muted;
  }

  get isMuted(): boolean {
    return this.muted;
  }

  /** What the test hook reports about the sender. */
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
