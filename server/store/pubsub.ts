/**
 * Messages between nodes. Implemented by `redis-pubsub.ts` and `memory-pubsub.ts`;
 * contract: `pubsub.contract.test.ts`.
 */
export interface PubSub {
  /** Publish to every subscriber of `channel`, on every node. */
  publish(channel: string, message: string): Promise<void>;
  /** Subscribe; returns an unsubscribe function. */
  subscribe(channel: string, onMessage: (message: string) => void): Promise<() => Promise<void>>;
}
