/**
 * Calls with compare-and-set on Redis: a hash per call (`v` version, `j` the record), the
 * all-calls and live-calls indexes kept in the same Lua script as the write. Key names:
 * README. Contract: `calls.contract.test.ts`.
 */
import type { CallRecord, CallStore } from './calls.ts';
import { withScripts, type RedisConnection } from './redis-connection.ts';

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

interface Scripts {
  sbCreateCall(call: string, all: string, live: string, json: string, ttl: number, wacid: string, isLive: '1' | '0'): Promise<number>;
  sbCasCall(call: string, all: string, live: string, expected: string, json: string, ttl: number, wacid: string, isLive: '1' | '0'): Promise<number>;
}

/** The scripts on the offer's path: sent at once, never behind an auto-pipelined batch. */
export const CALL_COMMANDS = ['sbCreateCall', 'sbCasCall'];

export class RedisCalls implements CallStore {
  private readonly r;
  private readonly k: { calls: string; live: string; liveBuilt: string };
  /** The live-calls index is known to be built (`listLiveCalls`). */
  private liveIndexBuilt = false;

  constructor(private readonly c: RedisConnection) {
    this.r = withScripts<Scripts>(c.redis, { sbCreateCall: { keys: 3, lua: CREATE_CALL }, sbCasCall: { keys: 3, lua: CAS_CALL } });
    this.k = { calls: c.key('calls'), live: c.key('calls:live'), liveBuilt: c.key('calls:live:built') };
  }

  private callKey(wacid: string): string {
    return `${this.c.prefix}call:${wacid}`;
  }

  async createCall(record: CallRecord, ttlMs: number): Promise<boolean> {
    const rec = { ...record, version: 0 };
    const r = await this.c.up(this.r).sbCreateCall(this.callKey(rec.wacid), this.k.calls, this.k.live, JSON.stringify(rec), ttlMs, rec.wacid, liveFlag(rec));
    return r === 1;
  }

  async getCall(wacid: string): Promise<CallRecord | null> {
    const j = await this.c.up().hget(this.callKey(wacid), 'j');
    return j === null ? null : (JSON.parse(j) as CallRecord);
  }

  async casCall(wacid: string, expectedVersion: number, next: CallRecord, ttlMs: number): Promise<CallRecord | null> {
    const stored: CallRecord = { ...next, wacid, version: expectedVersion + 1 };
    const json = JSON.stringify(stored);
    const r = await this.c.up(this.r).sbCasCall(this.callKey(wacid), this.k.calls, this.k.live, String(expectedVersion), json, ttlMs, wacid, liveFlag(stored));
    return r === 1 ? (JSON.parse(json) as CallRecord) : null;
  }

  async listCalls(): Promise<CallRecord[]> {
    return this.readIndexed(this.k.calls);
  }

  async listLiveCalls(): Promise<CallRecord[]> {
    const r = this.c.up();
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
    const r = this.c.up();
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
}
