/**
 * The administration's HTTP routes on a real bridge (history on PGlite): only admins;
 * every broken rule is a 400 in the one error shape naming the field (duplicate name,
 * unknown role, a queue without agents, a skill level out of range, an unknown field);
 * the last admin cannot be removed, disabled or demoted; a new user's password is
 * answered once and never again; a disabled user's login is refused in words.
 */
import { describe, expect, it } from 'vitest';
import { login, PASSWORD } from './harness.ts';
import { programSuite } from './suite.ts';

const suite = programSuite();

describe('administration routes', () => {
  it('admins only; 400s naming the field; the last admin stays; a made password shown once', async () => {
    const b = await suite.startBridge({ agents: ['agent1'], admins: ['root'], history: true });
    const root = await login(b.url, 'root');
    const agent = await login(b.url, 'agent1');
    const call = async (cookie: string, method: string, path: string, body?: unknown) => {
      const r = await fetch(`${b.url}${path}`, { method, headers: { cookie, 'content-type': 'application/json', origin: b.url }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
      const text = await r.text();
      return { status: r.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
    };
    const refused = async (method: string, path: string, body: unknown) => {
      const r = await call(root, method, path, body);
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      // The one 400 shape: error.field names the field the message starts with.
      const e = (r.body as { error: { code: string; message: string; field?: string } }).error;
      expect(e.code).toBe('BAD_REQUEST');
      expect(e.field === undefined || e.message.startsWith(`${e.field}: `), JSON.stringify(e)).toBe(true);
      return e.message;
    };

    expect((await call(agent, 'GET', '/api/admin/directory')).status).toBe(403);
    expect((await call(root, 'GET', '/api/admin/directory')).status).toBe(200);

    expect(await refused('POST', '/api/admin/users', { name: 'agent1', roles: ['agent'] })).toBe('name: a user named "agent1" exists already');
    expect(await refused('POST', '/api/admin/users', { name: 'zoe', roles: ['agent', 'wizard'] })).toBe('roles[1]: unknown role "wizard"; known: agent, supervisor, ops, admin');
    expect(await refused('POST', '/api/admin/users', { name: 'zoe', roles: [] })).toBe('roles: give at least one role');
    expect(await refused('POST', '/api/admin/users', { name: 'zoe', roles: ['agent'], colour: 'red' })).toMatch(/^colour: unknown field \(expected .*\bname\b.*\)$/);
    expect((await call(root, 'POST', '/api/admin/skills', { name: 'french' })).status).toBe(201);
    expect(await refused('POST', '/api/admin/users', { name: 'zoe', roles: ['agent'], skills: { french: 11 } })).toBe('skills.french: level out of range: must be from 1 to 10');
    expect(await refused('POST', '/api/admin/queues', { name: 'sales', numbers: ['p1'], members: [] })).toBe('members: a queue needs at least one agent');
    expect(await refused('POST', '/api/admin/queues', { name: 'sales', numbers: ['p1'], members: [{ agent: 'agent1', priority: 1 }], skill: 'french', skillLevel: 0 })).toBe('skillLevel: level out of range: must be from 1 to 10');
    expect(await refused('PATCH', '/api/admin/users/root', { enabled: false })).toBe('enabled: "root" is the last enabled admin; make another user admin first');
    expect(await refused('PATCH', '/api/admin/users/root', { roles: ['ops'] })).toBe('roles: "root" is the last enabled admin; make another user admin first');
    expect((await call(root, 'DELETE', '/api/admin/users/root')).status).toBe(400);
    expect((await call(root, 'POST', '/api/admin/users', 'not json')).status).toBe(400);

    // A user without a password given: one is made and answered once.
    const made = await call(root, 'POST', '/api/admin/users', { name: 'zoe', roles: ['agent'], skills: { french: 3 } });
    expect(made.status).toBe(201);
    const password = (made.body as { password: string }).password;
    expect(password).toMatch(/^[A-Za-z0-9_-]{16}$/);
    const dir = await call(root, 'GET', '/api/admin/directory');
    expect(JSON.stringify(dir.body)).not.toContain(password);
    expect(JSON.stringify(dir.body)).not.toContain('scrypt');
    expect((dir.body as { users: Array<{ name: string; skills: unknown; hasPassword: boolean }> }).users.find((u) => u.name === 'zoe')).toMatchObject({ skills: { french: 3 }, hasPassword: true });
    await login(b.url, 'zoe', password);

    // Disabled: the login is refused in words (after the password check), and the session ended.
    expect((await call(root, 'PATCH', '/api/admin/users/zoe', { enabled: false })).status).toBe(204);
    const again = await fetch(`${b.url}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'zoe', password }) });
    expect(again.status).toBe(403);
    expect(await again.json()).toMatchObject({ error: { code: 'ACCOUNT_DISABLED', message: 'This account is disabled. Ask an administrator to enable it.' } });
    const wrong = await fetch(`${b.url}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'zoe', password: PASSWORD }) });
    expect(wrong.status).toBe(401);
  }, 120_000);
});
