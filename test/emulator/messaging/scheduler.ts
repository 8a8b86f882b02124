/**
 * Timers for the simulated far side (status progressions, reviews, user replies).
 * They run on the core's `ctx.setTimer`, so the emulator's own close() cancels them;
 * `close()` here also cancels them for a messaging module closed on its own. A closed
 * emulator must not emit events into a test that has already moved on.
 */
import type { EmulatorContext } from '../context.ts';

export class Scheduler {
  private readonly cancels = new Set<() => void>();
  private closed = false;

  constructor(private readonly ctx: EmulatorContext) {}

  /** Runs `fn` after `ms` times the emulator's timeScale. A throwing step is logged, not fatal. */
  after(ms: number, fn: () => void): void {
    if (this.closed || this.ctx.closed) return;
    const cancel = this.ctx.setTimer(() => {
      this.cancels.delete(cancel);
      if (this.closed) return;
      try {
        fn();
      } catch (err) {
        console.error('[emulator/messaging] scheduled step failed:', err);
      }
    }, Math.max(0, ms * this.ctx.options.timeScale));
    this.cancels.add(cancel);
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

  /** Safe to call twice. */
  close(): void {
    this.closed = true;
    for (const cancel of this.cancels) cancel();
    this.cancels.clear();
  }
}
