/**
 * The event log on Redis: one stream (`<prefix>events`) read by consumer groups, dedupe keys
 * (`<prefix>dedupe:<eventId>`) written in the same Lua script as the append. Key names and
 * the atomic steps: README. Contract: `event-log.contract.test.ts`.
 *
 * - Accepts group-commit on a connection of their own (see `acceptEvent`) and, while the
 *   primary has replicas, wait for one to confirm (`redis-replicas.ts`).
 * - Blocking reads use one extra connection per consumer (a blocked connection would stall
 *   every pipelined command behind it).
 * - A group Redis lost (restarted without its data) is created again (`inGroup`).
 */
import type { Redis } from 'ioredis';
import type { AcceptResult, EventLog, IncomingEvent, StreamEntry } from './event-log.ts';
import { withScripts, type RedisConnection } from './redis-connection.ts';
import { Replicas, type ReplicaOptions } from './redis-replicas.ts';

export interface RedisEventLogOptions extends ReplicaOptions {
  /** Approximate maximum stream length (`XADD MAXLEN ~`), default 1,000,000. */
  streamMaxLen?: number;
  /**
   * Most events in one accept script call (default 16; 1 = no batching). A batch that
   * reaches it goes out at once, even while another call is in flight.
   */
  acceptBatchMax?: number;
}

/**
 * Most events per accept call. Small on purpose: a call goes out every 16 events even while
 * one is in flight, so Redis appends while the server reads instead of the two taking turns
 * (measurements: the commit that set it, and `bench/ingest.ts`).
 */
const ACCEPT_BATCH_MAX = 16;

// Dedupe first (read only), then XADD, then the dedupe key: if XADD fails nothing was
// written, so the Service's retry is not mistaken for a duplicate.
const ACCEPT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[6], '*', 'e', ARGV[2], 't', ARGV[3], 'b', ARGV[4], 'r', ARGV[5])
redis.call('SET', KEYS[1], id, 'PX', ARGV[1])
return 1`;

// The same for a batch of events (one EVALSHA per batch; see ACCEPT_BATCH_MAX).
// KEYS: stream, then one dedupe key per event. ARGV: maxLen, then per event: ttl, eventId, type, body, receivedAt.
const ACCEPT_MANY = `
local out = {}
for i = 2, #KEYS do
  local b = 1 + (i - 2) * 5
  if redis.call('EXISTS', KEYS[i]) == 1 then
    out[i - 1] = 0
  else
    local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'e', ARGV[b + 2], 't', ARGV[b + 3], 'b', ARGV[b + 4], 'r', ARGV[b + 5])
    redis.call('SET', KEYS[i], id, 'PX', ARGV[b + 1])
    out[i - 1] = 1
  end
end
return out`;

// entry, or (nothing pending) the id after its last delivered one; the lowest bound wins.
// Any listed group missing (not created yet: it will read from 0) → nothing is trimmed.
// KEYS: stream. ARGV: the highest bound ('' for none), then the groups. Returns the entries trimmed.
const TRIM = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local function less(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end
local byName = {}
for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
  local f = {}
  for i = 1, #g, 2 do f[g[i]] = g[i + 1] end
  byName[f['name']] = f
end
local bound = nil
if ARGV[1] ~= '' then bound = ARGV[1] end
for i = 2, #ARGV do
  local name = ARGV[i]
  local f = byName[name]
  if not f then return 0 end
  local b
  if tonumber(f['pending']) > 0 then
    b = redis.call('XPENDING', KEYS[1], name)[2]
  else
    local ms, seq = string.match(f['last-delivered-id'], '^(%d+)-(%d+)$')
    b = ms .. '-' .. string.format('%d', tonumber(seq) + 1)
  end
  if bound == nil or less(b, bound) then bound = b end
end
if bound == nil then return 0 end
return redis.call('XTRIM', KEYS[1], 'MINID', bound)`;

// KEYS: stream. ARGV: group, consumer, minIdle, count. Returns {id, fields, deliveries}...
const CLAIM = `
local out = {}
local cursor = '0-0'
local want = tonumber(ARGV[4])
for _ = 1, 20 do
  local r = redis.call('XAUTOCLAIM', KEYS[1], ARGV[1], ARGV[2], ARGV[3], cursor, 'COUNT', want - #out)
  cursor = r[1]
  for _, e in ipairs(r[2]) do
    if e and e[2] then
      local p = redis.call('XPENDING', KEYS[1], ARGV[1], e[1], e[1], 1)
      local n = 1
      if p[1] then n = p[1][4] end
      table.insert(out, {e[1], e[2], n})
    end
  end
  if cursor == '0-0' or #out >= want then break end
end
return out`;

// Refresh a consumer's own pending entries (idle back to 0; JUSTID keeps the delivery
// count). An entry pending for another consumer is not taken back.
// KEYS: stream. ARGV: group, consumer, ids... Returns the ids refreshed.
const TOUCH = `
local out = {}
for i = 3, #ARGV do
  local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if p[1] and p[1][2] == ARGV[2] then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
    table.insert(out, ARGV[i])
  end
end
return out`;

// Replay dead letters: per dead letter, remove it from the dead list and, iff it was
// still there, append it to the stream, in one step (no crash in between can lose or
// double it; of two concurrent replays only the one whose LREM removed it appends).
// The list is scanned from its tail (oldest first, LREM count -1): replaying everything
// oldest first finds each element at once. The dedupe key is not consulted.
// KEYS: dead list, stream. ARGV: maxLen, then per dead letter: n, n raw list elements

type Fields = string[];

interface AcceptScripts {
  sbAccept(dedupeKey: string, stream: string, ttl: number, eventId: string, type: string, body: string, receivedAt: number, maxLen: number): Promise<number>;
  sbAcceptMany(numKeys: number, ...args: Array<string | number>): Promise<number[]>;
}

interface GroupScripts {
  sbClaim(stream: string, group: string, consumer: string, minIdle: number, count: number): Promise<Array<[string, Fields, number]>>;
  sbTouch(stream: string, group: string, consumer: string, ...ids: string[]): Promise<string[]>;
  sbTrim(stream: string, before: string, ...groups: string[]): Promise<number>;
}

type Ingest = Redis & AcceptScripts;

/** The stream id just before `id` (entries after it include `id`). */
function idBefore(id: string): string {
  const [ms, seq] = id.split('-').map((x) => BigInt(x));
  if (seq! > 0n) return `${ms}-${seq! - 1n}`;
  return ms! > 0n ? `${ms! - 1n}-18446744073709551615` : '0';
}

function toEntry(id: string, fields: Fields, deliveries: number): StreamEntry {
  const f: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
  const entry: StreamEntry = {
    streamId: id,
    eventId: f.e ?? '',
    type: f.t ?? '',
    body: f.b ?? '',
    receivedAt: Number(f.r ?? 0),
    deliveries,
  };
  if (f.x !== undefined) entry.replayOf = f.x;
  return entry;
}

export class RedisEventLog implements EventLog {
  /** Accept script calls and the events they carried, replica waits (the benchmark prints them). */
  readonly acceptStats = { calls: 0, events: 0, waits: 0, unconfirmed: 0 };
  /** Consumer groups created again after Redis lost them (`inGroup`). */
  groupsRecreated = 0;
  readonly replicas: Replicas;
  /** The stream's key. */
  readonly stream: string;
  readonly maxLen: number;
  private readonly r;
  private readonly blocking = new Map<string, Redis>();
  private ingest: Ingest | undefined;
  private readonly batchMax: number;
  private batch: Array<{
    e: IncomingEvent;
    ttl: number;
    resolve: (r: AcceptResult) => void;
    reject: (err: unknown) => void;
  }> = [];
  private batchBytes = 0;
  private flushScheduled = false;
  private acceptsInFlight = 0;

  constructor(
    private readonly c: RedisConnection,
    opts: RedisEventLogOptions = {},
  ) {
    this.maxLen = opts.streamMaxLen ?? 1_000_000;
    this.batchMax = opts.acceptBatchMax ?? ACCEPT_BATCH_MAX;
    this.stream = c.key('events');
    this.r = withScripts<GroupScripts>(c.redis, { sbClaim: { keys: 1, lua: CLAIM }, sbTouch: { keys: 1, lua: TOUCH }, sbTrim: { keys: 1, lua: TRIM } });
    this.replicas = new Replicas(c, this.acceptStats, opts);
  }

  /**
   * Accepts use their own connection without auto-pipelining: they are already batched
   * (group commit), and skipping the pipeline machinery saves a Pipeline object and an
   * event-loop hop per batch.
   */
  private ingestConn(): Ingest {
    if (!this.ingest) {
      this.ingest = withScripts<AcceptScripts>(this.c.duplicate('switchboard-ingest', { enableAutoPipelining: false }, 'quit'), { sbAccept: { keys: 2, lua: ACCEPT }, sbAcceptMany: { lua: ACCEPT_MANY } });
    }
    return this.c.up(this.ingest);
  }

  /**
   * Group commit: while one accept script call is in flight, events that arrive queue up
   * and go together in the next call (each event still atomically: dedupe check, XADD,
   * dedupe key). Idle, an event goes out at once; under load the batch grows with the
   * round trip, so the socket writes and script calls per event fall. A batch that
   * reaches `batchMax` goes out at once, without waiting for the call in flight: see
   * ACCEPT_BATCH_MAX.
   */
  acceptEvent(e: IncomingEvent, dedupeTtlMs: number): Promise<AcceptResult> {
    try {
      this.ingestConn();
    } catch (err) {
      return Promise.reject(err);
    }
    if (this.batchMax <= 1) return this.acceptOne(e, dedupeTtlMs);
    return new Promise((resolve, reject) => {
      this.batch.push({ e, ttl: dedupeTtlMs, resolve, reject });
      this.batchBytes += e.body.length;
      if (this.batch.length >= this.batchMax || this.batchBytes >= 4 * 1024 * 1024) this.flushAccepts(true);
      else if (!this.flushScheduled && this.acceptsInFlight === 0) {
        // Let the other requests of this event-loop turn join.
        this.flushScheduled = true;
        setImmediate(() => this.flushAccepts(false));
      }
    });
  }

  private async acceptOne(e: IncomingEvent, ttl: number): Promise<AcceptResult> {
    const conn = this.ingestConn();
    const r = await conn.sbAccept(`${this.c.prefix}dedupe:${e.eventId}`, this.stream, ttl, e.eventId, e.type, e.body, e.receivedAt, this.maxLen);
    if (this.replicas.count > 0 && this.batchMax <= 1) await this.replicas.confirm(conn);
    return r === 1 ? 'accepted' : 'duplicate';
  }

  private flushAccepts(full: boolean): void {
    if (!full) this.flushScheduled = false;
    // One call in flight at a time unless the batch is full; its reply triggers the next.
    if (!full && this.acceptsInFlight > 0) return;
    const items = this.batch;
    if (items.length === 0) return;
    this.batch = [];
    this.batchBytes = 0;
    let call: Promise<AcceptResult[]>;
    try {
      const r = this.ingestConn();
      if (items.length === 1) {
        const it = items[0]!;
        call = this.acceptOne(it.e, it.ttl).then((x) => [x]);
      } else {
        const keys: string[] = [this.stream];
        const args: Array<string | number> = [this.maxLen];
        for (const { e, ttl } of items) {
          keys.push(`${this.c.prefix}dedupe:${e.eventId}`);
          args.push(ttl, e.eventId, e.type, e.body, e.receivedAt);
        }
        call = r.sbAcceptMany(keys.length, ...keys, ...args).then((res) => res.map((x): AcceptResult => (x === 1 ? 'accepted' : 'duplicate')));
      }
      // One WAIT per batch, after its script call; without replicas the path stays as it was.
      if (this.replicas.count > 0) {
        const accepted = call;
        call = accepted.then(async (res) => {
          await this.replicas.confirm(r);
          return res;
        });
      }
    } catch (err) {
      for (const it of items) it.reject(err);
      return;
    }
    this.acceptsInFlight++;
    this.acceptStats.calls++;
    this.acceptStats.events += items.length;
    call.then(
      (res) => {
        this.acceptDone();
        items.forEach((it, i) => it.resolve(res[i]!));
      },
      (err: unknown) => {
        this.acceptDone();
        items.forEach((it) => it.reject(err));
      },
    );
  }

  /**
   * A script call answered: the next batch goes out first, then this batch's requests are
   * answered (their continuations write HTTP responses; sending the next batch after them
   * would leave Redis idle meanwhile).
   */
  private acceptDone(): void {
    this.acceptsInFlight--;
    if (this.batch.length > 0 && this.acceptsInFlight === 0) this.flushAccepts(false);
  }

  async ensureGroup(group: string, o: { from?: string } = {}): Promise<void> {
    try {
      // From the start of the stream (events accepted before the workers ran are processed),
      // or where the older group stands.
      const start = o.from ? await this.groupStart(o.from) : '0';
      await this.c.up().xgroup('CREATE', this.stream, group, start, 'MKSTREAM');
    } catch (err) {
      if (!String((err as Error).message).includes('BUSYGROUP')) throw err;
    }
  }

  /** The id a group taking over `older` starts after: just before its oldest pending entry, else its last delivered one ('0' without it). */
  private async groupStart(older: string): Promise<string> {
    const r = this.c.up();
    let groups: unknown[];
    try {
      groups = (await r.xinfo('GROUPS', this.stream)) as unknown[];
    } catch {
      return '0'; // no stream yet
    }
    const info = groups
      .map((g) => {
        const arr = g as unknown[];
        const f: Record<string, unknown> = {};
        for (let i = 0; i + 1 < arr.length; i += 2) f[String(arr[i])] = arr[i + 1];
        return f;
      })
      .find((f) => f.name === older);
    if (!info) return '0';
    const pending = (await r.xpending(this.stream, older)) as [number, string | null, string | null, unknown];
    if (Number(pending[0]) > 0 && pending[1]) return idBefore(pending[1]);
    return String(info['last-delivered-id'] ?? '0');
  }

  /** One connection per (group, consumer) that blocks: a blocked read holds its connection. */
  private blockingConn(group: string, consumer: string): Redis {
    const key = `${group} ${consumer}`;
    let c = this.blocking.get(key);
    if (!c) {
      c = this.c.duplicate('switchboard-reader', { enableAutoPipelining: false, commandTimeout: undefined }, 'cut');
      this.blocking.set(key, c);
    }
    return c;
  }

  /**
   * Run a command on the group; when Redis says the group (or the stream) is gone — it
   * restarted without persistence, or was flushed — create it again and run the command
   * once more. Without this the workers read `NOGROUP` forever while webhooks are accepted.
   */
  private async inGroup<T>(group: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (err) {
      if (!isNoGroup(err)) throw err;
      this.groupsRecreated++;
      this.c.report(new Error(`consumer group ${group} was missing (Redis lost its data?): created again`));
      await this.ensureGroup(group);
      return run();
    }
  }

  async readGroup(group: string, consumer: string, count: number, blockMs: number): Promise<StreamEntry[]> {
    return this.inGroup(group, () => this.readGroupOnce(group, consumer, count, blockMs));
  }

  private async readGroupOnce(group: string, consumer: string, count: number, blockMs: number): Promise<StreamEntry[]> {
    this.c.up();
    type Reply = Array<[string, Array<[string, Fields | null]>]> | null;
    const res = (
      blockMs > 0
        ? await this.blockingConn(group, consumer).xreadgroup('GROUP', group, consumer, 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', this.stream, '>')
        : await this.c.redis.xreadgroup('GROUP', group, consumer, 'COUNT', count, 'STREAMS', this.stream, '>')
    ) as Reply;
    if (!res) return [];
    const out: StreamEntry[] = [];
    for (const [, entries] of res) for (const [id, fields] of entries) if (fields) out.push(toEntry(id, fields, 1));
    return out;
  }

  async ack(group: string, streamIds: string[]): Promise<void> {
    if (streamIds.length === 0) return;
    await this.c.up().xack(this.stream, group, ...streamIds);
  }

  async claimStale(group: string, consumer: string, minIdleMs: number, count: number): Promise<StreamEntry[]> {
    const rows = await this.inGroup(group, () => this.c.up(this.r).sbClaim(this.stream, group, consumer, minIdleMs, count));
    return rows.map(([id, fields, n]) => toEntry(id, fields, Number(n)));
  }

  async touchPending(group: string, consumer: string, streamIds: readonly string[]): Promise<string[]> {
    if (streamIds.length === 0) return [];
    return this.inGroup(group, () => this.c.up(this.r).sbTouch(this.stream, group, consumer, ...streamIds));
  }

  async trimProcessed(groups: readonly string[], before?: number): Promise<number> {
    if (groups.length === 0) return 0;
    return Number(await this.c.up(this.r).sbTrim(this.stream, before !== undefined ? `${Math.max(0, Math.floor(before))}-0` : '', ...groups));
  }

  async streamLag(group: string): Promise<number> {
    const r = this.c.up();
    let groups: unknown[];
    try {
      groups = (await r.xinfo('GROUPS', this.stream)) as unknown[];
    } catch (err) {
      if (String((err as Error).message).includes('no such key')) return 0;
      throw err;
    }
    for (const g of groups) {
      const arr = g as unknown[];
      const f: Record<string, unknown> = {};
      for (let i = 0; i + 1 < arr.length; i += 2) f[String(arr[i])] = arr[i + 1];
      if (f.name !== group) continue;
      const pending = Number(f.pending ?? 0);
      if (f.lag !== null && f.lag !== undefined) return Number(f.lag) + pending;
      // Lag unknown after trimming: count what lies after the last delivered id.
      const after = await r.xrange(this.stream, `(${String(f['last-delivered-id'])}`, '+', 'COUNT', 100_000);
      return after.length + pending;
    }
    return Number(await r.xlen(this.stream));
  }
}


/** Redis answered that the consumer group (or its stream) does not exist. */
function isNoGroup(err: unknown): boolean {
  return /NOGROUP/.test(String((err as Error)?.message ?? err));
}
