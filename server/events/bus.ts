/**
 * A typed event bus (an event map, as mediasoup's `EnhancedEventEmitter`): features listen
 * to what other parts publish without the publisher knowing them. Each listener is isolated:
 * one that throws is logged and counted (`switchboard_listener_failures_total{event,listener}`)
 * and the others still run; the publisher never sees the error.
 */
import type { Logger } from '../log/logger.ts';

type Listener<A extends unknown[]> = { name: string; run: (...args: A) => void };

export class Bus<E extends Record<string, unknown[]>> {
  private readonly listeners = new Map<keyof E, Array<Listener<never>>>();
  /** `event listener` → failures so far (the metric reads it). */
  readonly failures = new Map<string, number>();

  constructor(
    private readonly log: Pick<Logger, 'error'>,
    /** Told of every failure (the metric). */
    private readonly onFailure?: (event: string, listener: string) => void,
  ) {}

  /** `name` says who listens, in logs and the metric. Returns the unsubscribe. */
  on<K extends keyof E>(event: K, name: string, run: (...args: E[K]) => void): () => void {
    const list = (this.listeners.get(event) ?? []) as Array<Listener<E[K]>>;
    const l: Listener<E[K]> = { name, run };
    list.push(l);
    this.listeners.set(event, list as Array<Listener<never>>);
    return () => {
      const i = list.indexOf(l);
      if (i >= 0) list.splice(i, 1);
    };
  }

  emit<K extends keyof E>(event: K, ...args: E[K]): void {
    const list = this.listeners.get(event) as Array<Listener<E[K]>> | undefined;
    if (!list) return;
    for (const l of [...list]) {
      try {
        l.run(...args);
      } catch (err) {
        const key = `${String(event)} ${l.name}`;
        this.failures.set(key, (this.failures.get(key) ?? 0) + 1);
        this.onFailure?.(String(event), l.name);
        this.log.error({ event: String(event), listener: l.name, err: (err as Error)?.message ?? String(err) }, 'event listener failed');
      }
    }
  }
}
