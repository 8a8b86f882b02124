/**
 * Redis `Store` (ioredis). Key names are in `server/store/README.md`.
 *
 * - One connection for commands, with auto-pipelining: concurrent requests share round
 *   trips, which is most of webhook-ingest throughput.
 * - Lua scripts for the atomic steps: dedupe + XADD (one EVALSHA per event), call
 *   create and compare-and-set (with the all-calls index), claim of stale entries with their
 *   delivery counts.
 * - Blocking stream reads use one extra connection per consumer (a blocked connection
 *   would stall every pipelined command behind it); pub/sub uses its own connection.
 * - While Redis is unreachable, commands fail fast (no unbounded offline queue), so the
 *   webhook receiver can answer 503 and the Service delivers again.
 * - Behind Sentinel (`sentinels`), every connection asks the sentinels for the primary and
 *   asks again after a failover (ioredis reconnects; pub/sub resubscribes by itself).
 *   While the primary has replicas (connected ones, and behind Sentinel those the
 *   sentinels could promote), an accept batch is answered only once at least one replica
 *   confirmed it (`WAIT 1`), so a failover loses no event the Service was told we took;
 *   when none confirms in time the batch fails and the receiver answers 503.
 */
import { randomUUID } from 'node:crypto';
import { Redis, type RedisOptions } from 'ioredis';
import { StoreUnavailableError, type AcceptResult, type CallRecord, type DeadLetter, type RationWindow, type ReplayResult, type SlotResult, type Store, type StreamEntry } from './store.ts';

export { StoreUnavailableError } from './store.ts';

export interface RedisStoreOptions {
  /**
   * `redis://[:password@]host:port/db`. With `sentinels`, only its password and database
   * number are used (the sentinels name the host).
   */
  url: string;
  /** Sentinels to ask for the primary (Redis high availability). */
  sentinels?: ReadonlyArray<{ host: string; port: number }>;
  /** The primary's name the sentinels monitor (default `mymaster`). */
  sentinelName?: string;
  /** How long an accept batch waits for a replica's confirmation (default 1000 ms). */
  replicaWaitMs?: number;
  /** How often the primary's replica count is looked up (default 1000 ms). */
  replicaCheckMs?: number;
  /** Key prefix (default `sb:`). Every key and pub/sub channel of this store starts with it. */
  prefix?: string;
  /** Per-command timeout (default 2000 ms). */
  commandTimeoutMs?: number;
  /** Approximate maximum stream length (`XADD MAXLEN ~`), default 1,000,000. */
  streamMaxLen?: number;
  /** Dead letters kept, newest first. Default 10000. */
  deadLetterMax?: number;
  /**
   * Most events in one accept script call (default 16; 1 = no batching). A batch that
   * reaches it goes out at once, even while another call is in flight.
   */
  acceptBatchMax?: number;
  /** Connection errors (already throttled to one per state change). Never contain secrets. */
  onError?: (err: Error) => void;
  /** Extra ioredis options (tests). */
  redis?: RedisOptions;
}

/**
 * Most events per accept call. Small on purpose: a call goes out every 16 events even while
 * one is in flight, so Redis appends while the server reads instead of the two taking turns
 * (measurements: the commit that set it, and `bench/ingest.ts`).
 */
const ACCEPT_BATCH_MAX = 16;

/** A node's first word on a channel it joins: nodes alone on it publish through Redis again. */
const HELLO = '\u0000sb-hello:';
/** How often a node alone on a channel asks Redis whether it still is. */
const PEER_POLL_MS = 1000;

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

/** '1' while the call is not ended: its id stays in the live-calls index. */
const liveFlag = (rec: CallRecord): '1' | '0' => (rec.state === 'ended' ? '0' : '1');

const EXTEND = `
local function extend(key, ttl)
  local t = redis.call('PTTL', key)
  if t == -1 or (t >= 0 and t < ttl) then redis.call('PEXPIRE', key, ttl) end
end`;

// The live-calls index follows the record: in it while the call is not ended.
const LIVE_INDEX = `
local function index(key, wacid, live, ttl)
  if live == '1' then redis.call('SADD', key, wacid); extend(key, ttl) else redis.call('SREM', key, wacid) end
end`;

// KEYS: call, all-calls index, live-calls index. ARGV: json, ttl, wacid, live (1/0)
const CREATE_CALL = `${EXTEND}${LIVE_INDEX}
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local ttl = tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'v', '0', 'j', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('SADD', KEYS[2], ARGV[3]); extend(KEYS[2], ttl)
index(KEYS[3], ARGV[3], ARGV[4], ttl)
return 1`;

// KEYS: call, all-calls index, live-calls index. ARGV: expected, json, ttl, wacid, live (1/0)
const CAS_CALL = `${EXTEND}${LIVE_INDEX}
local v = redis.call('HGET', KEYS[1], 'v')
if (not v) or v ~= ARGV[1] then return 0 end
local ttl = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'v', tostring(tonumber(ARGV[1]) + 1), 'j', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('SADD', KEYS[2], ARGV[4]); extend(KEYS[2], ttl)
index(KEYS[3], ARGV[4], ARGV[5], ttl)
return 1`;

// Trim what every listed group has processed: the bound is, per group, its oldest pending
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
// (copies with the same stream id), old stream id, eventId, type, body, receivedAt.
// Returns per dead letter the new stream id, or '' when no copy was left to remove.
const REPLAY = `
local out = {}
local i = 2
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  local removed = 0
  for j = 1, n do removed = removed + redis.call('LREM', KEYS[1], -1, ARGV[i + j]) end
  local b = i + n
  if removed > 0 then
    table.insert(out, redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[1], '*', 'e', ARGV[b + 2], 't', ARGV[b + 3], 'b', ARGV[b + 4], 'r', ARGV[b + 5], 'x', ARGV[b + 1]))
  else
    table.insert(out, '')
  end
  i = b + 6
end
return out`;

// Sliding-window ration on a sorted set (member = slot id, score = epoch ms). ARGV: now,
// slot id, longest window, then (windowMs, max) pairs. Returns {1} when the slot was taken,
// else {0, index of the full window (0-based), epoch ms when it frees up}.
const RESERVE_SLOT = `
local now = tonumber(ARGV[1])
local longest = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - longest)
local w = 0
for i = 4, #ARGV, 2 do
  local win = tonumber(ARGV[i])
  local max = tonumber(ARGV[i + 1])
  local inWindow = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. (now - win), now + longest, 'WITHSCORES')
  local n = #inWindow / 2
  if n >= max then
    return {0, w, tonumber(inWindow[(n - max) * 2 + 2]) + win}
  end
  w = w + 1
end
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('PEXPIRE', KEYS[1], longest)
return {1}`;

/**
 * Fixed-window counter: KEYS[1] counter; ARGV delta, window ms. INCRBY and the first
 * PEXPIRE in one step, so no counter is ever left without an expiry; a give-back (negative
 * delta) never creates one.
 */
const COUNT_WINDOW = `
local d = tonumber(ARGV[1])
if d <= 0 and redis.call('EXISTS', KEYS[1]) == 0 then return {0, 0} end
local n = redis.call('INCRBY', KEYS[1], d)
if n <= 0 then redis.call('DEL', KEYS[1]) return {0, 0} end
local t = redis.call('PTTL', KEYS[1])
if t < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) t = tonumber(ARGV[2]) end
return {n, t}`;

/** Dead letters replayed per script call (each is atomic on its own; this bounds one call's size). */
const REPLAY_CHUNK = 100;

type Fields = string[];

interface Scripts {
  sbAccept(dedupeKey: string, stream: string, ttl: number, eventId: string, type: string, body: string, receivedAt: number, maxLen: number): Promise<number>;
  sbAcceptMany(numKeys: number, ...args: Array<string | number>): Promise<number[]>;
  sbCreateCall(call: string, all: string, live: string, json: string, ttl: number, wacid: string, isLive: '1' | '0'): Promise<number>;
  sbCasCall(call: string, all: string, live: string, expected: string, json: string, ttl: number, wacid: string, isLive: '1' | '0'): Promise<number>;
  sbClaim(stream: string, group: string, consumer: string, minIdle: number, count: number): Promise<Array<[string, Fields, number]>>;
  sbTouch(stream: string, group: string, consumer: string, ...ids: string[]): Promise<string[]>;
  sbTrim(stream: string, before: string, ...groups: string[]): Promise<number>;
  sbReplay(dead: string, stream: string, ...args: Array<string | number>): Promise<string[]>;
  sbReserveSlot(key: string, ...args: Array<string | number>): Promise<number[]>;
  sbCountWindow(key: string, delta: number, windowMs: number): Promise<[number, number]>;
}
type ScriptedRedis = Redis & Scripts;

function defineScripts(r: Redis): ScriptedRedis {
  r.defineCommand('sbAccept', { numberOfKeys: 2, lua: ACCEPT });
  r.defineCommand('sbAcceptMany', { lua: ACCEPT_MANY });
  r.defineCommand('sbCreateCall', { numberOfKeys: 3, lua: CREATE_CALL });
  r.defineCommand('sbCasCall', { numberOfKeys: 3, lua: CAS_CALL });
  r.defineCommand('sbClaim', { numberOfKeys: 1, lua: CLAIM });
  r.defineCommand('sbTouch', { numberOfKeys: 1, lua: TOUCH });
  r.defineCommand('sbTrim', { numberOfKeys: 1, lua: TRIM });
  r.defineCommand('sbReplay', { numberOfKeys: 2, lua: REPLAY });
  r.defineCommand('sbReserveSlot', { numberOfKeys: 1, lua: RESERVE_SLOT });
  r.defineCommand('sbCountWindow', { numberOfKeys: 1, lua: COUNT_WINDOW });
  return r as ScriptedRedis;
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

/** ioredis options for a Sentinel-managed primary; password and db from the URL (history's queue uses them too). */
export function sentinelOptions(opts: Pick<RedisStoreOptions, 'url' | 'sentinels' | 'sentinelName'>): RedisOptions {
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

export class RedisStore implements Store {
  readonly prefix: string;
  /** The command connection (exposed for tests and the benchmark). */
  readonly redis: ScriptedRedis;
  private readonly blocking = new Map<string, Redis>();
  private sub: Redis | undefined;
  private ingest: ScriptedRedis | undefined;
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
  private readonly maxLen: number;
  private readonly deadMax: number;
  private closed = false;
  private lastErrorCode: string | undefined;
  private readonly batchMax: number;
  private batch: Array<{
    e: { eventId: string; type: string; body: string; receivedAt: number };
    ttl: number;
    resolve: (r: AcceptResult) => void;
    reject: (err: unknown) => void;
  }> = [];
  private batchBytes = 0;
  private flushScheduled = false;
  private acceptsInFlight = 0;
  /** Accept script calls and the events they carried (the benchmark prints the ratio). */
  readonly acceptStats = { calls: 0, events: 0, waits: 0, unconfirmed: 0 };
  /** Replicas connected to the primary at the last look (`ROLE`); 0 = no WAIT. */
  private replicas = 0;
  private replicaTimer: NodeJS.Timeout | undefined;
  private sentinelConn: Redis | undefined;
  private sentinelAt = 0;
  private readonly replicaWaitMs: number;

  private readonly k: { stream: string; dead: string; calls: string; live: string; liveBuilt: string };
  /** The live-calls index is known to be built (`listLiveCalls`). */
  private liveIndexBuilt = false;

  constructor(private readonly opts: RedisStoreOptions) {
    this.prefix = opts.prefix ?? 'sb:';
    this.maxLen = opts.streamMaxLen ?? 1_000_000;
    this.deadMax = opts.deadLetterMax ?? 10_000;
    this.batchMax = opts.acceptBatchMax ?? ACCEPT_BATCH_MAX;
    this.k = { stream: `${this.prefix}events`, dead: `${this.prefix}dead`, calls: `${this.prefix}calls`, live: `${this.prefix}calls:live`, liveBuilt: `${this.prefix}calls:live:built` };
    const base: RedisOptions = {
      enableAutoPipelining: true,
      // A call's compare-and-set is on the offer's path: written at once, never queued for the
      // next turn behind a batch still waiting for its replies (auto-pipelining sends one batch
      // at a time per connection).
      autoPipeliningIgnoredCommands: ['sbCreateCall', 'sbCasCall'],
      maxRetriesPerRequest: 1,
      commandTimeout: opts.commandTimeoutMs ?? 2000,
      retryStrategy: (times) => Math.min(times * 50, 1000),
      connectionName: 'switchboard',
      ...opts.redis,
    };
    this.replicaWaitMs = opts.replicaWaitMs ?? 1000;
    this.redis = defineScripts(opts.sentinels ? new Redis({ ...sentinelOptions(opts), ...base }) : new Redis(opts.url, base));
    this.watch(this.redis);
    // The replica count decides whether accepts WAIT: looked up on every (re)connection —
    // a failover changes it — and periodically, as replicas come and go.
    const look = () => void this.lookReplicas();
    this.redis.on('ready', look);
    this.replicaTimer = setInterval(look, opts.replicaCheckMs ?? 1000);
    this.replicaTimer.unref();
  }

  private async lookReplicas(): Promise<void> {
    if (this.closed || this.redis.status !== 'ready') return;
    let connected: number;
    try {
      const role = (await this.redis.call('ROLE')) as [string, unknown, unknown[]?];
      connected = role[0] === 'master' && Array.isArray(role[2]) ? role[2].length : 0;
    } catch {
      return; // unreachable: accepts fail fast anyway; the next look corrects the count
    }
    // Behind Sentinel, a replica cut off from the primary for a moment is no longer in
    // ROLE, yet the sentinels would still promote it: that is exactly when an unconfirmed
    // answer is lost. So the replicas the sentinels hold promotable count too.
    const promotable = this.opts.sentinels ? await this.promotableReplicas() : 0;
    this.replicas = Math.max(connected, promotable);
  }

  /** Replicas a sentinel lists for our primary and does not flag down; 0 when none answers. */
  private async promotableReplicas(): Promise<number> {
    const list = this.opts.sentinels!;
    for (let i = 0; i < list.length; i++) {
      if (!this.sentinelConn) {
        const at = list[this.sentinelAt % list.length]!;
        this.sentinelConn = new Redis({ host: at.host, port: at.port, maxRetriesPerRequest: 0, commandTimeout: 1000, enableOfflineQueue: true, retryStrategy: () => null, connectionName: 'switchboard-sentinel-look' });
        this.sentinelConn.on('error', () => undefined); // the next sentinel is tried below
      }
      try {
        const rows = (await this.sentinelConn.call('SENTINEL', 'REPLICAS', this.opts.sentinelName ?? 'mymaster')) as string[][];
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

  /** Replicas connected to the primary at the last look (tests and benches print it). */
  replicaCount(): number {
    return this.replicas;
  }

  /**
   * While the primary has replicas: resolve once one confirmed every write this
   * connection made so far (the batch just accepted), reject otherwise. A rejected batch
   * is on the primary but may be lost in a failover; the Service delivers it again
   * (dedupe answers 2xx once it is confirmed).
   */
  private async confirmReplicated(conn: ScriptedRedis): Promise<void> {
    if (this.replicas === 0) return;
    this.acceptStats.waits++;
    const n = Number(await conn.call('WAIT', 1, this.replicaWaitMs));
    if (n >= 1) return;
    this.acceptStats.unconfirmed++;
    throw new StoreUnavailableError(`event not confirmed by a replica within ${this.replicaWaitMs} ms`);
  }

  private watch(r: Redis): void {
    reopenWhenEnded(r, () => this.closed, { onReopen: () => this.reopened++ });
    r.on('error', (err: Error & { code?: string }) => {
      // One report per kind of failure, not one per reconnect attempt.
      const code = err.code ?? err.message;
      if (code === this.lastErrorCode) return;
      this.lastErrorCode = code;
      this.opts.onError?.(err);
    });
    r.on('ready', () => {
      this.lastErrorCode = undefined;
    });
  }

  /** Fail fast instead of queueing while Redis is known to be down. */
  private up(conn: ScriptedRedis = this.redis): ScriptedRedis {
    if (this.closed) throw new StoreUnavailableError('store is closed');
    const s = conn.status;
    if (s === 'reconnecting' || s === 'end' || s === 'close') {
      throw new StoreUnavailableError(`redis is ${s === 'reconnecting' ? 'unreachable (reconnecting)' : 'disconnected'}`);
    }
    return conn;
  }

  /**
   * Accepts use their own connection without auto-pipelining: they are already batched
   * (group commit), and skipping the pipeline machinery saves a Pipeline object and an
   * event-loop hop per batch.
   */
  private ingestConn(): ScriptedRedis {
    if (!this.ingest) {
      this.ingest = defineScripts(this.redis.duplicate({ enableAutoPipelining: false, connectionName: 'switchboard-ingest' }));
      this.watch(this.ingest);
    }
    return this.up(this.ingest);
  }

  // ---- webhook intake ---------------------------------------------------------------

  /**
   * Group commit: while one accept script call is in flight, events that arrive queue up
   * and go together in the next call (each event still atomically: dedupe check, XADD,
   * dedupe key). Idle, an event goes out at once; under load the batch grows with the
   * round trip, so the socket writes and script calls per event fall. A batch that
   * reaches `batchMax` goes out at once, without waiting for the call in flight: see
   * ACCEPT_BATCH_MAX.
   */
  acceptEvent(e: { eventId: string; type: string; body: string; receivedAt: number }, dedupeTtlMs: number): Promise<AcceptResult> {
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

  private async acceptOne(e: { eventId: string; type: string; body: string; receivedAt: number }, ttl: number): Promise<AcceptResult> {
    const conn = this.ingestConn();
    const r = await conn.sbAccept(`${this.prefix}dedupe:${e.eventId}`, this.k.stream, ttl, e.eventId, e.type, e.body, e.receivedAt, this.maxLen);
    if (this.replicas > 0 && this.batchMax <= 1) await this.confirmReplicated(conn);
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
        const keys: string[] = [this.k.stream];
        const args: Array<string | number> = [this.maxLen];
        for (const { e, ttl } of items) {
          keys.push(`${this.prefix}dedupe:${e.eventId}`);
          args.push(ttl, e.eventId, e.type, e.body, e.receivedAt);
        }
        call = r.sbAcceptMany(keys.length, ...keys, ...args).then((res) => res.map((x): AcceptResult => (x === 1 ? 'accepted' : 'duplicate')));
      }
      // One WAIT per batch, after its script call; without replicas the path stays as it was.
      if (this.replicas > 0) {
        const accepted = call;
        call = accepted.then(async (res) => {
          await this.confirmReplicated(r);
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
      await this.up().xgroup('CREATE', this.k.stream, group, start, 'MKSTREAM');
    } catch (err) {
      if (!String((err as Error).message).includes('BUSYGROUP')) throw err;
    }
  }

  /** The id a group taking over `older` starts after: just before its oldest pending entry, else its last delivered one ('0' without it). */
  private async groupStart(older: string): Promise<string> {
    const r = this.up();
    let groups: unknown[];
    try {
      groups = (await r.xinfo('GROUPS', this.k.stream)) as unknown[];
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
    const pending = (await r.xpending(this.k.stream, older)) as [number, string | null, string | null, unknown];
    if (Number(pending[0]) > 0 && pending[1]) return idBefore(pending[1]);
    return String(info['last-delivered-id'] ?? '0');
  }

  /** One connection per (group, consumer) that blocks: a blocked read holds its connection. */
  private blockingConn(group: string, consumer: string): Redis {
    const key = `${group} ${consumer}`;
    let c = this.blocking.get(key);
    if (!c) {
      c = this.redis.duplicate({ enableAutoPipelining: false, commandTimeout: undefined, connectionName: 'switchboard-reader' });
      this.watch(c);
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
      this.opts.onError?.(new Error(`consumer group ${group} was missing (Redis lost its data?): created again`));
      await this.ensureGroup(group);
      return run();
    }
  }

  /** Connections ioredis had ended on its own and this store opened again (`reopenWhenEnded`). */
  reopened = 0;

  /** Consumer groups created again after Redis lost them (`inGroup`). */
  groupsRecreated = 0;

  async readGroup(group: string, consumer: string, count: number, blockMs: number): Promise<StreamEntry[]> {
    return this.inGroup(group, () => this.readGroupOnce(group, consumer, count, blockMs));
  }

  private async readGroupOnce(group: string, consumer: string, count: number, blockMs: number): Promise<StreamEntry[]> {
    this.up();
    type Reply = Array<[string, Array<[string, Fields | null]>]> | null;
    const res = (
      blockMs > 0
        ? await this.blockingConn(group, consumer).xreadgroup('GROUP', group, consumer, 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', this.k.stream, '>')
        : await this.redis.xreadgroup('GROUP', group, consumer, 'COUNT', count, 'STREAMS', this.k.stream, '>')
    ) as Reply;
    if (!res) return [];
    const out: StreamEntry[] = [];
    for (const [, entries] of res) for (const [id, fields] of entries) if (fields) out.push(toEntry(id, fields, 1));
    return out;
  }

  async ack(group: string, streamIds: string[]): Promise<void> {
    if (streamIds.length === 0) return;
    await this.up().xack(this.k.stream, group, ...streamIds);
  }

  async claimStale(group: string, consumer: string, minIdleMs: number, count: number): Promise<StreamEntry[]> {
    const rows = await this.inGroup(group, () => this.up().sbClaim(this.k.stream, group, consumer, minIdleMs, count));
    return rows.map(([id, fields, n]) => toEntry(id, fields, Number(n)));
  }

  async touchPending(group: string, consumer: string, streamIds: readonly string[]): Promise<string[]> {
    if (streamIds.length === 0) return [];
    return this.inGroup(group, () => this.up().sbTouch(this.k.stream, group, consumer, ...streamIds));
  }

  async deadLetter(group: string, entry: StreamEntry, error: string, attempts?: number): Promise<void> {
    const dl: DeadLetter = { entry, error, at: Date.now(), ...(attempts !== undefined ? { attempts } : {}) };
    await this.up()
      .multi()
      .lpush(this.k.dead, JSON.stringify(dl))
      .ltrim(this.k.dead, 0, this.deadMax - 1)
      .xack(this.k.stream, group, entry.streamId)
      .exec()
      .then((res) => {
        const failed = res?.find(([err]) => err);
        if (!res || failed) throw failed?.[0] ?? new StoreUnavailableError('dead-letter transaction aborted');
      });
  }

  async listDeadLetters(limit: number): Promise<DeadLetter[]> {
    if (limit <= 0) return [];
    const rows = await this.up().lrange(this.k.dead, 0, limit - 1);
    return rows.map((r) => JSON.parse(r) as DeadLetter);
  }

  async replayDeadLetters(streamIds: readonly string[] | 'all'): Promise<ReplayResult> {
    const r = this.up();
    const wanted = streamIds === 'all' ? undefined : new Set(streamIds);
    const out: ReplayResult = { replayed: [], notFound: [] };
    if (wanted?.size === 0) return out;
    // Find the list elements in Node (JSON.parse, whatever the key order), oldest first;
    // the script then removes exactly those strings, so what was read is what is replayed.
    const rows = await r.lrange(this.k.dead, 0, -1);
    const byId = new Map<string, { raws: string[]; entry: StreamEntry }>();
    for (let i = rows.length - 1; i >= 0; i--) {
      const raw = rows[i]!;
      let dl: DeadLetter;
      try {
        dl = JSON.parse(raw) as DeadLetter;
      } catch {
        continue; // not written by deadLetter: never replayed
      }
      const id = dl.entry?.streamId;
      if (typeof id !== 'string' || (wanted && !wanted.has(id))) continue;
      const found = byId.get(id);
      if (found) found.raws.push(raw);
      else byId.set(id, { raws: [raw], entry: dl.entry });
    }
    const items = [...byId.values()];
    for (let c = 0; c < items.length; c += REPLAY_CHUNK) {
      const chunk = items.slice(c, c + REPLAY_CHUNK);
      const args: Array<string | number> = [this.maxLen];
      for (const { raws, entry: e } of chunk) args.push(raws.length, ...raws, e.streamId, e.eventId, e.type, e.body, e.receivedAt);
      const ids = await this.up().sbReplay(this.k.dead, this.k.stream, ...args);
      chunk.forEach(({ entry: e }, i) => {
        const newStreamId = ids[i];
        if (newStreamId) out.replayed.push({ streamId: e.streamId, newStreamId, eventId: e.eventId, type: e.type });
        else out.notFound.push(e.streamId); // replayed meanwhile by someone else
      });
    }
    if (wanted) for (const id of wanted) if (!byId.has(id)) out.notFound.push(id);
    return out;
  }

  async trimProcessed(groups: readonly string[], before?: number): Promise<number> {
    if (groups.length === 0) return 0;
    return Number(await this.up().sbTrim(this.k.stream, before !== undefined ? `${Math.max(0, Math.floor(before))}-0` : '', ...groups));
  }

  async streamLag(group: string): Promise<number> {
    const r = this.up();
    let groups: unknown[];
    try {
      groups = (await r.xinfo('GROUPS', this.k.stream)) as unknown[];
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
      const after = await r.xrange(this.k.stream, `(${String(f['last-delivered-id'])}`, '+', 'COUNT', 100_000);
      return after.length + pending;
    }
    return Number(await r.xlen(this.k.stream));
  }

  // ---- calls ------------------------------------------------------------------------

  private callKey(wacid: string): string {
    return `${this.prefix}call:${wacid}`;
  }

  async createCall(record: CallRecord, ttlMs: number): Promise<boolean> {
    const rec = { ...record, version: 0 };
    const r = await this.up().sbCreateCall(this.callKey(rec.wacid), this.k.calls, this.k.live, JSON.stringify(rec), ttlMs, rec.wacid, liveFlag(rec));
    return r === 1;
  }

  async getCall(wacid: string): Promise<CallRecord | null> {
    const j = await this.up().hget(this.callKey(wacid), 'j');
    return j === null ? null : (JSON.parse(j) as CallRecord);
  }

  async casCall(wacid: string, expectedVersion: number, next: CallRecord, ttlMs: number): Promise<CallRecord | null> {
    const stored: CallRecord = { ...next, wacid, version: expectedVersion + 1 };
    const json = JSON.stringify(stored);
    const r = await this.up().sbCasCall(this.callKey(wacid), this.k.calls, this.k.live, String(expectedVersion), json, ttlMs, wacid, liveFlag(stored));
    return r === 1 ? (JSON.parse(json) as CallRecord) : null;
  }

  async listCalls(): Promise<CallRecord[]> {
    return this.readIndexed(this.k.calls);
  }

  async listLiveCalls(): Promise<CallRecord[]> {
    const r = this.up();
    // A store written before the live index existed: built once from every call (the marker
    // is looked up until this process has seen it, not on every read).
    if (!this.liveIndexBuilt) {
      if ((await r.exists(this.k.liveBuilt)) === 0) {
        const live = (await this.listCalls()).filter((c) => c.state !== 'ended').map((c) => c.wacid);
        if (live.length > 0) await r.sadd(this.k.live, ...live);
        await r.set(this.k.liveBuilt, '1');
      }
      this.liveIndexBuilt = true;
    }
    const out = await this.readIndexed(this.k.live);
    // A call ended by a writer that did not keep the index (the build above racing an end) leaves it here.
    const ended = out.filter((c) => c.state === 'ended');
    if (ended.length > 0) await r.srem(this.k.live, ...ended.map((c) => c.wacid));
    return ended.length > 0 ? out.filter((c) => c.state !== 'ended') : out;
  }

  /** The records an index names; ids whose record expired are dropped from it lazily. */
  private async readIndexed(indexKey: string): Promise<CallRecord[]> {
    const r = this.up();
    const ids = await r.smembers(indexKey);
    if (ids.length === 0) return [];
    const rows = await Promise.all(ids.map((id) => r.hget(this.callKey(id), 'j')));
    const out: CallRecord[] = [];
    const gone: string[] = [];
    rows.forEach((j, i) => {
      if (j === null) return void gone.push(ids[i]!);
      out.push(JSON.parse(j) as CallRecord);
    });
    if (gone.length > 0) await r.srem(indexKey, ...gone);
    return out;
  }

  // ---- small values with TTL ----------------------------------------------------------

  private kvKey(key: string): string {
    return `${this.prefix}kv:${key}`;
  }

  async setNX(key: string, value: string, ttlMs: number): Promise<boolean> {
    return (await this.up().set(this.kvKey(key), value, 'PX', ttlMs, 'NX')) === 'OK';
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    if (ttlMs === undefined) await this.up().set(this.kvKey(key), value);
    else await this.up().set(this.kvKey(key), value, 'PX', ttlMs);
  }

  async get(key: string): Promise<string | null> {
    return this.up().get(this.kvKey(key));
  }

  async del(key: string): Promise<void> {
    await this.up().del(this.kvKey(key));
  }

  // ---- small indexes -------------------------------------------------------------------

  private indexKey(key: string): string {
    return `${this.prefix}idx:${key}`;
  }

  async indexAdd(key: string, member: string, until: number): Promise<void> {
    const k = this.indexKey(key);
    // Members past their time go here too (a user who never lists their sessions).
    await this.up().zremrangebyscore(k, '-inf', Date.now());
    await this.up().zadd(k, until, member);
    // The key lives as long as its latest member.
    const last = await this.up().zrange(k, '-1', '-1', 'WITHSCORES');
    await this.up().pexpireat(k, Math.max(until, Number(last[1] ?? until)));
  }

  async indexRemove(key: string, ...members: string[]): Promise<void> {
    if (members.length > 0) await this.up().zrem(this.indexKey(key), ...members);
  }

  async indexMembers(key: string, now: number): Promise<string[]> {
    const k = this.indexKey(key);
    await this.up().zremrangebyscore(k, '-inf', now);
    return this.up().zrange(k, '0', '-1');
  }

  // ---- rations ---------------------------------------------------------------------------

  private slotKey(key: string): string {
    return `${this.prefix}slot:${key}`;
  }

  async reserveSlot(key: string, slotId: string, now: number, windows: readonly RationWindow[]): Promise<SlotResult> {
    const longest = Math.max(1, ...windows.map((w) => w.windowMs));
    const args = windows.flatMap((w) => [w.windowMs, w.max]);
    const r = await this.up().sbReserveSlot(this.slotKey(key), now, slotId, longest, ...args);
    return r[0] === 1 ? { ok: true } : { ok: false, window: Number(r[1]), retryAt: Number(r[2]) };
  }

  async releaseSlot(key: string, slotId: string): Promise<void> {
    await this.up().zrem(this.slotKey(key), slotId);
  }

  // ---- business-initiated call outcomes ----------------------------------------------

  private outcomeKeys(key: string): [string, string] {
    return [`${this.prefix}calls:c:${key}`, `${this.prefix}calls:u:${key}`];
  }

  async recordCallOutcome(key: string, callId: string, outcome: 'connected' | 'unanswered', at: number, ttlMs: number): Promise<void> {
    const [c, u] = this.outcomeKeys(key);
    const ttl = Math.max(1, Math.ceil(ttlMs));
    // MULTI: the run's reset and the connected call land together (or not at all), on any node.
    const m = this.up().multi();
    if (outcome === 'connected') {
      m.zadd(c, at, callId).zremrangebyscore(c, '-inf', at - ttlMs).pexpire(c, ttl).del(u);
    } else {
      m.zadd(u, at, callId).pexpire(u, ttl);
    }
    const r = await m.exec();
    const failed = r?.find(([err]) => err);
    if (!r || failed) throw failed?.[0] ?? new Error('call outcome not recorded (transaction aborted)');
  }

  async callOutcomes(key: string): Promise<{ connected: number[]; unanswered: number[] }> {
    const [c, u] = this.outcomeKeys(key);
    const scores = async (k: string) => {
      const flat = await this.up().zrange(k, '0', '-1', 'WITHSCORES');
      return flat.filter((_, i) => i % 2 === 1).map(Number);
    };
    const [connected, unanswered] = await Promise.all([scores(c), scores(u)]);
    return { connected, unanswered };
  }

  async countInWindow(key: string, delta: number, windowMs: number): Promise<{ count: number; resetInMs: number }> {
    const [count, resetInMs] = await this.up().sbCountWindow(`${this.prefix}count:${key}`, Math.trunc(delta), Math.max(1, Math.ceil(windowMs)));
    return { count, resetInMs };
  }

  // ---- between nodes ------------------------------------------------------------------

  private channel(name: string): string {
    return `${this.prefix}ch:${name}`;
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
      this.up();
      queueMicrotask(() => this.dispatch(ch, message));
      return;
    }
    const received = await this.up().publish(ch, message);
    // The count includes this node's own subscriber; unknown while its SUBSCRIBE is under way.
    if (!this.handlers.has(ch) || this.subscribed.has(ch)) this.learnPeers(ch, received - (this.subscribed.has(ch) ? 1 : 0) > 0);
  }

  private learnPeers(ch: string, others: boolean): void {
    this.peers.set(ch, others);
    if (others || this.peerTimer || this.closed) return;
    this.peerTimer = setInterval(() => void this.pollPeers(), PEER_POLL_MS);
    this.peerTimer.unref();
  }

  /** Channels thought to have no other subscriber: asked again (a missed hello, a restarted Redis). */
  private async pollPeers(): Promise<void> {
    const alone = [...this.peers].filter(([, others]) => !others).map(([ch]) => ch);
    if (alone.length === 0 || this.redis.status !== 'ready') return;
    try {
      const counts = (await this.redis.call('PUBSUB', 'NUMSUB', ...alone)) as Array<string | number>;
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
        this.opts.onError?.(err as Error);
      }
    }
  }

  async subscribe(channel: string, onMessage: (message: string) => void): Promise<() => Promise<void>> {
    this.up();
    if (!this.sub) {
      const sub = this.redis.duplicate({ enableAutoPipelining: false, commandTimeout: undefined, connectionName: 'switchboard-sub' });
      this.watch(sub);
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
      await this.redis.publish(ch, `${HELLO}${this.me}`);
    }
    const fn = (m: string) => onMessage(m);
    set.add(fn);
    return async () => {
      set.delete(fn);
      if (set.size === 0 && this.handlers.get(ch) === set) {
        this.handlers.delete(ch);
        this.subscribed.delete(ch);
        if (!this.closed) await this.sub?.unsubscribe(ch).catch(() => undefined);
      }
    };
  }

  // ---- lifecycle ------------------------------------------------------------------------

  async ping(): Promise<void> {
    // While connecting, the PING waits for the connection (bounded by the command timeout).
    await this.up().ping();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.replicaTimer);
    clearInterval(this.peerTimer);
    this.sentinelConn?.disconnect();
    // Readers may be blocked in XREADGROUP and the subscriber holds no work: cut them.
    this.sub?.disconnect();
    for (const c of this.blocking.values()) c.disconnect();
    if (this.ingest) {
      const ing = this.ingest;
      if (ing.status === 'ready') await ing.quit().catch(() => ing.disconnect());
      else ing.disconnect();
    }
    try {
      if (this.redis.status === 'ready') await this.redis.quit();
      else this.redis.disconnect();
    } catch {
      this.redis.disconnect();
    }
  }
}

/** Redis answered that the consumer group (or its stream) does not exist. */
function isNoGroup(err: unknown): boolean {
  return /NOGROUP/.test(String((err as Error)?.message ?? err));
}
