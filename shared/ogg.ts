/**
 * A minimal Ogg Opus muxer (RFC 3533 pages, RFC 7845 mapping): OpusHead and OpusTags
 * header pages, then audio pages with lacing, CRC-32 (poly 0x04C11DB7, no reflection)
 * and granule positions in 48 kHz samples counted from the start, pre-skip included.
 * One writer for everything that makes Ogg/Opus: the Service emulator's recordings, the
 * anchor's bundled sounds (scripts/), and the voicemail messages (server/anchor/mjr.ts).
 */

/** 20 ms at 48 kHz: the packets' length unless told otherwise. */
const FRAME_SAMPLES = 960;

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let r = i << 24;
    for (let j = 0; j < 8; j++) r = r & 0x80000000 ? (r << 1) ^ 0x04c11db7 : r << 1;
    t[i] = r >>> 0;
  }
  return t;
})();

export function oggCrc(buf: Uint8Array): number {
  let crc = 0;
  for (const b of buf) crc = ((crc << 8) ^ CRC_TABLE[((crc >>> 24) ^ b) & 0xff]!) >>> 0;
  return crc >>> 0;
}

/** Encoder lookahead the decoder must drop; 312 samples (6.5 ms) is libopus's default. */
export const PRE_SKIP = 312;

export interface OggOpusOptions {
  channels?: number;
  serial?: number;
  vendor?: string;
  /** Comments for OpusTags, e.g. ["TITLE=call wacid.123"]. */
  comments?: string[];
  /** 20 ms packets each by default. */
  samplesPerPacket?: number;
}

/** Builds a complete `.ogg` file from Opus packets (all the same duration). */
export function muxOggOpus(packets: Buffer[], opts: OggOpusOptions = {}): Buffer {
  const serial = opts.serial ?? 0x5357_4244;
  const spp = opts.samplesPerPacket ?? FRAME_SAMPLES;
  const pages: Buffer[] = [];
  let seq = 0;
  const page = (segmentsOf: Buffer[], granule: bigint, flags: number) => {
    const lacing: number[] = [];
    for (const p of segmentsOf) {
      let n = p.length;
      while (n >= 255) {
        lacing.push(255);
        n -= 255;
      }
      lacing.push(n); // a final < 255 value ends the packet (0 when the length is a multiple of 255)
    }
    const header = Buffer.alloc(27 + lacing.length);
    header.write('OggS', 0, 'ascii');
    header[4] = 0; // version
    header[5] = flags;
    header.writeBigInt64LE(granule, 6);
    header.writeUInt32LE(serial, 14);
    header.writeUInt32LE(seq++, 18);
    header.writeUInt32LE(0, 22); // CRC, filled below
    header[26] = lacing.length;
    Buffer.from(lacing).copy(header, 27);
    const out = Buffer.concat([header, ...segmentsOf]);
    out.writeUInt32LE(oggCrc(out), 22);
    pages.push(out);
  };

  const head = Buffer.alloc(19);
  head.write('OpusHead', 0, 'ascii');
  head[8] = 1; // version
  head[9] = opts.channels ?? 1;
  head.writeUInt16LE(PRE_SKIP, 10);
  head.writeUInt32LE(48_000, 12); // original input rate (informational)
  head.writeInt16LE(0, 16); // output gain
  head[18] = 0; // mapping family 0: mono/stereo
  page([head], 0n, 0x02);

  const vendor = Buffer.from(opts.vendor ?? 'switchboard-service-emulator', 'utf8');
  const comments = (opts.comments ?? []).map((c) => Buffer.from(c, 'utf8'));
  const tags = Buffer.concat([
    Buffer.from('OpusTags', 'ascii'),
    u32(vendor.length),
    vendor,
    u32(comments.length),
    ...comments.flatMap((c) => [u32(c.length), c]),
  ]);
  page([tags], 0n, 0);

  // Audio: up to 50 packets (1 s) per page, never more than 255 lacing values.
  let granule = BigInt(PRE_SKIP);
  let i = 0;
  if (packets.length === 0) page([], granule, 0x04);
  while (i < packets.length) {
    const batch: Buffer[] = [];
    let lacing = 0;
    while (i < packets.length && batch.length < 50) {
      const need = Math.floor(packets[i]!.length / 255) + 1;
      if (lacing + need > 255) break;
      lacing += need;
      batch.push(packets[i++]!);
    }
    granule += BigInt(batch.length * spp);
    page(batch, granule, i >= packets.length ? 0x04 : 0);
  }
  return Buffer.concat(pages);
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
}

/**
 * How long an Ogg/Opus file plays (ms): the last page's granule position less the pre-skip
 * (from the `OpusHead`). Throws for a buffer that is not Ogg/Opus.
 */
export function oggOpusDurationMs(buf: Buffer): number {
  if (buf.length < 47 || buf.toString('latin1', 0, 4) !== 'OggS' || buf.toString('latin1', 28, 36) !== 'OpusHead') throw new Error('not an Ogg/Opus file');
  const preSkip = buf.readUInt16LE(28 + 10);
  // The last page: the last "OggS" whose header fits.
  const last = buf.lastIndexOf('OggS', buf.length - 27, 'latin1');
  const granule = Number(buf.readBigInt64LE(last + 6));
  return Math.max(0, Math.round(((granule - preSkip) / 48_000) * 1000));
}
