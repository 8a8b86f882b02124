import { describe, expect, test } from 'vitest';
import { inLanguage } from './i18n/testing.ts';
import { currentLine, readTranscript, speakerName } from './transcript.ts';

inLanguage('en');

describe('readTranscript', () => {
  test('the Service (emulator) shape: segments with speaker and startMs, in time order', () => {
    const json = {
      wacid: 'w1',
      language: 'en',
      durationMs: 5000,
      segments: [
        { speaker: 'business', startMs: 2500, endMs: 3000, text: '[audio]' },
        { speaker: 'system', startMs: 0, endMs: 1500, text: '[recording announcement, en]' },
        { speaker: 'user', startMs: 1500, endMs: 5000, text: ' [tone 400 Hz] ' },
      ],
    };
    expect(readTranscript(json)).toEqual({
      ok: true,
      lines: [
        { speaker: 'system', startMs: 0, text: '[recording announcement, en]' },
        { speaker: 'user', startMs: 1500, text: '[tone 400 Hz]' },
        { speaker: 'business', startMs: 2500, text: '[audio]' },
      ],
    });
  });
  test('lines without speaker or time are kept as they come; `start` in seconds is read; empty lines dropped', () => {
    expect(readTranscript({ lines: [{ text: 'b' }, { text: 'a', start: 1.5 }, { text: '  ' }, 7, { speaker: 'x' }] })).toEqual({
      ok: true,
      lines: [{ text: 'b' }, { text: 'a', startMs: 1500 }],
    });
  });
  test('a file with only text gives one line; anything else says why', () => {
    expect(readTranscript({ text: 'hello there' })).toEqual({ ok: true, lines: [{ text: 'hello there' }] });
    expect(readTranscript({ foo: 1 })).toMatchObject({ ok: false, problem: 'archive.transcriptNoLines' });
    expect(readTranscript('nope')).toMatchObject({ ok: false, problem: 'archive.transcriptNotObject' });
    expect(readTranscript(null)).toMatchObject({ ok: false });
  });
  test('speaker names and the line being spoken', () => {
    expect([speakerName('user'), speakerName('business'), speakerName('system'), speakerName('agent 2'), speakerName(undefined)]).toEqual(['Customer', 'Agent', 'System', 'Agent 2', '']);
    const lines = [{ text: 'a', startMs: 0 }, { text: 'b', startMs: 1000 }, { text: 'c' }, { text: 'd', startMs: 3000 }];
    expect([currentLine(lines, 0), currentLine(lines, 999), currentLine(lines, 2500), currentLine(lines, 9000)]).toEqual([0, 0, 1, 3]);
    expect(currentLine([{ text: 'x', startMs: 500 }], 100)).toBe(-1);
  });
});
