/**
 * Janus's recordings (`.mjr`, the recorder's container: janus.conf.meetecho.com/docs/recordings)
 * turned into Ogg/Opus without `janus-pp-rec`: an AudioBridge participant recording holds the
 * RTP packets the participant sent (Opus, not mixed), so the Opus packets are taken out of the
 * RTP, put in sequence order, and muxed (`shared/ogg.ts`).
 *
 * Layout (version 2): `MJR00002`, a 16-bit big-endian length and that many bytes of JSON (the
 * header: `t` `a` for audio, `c` the codec), then frames: `MEET`, a 32-bit time (ms since the
 * start), a 16-bit length, and the RTP packet.
 */
import { muxOggOpus } from '../../shared/ogg.ts';

export class MjrError extends Error {
  override readonly name = 'MjrError';
}

export interface MjrAudio {
  /** The Opus packets in RTP sequence order (duplicates dropped). */
  packets: Buffer[];
  /** When each packet was written, ms since the recording started (the frames' times). */
  times: number[];
  /** The header's codec (`opus`). */
  codec: string;
}

/** The Opus packets of an audio `.mjr` (`skipMs`: leave out those written in the first ms); throws `MjrError` on anything else. */
export function readMjr(buf: Buffer, skipMs = 0): MjrAudio {
  if (buf.length < 10 || buf.toString('latin1', 0, 8) !== 'MJR00002') throw new MjrError('not a Janus recording (version 2): no MJR00002 header');
  const headLen = buf.readUInt16BE(8);
  if (10 + headLen > buf.length) throw new MjrError('the recording ends inside its header');
  let info: { t?: string; c?: string };
  try {
    info = JSON.parse(buf.toString('utf8', 10, 10 + headLen)) as { t?: string; c?: string };
  } catch {
    throw new MjrError('the recording header is not JSON');
  }
  if (info.t !== 'a') throw new MjrError(`not an audio recording (type ${JSON.stringify(info.t)})`);
  if (info.c !== 'opus') throw new MjrError(`not Opus (codec ${JSON.stringify(info.c)})`);
  const bySeq = new Map<number, { p: Buffer; ms: number }>();
  let last = 0;
  let off = 10 + headLen;
  // A recording cut short (Janus killed) ends in half a frame: what came before is kept.
  while (off + 10 <= buf.length && buf.toString('latin1', off, off + 4) === 'MEET') {
    const ms = buf.readUInt32BE(off + 4);
    const len = buf.readUInt16BE(off + 8);
    const start = off + 10;
    off = start + len;
    if (off > buf.length) break;
    const payload = rtpPayload(buf.subarray(start, off));
    if (!payload || payload.length === 0) continue;
    const seq = buf.readUInt16BE(start + 2);
    // Sequence numbers wrap at 65536: unwrapped next to the previous one.
    let x = seq + (last - (last & 0xffff));
    if (x - last > 32768) x -= 65536;
    else if (last - x > 32768) x += 65536;
    last = x;
    if (!bySeq.has(x) && ms >= skipMs) bySeq.set(x, { p: Buffer.from(payload), ms });
  }
  const sorted = [...bySeq.entries()].sort((a, b) => a[0] - b[0]).map(([, v]) => v);
  return { packets: sorted.map((v) => v.p), times: sorted.map((v) => v.ms), codec: info.c };
}

/** The payload of one RTP packet (after CSRCs and the header extension, before padding), or undefined. */
function rtpPayload(p: Buffer): Buffer | undefined {
  if (p.length < 12 || p[0]! >> 6 !== 2) return undefined;
  let off = 12 + (p[0]! & 0x0f) * 4;
  if (p[0]! & 0x10) {
    if (off + 4 > p.length) return undefined;
    off += 4 + p.readUInt16BE(off + 2) * 4;
  }
  let end = p.length;
  if (p[0]! & 0x20) end -= p[p.length - 1]!;
  return off <= end ? p.subarray(off, end) : undefined;
}

/**
 * An audio `.mjr` of Opus as an Ogg/Opus file (20 ms packets, as WebRTC sends them);
 * `skipMs`: what was recorded in the first ms is left out (voicemail: the prompt's length).
 */
export function mjrToOgg(buf: Buffer, title: string, skipMs = 0): Buffer {
  const { packets } = readMjr(buf, skipMs);
  if (packets.length === 0) throw new MjrError('the recording holds no audio');
  return muxOggOpus(packets, { vendor: 'switchboard', comments: [`TITLE=${title}`] });
}
