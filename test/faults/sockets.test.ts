/**
 * Agent sockets dropped at once: every agent has a call ringing, every
 * socket is cut (no close frame: a network drop), every agent reconnects at once; each
 * must be offered its ringing call again (in its `welcome`, with the offer's SDP). Counts
 * the offers the reconnected sockets got.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { ProtocolClient, fakeConnect, login, postEvent, startBridge, until, type Bridge } from '../e2e/harness.ts';
import { printCounts, size } from './support.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function connectAgent(url: string, cookie: string, available: boolean): Promise<ProtocolClient> {
  const c = new ProtocolClient(url, cookie);
  await c.opened;
  await c.next('welcome');
  if (available) {
    const r = await c.request({ type: 'presence.set', status: 'available' });
    if (r.type !== 'ack') throw new Error(`presence.set refused: ${r.message}`);
  }
  return c;
}

async function inBatches<T, R>(items: readonly T[], n: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += n) out.push(...(await Promise.all(items.slice(i, i + n).map(fn))));
  return out;
}

describe('agent sockets dropped at once', () => {
  it('every agent with a ringing call loses its socket and reconnects: every ringing offer is replayed', async () => {
    const n = size(60, 500);
    const names = Array.from({ length: n }, (_, i) => `drop${i}`);
    const b: Bridge = await startBridge({
      agents: names,
      loginLimits: { perName: 100, perAddress: 100_000 },
      env: { RING_TIMEOUT_MS: '60000', ACCEPT_WINDOW_MS: '60000' },
    });
    cleanups.push(() => b.close());
    const cookies = await inBatches(names, 10, (name) => login(b.url, name));
    const first = await inBatches(cookies, 50, (cookie) => connectAgent(b.url, cookie, true));
    cleanups.push(() => first.forEach((c) => c.ws.terminate()));

    const wacids = Array.from({ length: n }, (_, i) => `wacid.drop.${i}.${randomBytes(3).toString('hex')}`);
    await inBatches(wacids, 50, async (wacid) => expect(await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(wacid))).toBe(200));
    // One call rings each agent.
    const ringing = new Map<number, string>();
    await until('every call ringing at an agent', () => {
      first.forEach((c, i) => {
        const o = c.received.find((m) => m.type === 'call.offered');
        if (o && o.type === 'call.offered') ringing.set(i, o.wacid);
      });
      return ringing.size === n;
    }, 60_000, 100);

    // The network drops every socket at once; every agent reconnects at once.
    const t0 = Date.now();
    for (const c of first) c.ws.terminate();
    const again = await Promise.all(cookies.map((cookie) => connectAgent(b.url, cookie, false)));
    cleanups.push(() => again.forEach((c) => c.close()));
    // The replay is the reconnected socket's `welcome`: its ringing call, with the offer SDP to answer it.
    const got = again.filter((c, i) => {
      const w = c.received.find((m) => m.type === 'welcome');
      return w?.type === 'welcome' && w.calls.some((call) => call.wacid === ringing.get(i) && call.state === 'ringing' && typeof call.sdp === 'string' && call.sdp.length > 0);
    }).length;
    printCounts('sockets-dropped', { agents: n, ringing: ringing.size, reconnected: again.length, offersReplayed: got, missing: n - got, reconnectAndReplayMs: Date.now() - t0 });
    expect(got).toBe(n);
  }, 180_000);
});
