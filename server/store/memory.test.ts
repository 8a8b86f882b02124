/**
 * In-memory store specifics (the shared behaviour is in store.contract.test.ts).
 */
import { describe, expect, it } from 'vitest';
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
