/**
 * What the archive checks of a media file as it streams: size, SHA-256 and the first bytes
 * (never the whole file in memory), then whether a recording is Ogg Opus and what a
 * transcription says.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';

/** An Ogg page header is 27 bytes + up to 255 lacing values; OpusHead's magic is 8 bytes. */
const HEAD_BYTES = 27 + 255 + 8;
/** Transcriptions are read whole to be parsed; one this large is kept, but not indexed. */
export const TRANSCRIPT_MAX_BYTES = 8 * 1024 * 1024;
/** The history's limit on a transcript's text (schema `MediaFact.text`). */
const TEXT_MAX = 1_000_000;

/** Size, SHA-256 and head of a byte stream, fed chunk by chunk. `reset` starts over. */
export class MediaDigest {
  private hash: Hash = createHash('sha256');
  private headParts: Buffer[] = [];
  private headLen = 0;
  bytes = 0;

  reset(): void {
    this.hash = createHash('sha256');
    this.headParts = [];
    this.headLen = 0;
    this.bytes = 0;
  }

  update(chunk: Buffer): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    if (this.headLen < HEAD_BYTES) {
      const part = chunk.subarray(0, HEAD_BYTES - this.headLen);
      this.headParts.push(Buffer.from(part));
      this.headLen += part.length;
    }
  }

  /** Lowercase hex; call once, at the end. */
  sha256(): string {
    return this.hash.digest('hex');
  }

  head(): Buffer {
    return Buffer.concat(this.headParts);
  }
}

/** Digest of a file already on disk (an asset archived before), streamed. */
export async function digestFile(path: string): Promise<MediaDigest> {
  const d = new MediaDigest();
  for await (const chunk of createReadStream(path)) d.update(chunk as Buffer);
  return d;
}

/**
 * Why these first bytes are not an Ogg Opus file, or undefined when they are: the first
 * page starts with `OggS` and its first packet with `OpusHead` (RFC 7845, section 5.1).
 */
export function oggProblem(head: Buffer): string | undefined {
  if (head.length < 4 || head.toString('latin1', 0, 4) !== 'OggS') return 'not an Ogg file: it does not start with "OggS"';
  if (head.length < 27) return 'not an Ogg Opus file: the first page is cut short';
  const payload = 27 + head[26]!;
  if (head.length < payload + 8 || head.toString('latin1', payload, payload + 8) !== 'OpusHead') {
    return 'not an Ogg Opus file: the first page does not carry an "OpusHead" header';
  }
  return undefined;
}

/**
 * The text of a transcription document, for full-text search: a top-level `text`, or the
 * `text` of each of `segments[]` (the Service's shape), one line each.
 */
export function transcriptText(doc: unknown): string | undefined {
  if (!doc || typeof doc !== 'object') return undefined;
  const d = doc as { text?: unknown; segments?: unknown };
  let text: string | undefined;
  if (typeof d.text === 'string') text = d.text;
  else if (Array.isArray(d.segments)) {
    text = d.segments
      .map((s) => (s && typeof s === 'object' && typeof (s as { text?: unknown }).text === 'string' ? (s as { text: string }).text : undefined))
      .filter((t): t is string => t !== undefined && t.trim() !== '')
      .join('\n');
  }
  if (text === undefined) return undefined;
  return text.length > TEXT_MAX ? text.slice(0, TEXT_MAX) : text;
}

/**
 * Read and parse a transcription file: its text (undefined when it has none or is too
 * large to index), or a problem when it is not JSON.
 */
export async function readTranscript(path: string): Promise<{ text?: string; problem?: string }> {
  if ((await stat(path)).size > TRANSCRIPT_MAX_BYTES) return {};
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    return { problem: `not a JSON transcription: ${(err as Error).message.slice(0, 200)}` };
  }
  const text = transcriptText(doc);
  return text === undefined ? {} : { text };
}
