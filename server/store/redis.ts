/**
 * Redis `Store` (ioredis): the parts of `redis-*.ts` on one shared connection
 * (`redis-connection.ts`). Key names are in `server/store/README.md`.
 *
 * - One connection for commands, with auto-pipelining: concurrent requests share round
 *   trips, which is most of webhook-ingest throughput.
 * - Lua scripts for the atomic steps, each with the part it belongs to.
 * - Blocking stream reads, accepts and pub/sub use connections of their own.
 * - While Redis is unreachable, commands fail fast (no unbounded offline queue), so the
 *   webhook receiver can answer 503 and the Service delivers again.
 * - Behind Sentinel (`sentinels`), every connection asks the sentinels for the primary and
 *   asks again after a failover (ioredis reconnects; pub/sub resubscribes by itself).
 *   While the primary has replicas, an accept batch is answered only once a replica
 *   confirmed it (`redis-replicas.ts`).
 */
import { ComposedStore } from './composed.ts';
import { CALL_COMMANDS, RedisCalls } from './redis-calls.ts';
import { RedisConnection, type RedisConnectionOptions } from './redis-connection.ts';
import { RedisDeadLetters, type RedisDeadLettersOptions } from './redis-dead-letters.ts';
import { RedisEventLog, type RedisEventLogOptions } from './redis-event-log.ts';
import { RedisKeyValue } from './redis-kv.ts';
import { RedisPubSub } from './redis-pubsub.ts';
import { RedisRations } from './redis-rations.ts';

export { StoreUnavailableError } from './store.ts';
export { reopenWhenEnded, sentinelOptions } from './redis-connection.ts';

export type RedisStoreOptions = RedisConnectionOptions & RedisEventLogOptions & RedisDeadLettersOptions;

export class RedisStore extends ComposedStore {
  readonly prefix: string;
  /** The command connection (tests, the benchmark, the durable queues' sends). */
  readonly redis: RedisConnection['redis'];
  private readonly conn: RedisConnection;
  private readonly events: RedisEventLog;

  constructor(opts: RedisStoreOptions) {
    const conn = new RedisConnection({ ...opts, pipelineSkips: CALL_COMMANDS });
    const events = new RedisEventLog(conn, opts);
    super({
      events,
      dead: new RedisDeadLetters(conn, events, opts),
      calls: new RedisCalls(conn),
      kv: new RedisKeyValue(conn),
      rations: new RedisRations(conn),
      pubsub: new RedisPubSub(conn),
    });
    this.conn = conn;
    this.events = events;
    this.prefix = conn.prefix;
    this.redis = conn.redis;
  }

  /** Accept script calls and the events they carried, replica waits (the benchmark prints the ratio). */
  get acceptStats(): RedisEventLog['acceptStats'] {
    return this.events.acceptStats;
  }

  /** Replicas connected to the primary at the last look (tests and benches print it). */
  replicaCount(): number {
    return this.events.replicas.count;
  }

  /** Connections ioredis had ended on its own and this store opened again (`reopenWhenEnded`). */
  get reopened(): number {
    return this.conn.reopened;
  }

  /** Consumer groups created again after Redis lost them. */
  get groupsRecreated(): number {
    return this.events.groupsRecreated;
  }

  ping(): Promise<void> {
    return this.conn.ping();
  }

  close(): Promise<void> {
    return this.conn.close();
  }
}
