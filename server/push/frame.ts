/**
 * WebSocket text frames built once for many sockets (RFC 6455 §5.2). A server's frames are
 * never masked, and without compression (no extension negotiated) a frame's bytes are the
 * same for every socket: a role push to thousands of sockets is framed once and each
 * socket gets one write of the same buffer, instead of `ws` framing it once per socket.
 */

/** One unfragmented text frame (FIN, opcode 1, unmasked) carrying `payload` (UTF-8). */
export function textFrame(payload: Buffer): Buffer {
  const n = payload.length;
  const head = n < 126 ? 2 : n < 65536 ? 4 : 10;
  const out = Buffer.allocUnsafe(head + n);
  out[0] = 0x81;
  if (n < 126) out[1] = n;
  else if (n < 65536) {
    out[1] = 126;
    out.writeUInt16BE(n, 2);
  } else {
    out[1] = 127;
    out.writeUInt32BE(Math.floor(n / 2 ** 32), 2);
    out.writeUInt32BE(n >>> 0, 6);
  }
  payload.copy(out, head);
  return out;
}

/**
 * The frames of a flush, concatenated once per distinct sequence: the sockets of one role
 * waited for the same pushes, in the same order, so most of them share one buffer.
 */
export class FrameCache {
  private readonly framed = new WeakMap<Buffer, Buffer>();
  /** Sequences built this flush, by their first payload (agents of one queue share a sequence). */
  private entries = new Map<Buffer, Array<{ payloads: ReadonlyArray<Buffer>; bytes: Buffer }>>();

  /** The concatenated frames of `payloads` (each a UTF-8 JSON text). */
  bytes(payloads: ReadonlyArray<Buffer>): Buffer {
    const same = this.entries.get(payloads[0]!) ?? [];
    for (const e of same) if (e.payloads.length === payloads.length && e.payloads.every((p, i) => p === payloads[i])) return e.bytes;
    const frames = payloads.map((p) => {
      let f = this.framed.get(p);
      if (!f) this.framed.set(p, (f = textFrame(p)));
      return f;
    });
    const bytes = frames.length === 1 ? frames[0]! : Buffer.concat(frames);
    // Kept for this flush only (`clear`), a bounded few per first payload.
    same.push({ payloads, bytes });
    if (same.length > 16) same.shift();
    this.entries.set(payloads[0]!, same);
    return bytes;
  }

  /** A new flush: the sequences of the last one will not come again. */
  clear(): void {
    this.entries = new Map();
  }
}
