/**
 * Reproducibility of delivery faults: with 30 % duplicates and reordering, the sequence
 * of events a receiver gets for 100 calls depends only on the seed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, startReceiver } from './index.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

/** 100 user-initiated calls, each ended by the business (reject or terminate), in order. */
async function run(seed: number): Promise<{ received: string[]; emitted: string[] }> {
  const rx = await startReceiver();
  const emu = await startEmulator({
    seed,
    // The same ids too (by default each start salts its ids at random).
    idSalt: 'repro',
    timeScale: 0.001,
    // The hold-back is counted in later events; the window only caps quiet periods.
    faults: { duplicateRate: 0.3, reorderWindowMs: 10_000, reorderEvents: 4 },
    webhookEndpoints: [{ url: rx.url }],
  });
  cleanups.push(() => rx.close(), () => emu.close());
  const post = (path: string, body: unknown) =>
    fetch(`${emu.baseUrl}${path}`, { method: 'POST', headers: { 'X-API-Key': emu.apiKey, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  for (let i = 0; i < 100; i++) {
    const call = await emu.calls.start({ from: `+1555030${String(i).padStart(4, '0')}` });
    const res = await post(i % 2 ? '/chat/calls/reject' : '/chat/calls/terminate', { phoneId: call.phoneId, wacid: call.wacid });
    expect(res.status).toBe(200);
  }
  const r = await fetch(`${emu.controlUrl}/webhooks/flush`, { method: 'POST', headers: { 'X-API-Key': emu.apiKey } });
  expect(r.status).toBe(200);
  const label = (e: { id: string; type: string; [k: string]: unknown }) => `${e.id} ${e.type} ${JSON.stringify(e).match(/"wacid":"([^"]+)"/)?.[1]}`;
  return { received: rx.received.map((d) => label(d.event)), emitted: emu.ctx.events.map((e) => label(e)) };
}

describe('delivery faults are reproducible from the seed', () => {
  it('100 calls at 30 % duplicates with reordering give the same delivered sequence in two runs with the same seed', async () => {
    const a = await run(42);
    const b = await run(42);
    expect(a.emitted.length).toBe(200); // connect + terminate per call
    // the faults really happened: duplicates (~30 %) and a different order than emitted
    const dupes = a.received.length - new Set(a.received).size;
    expect(dupes).toBeGreaterThan(30);
    expect(dupes).toBeLessThan(90);
    expect(new Set(a.received).size).toBe(200); // at-least-once: nothing lost
    expect(a.received).not.toEqual(a.emitted);
    expect(b.received).toEqual(a.received);
  }, 60_000);

  it('another seed gives another sequence', async () => {
    const a = await run(1);
    const b = await run(2);
    expect(b.received).not.toEqual(a.received);
  }, 60_000);
});
