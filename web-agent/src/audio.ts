/**
 * Page audio that is not the call itself: one AudioContext for the ringtone, the input
 * level meters and the keep-alive hum.
 *
 * Browsers start an AudioContext "suspended" until the user interacts with the page
 * (autoplay policy): a ringtone created without a click stays silent and calls are missed.
 * The ready-check button's click calls `unlock()`, which resumes the context and plays a
 * short test ring, so the agent hears the ring and knows sound works before going available.
 */
import { startHoldMusic, type HoldMusic } from './hold-music.ts';

export class PageAudio {
  private ctx: AudioContext | undefined;
  private ringTimer: ReturnType<typeof setInterval> | undefined;
  private ringGain: GainNode | undefined;
  private hum: { osc: OscillatorNode; gain: GainNode } | undefined;

  get unlocked(): boolean {
    return this.ctx?.state === 'running';
  }

  /**
   * Must run inside a click handler. Resolves true once audio can play. `quiet`: no test
   * ring (a click anywhere on the page unlocks too; only the ready-check rings).
   */
  async unlock(opts: { quiet?: boolean } = {}): Promise<boolean> {
    this.ctx ??= new AudioContext();
    if (this.ctx.state !== 'running') {
      try {
        await this.ctx.resume();
      } catch {
        return false;
      }
    }
    if (this.ctx.state === 'running' && !opts.quiet) this.burst(this.ctx.currentTime, 0.5);
    return this.ctx.state === 'running';
  }

  /** Ring until `stopRing()`: a two-tone burst pattern, repeated every 3 s. */
  startRing(): void {
    const ctx = this.ctx;
    if (!ctx || this.ringTimer !== undefined) return;
    const ring = () => {
      const t = ctx.currentTime + 0.02;
      this.burst(t, 0.4);
      this.burst(t + 0.6, 0.4);
    };
    ring();
    this.ringTimer = setInterval(ring, 3000);
  }

  stopRing(): void {
    clearInterval(this.ringTimer);
    this.ringTimer = undefined;
    if (this.ringGain && this.ctx) {
      // Cut the burst that is playing now, then give later bursts a fresh gain node.
      this.ringGain.gain.cancelScheduledValues(this.ctx.currentTime);
      this.ringGain.gain.setValueAtTime(0, this.ctx.currentTime);
      this.ringGain.disconnect();
      this.ringGain = undefined;
    }
  }

  get ringing(): boolean {
    return this.ringTimer !== undefined;
  }

  /** One burst of the ring: 440 Hz + 480 Hz, soft attack and release (no clicks). */
  private burst(at: number, seconds: number): void {
    const ctx = this.ctx;
    if (!ctx) return;
    if (!this.ringGain) {
      this.ringGain = ctx.createGain();
      this.ringGain.gain.value = 0;
      this.ringGain.connect(ctx.destination);
    }
    const g = this.ringGain.gain;
    g.setValueAtTime(0, at);
    g.linearRampToValueAtTime(0.18, at + 0.02);
    g.setValueAtTime(0.18, at + seconds - 0.03);
    g.linearRampToValueAtTime(0, at + seconds);
    for (const freq of [440, 480]) {
      const osc = ctx.createOscillator();
      osc.frequency.value = freq;
      osc.connect(this.ringGain);
      osc.start(at);
      osc.stop(at + seconds);
    }
  }

  /**
   * Keep the tab "playing audio" while the agent is available. Chromium throttles timers
   * of hidden, silent tabs (to one wake-up a minute after 5 min in the background), which
   * stops the ring and the countdown and lets the socket watchdog starve; a tab that is
   * playing audio is exempt. Chromium decides "playing" from the rendered samples, so a
   * zero-gain graph can count as silent: we render a 50 Hz hum at -80 dBFS instead, far
   * below hearing but not digital silence. (The tab's speaker icon shows, which also helps
   * agents find the softphone among their tabs.)
   */
  startKeepAlive(): void {
    const ctx = this.ctx;
    if (!ctx || this.hum) return;
    const osc = ctx.createOscillator();
    const gain = ctx.createGain();
    osc.frequency.value = 50;
    gain.gain.value = 1e-4;
    osc.connect(gain).connect(ctx.destination);
    osc.start();
    this.hum = { osc, gain };
  }

  stopKeepAlive(): void {
    if (!this.hum) return;
    this.hum.osc.stop();
    this.hum.gain.disconnect();
    this.hum = undefined;
  }

  get keepingAlive(): boolean {
    return this.hum !== undefined;
  }

  /** A level meter on a microphone stream (needs the context; created on first use). */
  /** Hold music for a call's sender (hold-music.ts), on the page's one AudioContext. */
  holdMusic(): HoldMusic {
    this.ctx ??= new AudioContext();
    return startHoldMusic(this.ctx);
  }

  meter(stream: MediaStream): LevelMeter {
    this.ctx ??= new AudioContext();
    return new LevelMeter(this.ctx, stream);
  }
}

/** Input level of a stream, 0..1 (RMS, scaled so normal speech fills about half the bar). */
export class LevelMeter {
  private readonly source: MediaStreamAudioSourceNode;
  private readonly analyser: AnalyserNode;
  private readonly buf: Float32Array<ArrayBuffer>;
  /** Highest level seen since the meter started (the ready-check wants proof of sound). */
  peak = 0;

  constructor(ctx: AudioContext, stream: MediaStream) {
    this.source = ctx.createMediaStreamSource(stream);
    this.analyser = ctx.createAnalyser();
    this.analyser.fftSize = 1024;
    this.buf = new Float32Array(new ArrayBuffer(this.analyser.fftSize * 4));
    this.source.connect(this.analyser); // not to the destination: the agent must not hear themself
  }

  level(): number {
    this.analyser.getFloatTimeDomainData(this.buf);
    let sum = 0;
    for (const v of this.buf) sum += v * v;
    const rms = Math.sqrt(sum / this.buf.length);
    const level = Math.min(1, rms * 4);
    if (level > this.peak) this.peak = level;
    return level;
  }

  close(): void {
    this.source.disconnect();
    this.analyser.disconnect();
  }
}
