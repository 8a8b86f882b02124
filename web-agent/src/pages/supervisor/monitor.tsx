/**
 * The supervisor console's monitoring: Listen / Whisper / Barge on each live
 * call, then the mode buttons, Stop and a level meter of what the supervisor hears
 * (caller + agent). The media is `MonitorController`'s (web-agent/src/monitor/); this file
 * sends `monitor.start` / `monitor.mode`, keeps the microphone (opened on the first click,
 * kept for the page's life so a second monitor starts at once) and draws the controls.
 */
import { t, type MessageKey } from '../../i18n/index.ts';
import { sampleConnection } from '../../quality.ts';
import type { CallView, MonitorMode, ServerMsg } from '../../../../shared/protocol.ts';
import type { Connection, RequestError } from '../../connection.ts';
import { MonitorController, type MonitorEntry } from '../../monitor/controller.ts';
import { SupervisorMonitor } from '../../monitor/supervisor-side.ts';

const MODES: readonly MonitorMode[] = ['listen', 'whisper', 'barge'];
const LABEL: Record<MonitorMode, MessageKey> = { listen: 'mon.listen', whisper: 'mon.whisper', barge: 'mon.barge' };
const HINT: Record<MonitorMode, MessageKey> = {
  listen: 'mon.listenHint',
  whisper: 'mon.whisperHint',
  barge: 'mon.bargeHint',
};

export class SupervisorMonitoring {
  readonly controller: MonitorController;
  private ctx: AudioContext | undefined;
  private micStream: MediaStream | undefined;
  private readonly audioEl: HTMLAudioElement;
  /** A start in flight (the call's buttons wait). */
  private starting: string | undefined;

  constructor(
    private readonly conn: () => Connection | undefined,
    private readonly changed: () => void,
    private readonly showError: (message: string) => void,
  ) {
    this.audioEl = document.createElement('audio');
    this.audioEl.autoplay = true;
    this.audioEl.dataset.testid = 'monitor-audio';
    document.body.append(this.audioEl);
    this.controller = new MonitorController({
      request: (m) => this.need().request(m),
      audioContext: () => (this.ctx ??= new AudioContext()),
      mic: async () => this.mic(),
      audioEl: () => this.audioEl,
      onChange: () => this.changed(),
    });
  }

  onServer(msg: ServerMsg): void {
    // A monitor whose media could not be set up (no network path between the two browsers,
    // or the TURN server unreachable): say so in words instead of silently dropping it.
    const mine = msg.type === 'monitor.ended' && this.controller.forCall(msg.wacid).some((e) => e.monitorId === msg.monitorId && e.side === 'supervisor');
    this.controller.onServer(msg);
    if (mine && msg.type === 'monitor.ended' && msg.reason === 'failed') {
      this.showError(
        t('mon.failed'),
      );
    }
  }

  private need(): Connection {
    const c = this.conn();
    if (!c) throw new Error('not connected');
    return c;
  }

  private async mic(): Promise<MediaStreamTrack> {
    this.micStream ??= await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: true, noiseSuppression: true } });
    return this.micStream.getAudioTracks()[0]!;
  }

  /** This tab's monitor of a call, if any. */
  of(wacid: string): MonitorEntry | undefined {
    return this.controller.forCall(wacid).find((e) => e.side === 'supervisor');
  }

  /** A click: the AudioContext and the microphone are opened inside the gesture. */
  async start(wacid: string, mode: MonitorMode): Promise<void> {
    this.starting = wacid;
    this.changed();
    try {
      this.ctx ??= new AudioContext();
      await this.ctx.resume();
      await this.mic();
      await this.need().request({ type: 'monitor.start', wacid, mode });
    } catch (e) {
      this.showError(t('mon.startFailed', { why: (e as Error).message }));
    } finally {
      this.starting = undefined;
      this.changed();
    }
  }

  async setMode(monitorId: string, mode: MonitorMode): Promise<void> {
    try {
      await this.need().request({ type: 'monitor.mode', monitorId, mode });
    } catch (e) {
      this.showError(t('mon.modeFailed', { mode: t(LABEL[mode]), why: (e as Error).message }));
    }
  }

  stop(monitorId: string): void {
    this.controller.stop(monitorId);
  }

  /** 0..1: what the supervisor hears now (the meter; tests read tones through `tones`). */
  level(wacid: string): number {
    const m = this.of(wacid)?.monitor;
    return m instanceof SupervisorMonitor && m.meter ? m.meter.level() : 0;
  }

  tones(wacid: string, hz: number[]): number[] {
    const m = this.of(wacid)?.monitor;
    return m instanceof SupervisorMonitor && m.meter ? m.meter.tones(hz) : hz.map(() => 0);
  }

  /** How the monitor's audio travels (its selected pair: direct or relayed). */
  async path(wacid: string): Promise<string | null> {
    const m = this.of(wacid)?.monitor;
    return m instanceof SupervisorMonitor ? ((await sampleConnection(m.pc)).path ?? null) : null;
  }

  isStarting(wacid: string): boolean {
    return this.starting === wacid;
  }
}

/** The monitor cell of one live call. */
export function MonitorCell({ call, m }: { call: CallView; m: SupervisorMonitoring }) {
  const entry = m.of(call.wacid);
  if (!entry) {
    // Only a call talking with an agent can be monitored.
    const can = call.state === 'active' && call.agent !== undefined;
    return (
      <div class="monitor-actions" data-testid="monitor-actions" data-can={can ? 'true' : 'false'}>
        {MODES.map((mode) => (
          <button type="button" class="btn btn-small" key={mode} data-testid={`monitor-${mode}`} title={t(HINT[mode])} disabled={!can || m.isStarting(call.wacid)} onClick={() => void m.start(call.wacid, mode)}>
            {t(LABEL[mode])}
          </button>
        ))}
      </div>
    );
  }
  const mode = entry.monitor?.mode;
  const level = Math.min(1, m.level(call.wacid) * 4);
  return (
    <div class="monitor-actions" data-testid="monitoring" data-mode={mode} data-phase={entry.monitor?.phase ?? 'setup'}>
      {MODES.map((x) => (
        <button type="button" class="btn btn-small" key={x} data-testid={`monitor-${x}`} aria-pressed={mode === x} title={t(HINT[x])} onClick={() => void m.setMode(entry.monitorId, x)}>
          {t(LABEL[x])}
        </button>
      ))}
      <button type="button" class="btn btn-small btn-stop" data-testid="monitor-stop" onClick={() => m.stop(entry.monitorId)}>
        {t('mon.stop')}
      </button>
      <meter class="monitor-meter" data-testid="monitor-meter" min={0} max={1} value={level} aria-label={t('mon.meter')} />
    </div>
  );
}
