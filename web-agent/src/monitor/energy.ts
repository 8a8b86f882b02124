/**
 * Audio energy, overall and at one frequency: what the supervisor's page shows as a level,
 * and what tests use to tell the caller's tone from the agent's and the supervisor's.
 * `toneLevel` is a Goertzel filter over a Hann-windowed block: the amplitude (0..1 of full
 * scale) of the sine at `hz`, nearly blind to tones a few dozen Hz away.
 */

/** Root mean square of a block, 0..1 of full scale (a 0.3-peak sine gives ~0.21). */
export function rmsOf(samples: ArrayLike<number>): number {
  if (samples.length === 0) return 0;
  let sum = 0;
  for (let i = 0; i < samples.length; i++) sum += samples[i]! * samples[i]!;
  return Math.sqrt(sum / samples.length);
}

/** Peak amplitude (0..1 of full scale) of the sine at `hz` in `samples`. */
export function toneLevel(samples: ArrayLike<number>, sampleRate: number, hz: number): number {
  const n = samples.length;
  if (n === 0) return 0;
  const w = (2 * Math.PI * hz) / sampleRate;
  const coeff = 2 * Math.cos(w);
  let s1 = 0;
  let s2 = 0;
  for (let i = 0; i < n; i++) {
    const hann = 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (n - 1));
    const s0 = samples[i]! * hann + coeff * s1 - s2;
    s2 = s1;
    s1 = s0;
  }
  // |X(w)| for a non-integer bin; the Hann window's gain is n/2, a sine's peak gives amplitude·n/4.
  const re = s1 - s2 * Math.cos(w);
  const im = s2 * Math.sin(w);
  return (4 * Math.sqrt(re * re + im * im)) / n;
}

/** A meter on an audio node or a stream, read on demand (no timers of its own). */
export class EnergyMeter {
  private readonly analyser: AnalyserNode;
  private readonly buf: Float32Array<ArrayBuffer>;
  private source: MediaStreamAudioSourceNode | undefined;

  constructor(
    private readonly ctx: BaseAudioContext,
    input: AudioNode | MediaStream,
    fftSize = 4096,
  ) {
    this.analyser = ctx.createAnalyser();
    this.analyser.fftSize = fftSize;
    this.buf = new Float32Array(new ArrayBuffer(fftSize * 4));
    if (input instanceof MediaStream) {
      this.source = (ctx as AudioContext).createMediaStreamSource(input);
      this.source.connect(this.analyser);
    } else {
      input.connect(this.analyser);
    }
  }

  /** The last `fftSize` samples. */
  samples(): Float32Array {
    this.analyser.getFloatTimeDomainData(this.buf);
    return this.buf;
  }

  level(): number {
    return rmsOf(this.samples());
  }

  /** Amplitude of the tone at each frequency, in the same block. */
  tones(hz: number[]): number[] {
    const s = this.samples();
    return hz.map((f) => toneLevel(s, this.ctx.sampleRate, f));
  }

  close(): void {
    this.source?.disconnect();
    this.analyser.disconnect();
  }
}
