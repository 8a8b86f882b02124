/**
 * The transcript beside the player: one line per segment, with speaker and time when the
 * file has them. A click on a timed line seeks the recording there (and plays); the line
 * being spoken is marked while it plays.
 */
import { formatDuration } from '../../format.ts';
import { t } from '../../i18n/index.ts';
import type { LoadState } from '../../search.ts';
import { currentLine, speakerName, type Transcript } from '../../transcript.ts';

export interface TranscriptProps {
  state: LoadState;
  result?: Transcript | undefined;
  error?: string | undefined;
  /** Why there is no transcript to load (none made, not downloaded yet…), when there is none. */
  absent?: string | undefined;
  /** Current playback position, ms (marks the line being spoken). */
  positionMs: number;
  onSeek(ms: number): void;
}

export function TranscriptView({ state, result, error, absent, positionMs, onSeek }: TranscriptProps) {
  const lines = result?.ok ? result.lines : [];
  const current = currentLine(lines, positionMs);
  const note =
    state === 'loading' ? t('archive.transcriptLoading')
    : state === 'failed' ? t('archive.transcriptFailed', { why: error ?? '' })
    : result && !result.ok ? t(result.problem)
    : result && lines.length === 0 ? t('archive.transcriptEmpty')
    : state === 'none' ? (absent ?? t('archive.noTranscript'))
    : '';
  return (
    <section class="transcript" aria-labelledby="transcript-title">
      <h3 id="transcript-title" class="section-title">
        {t('archive.transcript')}
      </h3>
      <p class="hint" data-testid="transcript-status" data-state={state} hidden={!note}>
        {note}
      </p>
      <ol class="transcript-lines" data-testid="transcript">
        {lines.map((l, i) => {
          const label = [speakerName(l.speaker), l.startMs !== undefined ? formatDuration(l.startMs / 1000) : ''].filter(Boolean).join(' · ');
          const body = (
            <>
              {label && <span class="t-meta">{label}</span>}
              <span class="t-text">{l.text}</span>
            </>
          );
          return (
            <li key={i} data-testid="transcript-line" data-speaker={l.speaker ?? ''} data-start-ms={l.startMs ?? ''} data-current={i === current ? 'true' : undefined}>
              {l.startMs !== undefined ? (
                <button type="button" class="t-line" title={t('archive.playFrom', { time: formatDuration(l.startMs / 1000) })} onClick={() => onSeek(l.startMs!)}>
                  {body}
                </button>
              ) : (
                <div class="t-line">{body}</div>
              )}
            </li>
          );
        })}
      </ol>
    </section>
  );
}
