import { describe, expect, it } from 'vitest';
import { AUDIT_ACTIONS } from '../../shared/audit.ts';
import en from './i18n/en.json' with { type: 'json' };
import { actionKey, auditQuery, describeAuditDetail, initialAudit, reduceAudit, type AuditEntry } from './audit.ts';

const row = (id: string): AuditEntry => ({ id, at: '2026-06-01T10:00:00.000Z', actor: 'ann', action: 'logout' });

describe('audit page state', () => {
  it('the form becomes the API query: dates inclusive in the form, `to` exclusive in the API; blanks left out', () => {
    const q = new URLSearchParams(auditQuery({ user: ' ann ', action: 'logout', from: '2026-06-01', to: '2026-06-30' }));
    expect(Object.fromEntries(q)).toEqual({ user: 'ann', action: 'logout', from: new Date(2026, 5, 1).toISOString(), to: new Date(2026, 6, 1).toISOString() });
    expect(auditQuery({ user: '', action: '', from: '', to: '' })).toBe('');
  });

  it('search, results, more, a late answer of an older search ignored, failure', () => {
    let s = reduceAudit(initialAudit, { type: 'edit', field: 'user', value: 'ann' });
    s = reduceAudit(s, { type: 'search' });
    expect(s).toMatchObject({ applied: 'user=ann', phase: 'searching', seq: 1 });
    s = reduceAudit(s, { type: 'results', seq: 1, page: { items: [row('a'), row('b')], cursor: 'c1' } });
    expect(s).toMatchObject({ phase: 'idle', cursor: 'c1' });
    s = reduceAudit(s, { type: 'more' });
    expect(s).toMatchObject({ phase: 'more', seq: 2 });
    expect(reduceAudit(s, { type: 'results', seq: 1, page: { items: [] } })).toBe(s);
    s = reduceAudit(s, { type: 'results', seq: 2, page: { items: [row('c')] } });
    expect(s.items.map((e) => e.id)).toEqual(['a', 'b', 'c']);
    expect(s.cursor).toBeUndefined();
    expect(reduceAudit(s, { type: 'more' })).toBe(s);
    s = reduceAudit(s, { type: 'search' });
    expect(reduceAudit(s, { type: 'failed', seq: 3, message: 'no' })).toMatchObject({ phase: 'failed', error: 'no', items: [] });
  });

  it('a detail in words', () => {
    expect(describeAuditDetail({ mode: 'whisper', from: 'listen', types: ['a', 'b'] })).toBe('mode: whisper, from: listen, types: a b');
    expect(describeAuditDetail(undefined)).toBe('');
  });
  it('every recorded action has words of its own; one the page does not know is shown as recorded', () => {
    const keys = AUDIT_ACTIONS.map((a) => actionKey(a));
    expect(keys.filter((k) => k === undefined || !(k in en))).toEqual([]);
    expect(new Set(keys.map((k) => en[k!])).size).toBe(AUDIT_ACTIONS.length);
    expect(actionKey('toString')).toBeUndefined();
    expect(actionKey('user.launched')).toBeUndefined();
  });
});
