/**
 * Client-side rate limits by the scopes of part 8. The burst test runs against a real
 * local server that answers 429 above 200 rps per sender; the rest drive the limiter with
 * an injected clock so hour-long quotas run instantly.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createServiceClient, RateLimiter, scopeOf } from '../../server/service/index.ts';
import { isSignalling } from '../../server/service/ratelimit.ts';
import { perSenderLimitedSends, startServer, type TestServer } from './server.ts';

let srv: TestServer | undefined;
afterEach(async () => {
  await srv?.close();
  srv = undefined;
});

describe('a burst is shaped, not answered with 429', () => {
  it('500 queued sends from one sender against a server that 429s above 200 rps per sender: zero 429s, all 500 accepted', async () => {
    const limited = perSenderLimitedSends(200);
    srv = await startServer(limited.handler);
    const c = createServiceClient({ baseUrl: srv.baseUrl, apiKey: 'k_burst' });
    const t0 = Date.now();
    const results = await Promise.all(
      Array.from({ length: 500 }, (_, i) => c.messages.sendText({ from: '+4930123456', to: '+14155550100', body: `n${i}`, externalId: `b${i}` })),
    );
    const elapsed = Date.now() - t0;
    expect(limited.stats.rejected429).toBe(0);
    expect(limited.stats.accepted).toBe(500);
    expect(results.every((r) => r.status === 'accepted')).toBe(true);
    expect(srv.seen).toHaveLength(500);
    // At least 2 s: sends 201 and 401 each wait a full second after the answers to sends 1
    // and 201. ~2.5 s on a quiet machine (bench/client-burst.ts prints the figure); the upper
    // bound is generous because CI machines are busy.
    expect(elapsed).toBeGreaterThan(2000);
    expect(elapsed).toBeLessThan(30_000);
  }, 60_000);

  it('two senders sending at once against the per-sender server: zero 429s', async () => {
    const limited = perSenderLimitedSends(200);
    srv = await startServer(limited.handler);
    const c = createServiceClient({ baseUrl: srv.baseUrl, apiKey: 'k_burst' });
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: 300 }, (_, i) => c.messages.sendText({ from: i % 2 ? '+4930123456' : '+4930999999', to: '+14155550100', body: `n${i}` })),
    );
    expect(limited.stats.rejected429).toBe(0);
    expect(limited.stats.accepted).toBe(300);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });
});

/** A clock whose sleep moves time forward instantly. */
function fakeClock(start = 1_700_000_000_000) {
  let t = start;
  return {
    now: () => t,
    sleep: async (ms: number) => {
      t += Math.max(0, ms);
    },
    elapsed: () => t - start,
  };
}

async function acquireN(l: RateLimiter, scope: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) (await l.acquire(scope))!();
}

describe('limiter rules per scope (injected clock)', () => {
  it('requests map to the part 8 scopes', () => {
    expect(scopeOf('POST', '/emails', {})).toBe('account:/emails');
    expect(scopeOf('POST', '/sms', {})).toBe('account:/sms');
    expect(scopeOf('POST', '/voices', {})).toBe('account:/voices');
    expect(scopeOf('POST', '/chat/messages', { from: '+1' })).toBe('queued:+1');
    expect(scopeOf('POST', '/chat/messages/sendDirectly', { from: '+1' })).toBe('direct:+1');
    for (const p of ['/balance', '/webhookEndpoints/x', '/chat/templates', '/chat/messages/abc', '/chat/calls/accept', '/contact/contacts']) {
      expect(scopeOf(p === '/chat/calls/accept' ? 'POST' : 'GET', p, {})).toBe('management');
    }
  });

  it('each sender has its own quota: 200 sends alternating between two senders take half the time of one sender', async () => {
    const one = fakeClock();
    const l1 = new RateLimiter(one);
    for (let i = 0; i < 200; i++) (await l1.acquire('queued:+1'))!();
    const two = fakeClock();
    const l2 = new RateLimiter(two);
    for (let i = 0; i < 200; i++) (await l2.acquire(i % 2 ? 'queued:+1' : 'queued:+2'))!();
    // 5 ms pacing at 200 rps, less the 50 ms burst tolerance.
    expect(one.elapsed()).toBe(199 * 5 - 50);
    expect(two.elapsed()).toBe(99 * 5 - 50);
  });

  it('direct sends default to 80 rps per sender', async () => {
    const clock = fakeClock();
    const l = new RateLimiter(clock, { safety: 0 });
    await acquireN(l, 'direct:+1', 161);
    expect(clock.elapsed()).toBe(2000);
  });

  it('the direct limit is configurable to the upgraded 1,000 rps', async () => {
    const clock = fakeClock();
    const l = new RateLimiter(clock, { directSendRps: 1000, safety: 0 });
    await acquireN(l, 'direct:+1', 1001);
    expect(clock.elapsed()).toBe(1000);
  });

  it('the management quota allows 10,000 per hour: 8,000 for everything, the last 2,000 for call signalling only; then the hour must roll', async () => {
    const clock = fakeClock();
    const l = new RateLimiter(clock);
    await acquireN(l, 'management', 8_000);
    // 8,000 at 160 per second (the other 40 of the 200 are signalling's too) take 50 s of the hour.
    expect(clock.elapsed()).toBeGreaterThan(49_000);
    expect(clock.elapsed()).toBeLessThan(50_000);
    const t = clock.elapsed();
    for (let i = 0; i < 2_000; i++) (await l.acquire('management', { signalling: true }))!();
    // Signalling has the whole 200 per second: 2,000 take 10 s.
    expect(clock.elapsed() - t).toBeGreaterThan(9_000);
    expect(clock.elapsed() - t).toBeLessThanOrEqual(10_000);
    (await l.acquire('management', { signalling: true }))!();
    expect(clock.elapsed()).toBe(3_600_000);
  });

  it('call signalling is POST /chat/calls/{connect,preAccept,accept,reject,terminate}; everything else of the quota is not', () => {
    for (const p of ['/chat/calls/connect', '/chat/calls/preAccept', '/chat/calls/accept', '/chat/calls/reject', '/chat/calls/terminate']) expect(isSignalling('POST', p), p).toBe(true);
    for (const [m, p] of [['GET', '/contact/contacts/%2B15550100'], ['GET', '/chat/phoneNumbers'], ['GET', '/chat/calls/media/x'], ['POST', '/contact/contacts'], ['GET', '/chat/calls/accept']] as const) expect(isSignalling(m, p), `${m} ${p}`).toBe(false);
  });

  it('a flood of other management requests (10,500 contact reads in a minute) leaves call signalling its reserved share: an accept with a 30 s deadline is served at once', async () => {
    const clock = fakeClock();
    const l = new RateLimiter(clock);
    const t0 = clock.now();
    // Each lookup gives up after 60 s (the customer panel's timeout): what the quota cannot serve by then is refused.
    const flood = await Promise.all(Array.from({ length: 10_500 }, () => l.acquire('management', { notAfter: t0 + 60_000 }).then((r) => (r ? (r(), 1) : 0))));
    const served = flood.reduce<number>((a, b) => a + b, 0);
    expect(served).toBe(8_000);
    const accept = await l.acquire('management', { notAfter: clock.now() + 30_000, signalling: true });
    expect(accept).not.toBeNull();
    accept!();
    expect(l.usage('management')).toMatchObject({ hourLimit: 10_000, bulkHourLimit: 8_000, hourUsed: 8_001, hourUsedSignalling: 1 });
  });

  it('the management quota is shared: a pause on it holds every management request, other scopes run', async () => {
    const clock = fakeClock();
    const l = new RateLimiter(clock);
    l.pause('management', 5000);
    await l.acquire('account:/sms');
    expect(clock.elapsed()).toBe(0);
    await l.acquire('management');
    expect(clock.elapsed()).toBe(5000);
  });

  it('send n+limit waits for the answer to send n plus a full window (jitter-proof)', async () => {
    const clock = fakeClock();
    const l = new RateLimiter(clock, { queuedSendRps: 2 });
    const r1 = (await l.acquire('queued:+1'))!;
    (await l.acquire('queued:+1'))!();
    // Sends at 0 and 450 (paced at 2 rps, 50 ms tolerance). Send 1's answer comes at 750:
    // send 3 must wait until 750 + 1000, where pacing alone would have allowed 950.
    expect(clock.elapsed()).toBe(450);
    await clock.sleep(300);
    r1();
    (await l.acquire('queued:+1'))!();
    expect(clock.elapsed()).toBe(1750);
  });

  it('an unanswered send counts as arrived within the grace period, so a hung request cannot stall the scope', async () => {
    const clock = fakeClock();
    const l = new RateLimiter(clock, { queuedSendRps: 1, inflightGraceMs: 2000 });
    await l.acquire('queued:+1'); // never released
    (await l.acquire('queued:+1'))!();
    expect(clock.elapsed()).toBe(3000);
  });

  it('a request with a deadline (a call accept) is served before queued bulk requests of the same quota', async () => {
    const clock = fakeClock();
    const l = new RateLimiter(clock);
    const order: string[] = [];
    const bulk = Array.from({ length: 50 }, (_, i) => l.acquire('management').then((r) => (r!(), order.push(`bulk${i}`))));
    const accept = l.acquire('management', { notAfter: clock.now() + 30_000 }).then((r) => (r!(), order.push('accept')));
    await Promise.all([...bulk, accept]);
    // The first 11 bulk requests were granted at once (burst tolerance) before accept was
    // queued; accept goes right after them, not 51st.
    expect(order.indexOf('accept')).toBe(11);
  });

  it('a slot past the caller deadline is refused at once, with nothing reserved', async () => {
    const clock = fakeClock();
    const l = new RateLimiter(clock);
    l.pause('queued:+1', 10_000);
    expect(await l.acquire('queued:+1', { notAfter: clock.now() + 1000 })).toBeNull();
    expect(clock.elapsed()).toBe(0);
  });
});
