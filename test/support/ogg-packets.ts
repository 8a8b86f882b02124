/** The Opus packets of an Ogg/Opus file (its two header packets left out) and its last granule position. Throws on a page that is not Ogg. */
export function oggPackets(buf: Buffer): { packets: Buffer[]; granule: number } {
  const packets: Buffer[] = [];
  let cur: Buffer[] = [];
  let off = 0;
  let granule = 0;
  while (off + 27 <= buf.length) {
    if (buf.toString('latin1', off, off + 4) !== 'OggS') throw new Error(`not an Ogg page at byte ${off}`);
    granule = Number(buf.readBigInt64LE(off + 6));
    const n = buf[off + 26]!;
    let p = off + 27 + n;
    for (const l of buf.subarray(off + 27, off + 27 + n)) {
      cur.push(buf.subarray(p, p + l));
      p += l;
      if (l < 255) (packets.push(Buffer.concat(cur)), (cur = []));
    }
    off = p;
  }
  return { packets: packets.slice(2), granule };
}
