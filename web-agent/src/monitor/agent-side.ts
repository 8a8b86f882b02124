/**
 * The agent's tab of a monitor: it mixes the caller's audio and the agent's microphone
 * (WebAudio) and sends the mix to the supervisor over a second RTCPeerConnection, offered
 * by this side with a complete SDP (no trickle). The supervisor's microphone comes back on
 * the same connection, always; the mode only routes it (routing.ts):
 * - listen: nowhere;
 * - whisper: played to the agent (`audioEl`);
 * - barge: also mixed into what the caller hears: the call's sender gets a mix (mic +
 *   supervisor) with `replaceTrack`; leaving barge, ending, or failing gives the sender the
 *   call's own microphone track back.
 * The call's peer connection is never renegotiated: monitoring only reads its receiver
 * track and swaps its sender's track, and the mix always carries the microphone, so the
 * caller hears the agent even if this tab misses the end of a monitor.
 *
 * Mute keeps working: the call mutes by disabling its own microphone track, which is what
 * the mixes read. After a microphone switch (`CallMedia.setMic`) call `setMic` here.
 */
import { gatherFor, newPeerConnection } from '../phone.ts';
import { EnergyMeter } from './energy.ts';
import { MonitorBase, keepFlowing, type MonitorBaseOptions } from './media.ts';
import { ROUTING_OFF, routingFor, type Routing } from './routing.ts';
import type { SignalMessage } from './signaling.ts';

/** What a monitor needs of the call: its sender to the caller and the caller's track. */
export interface CallAudio {
  /** The call's sender to the caller; its track is the call's own microphone track. */
  sender: RTCRtpSender;
  /** The caller's audio (the call's receiver track). */
  callerTrack: MediaStreamTrack;
}

/** The audio of a call's peer connection (its first audio transceiver). */
export function callAudioOf(pc: RTCPeerConnection): CallAudio {
  const t = pc.getTransceivers().find((x) => x.receiver.track.kind === 'audio');
  if (!t) throw new Error('the call has no audio');
  return { sender: t.sender, callerTrack: t.receiver.track };
}

export interface AgentMonitorOptions extends MonitorBaseOptions {
  call: CallAudio;
  /** Plays the supervisor to the agent (whisper, barge); the page may set its output device. */
  audioEl?: HTMLAudioElement;
}

interface Graph {
  caller: MediaStreamAudioSourceNode;
  mic: MediaStreamAudioSourceNode | undefined;
  /** caller + mic → the supervisor. */
  toSupervisor: MediaStreamAudioDestinationNode;
  /** mic + (barge) supervisor → the caller. */
  toCaller: MediaStreamAudioDestinationNode;
  supervisorToAgent: GainNode;
  supervisorToCaller: GainNode;
  agentOut: MediaStreamAudioDestinationNode;
  supervisor?: { source: MediaStreamAudioSourceNode; holder: HTMLAudioElement };
}

export class AgentMonitor extends MonitorBase {
  readonly pc: RTCPeerConnection;
  private readonly graph: Graph;
  /** The call's own microphone track (what the sender carries outside barge). */
  private micTrack: MediaStreamTrack | null;
  /** What the agent hears of the supervisor, after routing (a level for the page; tests read tones). */
  readonly heard: EnergyMeter;

  private constructor(private readonly o: AgentMonitorOptions) {
    super('agent', o);
    const { ctx, call } = o;
    this.micTrack = call.sender.track;
    const toSupervisor = ctx.createMediaStreamDestination();
    const toCaller = ctx.createMediaStreamDestination();
    const caller = ctx.createMediaStreamSource(new MediaStream([call.callerTrack]));
    caller.connect(toSupervisor);
    const supervisorToAgent = ctx.createGain();
    const supervisorToCaller = ctx.createGain();
    supervisorToAgent.gain.value = 0;
    supervisorToCaller.gain.value = 0;
    supervisorToCaller.connect(toCaller);
    const agentOut = ctx.createMediaStreamDestination();
    supervisorToAgent.connect(agentOut);
    this.graph = { caller, mic: undefined, toSupervisor, toCaller, supervisorToAgent, supervisorToCaller, agentOut };
    this.connectMic(this.micTrack);
    this.heard = new EnergyMeter(ctx, supervisorToAgent);
    if (o.audioEl) {
      o.audioEl.srcObject = agentOut.stream;
      o.audioEl.muted = false;
      void o.audioEl.play().catch(() => undefined);
    }
    this.pc = newPeerConnection(this.ice);
    this.watch(this.pc);
    this.pc.addEventListener('track', (e) => this.supervisorArrived(e.track));
  }

  /**
   * Build the mix and the monitor connection, and send the offer. Never throws: a failure
   * ends the monitor (`failed`, the server is told) and leaves the call as it was.
   */
  static async start(opts: AgentMonitorOptions): Promise<AgentMonitor> {
    const m = new AgentMonitor(opts);
    opts.signaling.onSignal((msg) => m.onSignal(msg));
    try {
      const track = m.graph.toSupervisor.stream.getAudioTracks()[0]!;
      m.pc.addTransceiver(track, { direction: 'sendrecv', streams: [m.graph.toSupervisor.stream] });
      await gatherFor(m.pc, async () => m.pc.setLocalDescription(await m.pc.createOffer()), m.ice, opts.gatherTimeoutMs !== undefined ? { maxMs: opts.gatherTimeoutMs } : {});
      if (m.phase === 'ended') return m;
      // offering before the send: the answer may come back before the send's ack does.
      m.dispatch({ type: 'offer' });
      await opts.signaling.send({ monitorId: opts.monitorId, kind: 'offer', sdp: m.pc.localDescription!.sdp });
    } catch (err) {
      console.warn('[monitor] offer failed:', (err as Error).message);
      m.dispatch({ type: 'stop', reason: 'failed' });
    }
    return m;
  }

  /** The call's microphone track changed (device switch): mix the new one. */
  setMic(track: MediaStreamTrack): Promise<void> {
    this.queue(async () => {
      this.micTrack = track;
      this.connectMic(track);
      if (this.phase === 'ended') return;
      await this.route();
    });
    return this.settled();
  }

  /** The call ended (or this tab let it go): the monitor ends with it. */
  callEnded(): Promise<void> {
    return this.stop('call-ended');
  }

  /** The routing in effect (for the page and the tests). */
  get routing(): Routing {
    return this.phase === 'live' ? routingFor(this.mode) : ROUTING_OFF;
  }

  /** Is the caller hearing the barge mix right now (the call's sender carries it)? */
  get barging(): boolean {
    return this.o.call.sender.track === this.bargeTrack;
  }

  private get bargeTrack(): MediaStreamTrack {
    return this.graph.toCaller.stream.getAudioTracks()[0]!;
  }

  private onSignal(msg: SignalMessage): void {
    if (msg.monitorId !== this.monitorId) return;
    if (msg.kind === 'end') return void this.ended(msg.reason ?? 'supervisor-gone');
    if (msg.kind !== 'answer' || this.phase !== 'offering' || !msg.sdp) return;
    this.pc.setRemoteDescription({ type: 'answer', sdp: msg.sdp }).then(
      () => this.dispatch({ type: 'answer' }),
      (err) => {
        console.warn('[monitor] answer refused:', (err as Error).message);
        this.dispatch({ type: 'stop', reason: 'failed' });
      },
    );
  }

  private supervisorArrived(track: MediaStreamTrack): void {
    if (this.phase === 'ended' || this.graph.supervisor) return;
    const source = this.o.ctx.createMediaStreamSource(new MediaStream([track]));
    source.connect(this.graph.supervisorToAgent);
    source.connect(this.graph.supervisorToCaller);
    this.graph.supervisor = { source, holder: keepFlowing(track) };
  }

  private connectMic(track: MediaStreamTrack | null): void {
    this.graph.mic?.disconnect();
    this.graph.mic = undefined;
    if (!track) return;
    const mic = this.o.ctx.createMediaStreamSource(new MediaStream([track]));
    mic.connect(this.graph.toSupervisor);
    mic.connect(this.graph.toCaller);
    this.graph.mic = mic;
  }

  protected async route(): Promise<void> {
    const r = this.routing;
    const now = this.o.ctx.currentTime;
    // A short ramp: no click when the supervisor is switched in or out.
    this.graph.supervisorToAgent.gain.setTargetAtTime(r.agentHearsSupervisor ? 1 : 0, now, 0.01);
    this.graph.supervisorToCaller.gain.setTargetAtTime(r.callerHearsSupervisor ? 1 : 0, now, 0.01);
    await this.sendToCaller(r.callerHearsSupervisor);
  }

  /** The call's sender carries the barge mix, or the call's own microphone track. */
  private async sendToCaller(barge: boolean): Promise<void> {
    const sender = this.o.call.sender;
    // A mix only while the context runs: a suspended context would send the caller silence.
    const want = barge && this.o.ctx.state === 'running' && this.micTrack ? this.bargeTrack : this.micTrack;
    if (sender.track === want || want === null) return;
    // Only ever swap between our two tracks: a track someone else put there (a mic switch) stays.
    if (sender.track !== this.micTrack && sender.track !== this.bargeTrack) return;
    await sender.replaceTrack(want);
  }

  protected async teardown(): Promise<void> {
    // First give the call its microphone back (the mix goes silent once the graph is gone).
    try {
      await this.sendToCaller(false);
    } catch (err) {
      // The call itself is gone (closed connection): nothing to give back.
      console.warn('[monitor] restoring the microphone:', (err as Error).message);
    }
    this.pc.close();
    const g = this.graph;
    for (const node of [g.caller, g.mic, g.supervisor?.source, g.supervisorToAgent, g.supervisorToCaller]) node?.disconnect();
    if (g.supervisor) g.supervisor.holder.srcObject = null;
    for (const t of [...g.toSupervisor.stream.getTracks(), ...g.toCaller.stream.getTracks(), ...g.agentOut.stream.getTracks()]) t.stop();
    this.heard.close();
    if (this.o.audioEl) this.o.audioEl.srcObject = null;
  }
}
