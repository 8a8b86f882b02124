/**
 * Small values with a TTL (sessions, drafts, permission records, and locks: a lock is a
 * value taken with `setNX`) and small time-ordered indexes (a user's login sessions).
 * Keys are names in the key-value space (`session:<sid>`); the store turns them into its own
 * keys. Implemented by `redis-kv.ts` and `memory-kv.ts`; contract: `kv.contract.test.ts`.
 */
export interface KeyValue {
  /** Set iff absent. True if set. */
  setNX(key: string, value: string, ttlMs: number): Promise<boolean>;
  set(key: string, value: string, ttlMs?: number): Promise<void>;
  get(key: string): Promise<string | null>;
  del(key: string): Promise<void>;

  /** Add `member` to the index `key` until epoch ms `until` (again: its time is replaced). The index lives as long as its latest member. */
  indexAdd(key: string, member: string, until: number): Promise<void>;
  /** Remove members from an index. */
  indexRemove(key: string, ...members: string[]): Promise<void>;
  /** The members of an index whose time is after `now` (those past it are dropped). */
  indexMembers(key: string, now: number): Promise<string[]>;
}
