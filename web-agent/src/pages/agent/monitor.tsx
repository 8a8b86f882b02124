/**
 * The agent page's end of monitoring: a `MonitorController` fed every server
 * frame, reading the call's audio from the tab's `CallSession` (its RTCPeerConnection),
 * told when the call's session closes and when the microphone was switched; and the
 * "monitored" notice, drawn into a box of its own above the phone (shown only when the
 * server says the agent is to see it: whisper and barge always, listening per
 * MONITOR_SHOW_LISTENING).
 */
import { t, type MessageKey } from '../../i18n/index.ts';
import { sampleConnection } from '../../quality.ts';
import { render as draw } from 'preact';
import type { ServerMsg } from '../../../../shared/protocol.ts';
import type { Connection } from '../../connection.ts';
import { AgentMonitor, callAudioOf } from '../../monitor/agent-side.ts';
import { MonitorController } from '../../monitor/controller.ts';
import { AnchorAgentMonitor } from '../../monitor/whisper.ts';
import type { TabCall } from './calls.ts';

export interface AgentMonitoringContext {
  conn(): Connection;
  call(): TabCall | undefined;
}

const MODE_TEXT = { listen: 'monitor.listening', whisper: 'monitor.whispering', barge: 'monitor.barging' } as const satisfies Record<string, MessageKey>;

export function agentMonitoring(x: AgentMonitoringContext) {
  let ctx: AudioContext | undefined;
  // The supervisor's voice in whisper / barge; its own element, so the call's is untouched.
  const audioEl = document.createElement('audio');
  audioEl.autoplay = true;
  audioEl.dataset.testid = 'monitor-audio';
  const box = document.createElement('div');
  box.dataset.testid = 'monitor-box';
  document.body.append(audioEl);
  // Before the desk's grid (not one of its cells); it floats over the page (style.css), moving nothing.
  (document.querySelector('.desk') ?? document.getElementById('main'))?.before(box);

  const controller = new MonitorController({
    request: (m) => x.conn().request(m),
    audioContext: () => {
      ctx ??= new AudioContext();
      void ctx.resume().catch(() => undefined);
      return ctx;
    },
    callAudio: (wacid) => {
      const call = x.call();
      if (!call || call.wacid !== wacid || !call.session.media.isStarted) return undefined;
      return callAudioOf(call.session.media.pc);
    },
    audioEl: () => audioEl,
    onChange: () => render(),
  });

  function render(): void {
    const call = x.call();
    const shown = call ? controller.forCall(call.wacid).filter((e) => e.side === 'agent' && e.shown) : [];
    draw(
      shown.length === 0 ? null : (
        <div class="banner banner-info" role="status" data-testid="monitored">
          {shown.map((e) => (
            <p key={e.monitorId} data-mode={e.monitor?.mode}>
              {t(MODE_TEXT[e.monitor?.mode ?? 'listen'], { supervisor: e.supervisor })}

            </p>
          ))}
        </div>
      ),
      box,
    );
  }

  // For tests (and a curious developer): what the agent hears of a supervisor, by tone.
  Object.defineProperty(window, '__monitor', {
    value: Object.freeze({
      entries: () => [...controller.entries.values()].map((e) => ({ monitorId: e.monitorId, shown: e.shown, mode: e.monitor?.mode, phase: e.monitor?.phase })),
      heard: (hz: number[]) => {
        const m = [...controller.entries.values()].map((e) => e.monitor).find((x) => x instanceof AgentMonitor || x instanceof AnchorAgentMonitor);
        return m instanceof AgentMonitor || m instanceof AnchorAgentMonitor ? m.heard.tones(hz) : hz.map(() => 0);
      },
      /** How the monitor's audio travels (its selected pair: direct or relayed; on the anchor the whisper link's, once made). */
      path: async () => {
        const m = [...controller.entries.values()].map((e) => e.monitor).find((x) => x instanceof AgentMonitor || x instanceof AnchorAgentMonitor);
        const pc = m instanceof AgentMonitor || m instanceof AnchorAgentMonitor ? m.pc : undefined;
        return pc ? ((await sampleConnection(pc)).path ?? null) : null;
      },
    }),
    configurable: false,
  });

  return {
    controller,
    onServer(msg: ServerMsg): void {
      controller.onServer(msg);
    },
    /** The tab's call session is closing: its monitors end with it. */
    callEnded(wacid: string): void {
      controller.callEnded(wacid);
    },
    /** The call's microphone was switched: the monitor's mixes read the new track. */
    micSwitched(): void {
      const call = x.call();
      if (!call) return;
      const track = callAudioOf(call.session.media.pc).sender.track;
      for (const e of controller.forCall(call.wacid)) if (track && e.monitor instanceof AgentMonitor) void e.monitor.setMic(track);
    },
    render,
  };
}
