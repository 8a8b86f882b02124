/**
 * Users and password hashes. The users file (USERS_FILE) is JSON:
 *
 * ```json
 * { "users": [ { "name": "alice", "roles": ["agent"], "passwordHash": "scrypt$16384$8$1$<salt>$<hash>" } ] }
 * ```
 *
 * Only scrypt hashes are stored (salt and cost parameters inside the string, so the cost
 * can be raised later without breaking old entries). Add users with `add-user.ts`.
 */
import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { Role, type User } from '../../shared/protocol.ts';

const scrypt = (pw: string, salt: Buffer, len: number, o: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) => scryptCb(pw, salt, len, o, (err, key) => (err ? reject(err) : resolve(key))));

const COST = { N: 16384, r: 8, p: 1 } as const;
const KEYLEN = 32;

export const UserEntry = z.object({
  name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'names are 1-64 letters, digits, dot, dash or underscore'),
  roles: z.array(Role).min(1),
  passwordHash: z.string().startsWith('scrypt$'),
});
export type UserEntry = z.infer<typeof UserEntry>;
export const UsersFile = z.object({ users: z.array(UserEntry) });

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEYLEN, { ...COST, maxmem: 64 * 1024 * 1024 });
  return `scrypt$${COST.N}$${COST.r}$${COST.p}$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  const salt = Buffer.from(parts[4]!, 'base64url');
  const expected = Buffer.from(parts[5]!, 'base64url');
  if (!Number.isInteger(N) || N < 2 || expected.length === 0) return false;
  const key = await scrypt(password, salt, expected.length, { N, r, p, maxmem: 256 * 1024 * 1024 });
  return timingSafeEqual(key, expected);
}

/**
 * One account as the directory holds it: from USERS_FILE, or from the database (the admin
 * page's users; SSO-only users have no password hash). A disabled account cannot log in
 * and its sessions are refused.
 */
export interface Account {
  name: string;
  roles: User['roles'];
  passwordHash?: string | undefined;
  enabled?: boolean | undefined;
  /** `<issuer>|<sub>` of the linked OpenID identity. */
  ssoSubject?: string | undefined;
}

/**
 * The user directory: looked up by name. From USERS_FILE it is read once at start; with
 * the database it is replaced (`replace`) whenever an admin changes a user, on every node.
 */
export class Users {
  private byName: Map<string, Account>;
  private bySso: Map<string, string>;
  /** Verified against when the name is unknown, so both failures cost the same time. */
  private readonly decoy: string;

  constructor(entries: readonly Account[], decoy: string) {
    this.decoy = decoy;
    this.byName = new Map();
    this.bySso = new Map();
    this.replace(entries);
  }

  /** The directory now holds exactly `entries` (the admin page changed something). */
  replace(entries: readonly Account[]): void {
    this.byName = new Map(entries.map((u) => [u.name, { ...u, roles: [...u.roles] }]));
    this.bySso = new Map(entries.flatMap((u) => (u.ssoSubject ? [[u.ssoSubject, u.name] as const] : [])));
  }

  /** Every account as held (the seed of an empty database). */
  accounts(): Account[] {
    return [...this.byName.values()].map((u) => ({ ...u, roles: [...u.roles] }));
  }

  /** An enabled user by name (a disabled one is no user for sessions and routes). */
  get(name: string): User | undefined {
    const u = this.byName.get(name);
    return u && u.enabled !== false ? { name: u.name, roles: [...u.roles] } : undefined;
  }

  /** True when `name` is an account that an admin disabled. */
  isDisabled(name: string): boolean {
    return this.byName.get(name)?.enabled === false;
  }

  /** The account linked to an OpenID identity (`<issuer>|<sub>`), enabled or not. */
  nameOfSso(subject: string): string | undefined {
    return this.bySso.get(subject);
  }

  /** Whether an account of this name exists (enabled or not). */
  has(name: string): boolean {
    return this.byName.has(name);
  }

  /**
   * The stored password hash of `name` (sessions keep its fingerprint); `''` for an account
   * without a password (SSO only); undefined for no account.
   */
  passwordHashOf(name: string): string | undefined {
    const u = this.byName.get(name);
    return u ? (u.passwordHash ?? '') : undefined;
  }

  list(): User[] {
    return [...this.byName.values()].map((u) => ({ name: u.name, roles: [...u.roles] }));
  }

  /**
   * The user when the password is right, disabled or not (the login says "disabled" only
   * to who knows the password); undefined otherwise (same answer for an unknown name).
   */
  async check(name: string, password: string): Promise<User | undefined> {
    const u = this.byName.get(name);
    const ok = await verifyPassword(password, u?.passwordHash ?? this.decoy);
    return ok && u ? { name: u.name, roles: [...u.roles] } : undefined;
  }
}

export async function usersFromEntries(entries: readonly Account[]): Promise<Users> {
  return new Users(entries, await hashPassword(randomBytes(12).toString('hex')));
}

/** Read and validate USERS_FILE; errors name the file and never echo hashes. */
export async function loadUsersFile(file: string): Promise<Users> {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`USERS_FILE: cannot read ${file}: ${(err as Error).message}`);
  }
  const r = UsersFile.safeParse(raw);
  if (!r.success) {
    const i = r.error.issues[0];
    throw new Error(`USERS_FILE: ${file}: ${i ? `${i.path.join('.')}: ${i.message}` : 'invalid'}`);
  }
  return usersFromEntries(r.data.users);
}

/** Demo mode's users: the password of each is its name. */
export const DEMO_USERS: ReadonlyArray<{ name: string; roles: User['roles'] }> = [
  { name: 'agent1', roles: ['agent'] },
  { name: 'agent2', roles: ['agent'] },
  { name: 'supervisor', roles: ['supervisor', 'agent'] },
  { name: 'ops', roles: ['ops'] },
];

export async function demoUsers(): Promise<Users> {
  const entries = await Promise.all(DEMO_USERS.map(async (u) => ({ ...u, roles: [...u.roles], passwordHash: await hashPassword(u.name) })));
  return usersFromEntries(entries);
}
