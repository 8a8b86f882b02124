/**
 * Small values with a TTL and small indexes in memory. Contract: `kv.contract.test.ts`.
 */
import type { KeyValue } from './kv.ts';
import type { MemoryLife } from './memory-life.ts';

export class MemoryKeyValue implements KeyValue {
  private readonly kv = new Map<string, { value: string; expiresAt: number }>();
  /** Small indexes: member → epoch ms it stays until. */
  private readonly indexes = new Map<string, Map<string, number>>();

  constructor(private readonly life: MemoryLife) {}


  private live(key: string): string | null {
    const v = this.kv.get(key);
    if (!v) return null;
    if (v.expiresAt <= this.life.now()) {
      this.kv.delete(key);
      return null;
    }
    return v.value;
  }

  async setNX(key: string, value: string, ttlMs: number): Promise<boolean> {
    this.life.check();
    if (this.live(key) !== null) return false;
    this.kv.set(key, { value, expiresAt: this.life.now() + ttlMs });
    return true;
  }

  async set(key: string, value: string, ttlMs?: number): Promise<void> {
    this.life.check();
    this.kv.set(key, { value, expiresAt: ttlMs === undefined ? Infinity : this.life.now() + ttlMs });
  }

  async get(key: string): Promise<string | null> {
    this.life.check();
    return this.live(key);
  }

  async del(key: string): Promise<void> {
    this.life.check();
    this.kv.delete(key);
  }

  async indexAdd(key: string, member: string, until: number): Promise<void> {
    this.life.check();
    const m = this.indexes.get(key) ?? new Map<string, number>();
    for (const [x, t] of m) if (t <= this.life.now()) m.delete(x);
    m.set(member, until);
    this.indexes.set(key, m);
  }

  async indexRemove(key: string, ...members: string[]): Promise<void> {
    this.life.check();
    const m = this.indexes.get(key);
    for (const x of members) m?.delete(x);
    if (m?.size === 0) this.indexes.delete(key);
  }

  async indexMembers(key: string, now: number): Promise<string[]> {
    this.life.check();
    const m = this.indexes.get(key);
    if (!m) return [];
    // The key's own life (its latest member's time, as Redis expires it) counts too.
    const t = Math.max(now, this.life.now());
    for (const [x, until] of m) if (until <= t) m.delete(x);
    if (m.size === 0) this.indexes.delete(key);
    return [...m.entries()].sort((a, b) => a[1] - b[1]).map(([x]) => x);
  }
}
