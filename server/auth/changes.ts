/**
 * Changes to the users file seen at start, into the audit trail (admin
 * changes). USERS_FILE is edited with `add-user.ts` (a password set or changed, roles given)
 * or by hand, and read once at start: each node compares what it loaded with what the
 * deployment last saw (store key `users-seen`: per name the roles and a SHA-256 of the
 * password hash — never the hash, never in a row) and records one row per change:
 * `user.added`, `user.removed`, `user.roles-changed` (before → after), `user.password-changed`.
 * The first start on a store records nothing (nothing to compare with). Nodes starting
 * together take turns on a lock, so each change is one row.
 */
import { createHash } from 'node:crypto';
import type { Audit } from '../audit/trail.ts';
import type { Logger } from '../log/logger.ts';
import type { KeyValue } from '../store/kv.ts';
import type { Users } from './users.ts';

const SEEN_KEY = 'users-seen';
const LOCK_KEY = 'users-seen-lock';

type Seen = Record<string, { roles: string[]; pw: string }>;

const digest = (hash: string | undefined) => createHash('sha256').update(hash ?? '').digest('base64url').slice(0, 22);

/** Record what changed in the users since the last start; resolves the number of rows recorded. */
export async function recordUserChanges(o: { users: Users; store: Pick<KeyValue, 'get' | 'set' | 'setNX' | 'del'>; audit: Audit; log: Pick<Logger, 'warn' | 'info'> }): Promise<number> {
  const now: Seen = {};
  for (const u of o.users.list()) now[u.name] = { roles: [...u.roles].sort(), pw: digest(o.users.passwordHashOf(u.name)) };
  if (!(await o.store.setNX(LOCK_KEY, '1', 30_000))) return 0;
  try {
    const raw = await o.store.get(SEEN_KEY);
    let before: Seen | undefined;
    try {
      before = raw === null ? undefined : (JSON.parse(raw) as Seen);
    } catch {
      before = undefined;
    }
    let n = 0;
    const row = (action: 'user.added' | 'user.removed' | 'user.roles-changed' | 'user.password-changed', name: string, detail?: Record<string, readonly string[]>) => {
      o.audit({ action, actor: 'USERS_FILE', subject: name, ...(detail ? { detail } : {}) });
      n++;
    };
    if (before) {
      for (const [name, u] of Object.entries(now)) {
        const was = before[name];
        if (!was) row('user.added', name, { roles: u.roles });
        else {
          if (was.roles.join(',') !== u.roles.join(',')) row('user.roles-changed', name, { before: was.roles, after: u.roles });
          if (was.pw !== u.pw) row('user.password-changed', name);
        }
      }
      for (const [name, was] of Object.entries(before)) if (!now[name]) row('user.removed', name, { roles: was.roles });
    }
    await o.store.set(SEEN_KEY, JSON.stringify(now));
    if (n > 0) o.log.info({ changes: n }, 'users changed since the last start: recorded in the audit trail');
    return n;
  } finally {
    await o.store.del(LOCK_KEY);
  }
}
