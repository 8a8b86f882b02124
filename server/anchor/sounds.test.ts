/**
 * The bundled announcements are speech (scripts/make-spoken-sounds.ts), not tones: each file
 * decoded here is many frames of a voice (changing pitch, with the pauses between words), the
 * voicemail prompt and the closed greeting end with the tone recording starts after, and each
 * place in the queue is its own recording.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BUNDLED_CLOSED_GREETING, BUNDLED_QUEUE_GREETING, BUNDLED_VOICEMAIL_PROMPT } from '../config/config.ts';
import { OpusDecoder } from '../../shared/opus.ts';
import { oggOpusDurationMs } from '../../shared/ogg.ts';
import { pitchHz, rms } from '../../test/emulator/calls/audio.ts';
import { oggPackets } from '../../test/support/ogg-packets.ts';
import { BEEP_HZ, MAX_SPOKEN_POSITION, positionFile } from './sounds.ts';

/** Each 20 ms frame of the file: its level (0 … 1) and pitch (zero crossings; 0 when quiet). */
function frames(file: string): Array<{ level: number; hz: number }> {
  const dec = new OpusDecoder();
  try {
    return oggPackets(readFileSync(file)).packets.map((p) => {
      const pcm = dec.decode(p);
      return { level: rms(pcm), hz: pitchHz(pcm) };
    });
  } finally {
    dec.close();
  }
}

const isBeep = (hz: number) => Math.abs(hz - BEEP_HZ) < 40;

/** The longest run of frames at BEEP_HZ: where it starts and how long it is. */
function longestBeep(f: Array<{ hz: number }>): { at: number; frames: number } {
  let best = { at: -1, frames: 0 };
  let run = 0;
  f.forEach((x, i) => {
    run = isBeep(x.hz) ? run + 1 : 0;
    if (run > best.frames) best = { at: i - run + 1, frames: run };
  });
  return best;
}

/**
 * A voice: at least `seconds` of sound whose pitch (zero crossings) spreads over many 100 Hz
 * bands and whose level rises and falls with the syllables — a tone or the hold music has a
 * handful of bands and a steady level (the hold music: 6 bands, level varying 6 %) — and no
 * tone-long run of BEEP_HZ.
 */
function expectSpeech(f: Array<{ level: number; hz: number }>, seconds: number): void {
  const voiced = f.filter((x) => x.hz > 0);
  expect(voiced.length * 0.02).toBeGreaterThan(seconds);
  expect(new Set(voiced.map((x) => Math.round(x.hz / 100))).size).toBeGreaterThan(15);
  const mean = voiced.reduce((a, x) => a + x.level, 0) / voiced.length;
  const sd = Math.sqrt(voiced.reduce((a, x) => a + (x.level - mean) ** 2, 0) / voiced.length);
  expect(sd / mean).toBeGreaterThan(0.3);
  expect(longestBeep(f).frames).toBeLessThan(8);
}

describe('bundled announcements', () => {
  it.each([
    ['voicemail prompt', BUNDLED_VOICEMAIL_PROMPT],
    ['closed greeting', BUNDLED_CLOSED_GREETING],
  ])('the %s is words, then the tone (600 ms at BEEP_HZ), then nothing', (_name, file) => {
    const f = frames(file);
    const beep = longestBeep(f);
    expect(beep.frames).toBeGreaterThanOrEqual(25);
    expect(beep.frames).toBeLessThanOrEqual(31);
    expectSpeech(f.slice(0, beep.at), 2);
    // After the tone: quiet (the message is recorded from the file's end).
    expect(f.slice(beep.at + beep.frames + 2).every((x) => x.level < 0.01)).toBe(true);
    expect(oggOpusDurationMs(readFileSync(file))).toBe(f.length * 20);
  });

  it('the closed greeting says more than the prompt before the same tone', () => {
    const words = (file: string) => longestBeep(frames(file)).at;
    expect(words(BUNDLED_CLOSED_GREETING)).toBeGreaterThan(words(BUNDLED_VOICEMAIL_PROMPT) + 50);
  });

  it('the queue greeting is speech', () => {
    expectSpeech(frames(BUNDLED_QUEUE_GREETING), 3);
  });

  it('each place in the queue (1 … 9, more) is its own spoken announcement of a few seconds', () => {
    const files = [...Array.from({ length: MAX_SPOKEN_POSITION }, (_, i) => positionFile(i + 1)), positionFile(MAX_SPOKEN_POSITION + 1)];
    expect(files.at(-1)).toMatch(/position-more\.opus$/);
    const bodies = new Set<string>();
    for (const file of files) {
      const f = frames(file);
      expectSpeech(f, 0.8);
      expect(f.length * 0.02).toBeLessThan(6);
      bodies.add(readFileSync(file).toString('base64'));
    }
    expect(bodies.size).toBe(files.length);
  });
});
