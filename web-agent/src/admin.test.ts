import { describe, expect, it } from 'vitest';
import type { AdminDirectory } from '../../shared/admin.ts';
import { initialAdmin, parseLevels, parseList, parseMembers, reduceAdmin, visibleUsers } from './admin.ts';

const user = (name: string, over: Partial<AdminDirectory['users'][number]> = {}) => ({ name, displayName: '', email: '', roles: ['agent' as const], enabled: true, teams: [], skills: {}, queues: {}, hasPassword: true, sso: false, ...over });
const dir: AdminDirectory = { users: [user('alice', { teams: ['north'] }), user('bob', { displayName: 'Bobby', roles: ['supervisor'] }), user('carol', { email: 'carol@example.com' })], teams: [], skills: [], queues: [] };

describe('admin page state', () => {
  it('search matches name, display name, email, role and team', () => {
    const s = reduceAdmin(initialAdmin, { type: 'loaded', dir });
    const names = (text: string) => visibleUsers(reduceAdmin(s, { type: 'search', text })).map((u) => u.name);
    expect(names('')).toEqual(['alice', 'bob', 'carol']);
    expect(names('BOBBY')).toEqual(['bob']);
    expect(names('example.com')).toEqual(['carol']);
    expect(names('supervisor')).toEqual(['bob']);
    expect(names('north')).toEqual(['alice']);
  });

  it('a made password is shown until the next action; a failure keeps the form open', () => {
    let s = reduceAdmin(initialAdmin, { type: 'edit', editing: { tab: 'users', name: '' } });
    s = reduceAdmin(s, { type: 'busy' });
    s = reduceAdmin(s, { type: 'failed', message: 'name: a user named "alice" exists already' });
    expect(s).toMatchObject({ busy: false, editing: { tab: 'users', name: '' }, error: 'name: a user named "alice" exists already' });
    s = reduceAdmin(reduceAdmin(s, { type: 'busy' }), { type: 'done', notice: 'dan added.', password: { name: 'dan', password: 'pw-once' } });
    expect(s).toMatchObject({ editing: undefined, notice: 'dan added.', password: { name: 'dan', password: 'pw-once' } });
    expect(reduceAdmin(s, { type: 'busy' }).password).toBeUndefined();
    expect(reduceAdmin(s, { type: 'edit', editing: undefined }).password).toBeUndefined();
  });

  it('form text to bodies', () => {
    expect(parseLevels('french:4, spanish , german:11')).toEqual({ french: 4, spanish: 1, german: 11 });
    expect(parseMembers('alice:1, bob:2')).toEqual([{ agent: 'alice', priority: 1 }, { agent: 'bob', priority: 2 }]);
    expect(parseList(' p1, ,p2 ')).toEqual(['p1', 'p2']);
  });
});
