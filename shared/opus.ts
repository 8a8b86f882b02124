/**
 * Opus encode and decode (opusscript, WebAssembly), 48 kHz mono, 20 ms frames (960 samples):
 * the shape every chat-channel call uses. The emulator's callers speak and listen with it;
 * the bridge measures a voicemail caller's level with it (server/anchor/silence.ts).
 *
 * opusscript is loaded on first use so that importing stays fast.
 */
import { createRequire } from 'node:module';
import type OpusScriptType from 'opusscript';

export const SAMPLE_RATE = 48_000;
export const FRAME_SAMPLES = 960;

type OpusCtor = typeof OpusScriptType;
let ctor: OpusCtor | undefined;
function Opus(): OpusCtor {
  // createRequire: opusscript is CommonJS and loads its wasm synchronously; this keeps
  // the cost out of import time and out of the async path.
  ctor ??= createRequire(import.meta.url)('opusscript') as OpusCtor;
  return ctor;
}

type OpusInstance = InstanceType<OpusCtor> & { inPCM?: Uint16Array; outOpus?: Uint8Array; inOpus?: Uint8Array; outPCM?: Uint16Array };
/** opusscript's own malloc'd PCM blocks (byte addresses on the wasm heap, byte lengths). */
type PcmBlocks = { inPCMPointer: number; inPCMLength: number; outPCMPointer: number; outPCMLength: number };

/**
 * One opusscript instance that repairs itself. opusscript keeps typed-array views on the
 * WebAssembly heap taken at construction; when another instance's allocation grows the
 * heap, those views are detached and the old instance can no longer encode or decode.
 * A detached or failing instance is replaced by a fresh one (its state is lost: one
 * frame's glitch, as after packet loss).
 *
 * opusscript 0.1.1 also places its two PCM views wrong: `HEAPU16.subarray(ptr, …)` takes
 * an element index, so the view starts at byte 2 × ptr, outside the block it malloc'd, and
 * every frame encoded or decoded overwrites whatever lives there (other instances' codec
 * state: "memory access out of bounds" after ~20 codecs in one process, 4 per call).
 * `make` re-points both views at their own blocks (the C side is handed `byteOffset`).
 */
class OpusCodec {
  private inst: OpusInstance | undefined;
  constructor() {
    this.inst = OpusCodec.make();
  }
  private static make(): OpusInstance {
    const O = Opus();
    const i = new O(SAMPLE_RATE, 1, O.Application.VOIP) as OpusInstance & PcmBlocks;
    // Each block is MAX_FRAME_SIZE × 2 bytes; a 20 ms frame uses 1920 16-bit elements of it.
    // The heap is the one of the last view made (a later malloc may have grown it).
    const heap = i.outPCM!.buffer;
    i.inPCM = new Uint16Array(heap, i.inPCMPointer, i.inPCMLength / 2);
    i.outPCM = new Uint16Array(heap, i.outPCMPointer, i.outPCMLength / 2);
    return i;
  }
  private static detached(i: OpusInstance): boolean {
    return i.inPCM?.length === 0 || i.outOpus?.length === 0 || i.inOpus?.length === 0 || i.outPCM?.length === 0;
  }
  protected run<T>(fn: (i: OpusInstance) => T): T {
    if (!this.inst) throw new Error('codec closed');
    if (OpusCodec.detached(this.inst)) this.renew();
    try {
      return fn(this.inst);
    } catch {
      this.renew();
      return fn(this.inst);
    }
  }
  private renew() {
    OpusCodec.free(this.inst);
    this.inst = OpusCodec.make();
  }
  /**
   * Freeing only releases memory; it can fail on an instance the shared heap has moved
   * under (seen as "memory access out of bounds" in opusscript's destroy_handler, rarely,
   * at the end of a call). That leaks one instance at worst and must not fail a hangup.
   */
  private static free(i: OpusInstance | undefined): void {
    try {
      i?.delete();
    } catch {
      // see above
    }
  }
  close(): void {
    OpusCodec.free(this.inst);
    this.inst = undefined;
  }
}

export class OpusEncoder extends OpusCodec {
  /** One 20 ms frame of 16-bit PCM (960 samples) → one Opus packet. */
  encode(pcm: Int16Array): Buffer {
    return this.run((enc) => Buffer.from(enc.encode(Buffer.from(pcm.buffer, pcm.byteOffset, pcm.byteLength), FRAME_SAMPLES)));
  }
}

export class OpusDecoder extends OpusCodec {
  /** One Opus packet → 16-bit mono PCM (a copy: the wasm buffer is reused). */
  decode(packet: Buffer): Int16Array {
    return this.run((dec) => {
      const out = dec.decode(packet);
      const copy = new Int16Array(out.byteLength / 2);
      Buffer.from(copy.buffer).set(out);
      return copy;
    });
  }
}
