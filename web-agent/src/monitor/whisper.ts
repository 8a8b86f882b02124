/**
 * Whisper on a call held by the media anchor (MEDIA_MODE=anchor). The supervisor's own leg
 * is in the call's Janus room, muted there except in barge; the room has one mix, so the
 * caller would hear whatever the agent hears from it. Whisper takes another way: the whisper
 * link, a connection between the agent's tab and the supervisor's tab that carries only the
 * supervisor's voice to the agent (no browser relays anything for another: the agent's tab
 * receives, it sends nothing).
 *
 * - `AnchorAgentMonitor` (the agent's tab): shows the monitor and its mode; at the first
 *   whisper it offers the link (recvonly, `monitor.signal {path:"whisper"}`), plays what
 *   comes back in whisper only (`audioEl`) and measures it (`heard`). Kept, silent, after
 *   whisper (a second whisper is instant); closed when the monitor ends.
 * - `WhisperAnswer` (the supervisor's tab): answers that offer with a clone of its
 *   microphone, enabled in whisper only.
 *
 * A link that breaks (the agent's tab reloaded, its network gone) is closed on both sides
 * and does not end the monitor: the supervisor still listens in the room.
 */
import type { IceConfig, MonitorEndReason, MonitorMode } from '../../../shared/protocol.ts';
import { anchorRouting } from '../../../shared/protocol.ts';
import { iceConfig } from '../ice.ts';
import { gatherFor, newPeerConnection } from '../phone.ts';
import { EnergyMeter } from './energy.ts';
import { keepFlowing } from './media.ts';
import type { MonitorPhase } from './session.ts';
import type { MonitorSignaling, SignalMessage } from './signaling.ts';

export interface AnchorAgentMonitorOptions {
  monitorId: string;
  mode: MonitorMode;
  ctx: AudioContext;
  signaling: MonitorSignaling;
  /** Plays the supervisor to the agent (whisper). */
  audioEl?: HTMLAudioElement;
  ice?: IceConfig;
  gatherTimeoutMs?: number;
  onChange?(): void;
}

interface Link {
  pc: RTCPeerConnection;
  gain: GainNode;
  out: MediaStreamAudioDestinationNode;
  source?: MediaStreamAudioSourceNode;
  holder?: HTMLAudioElement;
}

export class AnchorAgentMonitor {
  phase: MonitorPhase = 'live';
  mode: MonitorMode;
  endReason: MonitorEndReason | undefined;
  /** What the agent hears of the supervisor through the link, after routing (tests read tones). */
  readonly heard: EnergyMeter;
  private readonly meterIn: GainNode;
  private link: Link | undefined;
  private readonly ice: IceConfig;

  constructor(private readonly o: AnchorAgentMonitorOptions) {
    this.mode = o.mode;
    this.ice = o.ice ?? iceConfig();
    this.meterIn = o.ctx.createGain();
    this.heard = new EnergyMeter(o.ctx, this.meterIn);
    o.signaling.onSignal((msg) => this.onSignal(msg));
    this.apply();
  }

  /** The link's connection, once offered (tests, the page's path). */
  get pc(): RTCPeerConnection | undefined {
    return this.link?.pc;
  }

  async setMode(mode: MonitorMode): Promise<void> {
    if (this.phase === 'ended') return;
    this.mode = mode;
    this.apply();
    this.o.onChange?.();
  }

  /** This tab lets the monitor go (its call ended here): the server ends it anyway. */
  async stop(reason: MonitorEndReason): Promise<void> {
    return this.ended(reason);
  }

  async ended(reason: MonitorEndReason): Promise<void> {
    if (this.phase === 'ended') return;
    this.phase = 'ended';
    this.endReason = reason;
    this.closeLink();
    this.heard.close();
    this.meterIn.disconnect();
    this.o.onChange?.();
  }

  /** Whisper wants the link (offered once), and its gain follows the mode. */
  private apply(): void {
    const on = anchorRouting(this.mode).whisperLink;
    if (on && !this.link) void this.offer();
    this.link?.gain.gain.setTargetAtTime(on ? 1 : 0, this.o.ctx.currentTime, 0.01);
  }

  private async offer(): Promise<void> {
    const { ctx } = this.o;
    const pc = newPeerConnection(this.ice);
    const gain = ctx.createGain();
    gain.gain.value = 0;
    const out = ctx.createMediaStreamDestination();
    gain.connect(out);
    gain.connect(this.meterIn);
    const link: Link = { pc, gain, out };
    this.link = link;
    if (this.o.audioEl) {
      this.o.audioEl.srcObject = out.stream;
      this.o.audioEl.muted = false;
      void this.o.audioEl.play().catch(() => undefined);
    }
    pc.addEventListener('track', (e) => {
      if (this.link !== link || link.source) return;
      link.source = ctx.createMediaStreamSource(new MediaStream([e.track]));
      link.source.connect(gain);
      link.holder = keepFlowing(e.track);
    });
    pc.addEventListener('connectionstatechange', () => {
      // The supervisor's tab went (or the path broke): the link goes; a later whisper offers a new one.
      if ((pc.connectionState === 'failed' || pc.connectionState === 'closed') && this.link === link) this.closeLink();
    });
    try {
      pc.addTransceiver('audio', { direction: 'recvonly' });
      await gatherFor(pc, async () => pc.setLocalDescription(await pc.createOffer()), this.ice, this.o.gatherTimeoutMs !== undefined ? { maxMs: this.o.gatherTimeoutMs } : {});
      if (this.link !== link) return;
      await this.o.signaling.send({ monitorId: this.o.monitorId, kind: 'offer', sdp: pc.localDescription!.sdp, path: 'whisper' });
      this.apply();
    } catch (err) {
      console.warn('[monitor] whisper offer failed:', (err as Error).message);
      if (this.link === link) this.closeLink();
    }
  }

  private onSignal(msg: SignalMessage): void {
    if (msg.monitorId !== this.o.monitorId) return;
    if (msg.kind === 'end') return void this.ended(msg.reason ?? 'supervisor-gone');
    const link = this.link;
    if (msg.path !== 'whisper' || msg.kind !== 'answer' || !msg.sdp || !link || link.pc.signalingState !== 'have-local-offer') return;
    link.pc.setRemoteDescription({ type: 'answer', sdp: msg.sdp }).catch((err: Error) => {
      console.warn('[monitor] whisper answer refused:', err.message);
      if (this.link === link) this.closeLink();
    });
  }

  private closeLink(): void {
    const link = this.link;
    if (!link) return;
    this.link = undefined;
    link.pc.close();
    link.source?.disconnect();
    link.gain.disconnect();
    if (link.holder) link.holder.srcObject = null;
    for (const t of link.out.stream.getTracks()) t.stop();
    if (this.o.audioEl && this.o.audioEl.srcObject === link.out.stream) this.o.audioEl.srcObject = null;
  }
}

/** The supervisor's end of the whisper link: answers the agent tab's offer with its microphone (on in whisper only). */
export class WhisperAnswer {
  readonly pc: RTCPeerConnection;
  private readonly mic: MediaStreamTrack;
  private closed = false;

  constructor(
    micTrack: MediaStreamTrack,
    private readonly ice: IceConfig,
    private readonly gatherTimeoutMs?: number,
  ) {
    this.mic = micTrack.clone();
    this.mic.enabled = false;
    this.pc = newPeerConnection(ice);
  }

  /** The answer's SDP (complete). */
  async answer(offer: string): Promise<string> {
    await this.pc.setRemoteDescription({ type: 'offer', sdp: offer });
    const t = this.pc.getTransceivers().find((x) => x.receiver.track.kind === 'audio');
    if (!t) throw new Error('the whisper offer has no audio');
    await t.sender.replaceTrack(this.mic);
    t.direction = 'sendonly';
    await gatherFor(this.pc, async () => this.pc.setLocalDescription(await this.pc.createAnswer()), this.ice, this.gatherTimeoutMs !== undefined ? { maxMs: this.gatherTimeoutMs } : {});
    return this.pc.localDescription!.sdp;
  }

  route(mode: MonitorMode | undefined): void {
    if (!this.closed) this.mic.enabled = mode !== undefined && anchorRouting(mode).whisperLink;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.mic.enabled = false;
    this.mic.stop();
    this.pc.close();
  }
}
