/**
 * The durable queue on Redis: a stream of its own (`<prefix><name>`, e.g. `sb:history`) read
 * through a consumer group, so any node's writer may write any node's facts; the facts of
 * one `enqueue` (a transition's) share one entry (a field `f` each), and the facts of a
 * writer that died are claimed by another after `claimIdleMs`. Acked entries are deleted,
 * so the stream's length is the backlog. While Redis itself is unreachable, facts wait in a
 * bounded in-process outbox and go out on reconnect.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { Redis, type RedisOptions } from 'ioredis';
import { retrier } from '../../shared/backoff.ts';
import { DEAD_LETTERS_MAX, type DurableQueue, type QueueDeadLetter, type QueueLag, type QueuedFact } from './queue.ts';
import { reopenWhenEnded, sentinelOptions } from './redis-connection.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface RedisQueueOptions {
  url: string;
  /** Sentinel mode, as the store's (`REDIS_SENTINELS`): the primary is found through them; the URL gives password and db. */
  sentinels?: ReadonlyArray<{ host: string; port: number }>;
  sentinelName?: string;
  /** Key prefix, as the store's (default `sb:`): the stream is `<prefix><name>`. */
  prefix?: string;
  /** The queue's name (default `history`; the audit trail's is `audit-history`). */
  name?: string;
  /** This node's consumer name (default: host, pid and a random tag). */
  consumer?: string;
  /** Entries read by a writer that has not acked them for this long are claimed by another (default 60 s). */
  claimIdleMs?: number;
  /** Most facts held in the outbox while Redis is unreachable (default 100000; beyond, the oldest are dropped and reported). */
  outboxMax?: number;
  /** Connection errors (one per state change) and dropped facts. Never contain secrets. */
  onError?: (err: Error) => void;
  redis?: RedisOptions;
  /**
   * The connection facts are sent on (the store's, auto-pipelined): a transition's facts then
   * go to Redis in the same write as the transition's own commands, instead of a write and a
   * reply of their own on every transition. The queue never closes it. Default: its own.
   */
  send?: Redis;
}

const GROUP = 'history';

export class RedisQueue<F> implements DurableQueue<F> {
  readonly stream: string;
  /** Facts the database refused (a list, newest first, at most `DEAD_LETTERS_MAX`). */
  readonly deadList: string;
  readonly consumer: string;
  private readonly cmd: Redis;
  private readonly blocking: Redis;
  private readonly send: Redis;
  /** Facts sent and not yet answered (in the stream or coming back to the outbox). */
  private inFlight = 0;
  private readonly claimIdleMs: number;
  private readonly outboxMax: number;
  private outbox: Array<{ body: string; at: number }> = [];
  private flushing: Promise<void> | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly retries = retrier({ baseMs: 200, maxMs: 5000, minMs: 100 });
  private groupReady = false;
  private lastClaim = 0;
  private closed = false;
  private lastErrorCode: string | undefined;
  /** Facts dropped because the outbox overflowed during a long Redis outage. */
  dropped = 0;

  constructor(private readonly opts: RedisQueueOptions) {
    this.stream = `${opts.prefix ?? 'sb:'}${opts.name ?? 'history'}`;
    this.deadList = `${this.stream}:dead`;
    this.consumer = opts.consumer ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
    this.claimIdleMs = opts.claimIdleMs ?? 60_000;
    this.outboxMax = opts.outboxMax ?? 100_000;
    const base: RedisOptions = {
      enableAutoPipelining: true,
      maxRetriesPerRequest: 1,
      commandTimeout: 5000,
      retryStrategy: (times) => Math.min(times * 50, 1000),
      connectionName: 'switchboard-history',
      ...opts.redis,
    };
    const connect = (o: RedisOptions) => (opts.sentinels ? new Redis({ ...sentinelOptions(opts), ...o }) : new Redis(opts.url, o));
    this.cmd = connect(base);
    this.blocking = connect({ ...base, enableAutoPipelining: false, commandTimeout: undefined, connectionName: 'switchboard-history-reader' });
    this.send = opts.send ?? this.cmd;
    for (const r of [this.cmd, this.blocking]) {
      reopenWhenEnded(r, () => this.closed);
      r.on('error', (err: Error & { code?: string }) => {
        const code = err.code ?? err.message;
        if (code === this.lastErrorCode) return;
        this.lastErrorCode = code;
        opts.onError?.(new Error(`history queue: redis ${err.message}`));
      });
      r.on('ready', () => (this.lastErrorCode = undefined));
    }
  }

  enqueue(...facts: F[]): void {
    if (this.closed || facts.length === 0) return;
    const at = Date.now();
    const bodies = facts.map((f) => JSON.stringify(f));
    // Straight out (auto-pipelined with whatever else this turn sends) unless facts wait already.
    if (this.outbox.length === 0 && !this.flushing && !this.retryTimer && this.send.status === 'ready') return this.sendNow(bodies, at);
    for (const body of bodies) this.keep({ body, at });
  }

  /**
   * The facts as one entry on the send connection (one command, whatever their number).
   * Refused or unanswered, they go to the outbox and are sent again: possibly twice then (the
   * first XADD may have landed), which a fact survives (the store keeps one row), and
   * possibly after later facts of their call (merge rules, not order).
   */
  private sendNow(bodies: string[], at: number): void {
    this.inFlight += bodies.length;
    this.send.xadd(this.stream, '*', ...bodies.flatMap((b) => ['f', b]), 'a', String(at)).then(
      () => void (this.inFlight -= bodies.length),
      () => {
        this.inFlight -= bodies.length;
        for (const body of bodies) this.keep({ body, at });
      },
    );
  }

  private keep(e: { body: string; at: number }): void {
    this.outbox.push(e);
    if (this.outbox.length > this.outboxMax) {
      const n = this.outbox.length - this.outboxMax;
      this.outbox.splice(0, n);
      this.dropped += n;
      this.opts.onError?.(new Error(`history queue: outbox full while redis is unreachable, ${n} fact(s) dropped`));
    }
    if (!this.flushing && !this.retryTimer) this.flushing = this.drain();
  }

  /** Send the outbox in pipelined chunks; on failure keep what is left and retry with backoff. */
  private async drain(): Promise<void> {
    // Let the other facts of this event-loop turn join the first chunk.
    await new Promise((r) => setImmediate(r));
    try {
      while (this.outbox.length > 0 && !this.closed) {
        const chunk = this.outbox.slice(0, 500);
        const p = this.send.pipeline();
        for (const e of chunk) p.xadd(this.stream, '*', 'f', e.body, 'a', String(e.at));
        const res = await p.exec();
        // Pipelines run in order: the leading successes are in; retry from the first failure.
        let ok = 0;
        while (ok < chunk.length && res && !res[ok]![0]) ok++;
        this.outbox.splice(0, ok);
        if (ok < chunk.length) throw (res?.[ok]?.[0] as Error | undefined) ?? new Error('pipeline aborted');
        this.retries.reset();
      }
    } catch {
      if (!this.closed) {
        this.retryTimer = setTimeout(() => {
          this.retryTimer = undefined;
          if (!this.flushing) this.flushing = this.drain();
        }, this.retries.next());
      }
    } finally {
      this.flushing = undefined;
    }
  }

  async flush(): Promise<void> {
    while ((this.outbox.length > 0 || this.inFlight > 0) && !this.closed) {
      if (this.flushing) await this.flushing;
      else await sleep(this.outbox.length > 0 ? 20 : 2);
    }
  }

  private async ensureGroup(): Promise<void> {
    if (this.groupReady) return;
    try {
      await this.cmd.xgroup('CREATE', this.stream, GROUP, '0', 'MKSTREAM');
    } catch (err) {
      if (!String((err as Error).message).includes('BUSYGROUP')) throw err;
    }
    this.groupReady = true;
  }

  async read(count: number, blockMs: number): Promise<QueuedFact[]> {
    try {
      return await this.readOnce(count, blockMs);
    } catch (err) {
      // Redis lost its data (restarted without persistence, flushed): the group is gone with
      // the stream. Create it again, else the writer reads NOGROUP forever.
      if (!/NOGROUP/.test(String((err as Error)?.message))) throw err;
      this.groupReady = false;
      this.opts.onError?.(new Error('history queue: consumer group was missing (Redis lost its data?): created again'));
      return this.readOnce(count, blockMs);
    }
  }

  private async readOnce(count: number, blockMs: number): Promise<QueuedFact[]> {
    await this.ensureGroup();
    // Facts a writer read and never acked (it died, or its node did) come back after claimIdleMs.
    if (Date.now() - this.lastClaim >= Math.min(this.claimIdleMs, 5000)) {
      this.lastClaim = Date.now();
      const [, claimed] = (await this.cmd.xautoclaim(this.stream, GROUP, this.consumer, this.claimIdleMs, '0-0', 'COUNT', count)) as [string, Array<[string, string[] | null]>];
      const out = toFacts(claimed);
      if (out.length > 0) return out;
    }
    type Reply = Array<[string, Array<[string, string[] | null]>]> | null;
    const res = (
      blockMs > 0
        ? await this.blocking.xreadgroup('GROUP', GROUP, this.consumer, 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', this.stream, '>')
        : await this.cmd.xreadgroup('GROUP', GROUP, this.consumer, 'COUNT', count, 'STREAMS', this.stream, '>')
    ) as Reply;
    return res ? res.flatMap(([, entries]) => toFacts(entries)) : [];
  }

  async ack(acked: readonly string[]): Promise<void> {
    if (acked.length === 0) return;
    const ids = [...new Set(acked)]; // the facts of one entry share its id
    // One writer group: an acked entry is done, so it leaves the stream (its length = the backlog).
    const res = await this.cmd.multi().xack(this.stream, GROUP, ...ids).xdel(this.stream, ...ids).exec();
    const failed = res?.find(([err]) => err);
    if (!res || failed) throw failed?.[0] ?? new Error('history queue: ack aborted');
  }

  async setAside(d: QueueDeadLetter): Promise<void> {
    const res = await this.cmd.multi().lpush(this.deadList, JSON.stringify(d)).ltrim(this.deadList, 0, DEAD_LETTERS_MAX - 1).exec();
    const failed = res?.find(([err]) => err);
    if (!res || failed) throw failed?.[0] ?? new Error('history queue: set aside aborted');
  }

  async deadLetters(limit: number): Promise<{ items: QueueDeadLetter[]; total: number }> {
    const [items, total] = await Promise.all([this.cmd.lrange(this.deadList, 0, limit - 1), this.cmd.llen(this.deadList)]);
    return { items: items.map((s) => JSON.parse(s) as QueueDeadLetter), total };
  }

  async lag(): Promise<QueueLag> {
    // The outbox is read before the stream: a fact moving between the two meanwhile is
    // counted twice (briefly), never missed.
    const outbox = this.outbox.length + this.inFlight;
    const outboxOldest = this.outbox[0]?.at ?? Infinity;
    const [len, first] = await Promise.all([this.cmd.xlen(this.stream), this.cmd.xrange(this.stream, '-', '+', 'COUNT', 1)]);
    const oldest = Math.min(first[0] ? Number(first[0][0].split('-')[0]) : Infinity, outboxOldest);
    return { pending: len + outbox, oldestAgeMs: oldest === Infinity ? 0 : Math.max(0, Date.now() - oldest) };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    // Give the outbox a moment to reach Redis before the connections go.
    await Promise.race([this.flush(), sleep(2000)]);
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.blocking.disconnect();
    if (this.cmd.status === 'ready') await this.cmd.quit().catch(() => this.cmd.disconnect());
    else this.cmd.disconnect();
  }
}

/** Each entry's facts (a field `f` each), in order; an entry without one gives an empty (invalid) body, so it is reported and acked. */
function toFacts(entries: Array<[string, string[] | null]>): QueuedFact[] {
  const out: QueuedFact[] = [];
  for (const [id, fields] of entries) {
    if (!fields) continue; // deleted meanwhile
    const n = out.length;
    const a = fields.indexOf('a');
    const at = a >= 0 && a % 2 === 0 ? Number(fields[a + 1]) : undefined;
    for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'f') out.push({ id, body: fields[i + 1]!, ...(at !== undefined && Number.isFinite(at) ? { at } : {}) });
    if (out.length === n) out.push({ id, body: '' });
  }
  return out;
}
