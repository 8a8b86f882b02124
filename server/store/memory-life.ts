/**
 * What the memory parts of one `MemoryStore` share: the clock and whether it is closed.
 */
export class StoreClosedError extends Error {
  override readonly name = 'StoreClosedError';
  constructor() {
    super('store is closed');
  }
}

export class MemoryLife {
  closed = false;
  private readonly onClose: Array<() => void> = [];

  /** Clock (epoch ms) for TTLs and idle times. */
  constructor(readonly now: () => number = Date.now) {}

  /** Throws once the store is closed. */
  check(): void {
    if (this.closed) throw new StoreClosedError();
  }

  /** Run `fn` when the store closes (wake blocked readers, drop subscribers). */
  whenClosed(fn: () => void): void {
    this.onClose.push(fn);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const fn of this.onClose) fn();
  }
}
