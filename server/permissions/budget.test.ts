import { describe, expect, it } from 'vitest';
import type { Permission } from '../../shared/protocol.ts';
import { MemoryStore } from '../store/memory.ts';
import { RATION, REASK_AFTER_REJECT_MS } from './model.ts';
import { CONNECTED_CALLS, nextAllowed, permissionBudget, UNANSWERED_REVOKE_AT, UNANSWERED_WARN_AT, windowCheck, type BudgetFacts } from './budget.ts';

const H = 3600_000;
const DAY = 24 * H;
const T0 = Date.UTC(2026, 10, 24, 9);
const FROM = '+15550100001';
const USER = '+15550123456';

/** An adjustable clock and the facts of one pair, as the server would gather them. */
function pair(perm: Partial<Permission> = {}) {
  let now = T0;
  const facts = { requests: [] as number[], connectedCalls: [] as number[], unansweredInARow: 0, permission: { from: FROM, user: USER, state: 'unknown', updatedAt: T0, ...perm } as Permission };
  return {
    advance: (ms: number) => void (now += ms),
    now: () => now,
    facts,
    budget: () => permissionBudget({ ...facts, now } satisfies BudgetFacts),
  };
}

describe('permission budget: requests (1 per 24 h, 2 per 7 days)', () => {
  it('the constants are the ration the store enforces', () => {
    expect(RATION.map((w) => [w.windowMs, w.max])).toEqual([
      [DAY, 1],
      [7 * DAY, 2],
    ]);
    expect(CONNECTED_CALLS.max).toBe(5);
    expect([UNANSWERED_WARN_AT, UNANSWERED_REVOKE_AT]).toEqual([2, 4]);
  });

  it('a fresh pair may be asked; a second request within 24 h waits for the first to be 24 h old', () => {
    const p = pair();
    expect(p.budget().request).toEqual({ allowed: true, code: 'OK', text: 'You can ask the user to allow calls from this number.' });
    p.facts.requests.push(p.now());
    p.advance(H);
    expect(p.budget().request).toEqual({
      allowed: false,
      code: 'RATION',
      text: 'A permission request was already sent in the last 24 hours (limit: 1 per 24 hours).',
      nextAt: T0 + DAY,
      nextText: 'You can ask again at',
    });
    p.advance(DAY - H - 1);
    expect(p.budget().request.allowed).toBe(false);
    p.advance(1);
    expect(p.budget().request.allowed).toBe(true);
  });

  it('a third request within 7 days waits for the first to be 7 days old, even when 24 h have passed', () => {
    const p = pair({ state: 'requested' });
    p.facts.requests.push(T0, T0 + DAY);
    p.advance(3 * DAY);
    const r = p.budget().request;
    expect(r).toMatchObject({ allowed: false, code: 'RATION', nextAt: T0 + 7 * DAY });
    expect(r.text).toBe('Two permission requests were already sent in the last 7 days (limit: 2 per 7 days).');
    p.advance(4 * DAY);
    expect(p.budget().request.allowed).toBe(true);
  });

  it('when both windows are full, nextAt is when both free (not the first window\'s time)', () => {
    const p = pair();
    p.facts.requests.push(T0, T0 + DAY);
    p.advance(DAY + H);
    // The 24 h window frees at T0 + 2 days, but two requests stay in the 7-day window until T0 + 7 days.
    expect(p.budget().request).toMatchObject({ allowed: false, code: 'RATION', nextAt: T0 + 7 * DAY });
  });

  it('agrees with the store: windowCheck answers exactly as MemoryStore.reserveSlot over 2,000 seeded attempts, and nextAllowed is the first allowed time', async () => {
    const store = new MemoryStore();
    let seed = 7;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
    const taken: number[] = [];
    let now = T0;
    for (let i = 0; i < 2000; i++) {
      now += Math.floor(rand() * 3 * DAY);
      const predicted = windowCheck(taken, now, RATION);
      const next = nextAllowed(taken, now, RATION);
      const actual = await store.reserveSlot('perm:pair', `slot-${i}`, now, RATION);
      expect(actual, `attempt ${i}`).toEqual(predicted);
      if (actual.ok) {
        expect(next).toBe(now);
        taken.push(now);
      } else {
        expect(next).toBeGreaterThanOrEqual(actual.retryAt);
        expect(windowCheck(taken, next, RATION).ok).toBe(true);
        expect(windowCheck(taken, next - 1, RATION).ok).toBe(false);
      }
    }
    expect(taken.length).toBeGreaterThan(100);
  });

  it('after a rejection the user is not asked again for 24 h; nextAt is the later of that and the ration', () => {
    const p = pair({ state: 'rejected', updatedAt: T0 + H });
    p.facts.requests.push(T0);
    p.advance(2 * H);
    expect(p.budget().request).toMatchObject({ allowed: false, code: 'REJECTED_RECENTLY', nextAt: T0 + H + REASK_AFTER_REJECT_MS });
    expect(p.budget().call).toMatchObject({ allowed: false, code: 'REJECTED' });
    p.advance(DAY);
    expect(p.budget().request.allowed).toBe(true);
  });

  it('while granted there is nothing to ask: a temporary grant says from when one may ask again', () => {
    const p = pair({ state: 'granted', permanent: false, expiresAt: T0 + 7 * DAY });
    expect(p.budget().request).toMatchObject({ allowed: false, code: 'ALREADY_GRANTED', nextAt: T0 + 7 * DAY, nextText: 'You can ask again at' });
    expect(p.budget().call).toEqual({ allowed: true, code: 'OK', text: 'The user allows calls from this number.' });
    const perm = pair({ state: 'granted', permanent: true });
    expect(perm.budget().request).toEqual({ allowed: false, code: 'ALREADY_GRANTED', text: 'The user allows calls from this number permanently; there is nothing to ask.' });
  });
});

describe('permission budget: calls', () => {
  it('without a known answer the call may go (the Service decides); an expired grant may not', () => {
    expect(pair().budget().call).toMatchObject({ allowed: true, code: 'SERVICE_DECIDES' });
    expect(pair({ state: 'requested' }).budget().call.text).toMatch(/not answered the permission request yet/);
    const e = pair({ state: 'expired', expiresAt: T0 - 1 }).budget().call;
    expect(e).toMatchObject({ allowed: false, code: 'EXPIRED' });
    expect(e.text).toMatch(/expired at .*ask again before calling/);
  });

  it('at most 5 connected calls per 24 h to one user; the sixth waits until the first is 24 h old', () => {
    const p = pair({ state: 'granted', permanent: true });
    for (let i = 0; i < 5; i++) {
      expect(p.budget().call.allowed, `call ${i + 1}`).toBe(true);
      expect(p.budget().callsLeft).toBe(5 - i);
      p.facts.connectedCalls.push(p.now());
      p.advance(H);
    }
    const sixth = p.budget();
    expect(sixth.callsLeft).toBe(0);
    expect(sixth.call).toEqual({
      allowed: false,
      code: 'DAILY_CALL_LIMIT',
      text: 'This user was already called 5 times in the last 24 hours (limit: 5 connected calls per 24 hours).',
      nextAt: T0 + DAY,
      nextText: 'You can call again at',
    });
    p.advance(T0 + DAY - p.now());
    expect(p.budget()).toMatchObject({ call: { allowed: true }, callsLeft: 1 });
  });

  it('unanswered in a row: 1 is nothing, 2 and 3 warn, 4 revoke (no call, asking allowed); an answered call resets the run', () => {
    const p = pair({ state: 'granted', permanent: true });
    p.facts.unansweredInARow = 1;
    expect(p.budget().warning).toBeUndefined();
    p.facts.unansweredInARow = 2;
    expect(p.budget().warning).toEqual({ code: 'UNANSWERED_CALLS', text: '2 calls in a row went unanswered: the user is asked to review the permission; 2 more unanswered calls revoke it.' });
    expect(p.budget().call.allowed).toBe(true);
    p.facts.unansweredInARow = 3;
    expect(p.budget().warning?.text).toMatch(/1 more unanswered call revokes it/);
    p.facts.unansweredInARow = 4;
    const b = p.budget();
    expect(b.revoked).toBe(true);
    expect(b.warning).toBeUndefined();
    expect(b.call).toMatchObject({ allowed: false, code: 'REVOKED_UNANSWERED' });
    expect(b.request).toMatchObject({ allowed: true, code: 'OK' });
    expect(b.request.text).toMatch(/revoked: you can ask the user to allow calls again/);
    p.facts.unansweredInARow = 0; // an answered call
    expect(p.budget()).toMatchObject({ revoked: false, call: { allowed: true, code: 'OK' } });
  });

  it('the page writes the time: nextText + its local rendering of nextAt', () => {
    const p = pair();
    p.facts.requests.push(T0);
    const r = p.budget().request;
    const words = `${r.text} ${r.nextText} ${new Date(r.nextAt!).toISOString()}.`;
    expect(words).toBe(`A permission request was already sent in the last 24 hours (limit: 1 per 24 hours). You can ask again at ${new Date(T0 + DAY).toISOString()}.`);
  });
});
