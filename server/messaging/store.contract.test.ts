/**
 * Messages, catalog, opt-outs and callback tasks (migration 2): one contract, two engines,
 * as history.contract.test.ts. On PostgreSQL the two-node cases use two pools on one
 * database (two "nodes"); PGlite is single-process, so there they share one handle.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CallbackTask } from '../../shared/records.ts';
import { CallbackStore, MISSES_KEPT } from '../callbacks/store.ts';
import type { Db } from '../history/db.ts';
import { MessagingStore } from './store.ts';
import { migrate } from '../history/migrations.ts';
import { mayMessage } from './optout.ts';
import { sendableTemplate } from './templates.ts';
import { pgliteEngine, postgresEngine, type HistoryEngine } from '../../test/support/history.ts';


const uid = () => randomBytes(5).toString('hex');
const BIZ = '+15550100001';
const T0 = Date.parse('2026-06-01T10:00:00.000Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

describe.each([
  ['PostgreSQL', postgresEngine],
  ['PGlite', pgliteEngine],
])('Messaging history contract: %s', (_name, makeEngine) => {
  let engine: HistoryEngine;
  let a: Db;
  let b: Db;
  beforeAll(async () => {
    engine = makeEngine();
    a = await engine.open();
    await migrate(a);
    b = await engine.open();
  });
  afterAll(async () => engine?.cleanup());

  describe('messages', () => {
    it('status events in any order, repeated, on two nodes end in the ordered result; the view never goes down', async () => {
      const id = `msg-${uid()}`;
      const user = `+1555${randomBytes(3).readUIntBE(0, 3).toString().padStart(7, '0')}`;
      const ms = [new MessagingStore(a), new MessagingStore(b)];
      const sent = { id, from: BIZ, to: user, type: 'text', text: { body: 'hello' }, status: 'accepted', createTime: at(0) };
      const events = [
        { id, status: 'read', readTime: at(30), totalPrice: 0.01, currency: 'USD' },
        { id, status: 'sent', sendTime: at(10) },
        { id, status: 'delivered', deliverTime: at(20), totalPrice: 0.01, currency: 'USD' },
        { id, status: 'sent', sendTime: at(10) },
      ];
      await ms[0]!.applyMessage({ direction: 'outbound', message: sent, at: at(0), sentBy: 'agent1' });
      await Promise.all(events.map((m, i) => ms[i % 2]!.applyMessage({ direction: 'outbound', message: m, at: at(40) })));
      const again = await ms[1]!.applyMessage({ direction: 'outbound', message: events[1]!, at: at(40) });
      expect(again?.changed).toBe(false);
      const got = await ms[0]!.getMessage(id);
      expect(got?.sentBy).toBe('agent1');
      expect(got?.record).toMatchObject({ status: 'read', text: 'hello', to: user, totalPrice: 0.01, priceFinal: true });
      expect(got?.record.statusHistory.map((s) => s.status)).toEqual(['accepted', 'sent', 'delivered', 'read']);
      expect((await ms[0]!.messagesOf(user)).map((r) => r.id)).toEqual([id]);
    });

    it('observations that arrive together share a transaction; each caller gets its own message; one the record refuses fails alone', async () => {
      let txs = 0;
      const tx: Db['tx'] = (fn) => (txs++, a.tx(fn));
      const ms = new MessagingStore(Object.assign(Object.create(a) as Db, { tx }));
      const user = `+1555${randomBytes(3).readUIntBE(0, 3).toString().padStart(7, '0')}`;
      const fact = (id: string, i: number) => ({ direction: 'outbound' as const, message: { id, from: BIZ, to: user, type: 'text', text: { body: `m${i}` }, status: 'accepted', createTime: at(i) }, at: at(i) });
      const ids = Array.from({ length: 20 }, () => `msg-${uid()}`);
      const changes = await Promise.all(ids.map((id, i) => ms.applyMessage(fact(id, i))));
      expect(changes.map((c) => [c?.record.id, c?.changed])).toEqual(ids.map((id) => [id, true]));
      // The first alone, the 19 that came meanwhile together (one each before).
      expect(txs).toBe(2);
      expect((await ms.messagesOf(user, 100)).length).toBe(20);
      // A record the store refuses (an id over MessageRecord's 256) among others fails alone.
      const more = Array.from({ length: 5 }, () => `msg-${uid()}`);
      const results = await Promise.allSettled([...more.slice(0, 2), 'x'.repeat(300), ...more.slice(2)].map((id, i) => ms.applyMessage(fact(id, 30 + i))));
      expect(results.map((r) => (r.status === 'fulfilled' ? r.value?.record.id : 'refused'))).toEqual([...more.slice(0, 2), 'refused', ...more.slice(2)]);
      expect((await ms.messagesOf(user, 100)).length).toBe(25);
      // Idle again: the next one goes alone, at once.
      txs = 0;
      expect((await ms.applyMessage({ ...fact(ids[0]!, 0), message: { ...fact(ids[0]!, 0).message, status: 'sent', sendTime: at(50) } }))?.record.status).toBe('sent');
      expect(txs).toBe(1);
    });

    it('an inbound message is recorded once as received; an echo update before its created event is completed by it', async () => {
      const s = new MessagingStore(a);
      const id = `in-${uid()}`;
      const m = { id, from: '+15550123456', to: BIZ, type: 'text', text: { body: 'call me' }, createTime: at(5) };
      await s.applyMessage({ direction: 'inbound', message: m, at: at(5) });
      expect((await s.applyMessage({ direction: 'inbound', message: m, at: at(5) }))?.changed).toBe(false);
      expect((await s.getMessage(id))?.record).toMatchObject({ direction: 'inbound', status: 'received', text: 'call me', from: '+15550123456' });
      const eid = `echo-${uid()}`;
      await s.applyMessage({ direction: 'echo', message: { id: eid, status: 'delivered', deliverTime: at(8) }, at: at(8) });
      await s.applyMessage({ direction: 'echo', message: { id: eid, from: BIZ, to: '+15550123456', type: 'text', text: { body: 'from the phone' }, status: 'sent', createTime: at(6), sendTime: at(6) }, at: at(6) });
      expect((await s.getMessage(eid))?.record).toMatchObject({ direction: 'echo', status: 'delivered', type: 'text', text: 'from the phone', createTime: at(6) });
    });

    it('idle unsettled messages are listed for reconcile; read ones are not; a touch postpones', async () => {
      const s = new MessagingStore(a);
      const id = `idle-${uid()}`;
      const done = `done-${uid()}`;
      await s.applyMessage({ direction: 'outbound', message: { id, from: BIZ, to: '+15550123456', type: 'text', status: 'accepted', createTime: at(0) }, at: at(0) });
      await s.applyMessage({ direction: 'outbound', message: { id: done, from: BIZ, to: '+15550123456', type: 'text', status: 'read', createTime: at(0) }, at: at(0) });
      const later = new Date(Date.now() + 60_000);
      const idle = await s.idleMessages(later, new Date(T0 - 1000), 1000);
      expect(idle).toContain(id);
      expect(idle).not.toContain(done);
      await s.touchMessage(id);
      expect(await s.idleMessages(new Date(Date.now() - 60_000), new Date(T0 - 1000), 1000)).not.toContain(id);
    });
  });

  describe('templates and opt-outs', () => {
    it('the catalog is shared: a sync on one node and a PAUSED review on the other block the template everywhere', async () => {
      const s1 = new MessagingStore(a);
      const s2 = new MessagingStore(b);
      const name = `t_${uid()}`;
      await s1.syncTemplates([{ wabaId: 'W1', name, language: 'en_US', status: 'APPROVED', components: [] }], T0);
      expect(sendableTemplate(await s2.catalog(), name, 'en_US', 'W1')).toMatchObject({ ok: true });
      await s2.applyTemplateEvent('chat.template.reviewed', { wabaId: 'W1', name, language: 'en_US', status: 'PAUSED' }, T0 + 1000);
      // An older listing does not bring APPROVED back.
      await s1.syncTemplates([{ wabaId: 'W1', name, language: 'en_US', status: 'APPROVED' }], T0 + 500);
      expect(sendableTemplate(await s1.catalog(), name, 'en_US', 'W1')).toMatchObject({ ok: false, code: 'TEMPLATE_NOT_APPROVED', status: 'PAUSED' });
    });

    it('opt-outs: event and listing; a delete allows again; an older event does not undo a newer one', async () => {
      const s = new MessagingStore(a);
      const c = `+1555${randomBytes(3).readUIntBE(0, 3).toString().padStart(7, '0')}`;
      await s.applyUnsubscribeEvent('contact.unsubscribe.created', { phoneNumber: c, source: 'USER_REQUEST', updateTime: at(10) }, T0);
      expect(mayMessage(await new MessagingStore(b).optOutsOf([c]), [c]).ok).toBe(false);
      await s.applyUnsubscribeEvent('contact.unsubscribe.deleted', { phoneNumber: c, updateTime: at(5) }, T0);
      expect(mayMessage(await s.optOutsOf([c]), [c]).ok).toBe(false);
      await s.applyUnsubscribeEvent('contact.unsubscribe.deleted', { phoneNumber: c, updateTime: at(20) }, T0);
      expect(mayMessage(await s.optOutsOf([c]), [c]).ok).toBe(true);
      const d = `${c}9`.slice(0, 12);
      await s.syncUnsubscribers([{ customer: d, channel: 'chat' }], T0 + 30_000);
      expect(mayMessage(await s.optOutsOf([d]), [d])).toMatchObject({ ok: false, channel: 'chat' });
      await s.syncUnsubscribers([], T0 + 40_000);
      expect(mayMessage(await s.optOutsOf([d]), [d]).ok).toBe(true);
    });
  });

  describe('callback tasks', () => {
    const customer = () => `+1555${randomBytes(3).readUIntBE(0, 3).toString().padStart(7, '0')}`;

    it('one open task per customer and business number: later misses add, a repeated call adds nothing, two nodes at once make one task', async () => {
      const c = customer();
      const [n1, n2] = [new CallbackStore(a), new CallbackStore(b)];
      const [r1, r2] = await Promise.all([
        n1.noteMissedCall({ wacid: `w1-${c}`, customer: c, businessNumber: BIZ, reason: 'missed', at: at(0) }),
        n2.noteMissedCall({ wacid: `w2-${c}`, customer: c, businessNumber: BIZ, reason: 'abandoned', at: at(1) }),
      ]);
      expect([r1.created, r2.created].sort()).toEqual([false, true]);
      expect(r1.task.id).toBe(r2.task.id);
      const again = await n1.noteMissedCall({ wacid: `w1-${c}`, customer: c, businessNumber: BIZ, reason: 'missed', at: at(0) });
      expect(again).toMatchObject({ added: false, created: false });
      const t = (await n1.get(r1.task.id))!;
      expect(t.misses.map((m) => m.wacid).sort()).toEqual([`w1-${c}`, `w2-${c}`]);
      expect(t).toMatchObject({ state: 'open', customer: c, businessNumber: BIZ });
      // Another business number is another task.
      const other = await n2.noteMissedCall({ wacid: `w3-${c}`, customer: c, businessNumber: '+15550100002', reason: 'rejected', at: at(2) });
      expect(other.created).toBe(true);
      expect(other.task.id).not.toBe(t.id);
    });

    it('the same call noted at once on two nodes adds one miss; a follow-up given with the first miss is the new task\'s', async () => {
      for (let i = 0; i < 5; i++) {
        const c = customer();
        const [n1, n2] = [new CallbackStore(a), new CallbackStore(b)];
        const off = { at: at(0), code: 'OFF', reason: 'off' };
        const m = { wacid: `w-${c}`, customer: c, businessNumber: BIZ, reason: 'missed' as const, at: at(0) };
        const rs = await Promise.all([n1.noteMissedCall(m, off), n2.noteMissedCall(m, off), n1.noteMissedCall(m, off)]);
        expect(rs.filter((r) => r.added)).toHaveLength(1);
        expect(rs.filter((r) => r.created)).toHaveLength(1);
        const t = (await n1.get(rs[0]!.task.id))!;
        expect(t.misses.map((x) => x.wacid)).toEqual([`w-${c}`]);
        expect(t.followup).toEqual(off);
        // A later miss keeps the task's follow-up as it is.
        const later = await n2.noteMissedCall({ ...m, wacid: `w2-${c}` }, { at: at(5), code: 'OTHER' });
        expect(later).toMatchObject({ created: false, added: true, task: { id: t.id, followup: off } });
      }
    });

    it('a customer who calls again and again: the task keeps its latest misses and counts them all (its size and its pushes stay bounded)', async () => {
      const c = customer();
      const store = new CallbackStore(a);
      let last: CallbackTask | undefined;
      for (let i = 0; i < MISSES_KEPT + 15; i++) last = (await store.noteMissedCall({ wacid: `wm${i}-${c}`, customer: c, businessNumber: BIZ, reason: 'missed', at: at(i) })).task;
      expect(last!.missCount).toBe(MISSES_KEPT + 15);
      expect(last!.misses.map((m) => m.wacid)).toEqual(Array.from({ length: MISSES_KEPT }, (_, i) => `wm${i + 15}-${c}`));
      // A repeated observation of an old call still adds nothing.
      const again = await store.noteMissedCall({ wacid: `wm0-${c}`, customer: c, businessNumber: BIZ, reason: 'missed', at: at(0) });
      expect(again).toMatchObject({ added: false, task: { missCount: MISSES_KEPT + 15 } });
      expect((await store.get(last!.id))!.misses).toHaveLength(MISSES_KEPT);
    });

    it('two claims at once from two nodes: exactly one wins, the other sees who holds it', async () => {
      const c = customer();
      const [n1, n2] = [new CallbackStore(a), new CallbackStore(b)];
      const { task } = await n1.noteMissedCall({ wacid: `w-${c}`, customer: c, businessNumber: BIZ, reason: 'missed', at: at(0) });
      for (let round = 0; round < 5; round++) {
        const [x, y] = await Promise.all([n1.claim(task.id, 'agent1'), n2.claim(task.id, 'agent2')]);
        if (round === 0) {
          expect([x.ok, y.ok].filter(Boolean)).toHaveLength(1);
          const winner = x.ok ? x.task : y.ok ? y.task : undefined;
          const loser = x.ok ? y : x;
          expect(loser).toMatchObject({ ok: false, code: 'CONFLICT', task: { state: 'claimed', assignee: winner!.assignee } });
        } else {
          expect([x.ok, y.ok]).toEqual([false, false]);
        }
      }
      expect(await n1.claim('no-such-task', 'agent1')).toEqual({ ok: false, code: 'NOT_FOUND' });
    });

    it('done: by the assignee (or a supervisor), once, with the outcome; then a new miss opens a new task', async () => {
      const c = customer();
      const s = new CallbackStore(a);
      const { task } = await s.noteMissedCall({ wacid: `w-${c}`, customer: c, businessNumber: BIZ, reason: 'missed', at: at(0) });
      expect((await s.claim(task.id, 'agent1')).ok).toBe(true);
      expect(await s.done(task.id, 'resolved by email', 'agent2', false)).toMatchObject({ ok: false, code: 'CONFLICT' });
      expect(await s.done(task.id, 'resolved by email', 'agent1', false)).toMatchObject({ ok: true, task: { state: 'done', outcome: 'resolved by email' } });
      expect(await s.done(task.id, 'again', 'agent1', true)).toMatchObject({ ok: false, code: 'CONFLICT', task: { outcome: 'resolved by email' } });
      const next = await s.noteMissedCall({ wacid: `w2-${c}`, customer: c, businessNumber: BIZ, reason: 'missed', at: at(9) });
      expect(next.created).toBe(true);
      expect((await s.list('done', 1000)).some((t) => t.id === task.id)).toBe(true);
      expect((await s.list('open', 1000)).some((t) => t.id === next.task.id)).toBe(true);
    });

    it('open and claimed tasks in one read (what the pages list): a claimed task is in it, with who holds it', async () => {
      const [c1, c2] = [customer(), customer()];
      const s = new CallbackStore(a);
      const t1 = (await s.noteMissedCall({ wacid: `w-${c1}`, customer: c1, businessNumber: BIZ, reason: 'missed', at: at(0) })).task;
      const t2 = (await s.noteMissedCall({ wacid: `w-${c2}`, customer: c2, businessNumber: BIZ, reason: 'missed', at: at(1) })).task;
      expect((await s.claim(t2.id, 'agent1')).ok).toBe(true);
      const ours = (ts: { id: string }[]) => ts.filter((t) => t.id === t1.id || t.id === t2.id);
      expect(ours(await s.list(['open', 'claimed'], 1000))).toMatchObject([
        { id: t1.id, state: 'open' },
        { id: t2.id, state: 'claimed', assignee: 'agent1' },
      ]);
      expect(ours(await s.list('open', 1000)).map((t) => t.id)).toEqual([t1.id]);
      expect(ours(await s.list(['claimed'], 1000)).map((t) => t.id)).toEqual([t2.id]);
    });

    it('unanswered call backs follow the retry schedule, then close unreachable; an answered one closes called-back', async () => {
      const c = customer();
      const s = new CallbackStore(a);
      const { task } = await s.noteMissedCall({ wacid: `w-${c}`, customer: c, businessNumber: BIZ, reason: 'missed', at: at(0) });
      await s.claim(task.id, 'agent1');
      const t1 = await s.noteCallback(c, BIZ, { wacid: `cb1-${c}`, outcome: 'no-answer', by: 'agent1', at: at(100) }, [60_000, 120_000]);
      expect(t1).toMatchObject({ state: 'open', dueAt: at(160), attempts: [{ wacid: `cb1-${c}`, outcome: 'no-answer' }] });
      expect(t1!.assignee).toBeUndefined();
      expect(await s.noteCallback(c, BIZ, { wacid: `cb1-${c}`, outcome: 'no-answer', at: at(100) }, [60_000, 120_000])).toMatchObject({ version: t1!.version });
      const t2 = await s.noteCallback(c, BIZ, { wacid: `cb2-${c}`, outcome: 'failed', at: at(200) }, [60_000, 120_000]);
      expect(t2).toMatchObject({ state: 'open', dueAt: at(320) });
      const t3 = await s.noteCallback(c, BIZ, { wacid: `cb3-${c}`, outcome: 'no-answer', at: at(400) }, [60_000, 120_000]);
      expect(t3).toMatchObject({ state: 'done', outcome: 'unreachable' });

      const d = customer();
      await s.noteMissedCall({ wacid: `w-${d}`, customer: d, businessNumber: BIZ, reason: 'missed', at: at(0) });
      expect(await s.noteCallback(d, BIZ, { wacid: `cb-${d}`, outcome: 'answered', at: at(50) })).toMatchObject({ state: 'done', outcome: 'called-back', lastCallWacid: `cb-${d}` });
      expect(await s.noteCallback(d, BIZ, { wacid: `cb-x-${d}`, outcome: 'answered', at: at(60) })).toBeNull();

      const e = customer();
      await s.noteMissedCall({ wacid: `w-${e}`, customer: e, businessNumber: BIZ, reason: 'abandoned', at: at(0) });
      expect(await s.closeByInboundCall(e, BIZ, `in-${e}`)).toMatchObject({ state: 'done', outcome: 'customer-called' });
    });

    it('the follow-up slot is taken once across nodes', async () => {
      const c = customer();
      const [n1, n2] = [new CallbackStore(a), new CallbackStore(b)];
      const { task } = await n1.noteMissedCall({ wacid: `w-${c}`, customer: c, businessNumber: BIZ, reason: 'missed', at: at(0) });
      const f = { at: at(1), code: 'sending' };
      const got = await Promise.all([n1.setFollowup(task.id, f, true), n2.setFollowup(task.id, f, true)]);
      expect(got.filter((x) => x !== null)).toHaveLength(1);
      expect(await n1.setFollowup(task.id, { at: at(2), code: 'sent', messageId: 'm1' }, false)).toMatchObject({ followup: { code: 'sent', messageId: 'm1' } });
    });
  });
});
