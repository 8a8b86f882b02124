/** A batch that ended less than this long ago means items are streaming in (see `lingerMs`). */
export const STREAM_GAP_MS = 100;

/**
 * Group commit: items that arrive while a batch is being written wait and go together in the
 * next one. Idle, an item goes out at once (no timer, no added latency); under load, one
 * transaction carries many (a flood of 1,000 message-status events a second was 1,000
 * transactions a second in the history database, each a round of BEGIN, lock, read, write,
 * COMMIT).
 *
 * `lingerMs`: in a steady stream (the last batch ended less than `STREAM_GAP_MS` ago) an item
 * that finds nothing being written waits that long for others, unless `max` are waiting:
 * at 1,000 events a second the batches written as soon as the last one ended held ~8 items
 * (the lane's handlers in flight), each transaction costing the embedded database's thread
 * and the event loop the same five round trips whatever its size.
 *
 * A batch that fails is split: each item is written again alone, so one item the database
 * refuses (a poisoned event) fails only its own caller, and the others' results stand.
 */
export function groupCommit<I, O>(write: (items: readonly I[]) => Promise<readonly O[]>, o: { max?: number; lingerMs?: number } = {}): (item: I) => Promise<O> {
  const max = o.max ?? 64;
  const lingerMs = o.lingerMs ?? 0;
  let waiting: Array<{ item: I; resolve(v: O): void; reject(e: unknown): void }> = [];
  let busy = false;
  /** When the last batch ended (performance.now()). */
  let lastEnd = -Infinity;
  /** The wait of a linger under way. */
  let lingering: NodeJS.Timeout | undefined;

  async function writeAlone(w: (typeof waiting)[number]): Promise<void> {
    try {
      const [out] = await write([w.item]);
      w.resolve(out as O);
    } catch (err) {
      w.reject(err);
    }
  }

  async function drain(): Promise<void> {
    busy = true;
    try {
      while (waiting.length > 0) {
        const batch = waiting.slice(0, max);
        waiting = waiting.slice(batch.length);
        if (batch.length === 1) {
          await writeAlone(batch[0]!);
          continue;
        }
        try {
          const out = await write(batch.map((w) => w.item));
          batch.forEach((w, i) => w.resolve(out[i] as O));
        } catch {
          for (const w of batch) await writeAlone(w);
        }
      }
    } finally {
      busy = false;
      lastEnd = performance.now();
    }
  }

  const start = () => {
    clearTimeout(lingering);
    lingering = undefined;
    void drain();
  };

  return (item) =>
    new Promise<O>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      if (busy) return;
      if (lingering) {
        if (waiting.length >= max) start();
        return;
      }
      if (lingerMs > 0 && waiting.length < max && performance.now() - lastEnd < STREAM_GAP_MS) lingering = setTimeout(start, lingerMs);
      else start();
    });
}
