/**
 * One call opened from the results: the recording in an `<audio>` player, the transcript
 * beside it (click a line to seek), what happened (summary and timeline) and the downloads.
 * Side by side on a desktop, stacked on a phone (CSS).
 */
import { useRef, useState } from 'preact/hooks';
import type { CallDetail, CallRecord, MediaRecord } from '../../../../shared/records.ts';
import { describeReason, formatCaller, formatDuration } from '../../format.ts';
import {
  callTime,
  customerText,
  describeDetail,
  describeDirection,
  describeMediaStatus,
  describeOutcome,
  formatBytes,
  playable,
  type SearchState,
} from '../../search.ts';
import { TranscriptView } from './transcript.tsx';

export interface DetailProps {
  s: SearchState;
  call: CallRecord | CallDetail;
  now: number;
  onClose(): void;
  onRetry(): void;
}

const span = (ms: number | undefined) => (ms === undefined ? '–' : formatDuration(ms / 1000));

function Summary({ call, now }: { call: CallRecord; now: number }) {
  const rows: Array<[string, string, string]> = [
    ['Customer', 'detail-customer', formatCaller(customerText(call.customer)) + (call.customer.phoneNumber && call.customer.userId ? ` (${call.customer.userId})` : '')],
    ['Business number', 'detail-business', call.businessNumber ? formatCaller(call.businessNumber) : '–'],
    ['Agent', 'detail-agent', call.agent ?? '–'],
    ['Direction', 'detail-direction', describeDirection(call.direction)],
    ['Time', 'detail-time', callTime(call.receivedAt, now)],
    ['Wait', 'detail-wait', span(call.waitMs)],
    ['Talk time', 'detail-talk', span(call.talkMs)],
    ...(call.holdMs ? ([['On hold', 'detail-hold', span(call.holdMs)]] as Array<[string, string, string]>) : []),
    ['Outcome', 'detail-outcome', describeOutcome(call.outcome) + (call.endReason ? ` · ${describeReason(call.endReason)}` : '')],
    ...(call.disposition ? ([['Disposition', 'detail-disposition', call.disposition]] as Array<[string, string, string]>) : []),
  ];
  return (
    <dl class="summary" data-testid="detail-summary">
      {rows.map(([label, testid, value]) => (
        <div key={testid}>
          <dt>{label}</dt>
          <dd data-testid={testid}>{value}</dd>
        </div>
      ))}
      {call.notes && (
        <div class="summary-notes">
          <dt>Notes</dt>
          <dd data-testid="detail-notes">{call.notes}</dd>
        </div>
      )}
    </dl>
  );
}

function Downloads({ media }: { media: readonly MediaRecord[] }) {
  return (
    <section aria-labelledby="downloads-title">
      <h3 id="downloads-title" class="section-title">
        Downloads
      </h3>
      <p class="hint" data-testid="downloads-empty" hidden={media.length > 0}>
        No recording or transcription for this call.
      </p>
      <ul class="archive" data-testid="downloads">
        {media.map((m) => (
          <li key={m.mediaAssetId} data-testid="download" data-kind={m.kind} data-status={m.status}>
            {m.status === 'available' && m.url ? (
              <a href={m.url} download="" data-testid="download-link">
                {`${m.kind === 'recording' ? 'Recording (.ogg)' : 'Transcription (.json)'}${m.bytes !== undefined ? ` · ${formatBytes(m.bytes)}` : ''}`}
              </a>
            ) : (
              <span class="hint">{describeMediaStatus(m)}</span>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

function Timeline({ call }: { call: CallRecord | CallDetail }) {
  const entries = 'timeline' in call ? call.timeline : undefined;
  return (
    <section aria-labelledby="timeline-title">
      <h3 id="timeline-title" class="section-title">
        Timeline
      </h3>
      <p class="hint" hidden={!!entries && entries.length > 0}>
        {entries ? 'Nothing recorded.' : 'Loading…'}
      </p>
      <ol class="timeline" data-testid="timeline">
        {(entries ?? []).map((t, i) => (
          <li key={`${t.at}/${i}`} data-testid="timeline-item" data-event={t.event}>
            <time dateTime={t.at}>{new Date(t.at).toLocaleTimeString('en-GB', { hour12: false })}</time>
            <span class="tl-event">{t.event}</span>
            {t.detail && <span class="tl-detail">{describeDetail(t.detail)}</span>}
          </li>
        ))}
      </ol>
    </section>
  );
}

export function CallDetailView({ s, call, now, onClose, onRetry }: DetailProps) {
  const audio = useRef<HTMLAudioElement>(null);
  const [positionMs, setPositionMs] = useState(0);
  const recording = playable(call.media, 'recording');
  const recordingAsset = call.media.find((m) => m.kind === 'recording');
  const transcriptAsset = call.media.find((m) => m.kind === 'transcription');
  const seek = (ms: number) => {
    const a = audio.current;
    if (!a) return;
    a.currentTime = ms / 1000;
    setPositionMs(ms);
    // A click is a user gesture: playing is allowed; a refusal leaves the position set.
    void a.play().catch(() => undefined);
  };
  return (
    <article class="call-detail" data-testid="call-detail" data-wacid={call.wacid} data-state={s.detail.state} aria-labelledby="detail-title">
      <div class="detail-head">
        <h2 id="detail-title" class="card-title">
          {`Call with ${formatCaller(customerText(call.customer))}`}
        </h2>
        <button type="button" class="btn btn-quiet" data-testid="detail-close" onClick={onClose}>
          Back to results
        </button>
      </div>
      <p class="form-error" data-testid="detail-error" role="alert" hidden={s.detail.state !== 'failed'}>
        {`Could not load the call: ${s.detail.error ?? ''} `}
        <button type="button" class="btn btn-quiet" data-testid="detail-retry" onClick={onRetry}>
          Try again
        </button>
      </p>
      <div class="detail-grid">
        <div class="detail-main">
          <section class="player" aria-labelledby="player-title">
            <h3 id="player-title" class="section-title">
              Recording
            </h3>
            {recording ? (
              <audio
                ref={audio}
                key={recording.url}
                class="player-audio"
                data-testid="detail-audio"
                controls
                preload="metadata"
                src={recording.url}
                onTimeUpdate={(e) => setPositionMs((e.currentTarget as HTMLAudioElement).currentTime * 1000)}
              />
            ) : (
              <p class="hint" data-testid="detail-no-recording">
                {recordingAsset ? describeMediaStatus(recordingAsset) : 'This call was not recorded.'}
              </p>
            )}
          </section>
          <Summary call={call} now={now} />
        </div>
        <TranscriptView
          state={s.transcript.state}
          result={s.transcript.result}
          error={s.transcript.error}
          absent={transcriptAsset ? describeMediaStatus(transcriptAsset) : undefined}
          positionMs={positionMs}
          onSeek={seek}
        />
      </div>
      <div class="detail-more">
        <Timeline call={call} />
        <Downloads media={call.media} />
      </div>
    </article>
  );
}
