/**
 * Audio for the simulated chat users: a tone source, Opus encode/decode (opusscript,
 * WebAssembly) and level measurement. 48 kHz mono, 20 ms frames (960 samples), the
 * shape every chat-channel call uses.
 *
 * opusscript is loaded on first use so that importing the emulator stays fast.
 */
import { FRAME_SAMPLES, OpusEncoder, SAMPLE_RATE } from '../../../shared/opus.ts';

export { FRAME_SAMPLES, OpusDecoder, OpusEncoder, SAMPLE_RATE } from '../../../shared/opus.ts';

export const FRAME_MS = 20;
/** The 3-byte Opus frame that decodes to 20 ms of silence. */
export const OPUS_SILENCE = Buffer.from([0xf8, 0xff, 0xfe]);


/**
 * A sine tone as 20 ms frames. The phase carries over between frames, so any frequency
 * gives a clean tone (no click every frame that would smear the level).
 */
export class ToneSource {
  private phase = 0;
  constructor(
    readonly hz = 400,
    /** Peak amplitude, 0..1 of full scale. */
    readonly amplitude = 0.3,
  ) {}
  next(): Int16Array {
    const out = new Int16Array(FRAME_SAMPLES);
    const step = (2 * Math.PI * this.hz) / SAMPLE_RATE;
    for (let i = 0; i < FRAME_SAMPLES; i++) {
      out[i] = Math.round(Math.sin(this.phase) * this.amplitude * 32767);
      this.phase += step;
    }
    this.phase %= 2 * Math.PI;
    return out;
  }
}

/**
 * What a simulated party plays. `announcementMs` puts the capture announcement (a two-note
 * chime standing in for "this call may be recorded") before the source, as the provider
 * does when recording or transcription is on. `none`: no RTP at all (the user's audio is
 * lost on the way — one-way audio); `silence` still sends the 3-byte Opus silence frames.
 */
export type AudioSource = (
  | { kind: 'tone'; hz?: number; amplitude?: number }
  | { kind: 'tune'; hz: readonly number[]; noteMs: number; amplitude?: number }
  | { kind: 'silence' }
  | { kind: 'none' }
) & { announcementMs?: number };

/** The next 20 ms of PCM, or undefined for silence (the 3-byte Opus silence frame is sent). */
export type FrameGen = () => Int16Array | undefined;

/** A deterministic frame sequence for a source: the same source gives the same frames. */
export function frameSource(source: AudioSource): FrameGen {
  const announcementFrames = Math.round((source.announcementMs ?? 0) / FRAME_MS);
  const hi = new ToneSource(880, 0.3);
  const lo = new ToneSource(660, 0.3);
  const main = source.kind === 'tone' ? new ToneSource(source.hz ?? 400, source.amplitude ?? 0.3) : undefined;
  // A tune (hold music): its notes in turn, each `noteMs` long, looping.
  const notes = source.kind === 'tune' ? source.hz.map((hz) => new ToneSource(hz, source.amplitude ?? 0.3)) : [];
  const noteFrames = source.kind === 'tune' ? Math.max(1, Math.round(source.noteMs / FRAME_MS)) : 1;
  let i = 0;
  return () => {
    const n = i++;
    if (n < announcementFrames) return Math.floor(n / 12) % 2 === 0 ? hi.next() : lo.next(); // notes of 240 ms
    if (notes.length > 0) return notes[Math.floor((n - announcementFrames) / noteFrames) % notes.length]!.next();
    return main?.next();
  };
}

/** A source's Opus packets, encoded once per process (see `packetSource`). */
const packetCache = new Map<string, { prefix: number; loop: number; packets: Array<Buffer | undefined> }>();

/**
 * The next 20 ms Opus packet of a source (undefined: silence). Encoded once per process and
 * replayed: the announcement once, then one loop of the source — a second of a tone (an
 * integer frequency is back at its phase after 1 s), one round of a tune's notes. Encoding
 * every frame of every caller live cost ~0.5 ms of CPU a frame (opusscript), the largest
 * part of a simulated caller's cost; the same packets decode to the same audio.
 */
export function packetSource(source: AudioSource): () => Buffer | undefined {
  const key = JSON.stringify(source);
  let c = packetCache.get(key);
  if (!c) {
    const prefix = Math.round((source.announcementMs ?? 0) / FRAME_MS);
    const loop = source.kind === 'tune' ? source.hz.length * Math.max(1, Math.round(source.noteMs / FRAME_MS)) : 1000 / FRAME_MS;
    const frames = frameSource(source);
    const enc = new OpusEncoder();
    try {
      const packets: Array<Buffer | undefined> = [];
      for (let i = 0; i < prefix + loop; i++) {
        const pcm = frames();
        packets.push(pcm ? enc.encode(pcm) : undefined);
      }
      c = { prefix, loop, packets };
    } finally {
      enc.close();
    }
    packetCache.set(key, c);
  }
  const { prefix, loop, packets } = c;
  let n = 0;
  return () => {
    const i = n++;
    return packets[i < prefix + loop ? i : prefix + ((i - prefix) % loop)];
  };
}

/** Root mean square of a PCM frame, 0..1 of full scale (a 0.3 sine gives ~0.21). */
export function rms(pcm: Int16Array): number {
  if (pcm.length === 0) return 0;
  let sum = 0;
  for (const s of pcm) sum += s * s;
  return Math.sqrt(sum / pcm.length) / 32768;
}

/** Sum two frames with clipping (the recording mixes both parties). */
export function mix(a: Int16Array | undefined, b: Int16Array | undefined): Int16Array {
  const out = new Int16Array(FRAME_SAMPLES);
  for (let i = 0; i < FRAME_SAMPLES; i++) out[i] = Math.max(-32768, Math.min(32767, (a?.[i] ?? 0) + (b?.[i] ?? 0)));
  return out;
}

/**
 * The dominant pitch of a frame from its zero crossings (Hz; 0 for silence). Rough, but
 * enough to tell a tune (several notes) from one steady tone or a voice-band beep.
 */
export function pitchHz(pcm: Int16Array): number {
  if (rms(pcm) <= 0.01) return 0;
  let crossings = 0;
  for (let i = 1; i < pcm.length; i++) if ((pcm[i - 1]! < 0) !== (pcm[i]! < 0)) crossings++;
  return (crossings / 2) * (SAMPLE_RATE / pcm.length);
}

/** What a party heard over a window (since `reset`): to tell hold music from speech or silence. */
export interface WindowStats {
  frames: number;
  /** Mean RMS of the window's frames, 0..1. */
  meanLevel: number;
  /** Share of frames above silence (music is continuous; speech pauses). */
  audibleFraction: number;
  /** Distinct pitches heard in audible frames, rounded to 50 Hz, ascending (a tune has several). */
  pitches: number[];
}

export class LevelWindow {
  private frames = 0;
  private levelSum = 0;
  private audible = 0;
  private readonly pitchCounts = new Map<number, number>();
  add(pcm: Int16Array): void {
    const level = rms(pcm);
    this.frames++;
    this.levelSum += level;
    if (level <= 0.01) return;
    this.audible++;
    const p = Math.round(pitchHz(pcm) / 50) * 50; // a 20 ms frame resolves ~25 Hz
    this.pitchCounts.set(p, (this.pitchCounts.get(p) ?? 0) + 1);
  }
  reset(): void {
    this.frames = 0;
    this.levelSum = 0;
    this.audible = 0;
    this.pitchCounts.clear();
  }
  stats(): WindowStats {
    // A pitch counts when heard in at least 3 frames (60 ms): note edges are not notes.
    const pitches = [...this.pitchCounts].filter(([, n]) => n >= 3).map(([p]) => p).sort((a, b) => a - b);
    return { frames: this.frames, meanLevel: this.frames ? this.levelSum / this.frames : 0, audibleFraction: this.frames ? this.audible / this.frames : 0, pitches };
  }
}

