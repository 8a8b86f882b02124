/**
 * Users-file changes between starts become audit rows (real store, real trail on PGlite):
 * nothing on the first start, then one row per added, removed, re-roled or re-passworded
 * user; the rows never hold the hash.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openTestHistory, type TestHistory } from '../../test/support/history.ts';
import { AuditStore } from '../audit/store.ts';
import { AuditTrail } from '../audit/trail.ts';
import { createLogger } from '../log/logger.ts';
import { MemoryStore } from '../store/memory.ts';
import { recordUserChanges } from './changes.ts';
import { hashPassword, usersFromEntries } from './users.ts';

const log = createLogger({ level: 'silent' });
let h: TestHistory;
beforeAll(async () => {
  h = await openTestHistory();
});
afterAll(async () => {
  await h?.close();
});

describe('users-file changes in the audit trail', () => {
  it('first start: none; then one row per change, as USERS_FILE, naming whose', async () => {
    const store = new MemoryStore();
    const audits = new AuditStore(h.db);
    const trail = new AuditTrail({ store: audits, log });
    const [a, b, b2] = await Promise.all([hashPassword('a-password-1'), hashPassword('b-password-1'), hashPassword('b-password-2')]);
    const start = async (entries: Parameters<typeof usersFromEntries>[0]) => {
      const n = await recordUserChanges({ users: await usersFromEntries(entries), store, audit: trail.record, log });
      await trail.flush();
      return n;
    };
    expect(await start([{ name: 'ann', roles: ['agent'], passwordHash: a }, { name: 'bob', roles: ['agent'], passwordHash: b }])).toBe(0);
    expect(await start([{ name: 'ann', roles: ['agent'], passwordHash: a }, { name: 'bob', roles: ['agent'], passwordHash: b }])).toBe(0);
    expect(
      await start([
        { name: 'bob', roles: ['agent', 'supervisor'], passwordHash: b2 },
        { name: 'cat', roles: ['ops'], passwordHash: a },
      ]),
    ).toBe(4);
    const rows = (await audits.search({ limit: 50, user: 'USERS_FILE' })).items.map((r) => [r.action, r.subject, r.detail]);
    expect(rows.sort()).toEqual(
      [
        ['user.added', 'cat', { roles: ['ops'] }],
        ['user.password-changed', 'bob', undefined],
        ['user.removed', 'ann', { roles: ['agent'] }],
        ['user.roles-changed', 'bob', { before: ['agent'], after: ['agent', 'supervisor'] }],
      ].sort(),
    );
    const text = JSON.stringify(await audits.search({ limit: 50 }));
    for (const hash of [a, b, b2]) expect(text).not.toContain(hash.split('$')[5]!);
    await trail.close();
  });
});
