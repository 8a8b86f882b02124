/**
 * One call opened from the results: the recording in an `<audio>` player, the transcript
 * beside it (click a line to seek), what happened (summary and timeline) and the downloads.
 * Side by side on a desktop, stacked on a phone (CSS).
 */
import { locale, t, type MessageKey } from '../../i18n/index.ts';
import { pathWords } from '../../quality.ts';
import { useEffect, useRef, useState } from 'preact/hooks';
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
  const rows: Array<[MessageKey, string, string]> = [
    ['archive.customer', 'detail-customer', formatCaller(customerText(call.customer)) + (call.customer.phoneNumber && call.customer.userId ? ` (${call.customer.userId})` : '')],
    ['archive.businessNumber', 'detail-business', call.businessNumber ? formatCaller(call.businessNumber) : '–'],
    ['archive.agent', 'detail-agent', call.agent ?? '–'],
    ['archive.direction', 'detail-direction', describeDirection(call.direction)],
    ['archive.time', 'detail-time', callTime(call.receivedAt, now)],
    ['archive.wait', 'detail-wait', span(call.waitMs)],
    ['archive.talk', 'detail-talk', span(call.talkMs)],
    ...(call.holdMs ? ([['archive.hold', 'detail-hold', span(call.holdMs)]] as Array<[MessageKey, string, string]>) : []),
    ...(call.networkPath ? ([['archive.path', 'detail-path', pathWords(call.networkPath)]] as Array<[MessageKey, string, string]>) : []),
    ['archive.outcome', 'detail-outcome', describeOutcome(call.outcome) + (call.endReason ? ` · ${describeReason(call.endReason)}` : '')],
    ...(call.disposition ? ([['archive.disposition', 'detail-disposition', call.disposition]] as Array<[MessageKey, string, string]>) : []),
  ];
  return (
    <dl class="summary" data-testid="detail-summary">
      {rows.map(([label, testid, value]) => (
        <div key={testid}>
          <dt>{t(label)}</dt>
          <dd data-testid={testid}>{value}</dd>
        </div>
      ))}
      {call.notes && (
        <div class="summary-notes">
          <dt>{t('archive.notes')}</dt>
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
        {t('archive.downloads')}
      </h3>
      <p class="hint" data-testid="downloads-empty" hidden={media.length > 0}>
        {t('archive.noMedia')}
      </p>
      <ul class="archive" data-testid="downloads">
        {media.map((m) => (
          <li key={m.mediaAssetId} data-testid="download" data-kind={m.kind} data-status={m.status}>
            {m.status === 'available' && m.url ? (
              <a href={m.url} download="" data-testid="download-link">
                {`${m.kind === 'recording' ? t('archive.recordingFile') : t('archive.transcriptionFile')}${m.bytes !== undefined ? ` · ${formatBytes(m.bytes)}` : ''}`}
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
        {t('archive.timeline')}
      </h3>
      <p class="hint" hidden={!!entries && entries.length > 0}>
        {entries ? t('archive.nothingRecorded') : t('archive.loading')}
      </p>
      <ol class="timeline" data-testid="timeline">
        {(entries ?? []).map((e, i) => (
          <li key={`${e.at}/${i}`} data-testid="timeline-item" data-event={e.event}>
            <time dateTime={e.at}>{new Date(e.at).toLocaleTimeString(locale(), { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' })}</time>
            <span class="tl-event" dir="ltr">{e.event}</span>
            {e.detail && <span class="tl-detail" dir="ltr">{describeDetail(e.detail)}</span>}
          </li>
        ))}
      </ol>
    </section>
  );
}

/**
 * The recording's source for the player. A server that answers without byte ranges (the
 * archive route sends the whole file) leaves an Ogg stream with no known duration
 * (`Infinity`): no length shown, no seeking past what is buffered. Then the page fetches the
 * file once and plays it from memory (a `blob:` URL, allowed by the CSP's media-src), where
 * the browser knows its length; the position asked for meanwhile is kept.
 */
function useSeekableSource(url: string) {
  const [src, setSrc] = useState(url);
  const fallback = useRef<'none' | 'fetching' | string>('none');
  const wantedSec = useRef<number | undefined>(undefined);
  useEffect(
    () => () => {
      if (fallback.current.startsWith('blob:')) URL.revokeObjectURL(fallback.current);
    },
    [],
  );
  const onMetadata = (a: HTMLAudioElement) => {
    if (wantedSec.current !== undefined && a.src.startsWith('blob:')) {
      a.currentTime = wantedSec.current;
      wantedSec.current = undefined;
    }
    if (Number.isFinite(a.duration) || fallback.current !== 'none') return;
    fallback.current = 'fetching';
    fetch(url, { credentials: 'same-origin' })
      .then((r) => (r.ok ? r.blob() : Promise.reject(new Error(String(r.status)))))
      .then((b) => {
        fallback.current = URL.createObjectURL(b);
        if (a.currentTime > 0) wantedSec.current = a.currentTime;
        setSrc(fallback.current);
      })
      .catch(() => undefined); // the stream keeps playing as it is
  };
  return { src, whole: src !== url, onMetadata, wantAt: (sec: number) => (fallback.current === 'fetching' ? (wantedSec.current = sec) : undefined) };
}

/** The recording's player; `seek.current(ms)` moves it there and plays (the transcript's clicks). */
function Player({ url, seek, onPosition }: { url: string; seek: { current: ((ms: number) => void) | undefined }; onPosition(ms: number): void }) {
  const audio = useRef<HTMLAudioElement>(null);
  const source = useSeekableSource(url);
  seek.current = (ms: number) => {
    const a = audio.current;
    if (!a) return;
    a.currentTime = ms / 1000;
    source.wantAt(ms / 1000);
    onPosition(ms);
    // A click is a user gesture: playing is allowed; a refusal leaves the position set.
    void a.play().catch(() => undefined);
  };
  return (
    <audio
      ref={audio}
      class="player-audio"
      data-testid="detail-audio"
      data-source={source.whole ? 'whole-file' : 'stream'}
      controls
      preload="metadata"
      src={source.src}
      onLoadedMetadata={(e) => source.onMetadata(e.currentTarget as HTMLAudioElement)}
      onTimeUpdate={(e) => onPosition((e.currentTarget as HTMLAudioElement).currentTime * 1000)}
    />
  );
}

export function CallDetailView({ s, call, now, onClose, onRetry }: DetailProps) {
  const [positionMs, setPositionMs] = useState(0);
  const seek = useRef<((ms: number) => void) | undefined>(undefined);
  const recording = playable(call.media, 'recording');
  const recordingAsset = call.media.find((m) => m.kind === 'recording');
  const transcriptAsset = call.media.find((m) => m.kind === 'transcription');
  return (
    <article class="call-detail" data-testid="call-detail" data-wacid={call.wacid} data-state={s.detail.state} aria-labelledby="detail-title">
      <div class="detail-head">
        <h2 id="detail-title" class="card-title">
          {t('archive.callWith', { customer: formatCaller(customerText(call.customer)) })}
        </h2>
        <button type="button" class="btn btn-quiet" data-testid="detail-close" onClick={onClose}>
          {t('archive.back')}
        </button>
      </div>
      <p class="form-error" data-testid="detail-error" role="alert" hidden={s.detail.state !== 'failed'}>
        {`${t('archive.detailFailed', { why: s.detail.error ?? '' })} `}
        <button type="button" class="btn btn-quiet" data-testid="detail-retry" onClick={onRetry}>
          {t('archive.retry')}
        </button>
      </p>
      <div class="detail-grid">
        <div class="detail-main">
          <section class="player" aria-labelledby="player-title">
            <h3 id="player-title" class="section-title">
              {t('archive.recording')}
            </h3>
            {recording ? (
              <Player key={recording.url} url={`${recording.url}?use=play`} seek={seek} onPosition={setPositionMs} />
            ) : (
              <p class="hint" data-testid="detail-no-recording">
                {recordingAsset ? describeMediaStatus(recordingAsset) : s.detail.state === 'loading' ? t('archive.loading') : t('archive.notRecorded')}
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
          onSeek={(ms) => seek.current?.(ms)}
        />
      </div>
      <div class="detail-more">
        <Timeline call={call} />
        <Downloads media={call.media} />
      </div>
    </article>
  );
}
