/**
 * Group commit: items that arrive while a batch is being written wait and go together in the
 * next one. Idle, an item goes out at once (no timer, no added latency); under load, one
 * transaction carries many (a flood of 1,000 message-status events a second was 1,000
 * transactions a second in the history database, each a round of BEGIN, lock, read, write,
 * COMMIT).
 *
 * A batch that fails is split: each item is written again alone, so one item the database
 * refuses (a poisoned event) fails only its own caller, and the others' results stand.
 */
export function groupCommit<I, O>(write: (items: readonly I[]) => Promise<readonly O[]>, o: { max?: number } = {}): (item: I) => Promise<O> {
  const max = o.max ?? 64;
  let waiting: Array<{ item: I; resolve(v: O): void; reject(e: unknown): void }> = [];
  let busy = false;

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
    }
  }

  return (item) =>
    new Promise<O>((resolve, reject) => {
      waiting.push({ item, resolve, reject });
      if (!busy) void drain();
    });
}
