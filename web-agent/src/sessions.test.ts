import { afterEach, describe, expect, it } from 'vitest';
import { inLanguage } from './i18n/testing.ts';
import { deviceWords, initialSessions, reduceSessions } from './sessions.ts';

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
  describe('a session\'s device in the user\'s language', () => {
    afterEach(() => inLanguage('en'));
    it('from its names; a session from before the names keeps the server\'s words', () => {
      const base = { id: 'a', address: '127.0.0.1', since: 1, expiresAt: 2 };
      expect(deviceWords({ ...base, device: 'Chrome 120 on Linux', browser: 'Chrome 120', system: 'Linux' })).toBe('Chrome 120 on Linux');
      expect(deviceWords({ ...base, device: 'a program', program: true })).toBe('a program');
      expect(deviceWords({ ...base, device: 'Chrome 120 on Linux' })).toBe('Chrome 120 on Linux');
      inLanguage('ar');
      expect(deviceWords({ ...base, device: 'Chrome 120 on Linux', browser: 'Chrome 120', system: 'Linux' })).toBe('Chrome 120 على Linux');
      expect(deviceWords({ ...base, device: 'unknown device' })).toBe('جهاز غير معروف');
      expect(reduceSessions(initialSessions, { type: 'ended', count: 3 }).notice).toBe('أُنهيت 3 جلسات.');
    });
  });
});
