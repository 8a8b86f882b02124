/**
 * Timers for the simulated far side (status progressions, reviews, user replies).
 * Every timer is tracked so `close()` can clear them: a closed emulator must not emit
 * events into a test that has already moved on.
 */
export class Scheduler {
  private readonly timers = new Set<NodeJS.Timeout>();
  private closed = false;

  /** @param scale multiplies every delay (the emulator's `timeScale`). */
  constructor(private readonly scale: () => number) {}

  /** Runs `fn` after `ms` (scaled). A throwing step is logged, not fatal: one bad step must not stop the others. */
  after(ms: number, fn: () => void): void {
    if (this.closed) return;
    const t = setTimeout(() => {
      this.timers.delete(t);
      if (this.closed) return;
      try {
        fn();
      } catch (err) {
        console.error('[emulator/messaging] scheduled step failed:', err);
      }
    }, Math.max(0, ms * this.scale()));
    this.timers.add(t);
  }

  /** Runs the steps one after another, each `ms` after the previous, so their order is fixed. */
  chain(steps: Array<{ ms: number; run: () => void }>): void {
    const [first, ...rest] = steps;
    if (!first) return;
    this.after(first.ms, () => {
      first.run();
      this.chain(rest);
    });
  }

  get pending(): number {
    return this.timers.size;
  }

  /** Safe to call twice. */
  close(): void {
    this.closed = true;
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }
}
