/**
 * A call's transcription file (`.json`) as lines to show beside the player. Pure.
 *
 * The Service's file (see the emulator, test/emulator/calls/capture.ts) is
 * `{wacid, language, durationMs, segments: [{speaker, startMs, endMs, text}]}`. The page
 * does not depend on more than it needs: each line has its text, and a speaker and a start
 * time when the file has them (`startMs` in ms, or `start` in seconds); `lines` is read like
 * `segments`, and a file with only a top-level `text` gives one line without a time.
 */

import { t, type MessageKey } from './i18n/index.ts';

export interface TranscriptLine {
  text: string;
  speaker?: string;
  /** Start of the line in the recording, ms; a click on the line seeks there. */
  startMs?: number;
}

export type Transcript = { ok: true; lines: TranscriptLine[] } | { ok: false; problem: MessageKey };

const MAX_LINES = 5000;

function startOf(o: Record<string, unknown>): number | undefined {
  if (typeof o.startMs === 'number' && Number.isFinite(o.startMs) && o.startMs >= 0) return o.startMs;
  if (typeof o.start === 'number' && Number.isFinite(o.start) && o.start >= 0) return o.start * 1000;
  return undefined;
}

export function readTranscript(json: unknown): Transcript {
  if (!json || typeof json !== 'object') return { ok: false, problem: 'archive.transcriptNotObject' };
  const o = json as Record<string, unknown>;
  const items = Array.isArray(o.segments) ? o.segments : Array.isArray(o.lines) ? o.lines : undefined;
  if (items) {
    const lines: TranscriptLine[] = [];
    for (const it of items.slice(0, MAX_LINES)) {
      if (!it || typeof it !== 'object') continue;
      const seg = it as Record<string, unknown>;
      if (typeof seg.text !== 'string' || seg.text.trim() === '') continue;
      const line: TranscriptLine = { text: seg.text.trim() };
      if (typeof seg.speaker === 'string' && seg.speaker !== '') line.speaker = seg.speaker;
      const start = startOf(seg);
      if (start !== undefined) line.startMs = start;
      lines.push(line);
    }
    // Lines in time order when they have times (the file's order otherwise).
    if (lines.every((l) => l.startMs !== undefined)) lines.sort((a, b) => a.startMs! - b.startMs!);
    return { ok: true, lines };
  }
  if (typeof o.text === 'string') return { ok: true, lines: o.text.trim() ? [{ text: o.text.trim() }] : [] };
  return { ok: false, problem: 'archive.transcriptNoLines' };
}

/** Speaker names as a person reads them. */
export function speakerName(speaker: string | undefined): string {
  switch (speaker) {
    case undefined: return '';
    case 'user': return t('archive.customer');
    case 'business': return t('archive.agent');
    case 'system': return t('archive.speakerSystem');
    default: return speaker.charAt(0).toUpperCase() + speaker.slice(1);
  }
}

/** The line being spoken at `ms`: the last line that started at or before it. */
export function currentLine(lines: readonly TranscriptLine[], ms: number): number {
  let found = -1;
  lines.forEach((l, i) => {
    if (l.startMs !== undefined && l.startMs <= ms) found = i;
  });
  return found;
}
