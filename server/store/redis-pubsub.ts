/**
 * Pub/sub on Redis (`<prefix>ch:<channel>`), on a connection of its own. A node alone on a
 * channel delivers in the process (see `publish`). Contract: `pubsub.contract.test.ts`.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { PubSub } from './pubsub.ts';
import type { RedisConnection } from './redis-connection.ts';

/** A node's first word on a channel it joins: nodes alone on it publish through Redis again. */
const HELLO = '\u0000sb-hello:';
/** How often a node alone on a channel asks Redis whether it still is. */
const PEER_POLL_MS = 1000;

export class RedisPubSub implements PubSub {
  private sub: Redis | undefined;
  private readonly handlers = new Map<string, Set<(m: string) => void>>();
  /** Channels this connection's subscriber has joined (confirmed by Redis). */
  private readonly subscribed = new Set<string>();
  /**
   * Channels published to, and whether another node listens there. False: this node is the
   * only subscriber, so a message is delivered here without a round trip through Redis.
   */
  private readonly peers = new Map<string, boolean>();
  private peerTimer: NodeJS.Timeout | undefined;
  /** This store's id in hello messages (its own hello is not news). */
  private readonly me = randomUUID();

  constructor(private readonly c: RedisConnection) {
    c.whenClosed(() => clearInterval(this.peerTimer));
  }

  private channel(name: string): string {
    return `${this.c.prefix}ch:${name}`;
  }

  /**
   * To every subscriber of the channel on every node. While no other node subscribes to it
   * (one node with Redis, or the only node holding a page's sockets), the message is
   * delivered to this node's own subscribers in the process: a call's dozen pushes and
   * board changes then cost no Redis command each. Another node is noticed at once by the
   * hello it publishes when it subscribes, and within `PEER_POLL_MS` by `PUBSUB NUMSUB`
   * (a node whose hello was missed, Redis restarted); a node going away is noticed by the
   * receiver count of the next publish.
   */
  async publish(channel: string, message: string): Promise<void> {
    const ch = this.channel(channel);
    if (this.peers.get(ch) === false) {
      this.c.up();
      queueMicrotask(() => this.dispatch(ch, message));
      return;
    }
    const received = await this.c.up().publish(ch, message);
    // The count includes this node's own subscriber; unknown while its SUBSCRIBE is under way.
    if (!this.handlers.has(ch) || this.subscribed.has(ch)) this.learnPeers(ch, received - (this.subscribed.has(ch) ? 1 : 0) > 0);
  }

  private learnPeers(ch: string, others: boolean): void {
    this.peers.set(ch, others);
    if (others || this.peerTimer || this.c.closed) return;
    this.peerTimer = setInterval(() => void this.pollPeers(), PEER_POLL_MS);
    this.peerTimer.unref();
  }

  /** Channels thought to have no other subscriber: asked again (a missed hello, a restarted Redis). */
  private async pollPeers(): Promise<void> {
    const alone = [...this.peers].filter(([, others]) => !others).map(([ch]) => ch);
    if (alone.length === 0 || this.c.redis.status !== 'ready') return;
    try {
      const counts = (await this.c.redis.call('PUBSUB', 'NUMSUB', ...alone)) as Array<string | number>;
      for (let i = 0; i + 1 < counts.length; i += 2) {
        const ch = String(counts[i]);
        if (Number(counts[i + 1]) - (this.subscribed.has(ch) ? 1 : 0) > 0) this.peers.set(ch, true);
      }
    } catch {
      // Asked again at the next poll; meanwhile messages stay on this node, as they would.
    }
  }

  private dispatch(ch: string, msg: string): void {
    if (msg.startsWith(HELLO)) {
      if (msg.slice(HELLO.length) !== this.me) this.peers.set(ch, true);
      return;
    }
    for (const fn of this.handlers.get(ch) ?? []) {
      try {
        fn(msg);
      } catch (err) {
        this.c.report(err as Error);
      }
    }
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<() => Promise<void>> {
    this.c.up();
    if (!this.sub) {
      const sub = this.c.duplicate('switchboard-sub', { enableAutoPipelining: false, commandTimeout: undefined }, 'cut');
      sub.on('message', (ch: string, msg: string) => this.dispatch(ch, msg));
      this.sub = sub;
    }
    const ch = this.channel(channel);
    let set = this.handlers.get(ch);
    if (!set) {
      this.handlers.set(ch, (set = new Set()));
      await this.sub.subscribe(ch);
      this.subscribed.add(ch);
      // Nodes that thought they were alone on this channel publish through Redis from now on.
      await this.c.redis.publish(ch, `${HELLO}${this.me}`);
    }
    const fn = (m: string) => onMessage(m);
    set.add(fn);
    return async () => {
      set.delete(fn);
      if (set.size === 0 && this.handlers.get(ch) === set) {
        this.handlers.delete(ch);
        this.subscribed.delete(ch);
        if (!this.c.closed) await this.sub?.unsubscribe(ch).catch(() => undefined);
      }
    };
  }
}
