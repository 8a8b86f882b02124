/**
 * Writes the anchor's bundled announcements (server/anchor/sounds.ts says what each is) as
 * speech: the voicemail prompt and the closed greeting (each ending with the tone, BEEP_HZ),
 * queue audio's greeting and its position announcements. Ogg/Opus, 48 kHz mono, 20 ms
 * packets, spoken by eSpeak NG (a synthesized voice: free to use) and encoded with the
 * emulator's encoder and the shared Ogg/Opus muxer, as the hold music is. The files are
 * committed: eSpeak NG is needed only to make them again (`apt-get install espeak-ng`):
 *
 *   npx tsx scripts/make-spoken-sounds.ts [out-dir]
 *
 * English only: a number's own greeting per language and its own position announcements are
 * QUEUE_AUDIO_FILE's `greetings` and `positionDir`; VOICEMAIL_PROMPT_FILE and
 * CLOSED_GREETING_FILE replace the prompt and the closed greeting.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FRAME_SAMPLES, OpusEncoder, SAMPLE_RATE, ToneSource } from '../test/emulator/calls/audio.ts';
import { muxOggOpus } from '../test/emulator/calls/ogg.ts';
import { BEEP_HZ, MAX_SPOKEN_POSITION } from '../server/anchor/sounds.ts';

/** eSpeak NG's voice and words a minute: American English, a female variant, unhurried. */
const VOICE = 'en-us+f3';
const WPM = '145';
/** Speech peaks at this share of full scale (the tones were 0.25: speech is mostly far below its peaks). */
const PEAK = 0.6;

const NUMBERS = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
export const TEXTS = {
  prompt: 'Sorry, nobody can take your call right now. Please leave a message after the tone.',
  closed: 'Thank you for calling. We are closed right now.',
  greeting: 'Thank you for calling. All our agents are busy. Please stay on the line: the next free agent will be with you.',
  position: (n: number) => `You are number ${NUMBERS[n - 1]} in the queue.`,
  more: 'More than nine callers are ahead of you. Thank you for waiting.',
} as const;

/** The 16-bit mono samples and rate of a PCM WAV file. */
function readWav(buf: Buffer): { samples: Int16Array; rate: number } {
  if (buf.toString('latin1', 0, 4) !== 'RIFF' || buf.toString('latin1', 8, 12) !== 'WAVE') throw new Error('not a WAV file');
  let off = 12;
  let rate = 0;
  while (off + 8 <= buf.length) {
    const id = buf.toString('latin1', off, off + 4);
    // eSpeak NG writes 0xffffffff as the data size when it streams: the rest of the file.
    const size = Math.min(buf.readUInt32LE(off + 4), buf.length - off - 8);
    if (id === 'fmt ') {
      if (buf.readUInt16LE(off + 8) !== 1 || buf.readUInt16LE(off + 10) !== 1 || buf.readUInt16LE(off + 22) !== 16) throw new Error('WAV: 16-bit mono PCM expected');
      rate = buf.readUInt32LE(off + 12);
    } else if (id === 'data') {
      const samples = new Int16Array(Math.floor(size / 2));
      for (let i = 0; i < samples.length; i++) samples[i] = buf.readInt16LE(off + 8 + i * 2);
      return { samples, rate };
    }
    off += 8 + size + (size % 2);
  }
  throw new Error('WAV: no data');
}

/** Band-limited resampling (a Hann-windowed sinc, 32 taps) to SAMPLE_RATE, as floats in -1 … 1. */
function resample(x: Int16Array, from: number): Float64Array {
  const n = Math.floor((x.length * SAMPLE_RATE) / from);
  const out = new Float64Array(n);
  const cutoff = Math.min(1, SAMPLE_RATE / from); // upsampling: 1 (the source's own band)
  const HALF = 16;
  for (let i = 0; i < n; i++) {
    const t = (i * from) / SAMPLE_RATE;
    const c = Math.floor(t);
    let sum = 0;
    for (let k = c - HALF + 1; k <= c + HALF; k++) {
      if (k < 0 || k >= x.length) continue;
      const d = t - k;
      const sinc = d === 0 ? 1 : Math.sin(Math.PI * d * cutoff) / (Math.PI * d * cutoff);
      const w = 0.5 + 0.5 * Math.cos((Math.PI * d) / HALF);
      sum += (x[k]! / 32768) * sinc * w * cutoff;
    }
    out[i] = sum;
  }
  return out;
}

/** `text` spoken by eSpeak NG, at SAMPLE_RATE, its peak at PEAK. */
export function speak(text: string): Float64Array {
  const dir = mkdtempSync(join(tmpdir(), 'sb-speak-'));
  try {
    const wav = join(dir, 'out.wav');
    execFileSync('espeak-ng', ['-v', VOICE, '-s', WPM, '-w', wav, text]);
    const { samples, rate } = readWav(readFileSync(wav));
    const pcm = resample(samples, rate);
    let peak = 0;
    for (const s of pcm) peak = Math.max(peak, Math.abs(s));
    const gain = peak > 0 ? PEAK / peak : 0;
    for (let i = 0; i < pcm.length; i++) pcm[i]! *= gain;
    return pcm;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const quiet = (ms: number) => new Float64Array(Math.round((ms * SAMPLE_RATE) / 1000));

/** `ms` of the tone, faded in and out over 3 frames (no clicks). */
function beep(ms: number): Float64Array {
  const src = new ToneSource(BEEP_HZ, 0.25);
  const frames = Math.round(ms / 20);
  const out = new Float64Array(frames * FRAME_SAMPLES);
  for (let f = 0; f < frames; f++) {
    const fade = Math.min(1, (f + 1) / 3, (frames - f) / 3);
    const pcm = src.next();
    for (let i = 0; i < FRAME_SAMPLES; i++) out[f * FRAME_SAMPLES + i] = (pcm[i]! / 32767) * fade;
  }
  return out;
}

/** The parts one after another, cut into 20 ms frames (the last padded with quiet), encoded and muxed. */
function encode(parts: Float64Array[], title: string): Buffer {
  const total = parts.reduce((n, p) => n + p.length, 0);
  const all = new Float64Array(Math.ceil(total / FRAME_SAMPLES) * FRAME_SAMPLES);
  let off = 0;
  for (const p of parts) (all.set(p, off), (off += p.length));
  const enc = new OpusEncoder();
  const packets: Buffer[] = [];
  for (let f = 0; f < all.length / FRAME_SAMPLES; f++) {
    const pcm = new Int16Array(FRAME_SAMPLES);
    for (let i = 0; i < FRAME_SAMPLES; i++) pcm[i] = Math.max(-32768, Math.min(32767, Math.round(all[f * FRAME_SAMPLES + i]! * 32767)));
    packets.push(enc.encode(pcm));
  }
  enc.close();
  return muxOggOpus(packets, { vendor: 'switchboard', comments: [`TITLE=${title}`, 'ENCODER=eSpeak NG (en-us) + libopus'] });
}

/** The prompt's parts: the words, a pause, the tone (600 ms), a breath of quiet before recording. */
const promptParts = () => [quiet(150), speak(TEXTS.prompt), quiet(400), beep(600), quiet(100)];

export function voicemailPrompt(): Buffer {
  return encode(promptParts(), 'voicemail prompt');
}

export function closedGreeting(): Buffer {
  return encode([quiet(150), speak(TEXTS.closed), quiet(500), ...promptParts()], 'closed greeting and voicemail prompt');
}

export function queueGreeting(): Buffer {
  return encode([quiet(150), speak(TEXTS.greeting), quiet(300)], 'queue greeting');
}

export function positionAnnouncement(place: number | 'more'): Buffer {
  return encode([quiet(150), speak(place === 'more' ? TEXTS.more : TEXTS.position(place)), quiet(200)], `queue position ${place}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const dir = process.argv[2] ?? new URL('../server/anchor/sounds/', import.meta.url).pathname;
  writeFileSync(join(dir, 'voicemail.opus'), voicemailPrompt());
  writeFileSync(join(dir, 'closed.opus'), closedGreeting());
  writeFileSync(join(dir, 'greeting.opus'), queueGreeting());
  for (let n = 1; n <= MAX_SPOKEN_POSITION; n++) writeFileSync(join(dir, `position-${n}.opus`), positionAnnouncement(n));
  writeFileSync(join(dir, 'position-more.opus'), positionAnnouncement('more'));
  console.log(`wrote the spoken voicemail prompt, closed greeting, queue greeting and position announcements in ${dir}`);
}
