/**
 * A streamed download leaves every socket read behind as garbage: Node allocates a fresh
 * 64 KiB ArrayBuffer per read, and V8 only collects those once ~32 MB of external memory
 * has piled up (the young objects that point at them are tiny, so no scavenge comes
 * sooner). Measured here: a 50 MB body piped to a file, even through Node's own `http`,
 * grew RSS by ~39 MB (bench/history.ts). A young-generation collection (a scavenge, ~1 ms)
 * after every MiB frees the reads already written and keeps the growth under ~10 MB.
 *
 * The collector is V8's own `gc` function with `{ type: 'minor' }` (server/ops/internals.ts,
 * `exposedGc`). If it is unavailable the nudge is a no-op and downloads behave as before.
 */
import { exposedGc, type GcFn } from '../ops/internals.ts';

let gc: GcFn | null | undefined;

/** Bytes streamed between two young-generation collections. */
export const YOUNG_GC_EVERY_BYTES = 1 << 20;

/** Runs a young-generation collection (a scavenge); a no-op where V8's `gc` is unavailable. */
export function collectYoung(): void {
  if (gc === undefined) gc = exposedGc() ?? null;
  gc?.({ type: 'minor' });
}

/** Counts streamed bytes and collects the young generation every `YOUNG_GC_EVERY_BYTES`. */
export class YoungGcPacer {
  private since = 0;
  constructor(private readonly every = YOUNG_GC_EVERY_BYTES) {}

  add(bytes: number): void {
    this.since += bytes;
    if (this.since < this.every) return;
    this.since = 0;
    collectYoung();
  }
}
