/**
 * Voicemail ends when the caller stops talking (VOICEMAIL_SILENCE_S of silence after the
 * prompt), measured by energy on the recording path.
 *
 * Why not Janus's talking events: AudioBridge raises them only from the RFC 6464 audio-level
 * header extension the participant sends, and the caller's offer comes from the chat
 * channel's provider, which offers Opus and telephone-event and nothing else (no
 * `urn:ietf:params:rtp-hdrext:ssrc-audio-level`): Janus, the answerer, cannot ask for it.
 * So the bridge measures the caller itself: it reads Janus's recording of the caller's own
 * audio (`.mjr`, the file voicemail keeps) as it grows, decodes the new Opus packets and
 * keeps when a frame was last loud enough to be a voice (`VOICE_RMS`). Time runs by the
 * wall clock from when the recording started, so a caller who sends nothing at all (no RTP)
 * is silent too. Janus writes through a stdio buffer: the newest second or so may not be in
 * the file yet, which only makes a voice look older, never a silence longer than it was by
 * more than that.
 *
 *   const stop = watchSilence({ path, leadMs, silenceMs, onSilent: () => apply({ type: 'voicemailSilent', … }) });
 *   stop();   // the call left voicemail (ended, saved)
 */
import { readFile } from 'node:fs/promises';
import { MjrError, readMjr } from '../anchor/mjr.ts';
import { OpusDecoder } from '../../shared/opus.ts';

/** A frame with at least this RMS (0..1 of full scale, about −34 dBFS) is the caller talking. */
export const VOICE_RMS = 0.02;

/** The RMS of 16-bit PCM, 0..1 of full scale. */
export function rmsOf(pcm: Int16Array): number {
  if (pcm.length === 0) return 0;
  let sum = 0;
  for (const x of pcm) sum += x * x;
  return Math.sqrt(sum / pcm.length) / 32768;
}

/**
 * The caller's last voice in a recording that grows: feed it the whole file each time; it
 * decodes only the packets it has not seen. Times are the recording's (ms since it started).
 */
export class VoiceTracker {
  private seen = 0;
  private decoder: OpusDecoder | undefined;
  /** The recording time the caller was last heard; starts at the prompt's end. */
  lastVoiceMs: number;

  constructor(private readonly leadMs: number) {
    this.lastVoiceMs = leadMs;
  }

  update(mjr: Buffer): number {
    const { packets, times } = readMjr(mjr);
    this.decoder ??= new OpusDecoder();
    for (let i = this.seen; i < packets.length; i++) {
      const at = times[i]!;
      if (at < this.leadMs || at <= this.lastVoiceMs) continue;
      if (rmsOf(this.decoder.decode(packets[i]!)) >= VOICE_RMS) this.lastVoiceMs = at;
    }
    this.seen = Math.max(this.seen, packets.length);
    return this.lastVoiceMs;
  }

  close(): void {
    this.decoder?.close();
    this.decoder = undefined;
  }
}

export interface SilenceWatchOptions {
  /** Janus's recording of the caller (it may not exist yet). */
  path: string;
  /** The prompt's length: what the caller says after it is the message. */
  leadMs: number;
  silenceMs: number;
  onSilent: () => void;
  everyMs?: number;
  now?: () => number;
  onError?: (err: Error) => void;
}

/** Watch a voicemail recording from now (its start); `onSilent` once, after `silenceMs` without a voice past the prompt. Returns stop. */
export function watchSilence(o: SilenceWatchOptions): () => void {
  const now = o.now ?? Date.now;
  const started = now();
  const voice = new VoiceTracker(o.leadMs);
  let stopped = false;
  let busy = false;
  const stop = () => {
    stopped = true;
    clearInterval(timer);
    voice.close();
  };
  const check = async () => {
    if (stopped || busy) return;
    busy = true;
    try {
      const buf = await readFile(o.path).catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err)));
      if (stopped) return;
      if (buf) {
        try {
          voice.update(buf);
        } catch (err) {
          // A file Janus has only begun (its header not written out yet) is read again next time.
          if (!(err instanceof MjrError)) throw err;
        }
      }
      if (now() - started - voice.lastVoiceMs >= o.silenceMs) {
        stop();
        o.onSilent();
      }
    } catch (err) {
      o.onError?.(err as Error);
    } finally {
      busy = false;
    }
  };
  const timer = setInterval(() => void check(), o.everyMs ?? 500);
  timer.unref();
  return stop;
}
