import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../store/memory.ts';
import { Sessions } from './session.ts';
import { hashPassword, loadUsersFile, verifyPassword } from './users.ts';

describe('users', () => {
  it('a scrypt hash verifies its password and nothing else, and never contains it', async () => {
    const h = await hashPassword('correct horse');
    expect(h).toMatch(/^scrypt\$16384\$8\$1\$/);
    expect(h).not.toContain('correct horse');
    expect(await verifyPassword('correct horse', h)).toBe(true);
    expect(await verifyPassword('correct hors', h)).toBe(false);
    expect(await verifyPassword('correct horse', 'md5$abc')).toBe(false);
  });

  it('add-user reads the password from stdin, writes a 0600 file, and the user can then log in', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'users-'));
    const file = join(dir, 'users.json');
    const r = spawnSync(process.execPath, ['--import', 'tsx', 'server/auth/add-user.ts', file, 'alice', 'agent,supervisor'], { input: 'a long password\n', encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(readFileSync(file, 'utf8')).not.toContain('a long password');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const users = await loadUsersFile(file);
    expect(await users.check('alice', 'a long password')).toEqual({ name: 'alice', roles: ['agent', 'supervisor'] });
    expect(await users.check('alice', 'wrong')).toBeUndefined();
    expect(await users.check('nobody', 'a long password')).toBeUndefined();
    const bad = spawnSync(process.execPath, ['--import', 'tsx', 'server/auth/add-user.ts', file, 'bob', 'root'], { input: 'a long password\n', encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/unknown role "root"/);
  }, 20_000);

  it('a malformed USERS_FILE fails with a message naming the variable and the field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'users-'));
    const file = join(dir, 'users.json');
    writeFileSync(file, JSON.stringify({ users: [{ name: 'x', roles: ['root'], passwordHash: 'scrypt$1' }] }));
    await expect(loadUsersFile(file)).rejects.toThrow(/USERS_FILE: .*users\.0\.roles/);
  });
});

describe('sessions', () => {
  it('a cookie with an edited id or MAC is refused; destroy ends the session', async () => {
    const store = new MemoryStore();
    const s = new Sessions(store, 'x'.repeat(32));
    const cookie = await s.create('alice');
    expect(await s.resolve(cookie)).toBe('alice');
    const [sid, mac] = cookie.split('.') as [string, string];
    expect(await s.resolve(`${sid}x.${mac}`)).toBeUndefined();
    // Edit the MAC's first character (all 6 bits significant; the last one carries
    // padding bits) and always to a different character.
    const edited = `${mac[0] === 'A' ? 'B' : 'A'}${mac.slice(1)}`;
    expect(edited).not.toBe(mac);
    expect(await s.resolve(`${sid}.${edited}`)).toBeUndefined();
    expect(await new Sessions(store, 'y'.repeat(32)).resolve(cookie)).toBeUndefined();
    await s.destroy(cookie);
    expect(await s.resolve(cookie)).toBeUndefined();
  });
});
