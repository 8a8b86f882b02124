/**
 * The WebRTC side of one business-initiated call (a callback) in the browser: the offer
 * side, where phone.ts is the answer side. Same rules (see phone.ts):
 *
 * - Non-trickle: the offer goes out once, complete (ICE gathering finished, with a timeout),
 *   as `localDescription.sdp` untouched.
 * - The remote answer comes in `call.remoteAnswer`, usually while the user's phone still
 *   rings; it is applied at once (the Service's ACCEPTED may come after media is up).
 * - The sender always has a track. Until the user answers, and while muted, the track is
 *   disabled, so the browser sends silence: the provider drops calls that get no media for
 *   20 s, and the user does not hear the room before picking up.
 */
import { CallSetupError, GATHER_TIMEOUT_MS, newPeerConnection, playRemote, waitForGathering, type CallMediaEvents } from './phone.ts';
import { sampleConnection, type StatsSample } from './quality.ts';

export class DialMedia {
  private readonly transceiver: RTCRtpTransceiver;
  private sendTrack: MediaStreamTrack;
  private muted = false;
  private live = false;
  private answered = false;
  private closed = false;

  private constructor(
    readonly pc: RTCPeerConnection,
    transceiver: RTCRtpTransceiver,
    track: MediaStreamTrack,
    readonly offerSdp: string,
  ) {
    this.transceiver = transceiver;
    this.sendTrack = track;
  }

  /**
   * Build the offer: a sendrecv audio transceiver carrying a clone of `micTrack` (disabled
   * until `setLive(true)`), createOffer, setLocalDescription, ICE gathering (with a timeout).
   */
  static async offer(micTrack: MediaStreamTrack, events: CallMediaEvents, gatherTimeoutMs = GATHER_TIMEOUT_MS): Promise<DialMedia> {
    const pc = newPeerConnection();
    const track = micTrack.clone();
    track.enabled = false;
    try {
      const transceiver = pc.addTransceiver(track, { direction: 'sendrecv', streams: [new MediaStream([track])] });
      await pc.setLocalDescription(await pc.createOffer());
      await waitForGathering(pc, gatherTimeoutMs);
      const sdp = pc.localDescription?.sdp;
      if (!sdp) throw new CallSetupError('SDP_REJECTED', 'The browser produced no offer.');
      const media = new DialMedia(pc, transceiver, track, sdp);
      pc.addEventListener('connectionstatechange', () => events.onConnectionState(pc.connectionState));
      return media;
    } catch (e) {
      track.stop();
      pc.close();
      throw e;
    }
  }

  /** Apply the Service's answer (once; a repeat of the same frame is ignored). */
  async applyAnswer(sdp: string): Promise<void> {
    if (this.closed || this.answered) return;
    this.answered = true;
    try {
      await this.pc.setRemoteDescription({ type: 'answer', sdp });
    } catch (e) {
      throw new CallSetupError('SDP_REJECTED', `This browser cannot use the Service's answer: ${(e as Error).message}`);
    }
  }

  get hasAnswer(): boolean {
    return this.answered;
  }

  /** Play the user in `audioEl` (called from the Call click, so autoplay allows it). */
  play(audioEl: HTMLAudioElement): Promise<void> {
    return playRemote(this.transceiver, audioEl);
  }

  /** The user answered: send the microphone (silence while muted). */
  setLive(live: boolean): void {
    this.live = live;
    this.sendTrack.enabled = live && !this.muted;
  }

  /** Muted = the track sends silence (enabled = false); the sender keeps its track. */
  setMuted(muted: boolean): void {
    this.muted = muted;
    this.sendTrack.enabled = this.live && !muted;
  }

  get isMuted(): boolean {
    return this.muted;
  }

  /** Replace the microphone mid-call; the new track keeps the live and mute state. */
  async setMic(track: MediaStreamTrack): Promise<void> {
    const clone = track.clone();
    clone.enabled = this.live && !this.muted;
    const old = this.sendTrack;
    await this.transceiver.sender.replaceTrack(clone);
    this.sendTrack = clone;
    old.stop();
  }

  /** The microphone the call sends (its deviceId), e.g. to notice it was unplugged. */
  get micDeviceId(): string | undefined {
    return this.sendTrack.getSettings().deviceId;
  }

  senderInfo(): { hasTrack: boolean; enabled: boolean | null; readyState: string | null } {
    const t = this.transceiver.sender.track;
    return { hasTrack: t !== null, enabled: t?.enabled ?? null, readyState: t?.readyState ?? null };
  }

  sample(): Promise<StatsSample> {
    return sampleConnection(this.pc);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.sendTrack.stop();
    this.pc.close();
  }
}
