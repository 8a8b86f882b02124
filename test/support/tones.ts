/**
 * Known audio for media tests: each party plays a sine of its own frequency, so what
 * anyone hears is told apart by frequency (Goertzel, `web-agent/src/monitor/energy.ts`).
 */
import { writeFileSync } from 'node:fs';
import { SAMPLE_RATE } from '../emulator/calls/audio.ts';

/** A mono 48 kHz 16-bit WAV of a sine: what Chromium's fake microphone plays (looped). */
export function wav(path: string, hz: number, seconds = 4, amplitude = 0.3): string {
  const n = SAMPLE_RATE * seconds;
  const buf = Buffer.alloc(44 + n * 2);
  buf.write('RIFF', 0);
  buf.writeUInt32LE(36 + n * 2, 4);
  buf.write('WAVEfmt ', 8);
  buf.writeUInt32LE(16, 16);
  buf.writeUInt16LE(1, 20); // PCM
  buf.writeUInt16LE(1, 22); // mono
  buf.writeUInt32LE(SAMPLE_RATE, 24);
  buf.writeUInt32LE(SAMPLE_RATE * 2, 28);
  buf.writeUInt16LE(2, 32);
  buf.writeUInt16LE(16, 34);
  buf.write('data', 36);
  buf.writeUInt32LE(n * 2, 40);
  // A whole number of periods per file, so the loop has no click.
  const f = Math.round(hz * seconds) / seconds;
  for (let i = 0; i < n; i++) buf.writeInt16LE(Math.round(amplitude * 32767 * Math.sin((2 * Math.PI * f * i) / SAMPLE_RATE)), 44 + i * 2);
  writeFileSync(path, buf);
  return path;
}

