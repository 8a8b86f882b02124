/**
 * Small values and small indexes on Redis: `<prefix>kv:<key>` strings and `<prefix>idx:<key>`
 * sorted sets. Contract: `kv.contract.test.ts`.
 */
import type { KeyValue } from './kv.ts';
import type { RedisConnection } from './redis-connection.ts';

export class RedisKeyValue implements KeyValue {
  constructor(private readonly c: RedisConnection) {}

  private kvKey(key: string): string {
    return `${this.c.prefix}kv:${key}`;
  }

  async setNX(key: string, value: string, ttlMs: number): Promise<boolean> {
    return (await this.c.up().set(this.kvKey(key), value, 'PX', ttlMs, 'NX')) === 'OK';
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    if (ttlMs === undefined) await this.c.up().set(this.kvKey(key), value);
    else await this.c.up().set(this.kvKey(key), value, 'PX', ttlMs);
  }

  async get(key: string): Promise<string | null> {
    return this.c.up().get(this.kvKey(key));
  }

  async del(key: string): Promise<void> {
    await this.c.up().del(this.kvKey(key));
  }

  private indexKey(key: string): string {
    return `${this.c.prefix}idx:${key}`;
  }

  async indexAdd(key: string, member: string, until: number): Promise<void> {
    const k = this.indexKey(key);
    // Members past their time go here too (a user who never lists their sessions).
    await this.c.up().zremrangebyscore(k, '-inf', Date.now());
    await this.c.up().zadd(k, until, member);
    // The key lives as long as its latest member.
    const last = await this.c.up().zrange(k, '-1', '-1', 'WITHSCORES');
    await this.c.up().pexpireat(k, Math.max(until, Number(last[1] ?? until)));
  }

  async indexRemove(key: string, ...members: string[]): Promise<void> {
    if (members.length > 0) await this.c.up().zrem(this.indexKey(key), ...members);
  }

  async indexMembers(key: string, now: number): Promise<string[]> {
    const k = this.indexKey(key);
    await this.c.up().zremrangebyscore(k, '-inf', now);
    return this.c.up().zrange(k, '0', '-1');
  }
}
