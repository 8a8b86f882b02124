/**
 * The permission book: calling permissions in the store's kv space, one JSON record per
 * (business number, user) under `perm:<from>|<user>` (`server/store/README.md`), written
 * under a short per-pair lock (`perm-lock:<from>|<user>`) so a request and a reply
 * handled at the same moment (two nodes, two workers) do not overwrite each other.
 */
import { randomUUID } from 'node:crypto';
import type { Permission } from '../../shared/protocol.ts';
import type { Logger } from '../log/logger.ts';
import type { Store } from '../store/store.ts';
import { toView, ttlFor, type StoredPermission } from './model.ts';

const LOCK_TTL_MS = 5_000;
const LOCK_POLL_MS = 15;

export const permissionKey = (from: string, user: string) => `perm:${from}|${user}`;
const lockKey = (from: string, user: string) => `perm-lock:${from}|${user}`;

export class PermissionBook {
  constructor(
    private readonly store: Store,
    private readonly log: Logger,
    readonly now: () => number = Date.now,
  ) {}

  /** The stored record, or undefined (absent or unreadable). */
  async read(from: string, user: string): Promise<StoredPermission | undefined> {
    const raw = await this.store.get(permissionKey(from, user));
    if (raw === null) return undefined;
    try {
      const rec = JSON.parse(raw) as StoredPermission;
      return rec && typeof rec === 'object' && typeof rec.state === 'string' ? rec : undefined;
    } catch {
      this.log.warn({ from, user }, 'unreadable permission record ignored');
      return undefined;
    }
  }

  /** What readers are shown: `unknown` without a record, `expired` computed now. */
  async get(from: string, user: string): Promise<Permission> {
    return toView(await this.read(from, user), from, user, this.now());
  }

  /**
   * Read, change and write one record under its lock. `change` returns the record to store,
   * or undefined to leave it as it is. Resolves to what was stored (undefined: unchanged).
   */
  async update(from: string, user: string, change: (cur: StoredPermission | undefined) => StoredPermission | undefined): Promise<StoredPermission | undefined> {
    const release = await this.lock(from, user);
    try {
      const next = change(await this.read(from, user));
      if (!next) return undefined;
      await this.store.set(permissionKey(from, user), JSON.stringify(next), ttlFor(next, this.now()));
      return next;
    } finally {
      await release();
    }
  }

  private async lock(from: string, user: string): Promise<() => Promise<void>> {
    const key = lockKey(from, user);
    const token = randomUUID();
    // A holder that died leaves the lock to its TTL: waiting a little longer than that always ends.
    const giveUpAt = Date.now() + LOCK_TTL_MS + 1_000;
    while (!(await this.store.setNX(key, token, LOCK_TTL_MS))) {
      if (Date.now() > giveUpAt) throw new Error(`permission record ${from}|${user} stayed locked`);
      await new Promise((r) => setTimeout(r, LOCK_POLL_MS));
    }
    return async () => {
      if ((await this.store.get(key)) === token) await this.store.del(key);
    };
  }
}
