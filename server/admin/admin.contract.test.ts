/**
 * The directory's tables on both engines (PostgreSQL: a database of its own, dropped
 * afterwards; PGlite: a temporary directory): migrating from the schema before them keeps
 * every row; the seed fills empty tables once and never writes over the product's
 * changes; every administration action writes exactly one audit row with no secret in
 * it; broken rules are 400s naming the field; the last admin stays; and a change made
 * through one node's directory reaches another node's within moments over pub/sub.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuditInput } from '../audit/schema.ts';
import { usersFromEntries, hashPassword, type Users } from '../auth/users.ts';
import { pickAgent, type AgentView } from '../calls/routing.ts';
import { MIGRATIONS, migrate } from '../history/migrations.ts';
import type { Db } from '../history/db.ts';
import { createLogger } from '../log/logger.ts';
import { HttpError } from '../ops/errors.ts';
import { MemoryStore } from '../store/memory.ts';
import { pgliteEngine, postgresEngine, type HistoryEngine } from '../../test/support/history.ts';
import { until } from '../../test/support/wait.ts';
import { Directory } from './directory.ts';
import { Admin, type Actor } from './service.ts';
import { AdminStore, importSeed, publicView } from './store.ts';

const log = createLogger({ level: 'silent' });
const boss: Actor = { name: 'root', address: '127.0.0.1' };

async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof HttpError) return `${err.status} ${err.message}`;
    throw err;
  }
  throw new Error('not refused');
}

describe.each([
  ['PostgreSQL', postgresEngine],
  ['PGlite', pgliteEngine],
])('administration tables: %s', (_name, makeEngine) => {
  let engine: HistoryEngine;
  let db: Db;
  let users: Users;
  let directory: Directory;
  let admin: Admin;
  const rows: AuditInput[] = [];
  const ended: string[] = [];
  const pubsub = new MemoryStore();
  let hash: string;

  beforeAll(async () => {
    engine = makeEngine();
    db = await engine.open();
    // The schema before the directory's tables, with rows in it.
    await migrate(
      db,
      MIGRATIONS.filter((m) => m.version <= 5),
    );
    await db.query(`INSERT INTO history_calls (wacid, phone_id, direction, outcome, outcome_rank, received_at) VALUES ('w-old', 'p1', 'inbound', 'answered', 1, now())`);
    await db.query(`INSERT INTO audit_log (id, at, actor, action) VALUES ('a-old', now(), 'alice', 'login.success')`);
    // Every migration after 5 applies, the directory's (6, 7) among them.
    const applied = await migrate(db);
    expect(applied).toEqual(MIGRATIONS.filter((m) => m.version > 5).map((m) => m.version));
    expect(applied).toEqual(expect.arrayContaining([6, 7]));
    hash = await hashPassword('correct horse battery');
    users = await usersFromEntries([
      { name: 'root', roles: ['admin'], passwordHash: hash },
      { name: 'alice', roles: ['agent'], passwordHash: hash },
      { name: 'bob', roles: ['agent', 'supervisor'], passwordHash: hash },
    ]);
    directory = new Directory({
      store: new AdminStore(db),
      pubsub,
      users,
      seed: { users: users.accounts(), queues: [{ name: 'default', numbers: ['*'], members: [{ agent: 'alice', priority: 1 }, { agent: 'ghost', priority: 1 }] }] },
      log,
    });
    await directory.start();
    admin = new Admin({
      store: new AdminStore(db),
      directory,
      audit: (r) => rows.push(r),
      endSessions: async (n) => {
        ended.push(n);
        return 1;
      },
    });
  });
  afterAll(async () => {
    await directory?.close();
    await engine?.cleanup();
  });

  it('migrating from the schema before keeps every row', async () => {
    expect(await db.query('SELECT wacid FROM history_calls')).toEqual([{ wacid: 'w-old' }]);
    expect(await db.query('SELECT id FROM audit_log')).toEqual([{ id: 'a-old' }]);
  });

  it('the seed fills the empty tables (unknown queue members left out), once', async () => {
    const d = publicView(directory.current);
    expect(d.users.map((u) => [u.name, u.roles, u.enabled, u.hasPassword])).toEqual([
      ['alice', ['agent'], true, true],
      ['bob', ['agent', 'supervisor'], true, true],
      ['root', ['admin'], true, true],
    ]);
    expect(d.queues).toEqual([{ name: 'default', numbers: ['*'], members: [{ agent: 'alice', priority: 1 }] }]);
    expect(JSON.stringify(d)).not.toContain('scrypt');
    expect(await importSeed(db, { users: [{ name: 'zed', roles: ['agent'] }], queues: [{ name: 'other', numbers: ['p7'], members: [] }] })).toEqual({ users: 0, queues: 0 });
  });

  it('each action writes exactly one audit row, with no password, hash or session in it', async () => {
    const cases: Array<[string, () => Promise<unknown>, string]> = [
      ['skill.added', () => admin.putSkill(boss, { name: 'french', description: 'speaks French' }, true), 'french'],
      ['skill.updated', () => admin.putSkill(boss, { name: 'french', description: 'French callers' }, false), 'french'],
      ['team.added', () => admin.putTeam(boss, { name: 'north', displayName: 'North' }, true), 'north'],
      ['team.updated', () => admin.putTeam(boss, { name: 'north', displayName: 'North desk' }, false), 'north'],
      ['user.added', () => admin.addUser(boss, { name: 'carol', roles: ['agent'], teams: ['north'], skills: { french: 4 }, password: 'a fine password' }), 'carol'],
      ['user.updated', () => admin.updateUser(boss, 'carol', { displayName: 'Carol C', skills: { french: 6 } }), 'carol'],
      ['queue.added', () => admin.putQueue(boss, { name: 'sales', numbers: ['p1'], members: [{ agent: 'carol', priority: 1 }], overflowTo: 'default', overflowAfterS: 10, skill: 'french', skillLevel: 3 }, true), 'sales'],
      ['queue.updated', () => admin.putQueue(boss, { name: 'sales', numbers: ['p1', 'p2'], members: [{ agent: 'carol', priority: 2 }, { agent: 'alice', priority: 1 }] }, false), 'sales'],
      ['user.password-reset', () => admin.resetPassword(boss, 'carol'), 'carol'],
      ['user.disabled', () => admin.updateUser(boss, 'carol', { enabled: false }), 'carol'],
      ['user.enabled', () => admin.updateUser(boss, 'carol', { enabled: true }), 'carol'],
      ['queue.removed', () => admin.removeQueue(boss, 'sales'), 'sales'],
      ['user.removed', () => admin.removeUser(boss, 'carol'), 'carol'],
      ['team.removed', () => admin.removeTeam(boss, 'north'), 'north'],
      ['skill.removed', () => admin.removeSkill(boss, 'french'), 'french'],
    ];
    const secrets: string[] = [hash];
    for (const [action, run, subject] of cases) {
      const before = rows.length;
      const out = (await run()) as { password?: string } | undefined;
      if (out?.password) secrets.push(out.password);
      expect(rows.slice(before), action).toEqual([expect.objectContaining({ action, actor: 'root', subject, address: '127.0.0.1' })]);
    }
    const text = JSON.stringify(rows);
    for (const s of [...secrets, 'a fine password', 'scrypt$']) expect(text).not.toContain(s);
    expect(rows.find((r) => r.action === 'user.updated')!.detail).toEqual({ changed: ['displayName', 'skills'], 'displayName.before': '', 'displayName.after': 'Carol C', 'skills.before': ['french:4'], 'skills.after': ['french:6'] });
    // Disabling, resetting and removing ended the user's sessions.
    expect(ended).toEqual(['carol', 'carol', 'carol']);
  });

  it('a password made by the server is shown once and works; a disabled user is refused', async () => {
    const { password } = await admin.addUser(boss, { name: 'dan', roles: ['agent'] });
    expect(password).toMatch(/^[A-Za-z0-9_-]{16}$/);
    expect(await users.check('dan', password!)).toEqual({ name: 'dan', roles: ['agent'] });
    await admin.updateUser(boss, 'dan', { enabled: false });
    expect(users.get('dan')).toBeUndefined();
    expect(users.isDisabled('dan')).toBe(true);
  });

  it('bad input is a 400 naming the field', async () => {
    expect(await refusal(admin.addUser(boss, { name: 'alice', roles: ['agent'] }))).toBe('400 name: a user named "alice" exists already');
    expect(await refusal(admin.addUser(boss, { name: 'eve', roles: ['agent'], teams: ['nowhere'] }))).toBe('400 teams: no team "nowhere"; add it first');
    expect(await refusal(admin.putQueue(boss, { name: 'q2', numbers: ['*'], members: [{ agent: 'alice', priority: 1 }] }, true))).toBe('400 numbers: "*" is taken by queue "default"');
    expect(await refusal(admin.putQueue(boss, { name: 'q2', numbers: ['p9'], members: [{ agent: 'root', priority: 1 }] }, true))).toBe('400 members.0.agent: "root" does not have the role agent');
    expect(await refusal(admin.putQueue(boss, { name: 'q2', numbers: ['p9'], members: [{ agent: 'alice', priority: 1 }], overflowTo: 'none', overflowAfterS: 5 }, true))).toBe('400 overflowTo: no queue "none"');
    expect(await refusal(admin.updateUser(boss, 'nobody', { enabled: false }))).toBe('404 name: no user "nobody"');
  });

  it('the last enabled admin cannot be disabled, demoted or removed; with a second admin they can', async () => {
    expect(await refusal(admin.updateUser(boss, 'root', { enabled: false }))).toBe('400 enabled: "root" is the last enabled admin; make another user admin first');
    expect(await refusal(admin.updateUser(boss, 'root', { roles: ['agent'] }))).toBe('400 roles: "root" is the last enabled admin; make another user admin first');
    expect(await refusal(admin.removeUser(boss, 'root'))).toBe('400 name: "root" is the last enabled admin; make another user admin first');
    await admin.updateUser(boss, 'bob', { roles: ['agent', 'supervisor', 'admin'] });
    await admin.updateUser(boss, 'root', { roles: ['ops'] });
    expect(users.get('root')).toEqual({ name: 'root', roles: ['ops'] });
  });

  it("another node's directory sees a change within moments (pub/sub), and routes by it", async () => {
    const other = await usersFromEntries([]);
    const b = new Directory({ store: new AdminStore(db), pubsub, users: other, seed: { users: [], queues: [] }, log, reloadEveryMs: 3_600_000 });
    await b.start();
    try {
      const agent = (name: string): AgentView => ({ name, presence: 'available', connected: true, idleSince: 0, wrapUntil: 0 });
      const call = { phoneId: 'p5', declined: [], createdAt: 0 };
      expect(pickAgent(call, [agent('erin')], b.queues, 1)).toBeUndefined();
      await admin.addUser(boss, { name: 'erin', roles: ['agent'], password: 'erin password' });
      await admin.putQueue(boss, { name: 'support', numbers: ['p5'], members: [{ agent: 'erin', priority: 1 }] }, true);
      const t0 = Date.now();
      await until('the new agent and queue on the other node', () => other.get('erin') !== undefined && pickAgent(call, [agent('erin'), agent('alice')], b.queues, 1) === 'erin', 2_000);
      expect(Date.now() - t0).toBeLessThan(2_000);
      await admin.updateUser(boss, 'erin', { enabled: false });
      await until('the disabled agent gone on the other node', () => other.get('erin') === undefined && pickAgent(call, [agent('erin')], b.queues, 1) === undefined, 2_000);
    } finally {
      await b.close();
    }
  });
});
