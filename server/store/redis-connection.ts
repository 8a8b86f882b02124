/**
 * What the Redis parts of one `RedisStore` share: the command connection (auto-pipelined:
 * concurrent requests share round trips), the extra connections a part opens (blocking
 * reads, the ingest connection, the subscriber), fail-fast while Redis is away, one error
 * report per kind of failure, connections ioredis ended on its own opened again, and the
 * key prefix. Behind Sentinel every connection asks the sentinels for the primary and asks
 * again after a failover.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { StoreUnavailableError } from './store.ts';

export interface RedisConnectionOptions {
  /**
   * `redis://[:password@]host:port/db`. With `sentinels`, only its password and database
   * number are used (the sentinels name the host).
   */
  url: string;
  /** Sentinels to ask for the primary (Redis high availability). */
  sentinels?: ReadonlyArray<{ host: string; port: number }>;
  /** The primary's name the sentinels monitor (default `mymaster`). */
  sentinelName?: string;
  /** Key prefix (default `sb:`). Every key and pub/sub channel of this store starts with it. */
  prefix?: string;
  /** Per-command timeout (default 2000 ms). */
  commandTimeoutMs?: number;
  /** Connection errors (already throttled to one per state change). Never contain secrets. */
  onError?: (err: Error) => void;
  /** Extra ioredis options (tests). */
  redis?: RedisOptions;
}

/**
 * Opens again a connection that ioredis ended on its own. ioredis ends a connection for good
 * (status `end`, every later command refused) when its connector fails to connect; behind
 * Sentinel that happens in a failover: the failover detector (`+switch-master`) disconnects
 * the connector while a reconnect is still asking a sentinel for the primary, and that
 * reconnect then fails with "Connection is closed." — the node stays deaf until restarted.
 * A connection this process did not close (`closed()` false) is connected again; a failed
 * attempt ends it again and is retried the same way.
 */
export function reopenWhenEnded(r: Redis, closed: () => boolean, o: { delayMs?: number; onReopen?: () => void } = {}): void {
  r.on('end', () => {
    if (closed()) return;
    const t = setTimeout(() => {
      if (closed() || r.status !== 'end') return;
      o.onReopen?.();
      r.connect().catch(() => undefined); // its failure is reported through 'error' and ends here again
    }, o.delayMs ?? 250);
    t.unref();
  });
}

/** ioredis options for a Sentinel-managed primary; password and db from the URL (the durable queues use them too). */
export function sentinelOptions(opts: Pick<RedisConnectionOptions, 'url' | 'sentinels' | 'sentinelName'>): RedisOptions {
  const out: RedisOptions = {
    sentinels: opts.sentinels!.map((s) => ({ host: s.host, port: s.port })),
    name: opts.sentinelName ?? 'mymaster',
    // Subscribe to the sentinels' +switch-master: move at once, not at the next error.
    failoverDetector: true,
  };
  try {
    const u = new URL(opts.url);
    if (u.username) out.username = decodeURIComponent(u.username);
    if (u.password) out.password = decodeURIComponent(u.password);
    const db = Number(u.pathname.replace(/^\//, '') || 0);
    if (Number.isInteger(db) && db > 0) out.db = db;
  } catch {
    // validated by the config; a bad URL just means no password and db 0
  }
  return out;
}

/** Lua scripts as commands of a connection: `{ name: { keys, lua } }` (keys omitted: given per call). */
export type ScriptDefs = Record<string, { keys?: number; lua: string }>;

/** Define a part's scripts on a connection; `T` types them (one method per script). */
export function withScripts<T>(r: Redis, defs: ScriptDefs): Redis & T {
  for (const [name, d] of Object.entries(defs)) r.defineCommand(name, d.keys === undefined ? { lua: d.lua } : { numberOfKeys: d.keys, lua: d.lua });
  return r as Redis & T;
}

/** How an extra connection goes when the store closes: cut (blocked reads, subscriber) or quit (finish what is queued). */
type Ending = 'cut' | 'quit';

export class RedisConnection {
  readonly prefix: string;
  /** The command connection. */
  readonly redis: Redis;
  closed = false;
  /** Connections ioredis had ended on its own and this store opened again (`reopenWhenEnded`). */
  reopened = 0;
  private lastErrorCode: string | undefined;
  private readonly extra = new Map<Redis, Ending>();
  private readonly onClose: Array<() => void> = [];

  constructor(readonly opts: RedisConnectionOptions & { pipelineSkips?: string[] }) {
    this.prefix = opts.prefix ?? 'sb:';
    const base: RedisOptions = {
      enableAutoPipelining: true,
      // Commands on the offer's path (a call's compare-and-set) are written at once, never
      // queued for the next turn behind a batch still waiting for its replies
      // (auto-pipelining sends one batch at a time per connection).
      autoPipeliningIgnoredCommands: opts.pipelineSkips ?? [],
      maxRetriesPerRequest: 1,
      commandTimeout: opts.commandTimeoutMs ?? 2000,
      retryStrategy: (times) => Math.min(times * 50, 1000),
      connectionName: 'switchboard',
      ...opts.redis,
    };
    this.redis = opts.sentinels ? new Redis({ ...sentinelOptions(opts), ...base }) : new Redis(opts.url, base);
    this.watch(this.redis);
  }

  /** `<prefix><name>`: every key of this store. */
  key(name: string): string {
    return `${this.prefix}${name}`;
  }

  /** Report an error (connection errors are throttled by `watch`). */
  report(err: Error): void {
    this.opts.onError?.(err);
  }

  private watch(r: Redis): void {
    reopenWhenEnded(r, () => this.closed, { onReopen: () => this.reopened++ });
    r.on('error', (err: Error & { code?: string }) => {
      // One report per kind of failure, not one per reconnect attempt.
      const code = err.code ?? err.message;
      if (code === this.lastErrorCode) return;
      this.lastErrorCode = code;
      this.report(err);
    });
    r.on('ready', () => {
      this.lastErrorCode = undefined;
    });
  }

  /** Another connection to the same server, watched like the first and ended with the store. */
  duplicate(connectionName: string, o: RedisOptions, ending: Ending): Redis {
    const r = this.redis.duplicate({ ...o, connectionName });
    this.watch(r);
    this.extra.set(r, ending);
    return r;
  }

  /** Fail fast instead of queueing while Redis is known to be down. */
  up<R extends Redis>(conn: R): R;
  up(): Redis;
  up(conn: Redis = this.redis): Redis {
    if (this.closed) throw new StoreUnavailableError('store is closed');
    const s = conn.status;
    if (s === 'reconnecting' || s === 'end' || s === 'close') {
      throw new StoreUnavailableError(`redis is ${s === 'reconnecting' ? 'unreachable (reconnecting)' : 'disconnected'}`);
    }
    return conn;
  }

  /** Run `fn` when the store closes (timers, connections of its own). */
  whenClosed(fn: () => void): void {
    this.onClose.push(fn);
  }

  /**
   * The store answers, on every connection it has: one of its own (the intake's, a reader)
   * still waiting out its reconnect backoff would refuse its commands while the first
   * already answers, and `/readyz` would say ready while webhooks get 503 (CI:
   * test/foundation/webhook-intake.test.ts, a delivery refused right after ready).
   */
  async ping(): Promise<void> {
    // While connecting, the PING waits for the connection (bounded by the command timeout).
    await this.up().ping();
    for (const c of this.extra.keys()) this.up(c);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const fn of this.onClose) fn();
    const quits: Array<Promise<unknown>> = [];
    for (const [c, ending] of this.extra) {
      if (ending === 'quit' && c.status === 'ready') quits.push(c.quit().catch(() => c.disconnect()));
      else c.disconnect();
    }
    await Promise.all(quits);
    try {
      if (this.redis.status === 'ready') await this.redis.quit();
      else this.redis.disconnect();
    } catch {
      this.redis.disconnect();
    }
  }
}
