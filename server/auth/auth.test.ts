/**
 * Sessions end when their user's password changes: a session carries a
 * fingerprint of the password hash it was opened with; after the users file gets a new
 * hash (add-user.ts, then a restart) the old cookie no longer works on any node.
 */
import { Hono } from 'hono';
import { describe, expect, it } from 'vitest';
import { HttpError } from '../ops/errors.ts';
import { createLogger } from '../log/logger.ts';
import { MemoryStore } from '../store/memory.ts';
import { createAuth, Sessions } from './index.ts';
import { hashPassword, usersFromEntries } from './users.ts';

const SECRET = 's'.repeat(32);
const ORIGIN = 'http://sb.test';
const log = createLogger({ level: 'silent' });

/** A node reading a users file with these hashes. */
async function node(store: MemoryStore, hashes: Record<string, string>) {
  const users = await usersFromEntries(Object.entries(hashes).map(([name, passwordHash]) => ({ name, roles: ['agent' as const], passwordHash })));
  return createAuth({ users, sessions: new Sessions(store, SECRET), store, log, origin: { publicUrl: ORIGIN } });
}

async function loginTo(auth: Awaited<ReturnType<typeof node>>, name: string, password: string): Promise<string> {
  const r = await auth.routes.request(`${ORIGIN}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json', host: 'sb.test', origin: ORIGIN }, body: JSON.stringify({ name, password }) });
  expect(r.status).toBe(200);
  return (r.headers.get('set-cookie') ?? '').split(';')[0]!;
}

/** `GET /api/me`'s status (refusals rendered as the app does). */
async function me(auth: Awaited<ReturnType<typeof node>>, cookie: string): Promise<number> {
  const app = new Hono().route('/', auth.routes);
  app.onError((err, c) => c.json({}, err instanceof HttpError ? (err.status as 401) : 500));
  return (await app.request(`${ORIGIN}/api/me`, { headers: { cookie, host: 'sb.test' } })).status;
}

describe('a password change ends the sessions opened with the old password', () => {
  it('after a restart with a new hash for alice her old cookie is refused (HTTP and the WebSocket upgrade); bob, unchanged, stays logged in', async () => {
    const store = new MemoryStore();
    const bobHash = await hashPassword('bob password 1');
    const before = await node(store, { alice: await hashPassword('old password 1'), bob: bobHash });
    const alice = await loginTo(before, 'alice', 'old password 1');
    const bob = await loginTo(before, 'bob', 'bob password 1');
    expect(await me(before, alice)).toBe(200);

    // The users file now has a new hash for alice (add-user.ts), the node restarted; sessions live in the store.
    const after = await node(store, { alice: await hashPassword('new password 2'), bob: bobHash });
    expect(await me(after, alice)).toBe(401);
    expect(await after.sessionOf(new Request(`${ORIGIN}/ws`, { headers: { cookie: alice } }))).toBeUndefined();
    expect(await me(after, bob)).toBe(200);
    // A new login with the new password works.
    expect(await me(after, await loginTo(after, 'alice', 'new password 2'))).toBe(200);
  });

  it('the same users file after a restart keeps every session', async () => {
    const store = new MemoryStore();
    const hash = await hashPassword('carol password');
    const cookie = await loginTo(await node(store, { carol: hash }), 'carol', 'carol password');
    expect(await me(await node(store, { carol: hash }), cookie)).toBe(200);
  });
});
