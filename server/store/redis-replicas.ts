/**
 * Whether accepts wait for a replica: while the primary has replicas (connected ones, and
 * behind Sentinel those the sentinels could promote), an accept batch is answered only once
 * at least one replica confirmed it (`WAIT 1`), so a failover loses no event the Service
 * was told we took; when none confirms in time the batch fails and the receiver answers 503.
 */
import { Redis } from 'ioredis';
import type { RedisConnection } from './redis-connection.ts';
import { StoreUnavailableError } from './store.ts';

export interface ReplicaOptions {
  /** How long an accept batch waits for a replica's confirmation (default 1000 ms). */
  replicaWaitMs?: number;
  /** How often the primary's replica count is looked up (default 1000 ms). */
  replicaCheckMs?: number;
}

export class Replicas {
  /** Replicas connected to the primary at the last look (`ROLE`); 0 = no WAIT. */
  count = 0;
  private sentinelConn: Redis | undefined;
  private sentinelAt = 0;
  private readonly waitMs: number;

  constructor(
    private readonly c: RedisConnection,
    private readonly stats: { waits: number; unconfirmed: number },
    o: ReplicaOptions = {},
  ) {
    this.waitMs = o.replicaWaitMs ?? 1000;
    // The replica count decides whether accepts WAIT: looked up on every (re)connection —
    // a failover changes it — and periodically, as replicas come and go.
    const look = () => void this.look();
    c.redis.on('ready', look);
    const timer = setInterval(look, o.replicaCheckMs ?? 1000);
    timer.unref();
    c.whenClosed(() => {
      clearInterval(timer);
      this.sentinelConn?.disconnect();
    });
  }

  private async look(): Promise<void> {
    if (this.c.closed || this.c.redis.status !== 'ready') return;
    let connected: number;
    try {
      const role = (await this.c.redis.call('ROLE')) as [string, unknown, unknown[]?];
      connected = role[0] === 'master' && Array.isArray(role[2]) ? role[2].length : 0;
    } catch {
      return; // unreachable: accepts fail fast anyway; the next look corrects the count
    }
    // Behind Sentinel, a replica cut off from the primary for a moment is no longer in
    // ROLE, yet the sentinels would still promote it: that is exactly when an unconfirmed
    // answer is lost. So the replicas the sentinels hold promotable count too.
    const promotable = this.c.opts.sentinels ? await this.promotable() : 0;
    this.count = Math.max(connected, promotable);
  }

  /** Replicas a sentinel lists for our primary and does not flag down; 0 when none answers. */
  private async promotable(): Promise<number> {
    const list = this.c.opts.sentinels!;
    for (let i = 0; i < list.length; i++) {
      if (!this.sentinelConn) {
        const at = list[this.sentinelAt % list.length]!;
        this.sentinelConn = new Redis({ host: at.host, port: at.port, maxRetriesPerRequest: 0, commandTimeout: 1000, enableOfflineQueue: true, retryStrategy: () => null, connectionName: 'switchboard-sentinel-look' });
        this.sentinelConn.on('error', () => undefined); // the next sentinel is tried below
      }
      try {
        const rows = (await this.sentinelConn.call('SENTINEL', 'REPLICAS', this.c.opts.sentinelName ?? 'mymaster')) as string[][];
        return rows.filter((r) => {
          const flags = r[r.indexOf('flags') + 1] ?? '';
          return !/s_down|o_down|disconnected/.test(flags);
        }).length;
      } catch {
        this.sentinelConn.disconnect();
        this.sentinelConn = undefined;
        this.sentinelAt++;
      }
    }
    return 0;
  }

  /**
   * While the primary has replicas: resolve once one confirmed every write this
   * connection made so far (the batch just accepted), reject otherwise. A rejected batch
   * is on the primary but may be lost in a failover; the Service delivers it again
   * (dedupe answers 2xx once it is confirmed).
   */
  async confirm(conn: Redis): Promise<void> {
    if (this.count === 0) return;
    this.stats.waits++;
    const n = Number(await conn.call('WAIT', 1, this.waitMs));
    if (n >= 1) return;
    this.stats.unconfirmed++;
    throw new StoreUnavailableError(`event not confirmed by a replica within ${this.waitMs} ms`);
  }
}
