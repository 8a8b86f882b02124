/**
 * Call signaling (part 4 "Calls"): connect, preAccept, accept, reject, terminate, and the
 * capture media download. All five signaling calls return `{wacid, success}`; success
 * means "accepted by the Service", not "answered".
 *
 * Pass `deadline` (epoch ms) for accept: the accept window is ~30-60 s from the connect
 * event, and retries after a 429 must not run past it. A timed-out signaling POST throws
 * `OutcomeUnknownError` (never retried): reconcile with the call events.
 */
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Writable } from 'node:stream';
import { ConnectionError, ValidationError } from '../errors.ts';
import { CallSignalResponse } from '../schemas.ts';
import { path, type CallOptions, type DownloadProgress, type Transport } from '../transport.ts';
import { addressee, e164, id, str } from '../validate.ts';

/** Whole-file attempts when a download to a file breaks mid-body. */
const MEDIA_BODY_ATTEMPTS = 3;

export interface AnswerInput {
  phoneId: string;
  wacid: string;
  sdpType: 'answer';
  /** SDP text, byte-exact (`\r\n`); sent as given. */
  sdp: string;
}

export interface CallRef {
  phoneId: string;
  wacid: string;
}

export interface ConnectInput {
  /** Business number, E.164. */
  from: string;
  to?: string;
  recipient?: string;
  sdpType?: 'offer';
  sdp: string;
}

export interface DownloadMediaOptions extends CallOptions {
  /**
   * File path (written to a temp file, then renamed: never a partial file; a body that
   * breaks midway is fetched again from the start, up to 3 times) or a Writable (no restart:
   * bytes already written cannot be taken back).
   */
  out: string | Writable;
  onProgress?: (p: DownloadProgress) => void;
  /**
   * Every byte of the body as it streams (hash it, look at its header): never buffered.
   * `onBody` comes first for each body, so a body fetched again starts a fresh count.
   */
  onChunk?: (chunk: Buffer) => void;
  onBody?: () => void;
}

export class Calls {
  constructor(private readonly t: Transport) {}

  /** Business-initiated call: our SDP offer to the user. Returns the wacid at once. */
  async connect(input: ConnectInput, opts?: CallOptions): Promise<CallSignalResponse> {
    const from = e164('from', input.from);
    const who = addressee(input);
    if (input.sdpType !== undefined && input.sdpType !== 'offer') throw new ValidationError('sdpType', 'must be "offer" for connect');
    const sdp = str('sdp', input.sdp);
    return this.t.request({ method: 'POST', path: '/chat/calls/connect', body: { from, ...who, sdpType: 'offer', sdp }, schema: CallSignalResponse }, opts);
  }

  /** Prepare the media path with our SDP answer; the call is not answered yet. */
  async preAccept(input: AnswerInput, opts?: CallOptions): Promise<CallSignalResponse> {
    return this.t.request({ method: 'POST', path: '/chat/calls/preAccept', body: answerBody(input), schema: CallSignalResponse }, opts);
  }

  /** Answer. The SDP must equal the one given to preAccept, if any. Start audio only after this resolves. */
  async accept(input: AnswerInput, opts?: CallOptions): Promise<CallSignalResponse> {
    return this.t.request({ method: 'POST', path: '/chat/calls/accept', body: answerBody(input), schema: CallSignalResponse }, opts);
  }

  async reject(input: CallRef, opts?: CallOptions): Promise<CallSignalResponse> {
    return this.t.request({ method: 'POST', path: '/chat/calls/reject', body: refBody(input), schema: CallSignalResponse }, opts);
  }

  async terminate(input: CallRef, opts?: CallOptions): Promise<CallSignalResponse> {
    return this.t.request({ method: 'POST', path: '/chat/calls/terminate', body: refBody(input), schema: CallSignalResponse }, opts);
  }

  /**
   * Stream a recording (`.ogg`) or transcription (`.json`) to a file or stream. Download only
   * after the `AVAILABLE` event; 404 (`NotFoundError`) when missing, expired or not ours.
   */
  async downloadMedia(mediaAssetId: string, opts: DownloadMediaOptions): Promise<DownloadProgress & { path?: string }> {
    const p = path`/chat/calls/media/${id('mediaAssetId', mediaAssetId)}`;
    if (typeof opts.out !== 'string') {
      const sink = opts.out;
      return this.t.download({ path: p }, () => (opts.onBody?.(), sink), opts);
    }
    const target = opts.out;
    // Temp file beside the target so the rename is atomic (same filesystem).
    const tmp = join(dirname(target), `.${basename(target)}.${randomBytes(6).toString('hex')}.part`);
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await this.t.download({ path: p }, () => (opts.onBody?.(), createWriteStream(tmp)), opts);
        await rename(tmp, target);
        return { ...result, path: target };
      } catch (err) {
        await rm(tmp, { force: true });
        // A body that broke after a 2xx (status set) is fetched again from the start: there
        // is no Range support, and the temp file makes starting over safe. Failures before
        // the body were already retried by the transport.
        const brokeMidBody = err instanceof ConnectionError && err.status !== undefined;
        if (!brokeMidBody || attempt >= MEDIA_BODY_ATTEMPTS || opts.signal?.aborted) throw err;
      }
    }
  }
}

function answerBody(input: AnswerInput) {
  const ref = refBody(input);
  if (input.sdpType !== 'answer') throw new ValidationError('sdpType', 'must be "answer" for preAccept and accept');
  return { ...ref, sdpType: 'answer' as const, sdp: str('sdp', input.sdp) };
}

function refBody(input: CallRef) {
  return { phoneId: id('phoneId', input.phoneId), wacid: id('wacid', input.wacid) };
}
