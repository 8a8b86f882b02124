/**
 * The page's end of monitoring: takes the server's monitor frames (`monitor.started`,
 * `monitor.signal`, `monitor.mode`, `monitor.ended`, and `welcome`) and runs this tab's
 * monitors, agent side or supervisor side, each with its signaling over the page's
 * connection. Wiring a page is: `onServer(msg)` from its message handler, `callEnded(wacid)`
 * when its call ends, and (supervisor) `stop(monitorId)` for the Stop button.
 */
import type { MonitorEndReason, MonitorMode, ServerMsg } from '../../../shared/protocol.ts';
import { AgentMonitor, type AgentMonitorOptions, type CallAudio } from './agent-side.ts';
import type { MonitorBase } from './media.ts';
import { serverSignaling, type SignalEnd, type SignalRequest } from './signaling.ts';
import { SupervisorMonitor, type SupervisorMonitorOptions } from './supervisor-side.ts';
import { AnchorAgentMonitor, type AnchorAgentMonitorOptions } from './whisper.ts';

/** What the controller needs of a monitor (AgentMonitor / SupervisorMonitor; fakes in unit tests). */
export type Monitor = Pick<MonitorBase, 'phase' | 'mode' | 'endReason' | 'setMode' | 'stop' | 'ended'>;

export interface MonitorEntry {
  monitorId: string;
  wacid: string;
  side: 'agent' | 'supervisor';
  supervisor: string;
  agent: string;
  /** Agent side: the page shows that the call is monitored. */
  shown: boolean;
  monitor: Monitor | undefined;
  /** Set when it ended before its monitor was built. */
  endedWith?: MonitorEndReason;
}

export interface MonitorControllerDeps {
  /** The page's `connection.request`. */
  request: SignalRequest;
  audioContext(): AudioContext;
  /** Agent page: the audio of the call this tab holds, or undefined when it does not hold `wacid`. */
  callAudio?(wacid: string): CallAudio | undefined;
  /** Supervisor page: the microphone (sent in whisper and barge). */
  mic?(): Promise<MediaStreamTrack>;
  /** Plays the supervisor to the agent, or the mix to the supervisor. */
  audioEl(): HTMLAudioElement;
  onChange(): void;
  startAgent?(o: AgentMonitorOptions): Promise<Monitor>;
  createSupervisor?(o: SupervisorMonitorOptions): Monitor;
  /** Agent page, a call on the media anchor: the monitor's shown state and the whisper link. */
  createAnchorAgent?(o: AnchorAgentMonitorOptions): Monitor;
}

export class MonitorController {
  readonly entries = new Map<string, MonitorEntry>();
  private readonly signals = new Map<string, SignalEnd>();

  constructor(private readonly deps: MonitorControllerDeps) {}

  onServer(msg: ServerMsg): void {
    switch (msg.type) {
      case 'monitor.started':
        return void this.started(msg);
      case 'monitor.signal': {
        const { type: _t, ...signal } = msg;
        this.signals.get(msg.monitorId)?.deliver(signal);
        return;
      }
      case 'monitor.mode': {
        const e = this.entries.get(msg.monitorId);
        if (!e) return;
        e.shown = msg.shown;
        void e.monitor?.setMode(msg.mode);
        this.deps.onChange();
        return;
      }
      case 'monitor.ended':
        return this.finish(msg.monitorId, msg.reason);
      case 'welcome':
        // A new socket: the server ended this tab's monitors when the old one went away.
        for (const e of [...this.entries.values()]) this.finish(e.monitorId, e.side === 'agent' ? 'agent-gone' : 'supervisor-gone');
        return;
      default:
        return;
    }
  }

  /** Agent page: the call ended here; its monitors end with it (the server is told). */
  callEnded(wacid: string): void {
    for (const e of [...this.entries.values()]) {
      if (e.wacid !== wacid) continue;
      void e.monitor?.stop('call-ended');
      this.forget(e.monitorId);
    }
  }

  /** Supervisor page: Stop. */
  stop(monitorId: string): void {
    const e = this.entries.get(monitorId);
    if (!e) return;
    void e.monitor?.stop('stopped');
    this.forget(monitorId);
  }

  /** The monitors of a call (the agent page shows them; the supervisor page its own). */
  forCall(wacid: string): MonitorEntry[] {
    return [...this.entries.values()].filter((e) => e.wacid === wacid);
  }

  private async started(msg: Extract<ServerMsg, { type: 'monitor.started' }>): Promise<void> {
    if (this.entries.has(msg.monitorId)) return; // a repeated frame
    const entry: MonitorEntry = { monitorId: msg.monitorId, wacid: msg.wacid, side: msg.side, supervisor: msg.supervisor, agent: msg.agent, shown: msg.shown, monitor: undefined };
    // Signaling first: a relayed offer may arrive while the microphone is still opening.
    const signaling = serverSignaling(this.deps.request);
    this.entries.set(msg.monitorId, entry);
    this.signals.set(msg.monitorId, signaling);
    this.deps.onChange();
    const base = { monitorId: msg.monitorId, mode: msg.mode as MonitorMode, ctx: this.deps.audioContext(), signaling, onChange: () => this.onMonitorChange(msg.monitorId) };
    try {
      if (msg.side === 'agent' && msg.via === 'anchor') {
        // The supervisor has a leg of its own in the call's room: this tab shows the monitor
        // and, in whisper, plays the supervisor from the whisper link (whisper.ts).
        // Its failing to build (no audio here) only costs the whisper: the monitor is the room's.
        try {
          entry.monitor = (this.deps.createAnchorAgent ?? ((o) => new AnchorAgentMonitor(o)))({ ...base, audioEl: this.deps.audioEl() });
        } catch (err) {
          console.warn('[monitor] whisper unavailable in this tab:', (err as Error).message);
          this.onMonitorChange(msg.monitorId);
          return;
        }
      } else if (msg.side === 'agent') {
        const call = this.deps.callAudio?.(msg.wacid);
        // Not this tab's call (another tab holds it): refuse, the call is untouched.
        if (!call) throw new Error(`this tab does not hold call ${msg.wacid}`);
        entry.monitor = await (this.deps.startAgent ?? AgentMonitor.start)({ ...base, call, audioEl: this.deps.audioEl() });
      } else {
        if (!this.deps.mic) throw new Error('no microphone on this page');
        const micTrack = await this.deps.mic();
        entry.monitor = (this.deps.createSupervisor ?? SupervisorMonitor.create)({ ...base, micTrack, audioEl: this.deps.audioEl() });
      }
    } catch (err) {
      console.warn('[monitor]', (err as Error).message);
      this.forget(msg.monitorId);
      await signaling.send({ monitorId: msg.monitorId, kind: 'end', reason: 'failed' }).catch(() => undefined);
      return;
    }
    // Ended while it was being set up (monitor.ended came in meanwhile).
    if (!this.entries.has(msg.monitorId)) void entry.monitor.ended(entry.endedWith ?? 'stopped');
    this.onMonitorChange(msg.monitorId);
  }

  private onMonitorChange(monitorId: string): void {
    const e = this.entries.get(monitorId);
    if (e?.monitor?.phase === 'ended') this.forget(monitorId);
    this.deps.onChange();
  }

  private finish(monitorId: string, reason: MonitorEndReason): void {
    const e = this.entries.get(monitorId);
    if (!e) return;
    e.endedWith = reason;
    void e.monitor?.ended(reason);
    this.forget(monitorId);
  }

  private forget(monitorId: string): void {
    if (!this.entries.delete(monitorId)) return;
    this.signals.delete(monitorId);
    this.deps.onChange();
  }
}
