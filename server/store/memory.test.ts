/**
 * In-memory store specifics (the shared behaviour is in store.contract.test.ts).
 */
import { describe, expect, it, vi } from 'vitest';
import type { CallRecord } from './calls.ts';
import { MemoryStore } from './memory.ts';

const ev = (id: string) => ({ eventId: id, type: 'chat.message.updated', body: `{"id":"${id}"}`, receivedAt: 0 });

describe('MemoryStore dedupe keys', () => {
  it('expired keys are dropped as new events arrive, so memory follows the TTL window, not the total', async () => {
    let now = 1_000_000;
    const s = new MemoryStore({ now: () => now });
    for (let i = 0; i < 30_000; i++) {
      expect(await s.acceptEvent(ev(`a${i}`), 1000)).toBe('accepted');
      now += 1; // 1 ms apart: at most ~1000 keys are live at any time
    }
    expect(s.dedupeKeys).toBeLessThanOrEqual(1001);
    // A key still inside its TTL is a duplicate; one past it is accepted again.
    expect(await s.acceptEvent(ev('a29999'), 1000)).toBe('duplicate');
    expect(await s.acceptEvent(ev('a0'), 1000)).toBe('accepted');
  });

  it('a repeated id accepted again after expiry moves to the young end and is not swept early', async () => {
    let now = 0;
    const s = new MemoryStore({ now: () => now });
    await s.acceptEvent(ev('x'), 100);
    await s.acceptEvent(ev('y'), 100);
    now = 150; // both expired
    expect(await s.acceptEvent(ev('x'), 100)).toBe('accepted'); // x renewed until 250
    now = 200;
    await s.acceptEvent(ev('z'), 100);
    expect(await s.acceptEvent(ev('x'), 100)).toBe('duplicate');
    expect(s.dedupeKeys).toBe(2); // y swept; x and z live
  });
});

describe('MemoryStore live calls', () => {
  it('listLiveCalls reads the live calls only, not the hour of ended ones kept beside them (as Redis reads its live index)', async () => {
    const s = new MemoryStore();
    const rec = (wacid: string, state: string): CallRecord => ({ wacid, phoneId: 'p1', state, version: 0 });
    for (let i = 0; i < 200; i++) {
      await s.createCall(rec(`ended-${i}`, 'ringing'), 3_600_000);
      await s.casCall(`ended-${i}`, 0, rec(`ended-${i}`, 'ended'), 3_600_000);
    }
    await s.createCall(rec('live-1', 'ringing'), 3_600_000);
    await s.createCall(rec('live-2', 'ringing'), 3_600_000);
    const parse = vi.spyOn(JSON, 'parse');
    try {
      expect((await s.listLiveCalls()).map((c) => c.wacid).sort()).toEqual(['live-1', 'live-2']);
      // Each live record is read once; the 200 ended ones are not read at all.
      expect(parse.mock.calls.length).toBe(2);
    } finally {
      parse.mockRestore();
    }
    expect((await s.listCalls()).length).toBe(202);
  });
});
