import { describe, expect, it } from 'vitest';
import { inLanguage } from './i18n/testing.ts';
import { initialSessions, reduceSessions } from './sessions.ts';

inLanguage('en');

const session = (id: string, current?: true) => ({ id, device: 'Chrome 120 on Linux', address: '127.0.0.1', since: 1, expiresAt: 2, ...(current ? { current } : {}) });

describe('account page state', () => {
  it('your sessions, an admin lookup, what was ended in words, failures', () => {
    let s = reduceSessions(initialSessions, { type: 'busy' });
    expect(s.busy).toBe(true);
    s = reduceSessions(s, { type: 'mine', items: [session('a', true), session('b')] });
    expect(s).toMatchObject({ loaded: true, busy: false });
    s = reduceSessions(s, { type: 'other', name: 'bob', items: [session('x'), session('y')] });
    s = reduceSessions(s, { type: 'ended', count: 2, whose: 'bob' });
    expect(s).toMatchObject({ notice: '2 sessions ended for bob.', other: { name: 'bob', items: [] } });
    expect(reduceSessions(s, { type: 'ended', count: 1 }).notice).toBe('1 session ended.');
    expect(reduceSessions(s, { type: 'failed', message: 'no' })).toMatchObject({ error: 'no', busy: false });
  });
});
