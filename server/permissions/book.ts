/**
 * The permission book: calling permissions in the store's kv space, one JSON record per
 * (business number, user) under `perm:<from>|<user>` (`server/store/README.md`), written
 * under a short per-pair lock (`perm-lock:<from>|<user>`) so a request and a reply
 * handled at the same moment (two nodes, two workers) do not overwrite each other. The
 * request ration is a store slot key per pair (`slot:perm:<from>|<user>`), checked and
 * taken in one atomic step before a request is sent.
 */
import { randomUUID } from 'node:crypto';
import type { Permission } from '../../shared/protocol.ts';
import type { Logger } from '../log/logger.ts';
import { UNANSWERED_REVOKE_AT } from './budget.ts';
import type { KeyValue } from '../store/kv.ts';
import type { Rations } from '../store/rations.ts';
import { RATION, toView, ttlFor, type StoredPermission } from './model.ts';

const LOCK_TTL_MS = 5_000;
const LOCK_POLL_MS = 15;

export const permissionKey = (from: string, user: string) => `perm:${from}|${user}`;
const lockKey = (from: string, user: string) => `perm-lock:${from}|${user}`;
const rationKey = (from: string, user: string) => `perm:${from}|${user}`;
const callsKey = (from: string, user: string) => `perm-calls:${from}|${user}`;
/** How long a pair's call outcomes are kept after the last one (the unanswered run has no published end). */
export const CALL_OUTCOMES_TTL_MS = 30 * 24 * 3600 * 1000;

export class PermissionBook {
  constructor(
    private readonly store: KeyValue & Rations,
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

  /**
   * Take one request slot of the ration (1 per 24 h, 2 per 7 days) for this business number
   * and user, in one atomic store step shared by every node: of parallel requests only as
   * many as the ration allows get `ok`. Refused: the rule and when the next may be sent.
   */
  async reserveRequest(from: string, user: string, slotId: string, now: number): Promise<{ ok: true } | { ok: false; rule: string; nextAt: number }> {
    const r = await this.store.reserveSlot(rationKey(from, user), slotId, now, RATION);
    return r.ok ? r : { ok: false, rule: RATION[r.window]?.rule ?? 'the request ration', nextAt: r.retryAt };
  }

  /** Give a slot back: the request it was taken for surely did not reach the user. */
  async releaseRequest(from: string, user: string, slotId: string): Promise<void> {
    await this.store.releaseSlot(rationKey(from, user), slotId);
  }

  /** A business-initiated call to `user` from `from` connected or rang out unanswered (repeats of one call change nothing). */
  async recordCall(from: string, user: string, wacid: string, outcome: 'connected' | 'unanswered', at: number): Promise<void> {
    await this.store.recordCallOutcome(callsKey(from, user), wacid, outcome, at, CALL_OUTCOMES_TTL_MS);
  }

  /**
   * The call facts of the permission budget: connected calls, and the unanswered run. A run
   * that revoked the permission is used up by it (as at the Service): when the user allowed
   * calls again after it, only the unanswered calls since that grant count.
   */
  async callFacts(from: string, user: string, permission: Pick<Permission, 'state' | 'updatedAt'>): Promise<{ connectedCalls: number[]; unansweredInARow: number }> {
    const { connected, unanswered } = await this.store.callOutcomes(callsKey(from, user));
    const beforeGrant = permission.state === 'granted' ? unanswered.filter((t) => t <= permission.updatedAt).length : 0;
    const run = beforeGrant >= UNANSWERED_REVOKE_AT ? unanswered.length - beforeGrant : unanswered.length;
    return { connectedCalls: connected, unansweredInARow: run };
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
