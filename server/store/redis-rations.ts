/**
 * Rate windows on Redis: rations (`<prefix>slot:<key>` sorted sets, one Lua script to check
 * and take), window counters (`<prefix>count:<key>`) and call outcomes
 * (`<prefix>calls:c:<key>`, `<prefix>calls:u:<key>`). Contract: `rations.contract.test.ts`.
 */
import type { CallOutcome, RationWindow, Rations, SlotResult } from './rations.ts';
import { withScripts, type RedisConnection } from './redis-connection.ts';

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


interface Scripts {
  sbReserveSlot(key: string, ...args: Array<string | number>): Promise<number[]>;
  sbCountWindow(key: string, delta: number, windowMs: number): Promise<[number, number]>;
}

export class RedisRations implements Rations {
  private readonly r;

  constructor(private readonly c: RedisConnection) {
    this.r = withScripts<Scripts>(c.redis, { sbReserveSlot: { keys: 1, lua: RESERVE_SLOT }, sbCountWindow: { keys: 1, lua: COUNT_WINDOW } });
  }

  private slotKey(key: string): string {
    return `${this.c.prefix}slot:${key}`;
  }

  async reserveSlot(key: string, slotId: string, now: number, windows: readonly RationWindow[]): Promise<SlotResult> {
    const longest = Math.max(1, ...windows.map((w) => w.windowMs));
    const args = windows.flatMap((w) => [w.windowMs, w.max]);
    const r = await this.c.up(this.r).sbReserveSlot(this.slotKey(key), now, slotId, longest, ...args);
    return r[0] === 1 ? { ok: true } : { ok: false, window: Number(r[1]), retryAt: Number(r[2]) };
  }

  async releaseSlot(key: string, slotId: string): Promise<void> {
    await this.c.up().zrem(this.slotKey(key), slotId);
  }

  private outcomeKeys(key: string): [string, string] {
    return [`${this.c.prefix}calls:c:${key}`, `${this.c.prefix}calls:u:${key}`];
  }

  async recordCallOutcome(key: string, callId: string, outcome: CallOutcome, at: number, ttlMs: number): Promise<void> {
    const [c, u] = this.outcomeKeys(key);
    const ttl = Math.max(1, Math.ceil(ttlMs));
    // MULTI: the run's reset and the connected call land together (or not at all), on any node.
    const m = this.c.up().multi();
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
      const flat = await this.c.up().zrange(k, '0', '-1', 'WITHSCORES');
      return flat.filter((_, i) => i % 2 === 1).map(Number);
    };
    const [connected, unanswered] = await Promise.all([scores(c), scores(u)]);
    return { connected, unanswered };
  }

  async countInWindow(key: string, delta: number, windowMs: number): Promise<{ count: number; resetInMs: number }> {
    const [count, resetInMs] = await this.c.up(this.r).sbCountWindow(`${this.c.prefix}count:${key}`, Math.trunc(delta), Math.max(1, Math.ceil(windowMs)));
    return { count, resetInMs };
  }
}
