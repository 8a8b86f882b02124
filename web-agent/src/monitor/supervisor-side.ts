/**
 * The supervisor's tab of a monitor: it answers the agent tab's offer (complete SDP, no
 * trickle), plays the mix (caller + agent) in `audioEl` and measures its energy, and sends
 * its own microphone on the same connection, always: enabled in whisper and barge, a
 * disabled track (silence) in listen. Switching mode only flips that; nothing is
 * renegotiated.
 */
import { gatherFor, newPeerConnection } from '../phone.ts';
import { EnergyMeter } from './energy.ts';
import { MonitorBase, type MonitorBaseOptions } from './media.ts';
import { ROUTING_OFF, routingFor } from './routing.ts';
import type { SignalMessage } from './signaling.ts';
import { WhisperAnswer } from './whisper.ts';

export interface SupervisorMonitorOptions extends MonitorBaseOptions {
  /** The supervisor's microphone; a clone is sent (and stopped at the end). */
  micTrack: MediaStreamTrack;
  /** Plays the mix to the supervisor. */
  audioEl: HTMLAudioElement;
}

export class SupervisorMonitor extends MonitorBase {
  readonly pc: RTCPeerConnection;
  private readonly mic: MediaStreamTrack;
  /** The mix as it arrives (caller + agent), once the offer is applied. */
  meter: EnergyMeter | undefined;
  /** On the media anchor: the whisper link the agent's tab offered (whisper.ts). */
  whisper: WhisperAnswer | undefined;

  private constructor(private readonly o: SupervisorMonitorOptions) {
    super('supervisor', o);
    this.mic = o.micTrack.clone();
    this.mic.enabled = false;
    this.pc = newPeerConnection(this.ice);
    this.watch(this.pc);
  }

  /** Wait for the agent tab's offer on `signaling` and answer it. */
  static create(opts: SupervisorMonitorOptions): SupervisorMonitor {
    const m = new SupervisorMonitor(opts);
    opts.signaling.onSignal((msg) => m.onSignal(msg));
    return m;
  }

  /** Is the supervisor's microphone going out (whisper, barge)? */
  get micOn(): boolean {
    return this.mic.enabled;
  }

  private onSignal(msg: SignalMessage): void {
    if (msg.monitorId !== this.monitorId) return;
    if (msg.kind === 'end') return void this.ended(msg.reason ?? 'agent-gone');
    if (msg.kind === 'offer' && msg.sdp && msg.path === 'whisper') return void this.answerWhisper(msg.sdp);
    if (msg.kind === 'offer' && msg.sdp && this.phase === 'idle') void this.answer(msg.sdp);
  }

  /** The agent's tab offers the whisper link (a call on the media anchor); a new offer replaces an old link. */
  private async answerWhisper(offer: string): Promise<void> {
    if (this.phase === 'ended') return;
    this.whisper?.close();
    const w = new WhisperAnswer(this.o.micTrack, this.ice, this.o.gatherTimeoutMs);
    this.whisper = w;
    // The agent's tab went (a reload: its new tab offers again) or the path broke: only the link goes.
    w.pc.addEventListener('connectionstatechange', () => {
      if (w.pc.connectionState !== 'failed' || this.whisper !== w) return;
      w.close();
      this.whisper = undefined;
    });
    try {
      const sdp = await w.answer(offer);
      // Replaced meanwhile, or the monitor ended (its teardown forgot it).
      if (this.whisper !== w) return w.close();
      w.route(this.phase === 'live' ? this.mode : undefined);
      await this.o.signaling.send({ monitorId: this.monitorId, kind: 'answer', sdp, path: 'whisper' });
    } catch (err) {
      // The monitor goes on in the room; only the whisper link is lost.
      console.warn('[monitor] whisper answer failed:', (err as Error).message);
      w.close();
      if (this.whisper === w) this.whisper = undefined;
    }
  }

  private async answer(offer: string): Promise<void> {
    this.dispatch({ type: 'offer' });
    try {
      await this.pc.setRemoteDescription({ type: 'offer', sdp: offer });
      const audio = this.pc.getTransceivers().find((t) => t.receiver.track.kind === 'audio');
      if (!audio) throw new Error('the monitor offer has no audio');
      await audio.sender.replaceTrack(this.mic);
      audio.direction = 'sendrecv';
      const mix = new MediaStream([audio.receiver.track]);
      this.o.audioEl.srcObject = mix;
      this.o.audioEl.muted = false;
      void this.o.audioEl.play().catch(() => undefined);
      this.meter = new EnergyMeter(this.o.ctx, mix);
      await gatherFor(this.pc, async () => this.pc.setLocalDescription(await this.pc.createAnswer()), this.ice, this.o.gatherTimeoutMs !== undefined ? { maxMs: this.o.gatherTimeoutMs } : {});
      if (this.phase === 'ended') return;
      await this.o.signaling.send({ monitorId: this.monitorId, kind: 'answer', sdp: this.pc.localDescription!.sdp });
      this.dispatch({ type: 'answer' });
    } catch (err) {
      console.warn('[monitor] answer failed:', (err as Error).message);
      this.dispatch({ type: 'stop', reason: 'failed' });
    }
  }

  protected route(): void {
    this.mic.enabled = (this.phase === 'live' ? routingFor(this.mode) : ROUTING_OFF).supervisorMicOn;
    this.whisper?.route(this.phase === 'live' ? this.mode : undefined);
  }

  protected teardown(): void {
    this.mic.enabled = false;
    this.mic.stop();
    this.whisper?.close();
    this.whisper = undefined;
    this.pc.close();
    this.meter?.close();
    this.o.audioEl.srcObject = null;
  }
}
