/**
 * Customer panel lookups must not starve call signalling of the Service's
 * shared management quota (interface part 8: contact reads, phone number lists and call
 * signalling share 200 rps and N per hour). The emulator enforces a small hourly quota
 * (the bridge's client is told the same), agents flood the panel with new numbers, then a
 * call comes in: it must still be answerable (preAccept and accept find the reserved
 * share), every panel request answers (none hangs: a contact the quota cannot serve in time
 * is `contactUnavailable`), and `/metrics` shows the reserved share and the use.
 *
 * Quick: a 200-per-hour quota and 300 lookups from 5 agents. FAULTS_SIZE=full: the tester's
 * 10,000 per hour and 10,500 lookups (175 agents).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AudioPeer } from '../emulator/index.ts';
import { agentClient, emulatorRequest, login, startBridge, type Bridge } from '../e2e/harness.ts';
import { printCounts, size } from './support.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const PER_HOUR = size(200, 10_000);
const LOOKUPS = size(300, 10_500);
/** The panel's per-user limit (server/customers/routes.ts LOOKUP_LIMIT): lookups spread over this many agents. */
const PER_USER = 60;
const FLOODERS = Math.ceil(LOOKUPS / PER_USER);
/** Panel requests in flight at once (the tester: about 117 a second for 90 s). */
const CONCURRENCY = 100;

describe('a flood of customer panel lookups leaves calls answerable (management quota)', () => {
  it(`${LOOKUPS} lookups of new numbers against a ${PER_HOUR}/hour quota: every panel answers, then a call rings and is answered`, async () => {
    const flooders = Array.from({ length: FLOODERS }, (_, i) => `looker${i}`);
    const b: Bridge = await startBridge({
      agents: ['agent1', 'limited', ...flooders],
      emulator: { rateLimits: { managementPerHour: PER_HOUR } },
      serviceLimits: { managementPerHour: PER_HOUR },
      loginLimits: { perName: 100, perAddress: 100_000 },
    });
    cleanups.push(() => b.close());

    // ---- per user: past 60 lookups a minute, 429 with Retry-After (one number: one contact read) ----
    const limitedCookie = await login(b.url, 'limited');
    const own = await Promise.all(Array.from({ length: PER_USER + 1 }, () => fetch(`${b.url}/api/customers/${encodeURIComponent('+15556999999')}`, { headers: { cookie: limitedCookie } })));
    const over = own.filter((r) => r.status === 429);
    expect(own.filter((r) => r.status === 200)).toHaveLength(PER_USER);
    expect(over).toHaveLength(1);
    expect(Number(over[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await over[0]!.json()) as { error: { code: string } }).error.code).toBe('RATE_LIMITED');
    await Promise.all(own.map((r) => (r.bodyUsed ? undefined : r.body?.cancel())));

    // ---- the flood: each agent looks up PER_USER new numbers; CONCURRENCY requests in flight in all ----
    const statuses = new Map<string, number>();
    const count = (k: string) => statuses.set(k, (statuses.get(k) ?? 0) + 1);
    let slowest = 0;
    const answered: string[] = [];
    const cookies = await Promise.all(flooders.map((name) => login(b.url, name)));
    const work = Array.from({ length: LOOKUPS }, (_, i) => ({ cookie: cookies[Math.floor(i / PER_USER)]!, phone: `+1555${String(7_000_000 + i).padStart(7, '0')}` }));
    const t0 = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let w = work[next++]; w; w = work[next++]) {
          const s = Date.now();
          try {
            const r = await fetch(`${b.url}/api/customers/${encodeURIComponent(w.phone)}`, { headers: { cookie: w.cookie }, signal: AbortSignal.timeout(30_000) });
            const body = (await r.json()) as { contactUnavailable?: boolean };
            count(r.status === 200 ? (body.contactUnavailable ? 'unavailable' : 'answered') : String(r.status));
            if (r.status === 200 && !body.contactUnavailable) answered.push(w.phone);
          } catch {
            count('hung');
          }
          slowest = Math.max(slowest, Date.now() - s);
        }
      }),
    );
    const floodMs = Date.now() - t0;
    const reads = () => b.emu.ctx.requests.filter((r) => r.path.startsWith('/contact/contacts/')).length;
    const contactReads = reads();

    // "No contact" (the Service's 404) is cached like a contact: asking again reads nothing.
    const again = await fetch(`${b.url}/api/customers/${encodeURIComponent(answered.at(-1)!)}`, { headers: { cookie: await login(b.url, 'agent1') } });
    expect(again.status).toBe(200);
    expect(((await again.json()) as { contact?: unknown; contactUnavailable?: boolean })).not.toHaveProperty('contact');
    expect(reads()).toBe(contactReads);

    // ---- then a call: it must be answerable ----
    const agent = await agentClient(b.url, 'agent1');
    cleanups.push(() => agent.close());
    const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', { audio: 'silence' })).wacid as string;
    const offer = await agent.next('call.offered', (m) => m.wacid === wacid, 15_000);
    const { peer, sdp } = await AudioPeer.answerer(offer.sdp);
    cleanups.push(() => peer.close());
    const answer = await agent.request({ type: 'call.answer', wacid, sdp }, 45_000);
    const hangup = answer.type === 'ack' ? await agent.request({ type: 'call.hangup', wacid }, 30_000) : undefined;

    const metrics = await (await fetch(`${b.url}/metrics`)).text();
    const gauge = (name: string) => Number(/^(\S+) (\S+)$/m.exec(metrics.split('\n').find((l) => l.startsWith(`${name} `)) ?? '')?.[2] ?? NaN);
    printCounts('quota-flood', {
      perHour: PER_HOUR,
      lookups: LOOKUPS,
      ...Object.fromEntries(statuses),
      contactReads,
      slowestMs: slowest,
      floodMs,
      answer: answer.type === 'ack' ? 'ack' : `error:${answer.code}`,
      hangup: hangup?.type ?? 'none',
      reserved: gauge('switchboard_service_quota_hour_reserved'),
      used: gauge('switchboard_service_quota_hour_used'),
      usedSignalling: gauge('switchboard_service_quota_hour_used_signalling'),
    });

    expect(statuses.get('hung') ?? 0, 'panel requests that did not answer within 30 s (the old code waited up to an hour for a quota slot)').toBe(0);
    expect(answer).toMatchObject({ type: 'ack', wacid });
    expect(hangup).toMatchObject({ type: 'ack' });
    // Contact reads took at most the share other requests may use (80 %); the rest waits for signalling.
    expect(contactReads).toBeLessThanOrEqual(Math.floor(PER_HOUR * 0.8));
    expect(gauge('switchboard_service_quota_hour_limit')).toBe(PER_HOUR);
    expect(gauge('switchboard_service_quota_hour_reserved')).toBe(PER_HOUR - Math.floor(PER_HOUR * 0.8));
    expect(gauge('switchboard_service_quota_hour_used_signalling')).toBeGreaterThanOrEqual(2); // preAccept and accept
  }, 180_000);
});
