/**
 * The directory's tables (migrations 6 and 7 in server/history: `admin_users`,
 * `admin_teams`, `admin_team_members`, `admin_skills`, `admin_user_skills`,
 * `admin_queues`, `admin_queue_members`): read all at once (they are small: every node
 * holds them in memory), and each change in one transaction.
 */
import type { Role } from '../../shared/protocol.ts';
import type { AdminDirectory, AdminQueue, AdminSkill, AdminTeam, AdminUser } from '../../shared/admin.ts';

interface Sql {
  query<T = Record<string, unknown>>(text: string, params?: unknown[]): Promise<T[]>;
}
/** The statements the directory needs, as the history database (server/history/db.ts `Db`) offers them. */
export interface AdminDb extends Sql {
  tx<T>(fn: (sql: Sql) => Promise<T>): Promise<T>;
}

/** A user as stored: the page's fields plus what only the server reads. */
export interface StoredUser extends AdminUser {
  passwordHash?: string;
  ssoSubject?: string;
}
export interface Stored {
  users: StoredUser[];
  teams: AdminTeam[];
  skills: AdminSkill[];
  queues: AdminQueue[];
}

/** A new or changed user as written (membership lists replace the stored ones). */
export type UserWrite = Pick<AdminUser, 'name' | 'displayName' | 'email' | 'roles' | 'enabled' | 'teams' | 'skills'> & {
  /** undefined: unchanged (on update); null: none. */
  passwordHash?: string | null;
  ssoSubject?: string | null;
};

/** Teams and skills: their table and their one text column. */
const NAMED = { team: ['admin_teams', 'display_name'], skill: ['admin_skills', 'description'] } as const;

type UserRow = { name: string; display_name: string; email: string; roles: string[]; enabled: boolean; password_hash: string | null; sso_subject: string | null };
type QueueRow = { name: string; numbers: string[]; ring_timeout_s: number | null; overflow_to: string | null; overflow_after_s: number | null; skill: string | null; skill_level: number | null };

export class AdminStore {
  constructor(readonly db: AdminDb) {}

  /** Whether no user is stored yet (the seed imports USERS_FILE then). */
  async empty(): Promise<{ users: boolean; queues: boolean }> {
    const [r] = await this.db.query<{ u: boolean; q: boolean }>('SELECT NOT EXISTS (SELECT 1 FROM admin_users) AS u, NOT EXISTS (SELECT 1 FROM admin_queues) AS q');
    return { users: r!.u, queues: r!.q };
  }

  /** Everything, in one consistent read. */
  async load(): Promise<Stored> {
    return this.db.tx(async (sql) => {
      const users = await sql.query<UserRow>('SELECT name, display_name, email, roles, enabled, password_hash, sso_subject FROM admin_users ORDER BY name');
      const teams = await sql.query<{ name: string; display_name: string }>('SELECT name, display_name FROM admin_teams ORDER BY name');
      const members = await sql.query<{ team: string; user_name: string }>('SELECT team, user_name FROM admin_team_members ORDER BY team');
      const skills = await sql.query<{ name: string; description: string }>('SELECT name, description FROM admin_skills ORDER BY name');
      const levels = await sql.query<{ user_name: string; skill: string; level: number }>('SELECT user_name, skill, level FROM admin_user_skills ORDER BY skill');
      const queues = await sql.query<QueueRow>('SELECT name, numbers, ring_timeout_s, overflow_to, overflow_after_s, skill, skill_level FROM admin_queues ORDER BY name');
      const queueMembers = await sql.query<{ queue: string; user_name: string; priority: number }>('SELECT queue, user_name, priority FROM admin_queue_members ORDER BY priority, user_name');
      const qs: AdminQueue[] = queues.map((q) => ({
        name: q.name,
        numbers: q.numbers,
        members: queueMembers.filter((m) => m.queue === q.name).map((m) => ({ agent: m.user_name, priority: m.priority })),
        ...(q.ring_timeout_s !== null ? { ringTimeoutS: q.ring_timeout_s } : {}),
        ...(q.overflow_to !== null && q.overflow_after_s !== null ? { overflowTo: q.overflow_to, overflowAfterS: q.overflow_after_s } : {}),
        ...(q.skill !== null ? { skill: q.skill, ...(q.skill_level !== null ? { skillLevel: q.skill_level } : {}) } : {}),
      }));
      return {
        users: users.map((u) => ({
          name: u.name,
          displayName: u.display_name,
          email: u.email,
          roles: u.roles as Role[],
          enabled: u.enabled,
          teams: members.filter((m) => m.user_name === u.name).map((m) => m.team),
          skills: Object.fromEntries(levels.filter((l) => l.user_name === u.name).map((l) => [l.skill, l.level])),
          queues: Object.fromEntries(queueMembers.filter((m) => m.user_name === u.name).map((m) => [m.queue, m.priority])),
          hasPassword: u.password_hash !== null,
          sso: u.sso_subject !== null,
          ...(u.password_hash !== null ? { passwordHash: u.password_hash } : {}),
          ...(u.sso_subject !== null ? { ssoSubject: u.sso_subject } : {}),
        })),
        teams: teams.map((t) => ({ name: t.name, displayName: t.display_name })),
        skills: skills.map((s) => ({ name: s.name, description: s.description })),
        queues: qs,
      };
    });
  }

  /** Add a user; false when the name (or the SSO identity) is taken. */
  async addUser(u: UserWrite): Promise<boolean> {
    return this.db.tx(async (sql) => {
      const rows = await sql.query(
        `INSERT INTO admin_users (name, display_name, email, roles, enabled, password_hash, sso_subject) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT DO NOTHING RETURNING name`,
        [u.name, u.displayName, u.email, u.roles, u.enabled, u.passwordHash ?? null, u.ssoSubject ?? null],
      );
      if (rows.length === 0) return false;
      await this.memberships(sql, u);
      return true;
    });
  }

  /** Change a user (every field of `u`; the hash and SSO link only when given); false when there is none. */
  async updateUser(u: UserWrite): Promise<boolean> {
    return this.db.tx(async (sql) => {
      const params: unknown[] = [u.name, u.displayName, u.email, u.roles, u.enabled];
      const extra: string[] = [];
      if (u.passwordHash !== undefined) extra.push(`password_hash = $${params.push(u.passwordHash)}`);
      if (u.ssoSubject !== undefined) extra.push(`sso_subject = $${params.push(u.ssoSubject)}`);
      const rows = await sql.query(
        `UPDATE admin_users SET display_name = $2, email = $3, roles = $4, enabled = $5, updated_at = now()${extra.map((e) => `, ${e}`).join('')} WHERE name = $1 RETURNING name`,
        params,
      );
      if (rows.length === 0) return false;
      await sql.query('DELETE FROM admin_team_members WHERE user_name = $1', [u.name]);
      await sql.query('DELETE FROM admin_user_skills WHERE user_name = $1', [u.name]);
      await this.memberships(sql, u);
      return true;
    });
  }

  private async memberships(sql: Sql, u: UserWrite): Promise<void> {
    for (const t of u.teams) await sql.query('INSERT INTO admin_team_members (team, user_name) VALUES ($1, $2)', [t, u.name]);
    for (const [skill, level] of Object.entries(u.skills)) await sql.query('INSERT INTO admin_user_skills (user_name, skill, level) VALUES ($1, $2, $3)', [u.name, skill, level]);
  }

  async removeUser(name: string): Promise<boolean> {
    return (await this.db.query('DELETE FROM admin_users WHERE name = $1 RETURNING name', [name])).length > 0;
  }

  /** Add or change a team (its display name) or a skill (its description); `create`: false when it exists, else false when it does not. */
  async putNamed(kind: 'team' | 'skill', name: string, text: string, create: boolean): Promise<boolean> {
    const [table, column] = NAMED[kind];
    const rows = create
      ? await this.db.query(`INSERT INTO ${table} (name, ${column}) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING name`, [name, text])
      : await this.db.query(`UPDATE ${table} SET ${column} = $2 WHERE name = $1 RETURNING name`, [name, text]);
    return rows.length > 0;
  }

  async removeNamed(kind: 'team' | 'skill', name: string): Promise<boolean> {
    return (await this.db.query(`DELETE FROM ${NAMED[kind][0]} WHERE name = $1 RETURNING name`, [name])).length > 0;
  }

  /** Add or change a queue with its members (`create`: false when it exists). */
  async putQueue(q: AdminQueue, create: boolean): Promise<boolean> {
    return this.db.tx(async (sql) => {
      const params = [q.name, q.numbers, q.ringTimeoutS ?? null, q.overflowTo ?? null, q.overflowAfterS ?? null, q.skill ?? null, q.skillLevel ?? null];
      const rows = create
        ? await sql.query(
            'INSERT INTO admin_queues (name, numbers, ring_timeout_s, overflow_to, overflow_after_s, skill, skill_level) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING RETURNING name',
            params,
          )
        : await sql.query('UPDATE admin_queues SET numbers = $2, ring_timeout_s = $3, overflow_to = $4, overflow_after_s = $5, skill = $6, skill_level = $7 WHERE name = $1 RETURNING name', params);
      if (rows.length === 0) return false;
      await sql.query('DELETE FROM admin_queue_members WHERE queue = $1', [q.name]);
      for (const m of q.members) await sql.query('INSERT INTO admin_queue_members (queue, user_name, priority) VALUES ($1, $2, $3)', [q.name, m.agent, m.priority]);
      return true;
    });
  }

  async removeQueue(name: string): Promise<boolean> {
    return (await this.db.query('DELETE FROM admin_queues WHERE name = $1 RETURNING name', [name])).length > 0;
  }
}

/** The page's view of a stored directory: no hash, no SSO subject. */
export function publicView(d: Stored): AdminDirectory {
  return { ...d, users: d.users.map(({ passwordHash: _p, ssoSubject: _s, ...u }) => u) };
}

/** What the seed imports (USERS_FILE's users, QUEUES_FILE's queues). */
export interface Seed {
  users: Array<{ name: string; roles: Role[]; passwordHash?: string | undefined }>;
  queues: AdminQueue[];
}

/** Any constant: the advisory lock of the seed (nodes starting together seed once). */
const SEED_LOCK = 7_142_003_006;

/**
 * Import the seed into empty tables, in one transaction under a lock: users when no user
 * is stored, queues when no queue is (never over what the admin page changed). Answers
 * what was imported.
 */
export async function importSeed(db: AdminDb, seed: Seed): Promise<{ users: number; queues: number }> {
  return db.tx(async (sql) => {
    await sql.query('SELECT pg_advisory_xact_lock($1)', [SEED_LOCK]);
    const [e] = await sql.query<{ u: boolean; q: boolean }>('SELECT NOT EXISTS (SELECT 1 FROM admin_users) AS u, NOT EXISTS (SELECT 1 FROM admin_queues) AS q');
    let users = 0;
    let queues = 0;
    if (e!.u) {
      for (const u of seed.users) {
        await sql.query('INSERT INTO admin_users (name, roles, password_hash) VALUES ($1, $2, $3)', [u.name, u.roles, u.passwordHash ?? null]);
        users++;
      }
    }
    if (e!.q && seed.queues.length > 0) {
      const known = new Set((await sql.query<{ name: string }>('SELECT name FROM admin_users')).map((r) => r.name));
      for (const q of seed.queues) {
        await sql.query('INSERT INTO admin_queues (name, numbers) VALUES ($1, $2)', [q.name, q.numbers]);
        for (const m of q.members) if (known.has(m.agent)) await sql.query('INSERT INTO admin_queue_members (queue, user_name, priority) VALUES ($1, $2, $3)', [q.name, m.agent, m.priority]);
        queues++;
      }
    }
    return { users, queues };
  });
}
