/**
 * One contract, two engines: every test here runs against PostgreSQL (a database of its
 * own, `sb_test_<random>`, dropped afterwards) and against embedded PGlite (a temporary
 * directory). PostgreSQL not answering is a failure, not a skip.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS, migrate } from './migrations.ts';
import { HistoryFact, type CallFact } from './schema.ts';
import { HistoryQueryError, HistoryStore } from './store.ts';
import type { CallRecord } from '../../shared/records.ts';
import { computeFigures } from '../wallboard/compute.ts';
import { pgliteEngine, postgresEngine, type HistoryEngine } from '../../test/support/history.ts';


const uid = () => randomBytes(5).toString('hex');
const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

function callFact(wacid: string, extra: Partial<CallFact> = {}): HistoryFact {
  return {
    type: 'call',
    wacid,
    phoneId: 'ph1',
    businessNumber: '+15550100001',
    customer: { phoneNumber: '+15550123456' },
    direction: 'inbound',
    outcome: 'in-progress',
    receivedAt: at(0),
    version: 0,
    ...extra,
  } as HistoryFact;
}

describe.each([
  ['PostgreSQL', postgresEngine],
  ['PGlite', pgliteEngine],
])('History store contract: %s', (engineName, makeEngine) => {
  let engine: HistoryEngine;
  let store: HistoryStore;
  beforeAll(async () => {
    engine = makeEngine();
    const db = await engine.open();
    await migrate(db);
    store = new HistoryStore(db);
  });
  afterAll(async () => {
    await engine?.cleanup();
  });

  describe('migrations', () => {
    it('are applied once: a second run applies nothing and the version table lists each once', async () => {
      const db = store.db;
      expect(await migrate(db)).toEqual([]);
      const rows = await db.query<{ version: number; n: number }>('SELECT version, count(*)::int AS n FROM history_migrations GROUP BY version ORDER BY version');
      expect(rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version, n: 1 })));
    });

    it('two nodes starting together on a fresh database: each migration runs exactly once', async () => {
      const e = makeEngine();
      try {
        const [a, b] = engineName === 'PostgreSQL' ? [await e.open(), await e.open()] : [await e.open(), await e.open()];
        const [ra, rb] = await Promise.all([migrate(a), migrate(b)]);
        expect([...ra, ...rb].sort((x, y) => x - y)).toEqual(MIGRATIONS.map((m) => m.version));
        const rows = await a.query<{ n: number }>('SELECT count(*)::int AS n FROM history_migrations');
        expect(rows[0]!.n).toBe(MIGRATIONS.length);
      } finally {
        await e.cleanup();
      }
    });
  });

  describe('recording calls', () => {
    it('records a call in both directions and reads it back in the CallRecord shape', async () => {
      const w1 = `in-${uid()}`;
      const w2 = `out-${uid()}`;
      await store.record(callFact(w1, { outcome: 'answered', agent: 'agent1', answeredAt: at(5), endedAt: at(65), waitMs: 5000, talkMs: 60000, endReason: 'hangup', version: 4 }));
      await store.record(callFact(w2, { direction: 'outbound', customer: { userId: 'US.abc123' }, outcome: 'no-answer', agent: 'supervisor', endedAt: at(30), version: 2 }));
      expect(await store.getCall(w1)).toEqual({
        wacid: w1,
        phoneId: 'ph1',
        businessNumber: '+15550100001',
        customer: { phoneNumber: '+15550123456' },
        direction: 'inbound',
        agent: 'agent1',
        outcome: 'answered',
        receivedAt: at(0),
        answeredAt: at(5),
        endedAt: at(65),
        waitMs: 5000,
        talkMs: 60000,
        endReason: 'hangup',
        media: [],
        timeline: [],
      });
      const out = await store.getCall(w2);
      expect(out).toMatchObject({ direction: 'outbound', customer: { userId: 'US.abc123' }, outcome: 'no-answer' });
      expect(out?.customer.phoneNumber).toBeUndefined();
      expect(await store.getCall('nope')).toBeNull();
    });

    it('every outcome is accepted; an unknown one is refused naming the field', async () => {
      for (const outcome of ['answered', 'missed', 'abandoned', 'rejected', 'failed', 'no-answer', 'in-progress'] as const) {
        const w = `o-${uid()}`;
        await store.record(callFact(w, { outcome }));
        expect((await store.getCall(w))?.outcome).toBe(outcome);
      }
      await expect(store.record(callFact('x', { outcome: 'lost' as never }))).rejects.toThrow(/outcome/);
    });

    it('out of order: a terminal outcome never reverts to in-progress; the earliest receivedAt wins; known fields stay', async () => {
      const w = `ooo-${uid()}`;
      const ended = callFact(w, { outcome: 'answered', agent: 'agent2', answeredAt: at(4), endedAt: at(40), talkMs: 36000, receivedAt: at(1), version: 5 });
      const early = callFact(w, { outcome: 'in-progress', receivedAt: at(0), version: 1 });
      const ringing = callFact(w, { outcome: 'in-progress', agent: 'agent1', receivedAt: at(2), version: 2 });
      await store.record(ended);
      await store.record(ringing);
      await store.record(early);
      const got = await store.getCall(w);
      expect(got).toMatchObject({ outcome: 'answered', agent: 'agent2', receivedAt: at(0), answeredAt: at(4), endedAt: at(40), talkMs: 36000 });

      // The same facts in the natural order give the same row.
      const w2 = `ord-${uid()}`;
      for (const f of [early, ringing, ended]) await store.record({ ...f, wacid: w2 } as HistoryFact);
      expect({ ...(await store.getCall(w2)), wacid: w }).toEqual(got);
    });

    it('a batch writes what the same facts one at a time write, onto a stored row or none', async () => {
      // Each fact knows at least what the one before did (what the engine records): any order.
      const life = (w: string): HistoryFact[] => [
        callFact(w, { version: 1 }),
        callFact(w, { version: 2, receivedAt: at(1) }),
        callFact(w, { version: 3, agent: 'agent1', waitMs: 4000, answeredAt: at(4) }),
        callFact(w, { version: 4, agent: 'agent1', waitMs: 4000, answeredAt: at(4), holdMs: 2000 }),
        callFact(w, { version: 6, outcome: 'answered', agent: 'agent1', waitMs: 4000, answeredAt: at(5), endedAt: at(60), talkMs: 56000, holdMs: 2000, endReason: 'hangup' }),
      ];
      // A fact knowing less than an earlier one (a call taken back from its agent) does not fold: in commit order.
      const takenBack = (w: string): HistoryFact[] => [
        callFact(w, { version: 1 }),
        callFact(w, { version: 2, agent: 'agent1', answeredAt: at(3) }),
        callFact(w, { version: 3, receivedAt: at(1) }),
        callFact(w, { version: 4, agent: 'agent2', customer: { userId: 'US.x' } }),
        callFact(w, { version: 5, outcome: 'answered', endedAt: at(61) }),
      ];
      const row = async (w: string) => {
        const [r] = await store.db.query<Record<string, unknown>>('SELECT * FROM history_calls WHERE wacid = $1', [w]);
        return { ...r, wacid: undefined };
      };
      for (let round = 0; round < 16; round++) {
        const w = `fold-${uid()}`;
        const order = round % 2 === 0 ? life(w).sort(() => Math.random() - 0.5) : takenBack(w);
        const stored = Math.floor(Math.random() * 3);
        for (const f of order) await store.record(f);
        const one = await row(w);
        const w2 = `${w}-b`;
        const again = order.map((f) => HistoryFact.parse({ ...f, wacid: w2 }));
        for (const f of again.slice(0, stored)) await store.apply([f]);
        await store.apply(again.slice(stored));
        expect(await row(w2), `order ${order.map((f) => (f as { version: number }).version).join(',')}, ${stored} stored first`).toEqual(one);
      }
    });

    it('legs (anchor mode): stored and returned by getCall and the search; the newer fact’s legs win in any order; a fact without legs keeps them', async () => {
      const a1 = { agent: 'agent1', talkMs: 7000, holdMs: 2000, answered: true };
      const a2 = { agent: 'agent2', talkMs: 28000, holdMs: 4000, answered: false };
      const life = (w: string): HistoryFact[] => [
        callFact(w, { version: 3, agent: 'agent1', answeredAt: at(3), legs: [{ ...a1, talkMs: 0, holdMs: 0 }], mediaMode: 'anchor' }),
        callFact(w, { version: 5, legs: [a1, { ...a2, talkMs: 0, holdMs: 0 }], agent: 'agent2', answeredAt: at(3), mediaMode: 'anchor' }),
        callFact(w, { version: 8, outcome: 'answered', agent: 'agent2', answeredAt: at(3), endedAt: at(41), talkMs: 38000, holdMs: 6000, legs: [a1, a2], mediaMode: 'anchor' }),
      ];
      const orders = [[0, 1, 2], [2, 1, 0], [1, 2, 0], [2, 0, 1]];
      const records: unknown[] = [];
      for (const order of orders) {
        const w = `legs-${uid()}`;
        const facts = life(w);
        for (const i of order) await store.record(facts[i]!);
        const got = await store.getCall(w);
        expect(got).toMatchObject({ outcome: 'answered', agent: 'agent2', talkMs: 38000, legs: [a1, a2] });
        records.push({ ...got, wacid: 'x', timeline: [] });
        // One batch, twice over: the same row.
        const wb = `${w}-b`;
        await store.apply([...life(wb), ...life(wb)].map((f) => HistoryFact.parse(f)));
        expect((await store.getCall(wb))!.legs).toEqual([a1, a2]);
        expect((await store.searchCalls({ agent: 'agent2', from: at(0), to: at(1) })).items.find((c) => c.wacid === w)?.legs).toEqual([a1, a2]);
        // agent1 had the first leg (the call is agent2's now): a search by agent1 finds it too; agent3 had none.
        expect((await store.searchCalls({ agent: 'agent1', from: at(0), to: at(1) })).items.some((c) => c.wacid === w)).toBe(true);
        expect((await store.searchCalls({ agent: 'agent3', from: at(0), to: at(1) })).items.some((c) => c.wacid === w)).toBe(false);
      }
      expect(new Set(records.map((r) => JSON.stringify(r))).size).toBe(1);
      // A later fact that knows no legs (as an older writer's) never erases them.
      const w = `legs-${uid()}`;
      for (const f of life(w)) await store.record(f);
      await store.record(callFact(w, { version: 9, outcome: 'answered', agent: 'agent2', answeredAt: at(3), endedAt: at(41), talkMs: 38000, holdMs: 6000, mediaMode: 'anchor' }));
      expect((await store.getCall(w))!.legs).toEqual([a1, a2]);
      // A call without legs (direct mode, older rows) has none in its record.
      const d = `nolegs-${uid()}`;
      await store.record(callFact(d, { outcome: 'answered', agent: 'agent1', answeredAt: at(3), endedAt: at(40), talkMs: 37000, version: 4 }));
      expect(await store.getCall(d)).not.toHaveProperty('legs');
    });

    it('a replay of every fact changes nothing (no duplicate timeline entries, same media)', async () => {
      const w = `rep-${uid()}`;
      const facts: HistoryFact[] = [
        callFact(w, { version: 1 }),
        { type: 'timeline', wacid: w, key: 'evt_1', at: at(0), event: 'chat.call.connect', detail: { from: '+15550123456' } },
        { type: 'timeline', wacid: w, key: 'state:2', at: at(1), event: 'ringing', detail: { agent: 'agent1' } },
        callFact(w, { outcome: 'missed', endedAt: at(15), version: 3 }),
        { type: 'timeline', wacid: w, key: 'evt_2', at: at(15), event: 'chat.call.terminate' },
        { type: 'media', wacid: w, mediaAssetId: `m-${w}`, kind: 'recording', status: 'available', bytes: 1234, sha256: 'a'.repeat(64), path: `/a/${w}/m.ogg`, at: at(20) },
        { type: 'disposition', wacid: w, disposition: 'Resolved', notes: 'ok', at: at(30) },
      ];
      for (const f of facts) await store.record(f);
      const first = await store.getCall(w);
      // All in one batch (one transaction, several facts of the same call in it), then one by one in reverse.
      await store.apply(facts.map((f) => HistoryFact.parse(f)));
      for (const f of [...facts].reverse()) await store.record(f);
      expect(await store.getCall(w)).toEqual(first);
      expect(first?.timeline).toEqual([
        { at: at(0), event: 'chat.call.connect', detail: { from: '+15550123456' } },
        { at: at(1), event: 'ringing', detail: { agent: 'agent1' } },
        { at: at(15), event: 'chat.call.terminate' },
      ]);
      const n = await store.db.query<{ n: number }>('SELECT count(*)::int AS n FROM history_timeline WHERE wacid = $1', [w]);
      expect(n[0]!.n).toBe(3);
    });

    it('media status only moves forward; a transcript makes the call findable, even when it arrives before the call', async () => {
      const w = `med-${uid()}`;
      const word = `zebra${uid()}`;
      await store.record({ type: 'media', wacid: w, mediaAssetId: `t-${w}`, kind: 'transcription', status: 'available', bytes: 99, path: `/a/${w}/t.json`, text: `hello ${word} world`, at: at(30) });
      await store.record({ type: 'media', wacid: w, mediaAssetId: `r-${w}`, kind: 'recording', status: 'available', bytes: 500, at: at(31) });
      await store.record({ type: 'media', wacid: w, mediaAssetId: `r-${w}`, kind: 'recording', status: 'announced', at: at(29) });
      await store.record(callFact(w, { outcome: 'answered', version: 3 }));
      const got = await store.getCall(w);
      expect(got?.media).toEqual([
        { kind: 'recording', mediaAssetId: `r-${w}`, status: 'available', bytes: 500 },
        { kind: 'transcription', mediaAssetId: `t-${w}`, status: 'available', bytes: 99, path: `/a/${w}/t.json` },
      ]);
      const page = await store.searchCalls({ q: word });
      expect(page.items.map((c) => c.wacid)).toEqual([w]);
      expect(page.items[0]!.media).toHaveLength(2);
    });

    it('the latest disposition wins, whatever the order', async () => {
      const w = `dis-${uid()}`;
      await store.record({ type: 'disposition', wacid: w, disposition: 'Escalated', notes: 'second', at: at(50) });
      await store.record(callFact(w, { outcome: 'answered' }));
      await store.record({ type: 'disposition', wacid: w, disposition: 'Resolved', at: at(40) });
      expect(await store.getCall(w)).toMatchObject({ disposition: 'Escalated', notes: 'second' });
    });
  });

  describe('search', () => {
    it('filters by customer (E.164 or BSUID), agent, business number, direction, outcome and date range; newest first', async () => {
      const tag = uid();
      const cust = `+1555${parseInt(tag.slice(0, 6), 16) % 10_000_000}`;
      const bsuid = `US.${tag}`;
      const biz = `+1999${parseInt(tag.slice(4), 16) % 10_000_000}`;
      const mk = (i: number, extra: Partial<CallFact>) => callFact(`s-${tag}-${i}`, { businessNumber: biz, receivedAt: at(i * 60), ...extra });
      await store.record(mk(0, { customer: { phoneNumber: cust }, outcome: 'answered', agent: 'a1' }));
      await store.record(mk(1, { customer: { phoneNumber: cust, userId: bsuid }, outcome: 'missed' }));
      await store.record(mk(2, { customer: { userId: bsuid }, outcome: 'answered', agent: 'a2', direction: 'outbound' }));
      await store.record(mk(3, { customer: { phoneNumber: cust }, outcome: 'answered', agent: 'a1' }));
      const ids = async (q: Record<string, unknown>) => (await store.searchCalls({ businessNumber: biz, ...q })).items.map((c) => c.wacid.split('-')[2]);
      expect(await ids({})).toEqual(['3', '2', '1', '0']);
      expect(await ids({ customer: cust })).toEqual(['3', '1', '0']);
      expect(await ids({ customer: bsuid })).toEqual(['2', '1']);
      expect(await ids({ agent: 'a1' })).toEqual(['3', '0']);
      expect(await ids({ direction: 'outbound' })).toEqual(['2']);
      expect(await ids({ outcome: 'answered', customer: cust })).toEqual(['3', '0']);
      expect(await ids({ from: at(60), to: at(180) })).toEqual(['2', '1']);
      expect(await ids({ customer: cust, from: at(0), to: at(181), outcome: 'answered' })).toEqual(['3', '0']);
    });

    it('pages with an opaque cursor, newest first, without gaps or repeats (also for equal times)', async () => {
      const biz = `+1888${parseInt(uid(), 16) % 10_000_000}`;
      const all: string[] = [];
      for (let i = 0; i < 23; i++) {
        const w = `p-${uid()}`;
        all.push(w);
        await store.record(callFact(w, { businessNumber: biz, receivedAt: at(Math.floor(i / 3)) }));
      }
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await store.searchCalls({ businessNumber: biz, limit: 5, ...(cursor ? { cursor } : {}) });
        seen.push(...page.items.map((c) => c.wacid));
        cursor = page.cursor;
        pages++;
      } while (cursor);
      expect(pages).toBe(5);
      expect(seen).toHaveLength(23);
      expect(new Set(seen).size).toBe(23);
      const expected = await store.db.query<{ wacid: string }>('SELECT wacid FROM history_calls WHERE business_number = $1 ORDER BY received_at DESC, wacid DESC', [biz]);
      expect(seen).toEqual(expected.map((r) => r.wacid));
      expect((await store.searchCalls({ businessNumber: biz })).items).toHaveLength(23); // default 25
    });

    it('bad input names the field and the rule', async () => {
      const bad = async (q: Record<string, unknown>, field: string) => {
        const err = await store.searchCalls(q).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(HistoryQueryError);
        expect((err as HistoryQueryError).field).toBe(field);
      };
      await bad({ limit: 0 }, 'limit');
      await bad({ limit: 101 }, 'limit');
      await bad({ limit: 'ten' }, 'limit');
      await bad({ from: 'yesterday' }, 'from');
      await bad({ outcome: 'lost' }, 'outcome');
      await bad({ direction: 'sideways' }, 'direction');
      await bad({ cursor: 'garbage' }, 'cursor');
    });
  });

  describe('call groups (the wallboard\'s read)', () => {
    it('the figures of a day computed from its groups equal those computed from every call, in one statement', async () => {
      // A day of its own (far from the other tests' calls), with every kind of call the figures tell apart.
      const day = Date.parse('2031-07-01T00:00:00.000Z');
      const t = (s: number) => new Date(day + s * 1000).toISOString();
      const numbers = ['+15550109001', '+15550109002', undefined];
      const outcomes = ['answered', 'abandoned', 'missed', 'rejected', 'failed', 'no-answer', 'in-progress'] as const;
      let seed = 7;
      const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
      const facts: HistoryFact[] = [];
      for (let i = 0; i < 300; i++) {
        const outcome = outcomes[rnd(outcomes.length)]!;
        const answered = outcome === 'answered' || (outcome === 'in-progress' && rnd(2) === 0);
        const ended = outcome !== 'in-progress' && rnd(4) > 0;
        const wait = rnd(3) === 0 ? undefined : rnd(40_000);
        const bn = numbers[rnd(numbers.length)];
        facts.push(
          callFact(`grp-${uid()}-${i}`, {
            receivedAt: t(i * 60),
            direction: rnd(4) === 0 ? 'outbound' : 'inbound',
            outcome,
            ...(bn ? { businessNumber: bn } : { businessNumber: undefined }),
            ...(rnd(5) > 0 ? { agent: `agent${rnd(4)}` } : {}),
            ...(wait !== undefined ? { waitMs: wait } : {}),
            ...(answered ? { answeredAt: t(i * 60 + 5) } : {}),
            ...(ended ? { endedAt: t(i * 60 + 50) } : {}),
            ...(answered && ended && rnd(5) > 0 ? { talkMs: rnd(600_000), ...(rnd(2) ? { holdMs: rnd(60_000) } : {}) } : {}),
            // Anchor mode, some calls with legs: two or three distinct agents who talked with the caller.
            ...(answered && rnd(3) === 0 ? { legs: [0, 1, 2].slice(0, 2 + rnd(2)).map((k) => ({ agent: `agent${(k + i) % 5}`, talkMs: rnd(300_000), holdMs: rnd(2) ? rnd(30_000) : 0, answered: k === 0 })) } : {}),
            version: 3,
          } as Partial<CallFact>),
        );
      }
      for (const f of facts) await store.record(f);
      const range = { from: t(0), to: t(86_400) };
      const every: CallRecord[] = [];
      for (let cursor: string | undefined, page = 0; page < 100; page++) {
        const r = await store.searchCalls({ ...range, limit: 100, ...(cursor ? { cursor } : {}) });
        every.push(...r.items);
        if (!(cursor = r.cursor)) break;
      }
      expect(every).toHaveLength(300);
      const groups = await store.callGroups(range, 20_000);
      expect(groups.length).toBeLessThan(300);
      expect(groups.reduce((a, g) => a + g.count, 0)).toBe(300);
      expect(computeFigures(groups, 20)).toEqual(computeFigures(every, 20));
      expect(every.filter((c) => c.legs !== undefined).length).toBeGreaterThan(20);
      expect(groups.some((g) => g.legs !== undefined && g.legs.length > 0)).toBe(true);
      // The range's end is open: nothing after it.
      expect(await store.callGroups({ from: t(86_400) }, 20_000)).toEqual([]);
    });
  });

  describe('call groups with legs', () => {
    it('a transferred call counts once for each agent who talked, with their own talk and hold; the number keeps the call’s', async () => {
      const day = Date.parse('2031-08-01T00:00:00.000Z');
      const t = (s: number) => new Date(day + s * 1000).toISOString();
      const biz = '+15550109011';
      // Cold transfer agent1 → agent2 (anchor): 7 s + 28 s of a 38 s call; a direct call of agent1's, 60 s.
      await store.record(callFact(`gl-${uid()}`, { businessNumber: biz, receivedAt: t(0), outcome: 'answered', agent: 'agent2', answeredAt: t(3), endedAt: t(41), waitMs: 3000, talkMs: 38000, holdMs: 6000, mediaMode: 'anchor', version: 9,
        legs: [{ agent: 'agent1', talkMs: 7000, holdMs: 2000, answered: true }, { agent: 'agent2', talkMs: 28000, holdMs: 4000, answered: false }] }));
      await store.record(callFact(`gl-${uid()}`, { businessNumber: biz, receivedAt: t(100), outcome: 'answered', agent: 'agent1', answeredAt: t(102), endedAt: t(162), waitMs: 2000, talkMs: 60000, version: 4 }));
      const range = { from: t(0), to: t(86_400) };
      const f = computeFigures(await store.callGroups(range, 20_000), 20);
      expect(f.agents).toEqual([
        { name: 'agent1', callsHandled: 2, inbound: 2, outbound: 0, talkMs: 67000, holdMs: 2000, ahtMs: 34500, transfers: 0 },
        { name: 'agent2', callsHandled: 1, inbound: 1, outbound: 0, talkMs: 28000, holdMs: 4000, ahtMs: 32000, transfers: 0 },
      ]);
      expect(f.numbers).toEqual([expect.objectContaining({ businessNumber: biz, offered: 2, answered: 2, ahtMs: (38000 + 6000 + 60000) / 2 })]);
      const every = (await store.searchCalls({ ...range, limit: 100 })).items;
      expect(computeFigures(every, 20)).toEqual(f);
    });
  });

  describe('transferCounts', () => {
    it('counts cold transfers sent and warm ones completed, per business number and transferring agent, for the calls received in the range', async () => {
      const day = 60 * 86_400; // a day of its own: no other test's calls
      const t = (s: number) => at(day + s);
      const [a, b, late] = [`tr-a-${uid()}`, `tr-b-${uid()}`, `tr-late-${uid()}`];
      await store.record(callFact(a, { receivedAt: t(0), outcome: 'answered' }));
      await store.record(callFact(b, { receivedAt: t(100), businessNumber: '+15550100002', outcome: 'answered' }));
      await store.record(callFact(late, { receivedAt: t(86_400), outcome: 'answered' }));
      const step = (wacid: string, s: number, event: string, detail: Record<string, unknown>): HistoryFact => ({ type: 'timeline', wacid, key: `${event}:${s}`, at: t(s), event, detail });
      for (const f of [
        step(a, 10, 'transfer', { agent: 'ann', mode: 'cold', to: { agent: 'bob' } }),
        step(a, 20, 'transfer', { agent: 'bob', mode: 'warm', to: { agent: 'cy' } }), // a consult: not yet a transfer
        step(a, 30, 'transferAction', { agent: 'bob', action: 'complete' }),
        step(a, 40, 'transfer', { agent: 'cy', mode: 'warm', to: { agent: 'ann' } }),
        step(a, 50, 'transferAction', { agent: 'cy', action: 'cancel' }),
        step(a, 60, 'transferAction', { agent: 'cy', action: 'conference' }),
        step(b, 110, 'transfer', { agent: 'ann', to: { queue: 'ph1' } }), // no mode: cold
        step(b, 110, 'transfer', { agent: 'ann', to: { queue: 'ph1' } }), // the same happening again: one row
        step(late, 86_410, 'transfer', { agent: 'ann', mode: 'cold', to: { agent: 'bob' } }), // the next day
      ])
        await store.record(f);
      const counts = await store.transferCounts({ from: t(0), to: t(86_400) });
      const key = (x: { businessNumber?: string; agent?: string }) => `${x.businessNumber} ${x.agent}`;
      expect([...counts].sort((x, y) => key(x).localeCompare(key(y)))).toEqual([
        { businessNumber: '+15550100001', agent: 'ann', count: 1 },
        { businessNumber: '+15550100001', agent: 'bob', count: 1 },
        { businessNumber: '+15550100002', agent: 'ann', count: 1 },
      ]);
      expect(computeFigures([], 20, [], counts)).toMatchObject({
        numbers: [{ businessNumber: '+15550100001', transfers: 2 }, { businessNumber: '+15550100002', transfers: 1 }],
        agents: [{ name: 'ann', transfers: 2, callsHandled: 0 }, { name: 'bob', transfers: 1 }],
      });
      expect(await store.transferCounts({ from: t(86_400) })).toEqual([{ businessNumber: '+15550100001', agent: 'ann', count: 1 }]);
    });
  });

  describe('retention', () => {
    it('deletes calls past HISTORY_RETENTION_DAYS with their timeline, wrap-up and media, and media past ARCHIVE_RETENTION_DAYS; returns the files', async () => {
      const day = 24 * 3600 * 1000;
      const now = new Date(T0 + 1000 * day);
      const ago = (d: number) => new Date(now.getTime() - d * day).toISOString();
      const old = `old-${uid()}`; // 400 days: everything goes
      const mid = `mid-${uid()}`; // 100 days: the call stays, its media goes
      const fresh = `new-${uid()}`; // 10 days: everything stays
      const word = `retain${uid()}`;
      for (const [w, d] of [[old, 400], [mid, 100], [fresh, 10]] as const) {
        await store.record(callFact(w, { receivedAt: ago(d), outcome: 'answered' }));
        await store.record({ type: 'timeline', wacid: w, key: 'e1', at: ago(d), event: 'chat.call.connect' });
        await store.record({ type: 'disposition', wacid: w, disposition: 'Resolved', at: ago(d) });
        await store.record({ type: 'media', wacid: w, mediaAssetId: `r-${w}`, kind: 'recording', status: 'available', path: `/arch/${w}/r.ogg`, at: ago(d) });
        await store.record({ type: 'media', wacid: w, mediaAssetId: `t-${w}`, kind: 'transcription', status: 'available', path: `/arch/${w}/t.json`, text: word, at: ago(d) });
      }
      const r = await store.purge({ now, historyDays: 365, archiveDays: 90 });
      expect(r.calls).toBeGreaterThanOrEqual(1);
      expect(r.paths).toEqual(expect.arrayContaining([`/arch/${old}/r.ogg`, `/arch/${old}/t.json`, `/arch/${mid}/r.ogg`, `/arch/${mid}/t.json`]));
      expect(r.paths.some((p) => p.includes(fresh))).toBe(false);
      expect(await store.getCall(old)).toBeNull();
      const left = await store.db.query<{ n: number }>(
        'SELECT (SELECT count(*) FROM history_timeline WHERE wacid = $1) + (SELECT count(*) FROM history_media WHERE wacid = $1) + (SELECT count(*) FROM history_dispositions WHERE wacid = $1) AS n',
        [old],
      );
      expect(Number(left[0]!.n)).toBe(0);
      const m = await store.getCall(mid);
      expect(m).toMatchObject({ media: [], disposition: 'Resolved' });
      expect(m?.timeline).toHaveLength(1);
      expect((await store.getCall(fresh))?.media).toHaveLength(2);
      // The deleted transcript is no longer searchable; the kept one is.
      expect((await store.searchCalls({ q: word })).items.map((c) => c.wacid)).toEqual([fresh]);
      // A second run finds nothing more.
      expect(await store.purge({ now, historyDays: 365, archiveDays: 90 })).toEqual({ calls: 0, media: 0, paths: [] });
    });
  });
});
