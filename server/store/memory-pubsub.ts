/**
 * Pub/sub within one process. Contract: `pubsub.contract.test.ts`.
 */
import type { MemoryLife } from './memory-life.ts';
import type { PubSub } from './pubsub.ts';

export class MemoryPubSub implements PubSub {
  private readonly subs = new Map<string, Set<(m: string) => void>>();

  constructor(private readonly life: MemoryLife) {
    life.whenClosed(() => this.subs.clear());
  }


  async publish(channel: string, message: string): Promise<void> {
    this.life.check();
    const set = this.subs.get(channel);
    if (!set) return;
    // Asynchronous like Redis: a subscriber never runs inside the publisher's call stack.
    for (const fn of [...set]) queueMicrotask(() => fn(message));
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<() => Promise<void>> {
    this.life.check();
    let set = this.subs.get(channel);
    if (!set) this.subs.set(channel, (set = new Set()));
    const fn = (m: string) => onMessage(m);
    set.add(fn);
    return async () => {
      set.delete(fn);
    };
  }
}
