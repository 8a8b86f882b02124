/**
 * The durable queue in memory (demo mode, one process, not durable across restarts, like
 * the memory store itself).
 */
import { DEAD_LETTERS_MAX, type DurableQueue, type QueueDeadLetter, type QueueLag, type QueuedFact } from './queue.ts';

export class MemoryQueue<F> implements DurableQueue<F> {
  private seq = 0;
  /** Insertion order = age order. */
  private readonly entries = new Map<string, { body: string; at: number; delivered: boolean }>();
  private wake: (() => void) | undefined;
  private closed = false;

  constructor(private readonly now: () => number = Date.now) {}

  enqueue(...facts: F[]): void {
    if (this.closed) return;
    for (const fact of facts) this.entries.set(String(++this.seq), { body: JSON.stringify(fact), at: this.now(), delivered: false });
    this.wake?.();
  }

  async read(count: number, blockMs: number): Promise<QueuedFact[]> {
    const take = () => {
      const out: QueuedFact[] = [];
      for (const [id, e] of this.entries) {
        if (out.length >= count) break;
        if (e.delivered) continue;
        e.delivered = true;
        out.push({ id, body: e.body, at: e.at });
      }
      return out;
    };
    let got = take();
    if (got.length === 0 && blockMs > 0 && !this.closed) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(done, blockMs);
        function done() {
          clearTimeout(t);
          resolve();
        }
        this.wake = done;
      });
      this.wake = undefined;
      got = take();
    }
    return got;
  }

  async ack(ids: readonly string[]): Promise<void> {
    for (const id of ids) this.entries.delete(id);
  }

  async lag(): Promise<QueueLag> {
    const first = this.entries.values().next();
    return { pending: this.entries.size, oldestAgeMs: first.done ? 0 : Math.max(0, this.now() - first.value.at) };
  }

  async flush(): Promise<void> {}

  private readonly dead: QueueDeadLetter[] = [];

  async setAside(d: QueueDeadLetter): Promise<void> {
    this.dead.unshift(d);
    if (this.dead.length > DEAD_LETTERS_MAX) this.dead.length = DEAD_LETTERS_MAX;
  }

  async deadLetters(limit: number): Promise<{ items: QueueDeadLetter[]; total: number }> {
    return { items: this.dead.slice(0, limit), total: this.dead.length };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wake?.();
  }
}
