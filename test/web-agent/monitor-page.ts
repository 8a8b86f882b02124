/**
 * Browser side of test/web-agent/monitor.test.ts, bundled on its own: one page plays the
 * agent (a real call with the phone.ts `CallMedia`, answered to a werift caller, and the
 * agent side of a monitor), another the supervisor. Signaling leaves the page through
 * `window.__signal` (a function the test exposes, standing in for the server's relay) and
 * comes in through `h.deliver`.
 */
import { CallMedia } from '../../web-agent/src/phone.ts';
import { AgentMonitor, callAudioOf } from '../../web-agent/src/monitor/agent-side.ts';
import { SupervisorMonitor } from '../../web-agent/src/monitor/supervisor-side.ts';
import { SignalEnd, type SignalMessage } from '../../web-agent/src/monitor/signaling.ts';
import type { MonitorEndReason, MonitorMode } from '../../shared/protocol.ts';

declare global {
  interface Window {
    __signal(msg: SignalMessage): Promise<void>;
    h: typeof h;
  }
}

/** The microphone as the fake device plays it (the test's WAV); voice processing off so the tones arrive as they are. */
const mic = () => navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false } });
const ctx = new AudioContext();
const signaling = new SignalEnd((m) => window.__signal(m));
let call: CallMedia | undefined;
let micTrack: MediaStreamTrack | undefined;
let agent: AgentMonitor | undefined;
let supervisor: SupervisorMonitor | undefined;
/** What happened on the CALL's peer connection since it was set up: must stay 0. */
const callEvents = { negotiationNeeded: 0, signalingChanges: 0 };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
/** Median tone levels over `ms`, sampling every 100 ms. */
async function sampleTones(read: (hz: number[]) => number[], hz: number[], ms: number): Promise<number[]> {
  const rows: number[][] = [];
  for (let t = 0; t < ms; t += 100) {
    rows.push(read(hz));
    await new Promise((r) => setTimeout(r, 100));
  }
  return hz.map((_, i) => median(rows.map((r) => r[i]!)));
}

const h = {
  deliver(msg: SignalMessage) {
    signaling.deliver(msg);
  },
  async contextState() {
    await ctx.resume();
    return ctx.state;
  },

  // ---- agent ----
  async answerCall(offer: string): Promise<string> {
    call = await CallMedia.answer(offer, { onConnectionState: () => undefined });
    call.pc.addEventListener('negotiationneeded', () => callEvents.negotiationNeeded++);
    call.pc.addEventListener('signalingstatechange', () => callEvents.signalingChanges++);
    return call.answerSdp;
  },
  async startCall(): Promise<void> {
    micTrack = (await mic()).getAudioTracks()[0]!;
    const el = document.createElement('audio');
    document.body.append(el);
    await call!.start(micTrack, el);
  },
  async startMonitor(monitorId: string, mode: MonitorMode): Promise<string> {
    agent = await AgentMonitor.start({ monitorId, mode, ctx, signaling, call: callAudioOf(call!.pc), audioEl: document.createElement('audio'), gatherTimeoutMs: 5000, lostGraceMs: 2000 });
    return agent.phase;
  },
  async agentMode(mode: MonitorMode): Promise<void> {
    await agent!.setMode(mode);
  },
  async agentEnded(reason: MonitorEndReason): Promise<void> {
    await agent!.ended(reason);
  },
  agentState() {
    const sender = callAudioOf(call!.pc).sender;
    return {
      phase: agent?.phase,
      mode: agent?.mode,
      endReason: agent?.endReason,
      barging: agent?.barging,
      routing: agent?.routing,
      monitorConnection: agent?.pc.connectionState,
      call: {
        ...callEvents,
        connection: call!.pc.connectionState,
        signalingState: call!.pc.signalingState,
        senderTrack: sender.track?.id ?? null,
        senderTrackLive: sender.track?.readyState === 'live',
        callMicTrack: call!.senderInfo().id,
      },
    };
  },
  /** RTP packets the call received from the caller so far. */
  async callPacketsReceived(): Promise<number> {
    let n = 0;
    (await call!.pc.getStats()).forEach((r) => {
      if (r.type === 'inbound-rtp' && r.kind === 'audio') n += r.packetsReceived as number;
    });
    return n;
  },
  agentHears(hz: number[], ms: number) {
    return sampleTones((f) => agent!.heard.tones(f), hz, ms);
  },
  async agentSettled() {
    await agent?.settled();
  },

  // ---- supervisor ----
  async createSupervisor(monitorId: string, mode: MonitorMode): Promise<void> {
    const track = (await mic()).getAudioTracks()[0]!;
    const audioEl = document.createElement('audio');
    document.body.append(audioEl);
    supervisor = SupervisorMonitor.create({ monitorId, mode, ctx, signaling, micTrack: track, audioEl, gatherTimeoutMs: 5000, lostGraceMs: 2000 });
  },
  async supervisorMode(mode: MonitorMode): Promise<void> {
    await supervisor!.setMode(mode);
  },
  async supervisorStop(): Promise<void> {
    await supervisor!.stop('stopped');
  },
  supervisorState() {
    return { phase: supervisor?.phase, mode: supervisor?.mode, endReason: supervisor?.endReason, micOn: supervisor?.micOn, monitorConnection: supervisor?.pc.connectionState };
  },
  supervisorHears(hz: number[], ms: number) {
    return sampleTones((f) => supervisor!.meter?.tones(f) ?? f.map(() => 0), hz, ms);
  },
};
window.h = h;
