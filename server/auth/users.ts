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

/** The user directory: looked up by name, read once at start. */
export class Users {
  private readonly byName: Map<string, UserEntry>;
  /** Verified against when the name is unknown, so both failures cost the same time. */
  private readonly decoy: string;

  constructor(entries: readonly UserEntry[], decoy: string) {
    this.byName = new Map(entries.map((u) => [u.name, u]));
    this.decoy = decoy;
  }

  get(name: string): User | undefined {
    const u = this.byName.get(name);
    return u ? { name: u.name, roles: [...u.roles] } : undefined;
  }

  /** The stored password hash of `name` (sessions keep its fingerprint), or undefined. */
  passwordHashOf(name: string): string | undefined {
    return this.byName.get(name)?.passwordHash;
  }

  list(): User[] {
    return [...this.byName.values()].map((u) => ({ name: u.name, roles: [...u.roles] }));
  }

  /** The user when the password is right; undefined otherwise (same answer for an unknown name). */
  async check(name: string, password: string): Promise<User | undefined> {
    const u = this.byName.get(name);
    const ok = await verifyPassword(password, u?.passwordHash ?? this.decoy);
    return ok && u ? this.get(name) : undefined;
  }
}

export async function usersFromEntries(entries: readonly UserEntry[]): Promise<Users> {
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
