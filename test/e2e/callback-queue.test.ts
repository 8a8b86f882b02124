/**
 * Messaging and the call-back queue over the real WebSocket and HTTP, with program agents (protocol
 * clients, a Chromium peer for the dial) against the Service emulator and real history
 * (PGlite): a call nobody answers → a task appears live for agents and supervisors → the
 * follow-up goes out and its status climbs to read → the emulated customer grants
 * permission → two agents claim at once (one wins) → the winner calls → the customer
 * answers → the task closes with its outcome in history. Also: without history the queue's
 * routes answer 503 naming why. (The page's queue is callback-queue-ui.test.ts.)
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { CallbackTask, MessageRecord } from '../../shared/records.ts';
import type { ServerMsg } from '../../shared/protocol.ts';
import { MessagingStore } from '../../server/messaging/store.ts';
import { mayMessage } from '../../server/messaging/optout.ts';
import { agentClient, emulatorRequest, fakeConnect, login, postEvent, sleep, until, type Bridge } from './harness.ts';
import { programSuite } from './suite.ts';

/** The emulator's default business number (inbound calls go to it; callbacks come from it) and its account. */
const BUSINESS = '+15550100001';
const WABA = '200000000000001';
/** Rings agent1 for 2 s, then nobody takes it: rejected before its 6 s window closes. */
const QUICK_MISS = { acceptWindowMs: 6_000, ringTimeoutMs: 2_000, rejectMarginMs: 1_500 };

const suite = programSuite();

/** A same-origin JSON request to the bridge as one user. */
async function api<T = Record<string, unknown>>(b: Bridge, cookie: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: T }> {
  const r = await fetch(`${b.url}${path}`, {
    method,
    headers: { cookie, origin: b.url, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: r.status, json: (await r.json()) as T };
}

const taskOf = (m: Extract<ServerMsg, { type: 'callback.updated' }>) => m.task;

describe('missed-call callback queue (program agents, real emulator, real history)', () => {
  it('missed call → task live for agents and supervisors → follow-up read → permission granted → one of two claims wins → call back answered → task done in history', async () => {
    const b = await suite.startBridge({
      history: true,
      agents: ['agent1', 'agent2'],
      supervisors: ['boss'],
      env: { MISSED_CALL_FOLLOWUP: 'interactive' },
      policy: QUICK_MISS,
    });
    await suite.control('PATCH', '/messaging/knobs', { stepDelayMs: 400 });
    const customer = '+15550123601';
    await suite.control('PATCH', '/callee', { user: customer, action: 'answer', answerAfterMs: 500 });
    const agent1 = suite.track(await agentClient(b.url, 'agent1'));
    const agent2 = suite.track(await agentClient(b.url, 'agent2', { available: false }));
    const boss = suite.track(await agentClient(b.url, 'boss', { available: false }));

    // 1. The customer calls; it rings agent1, who does not answer; nobody else is available.
    const missed = (await suite.control('POST', '/calls', { from: customer })).wacid as string;
    await agent1.next('call.offered', (m) => m.wacid === missed, 10_000);
    await agent1.next('call.revoked', (m) => m.wacid === missed, 10_000);

    // 2. The task appears live for an agent who never saw the call, and for the supervisor.
    const forAgent = taskOf(await agent2.next('callback.updated', (m) => m.task.customer === customer, 15_000));
    const forBoss = taskOf(await boss.next('callback.updated', (m) => m.task.customer === customer, 15_000));
    expect(forAgent).toMatchObject({ state: 'open', businessNumber: BUSINESS, reason: 'missed', misses: [{ wacid: missed, reason: 'missed' }], attempts: [] });
    expect(forBoss.id).toBe(forAgent.id);
    const id = forAgent.id;
    // The task's reason is the call's outcome as history records it (the same recorder).
    const cookie2 = await login(b.url, 'agent2');
    const bossCookie = await login(b.url, 'boss'); // history shows agents only their own calls
    await until('the missed call in history', async () => {
      const r = await api(b, bossCookie, 'GET', `/api/history/calls/${encodeURIComponent(missed)}`);
      return r.status === 200 && r.json.outcome === 'missed' ? true : undefined;
    });

    // 3. The follow-up goes out once, and its status climbs to read (live to the supervisor; readable by agents).
    const sent = taskOf(await agent2.next('callback.updated', (m) => m.task.id === id && m.task.followup?.code === 'SENT', 20_000));
    const messageId = sent.followup!.messageId!;
    expect(messageId).toBeTruthy();
    const climbed = await boss.next('message.updated', (m) => m.message.id === messageId && m.message.status === 'read', 20_000);
    expect(climbed.message).toMatchObject({ direction: 'outbound', from: BUSINESS, to: customer, type: 'interactive' });
    const seenBy = boss.received.filter((m): m is Extract<ServerMsg, { type: 'message.updated' }> => m.type === 'message.updated' && m.message.id === messageId).map((m) => m.message.status);
    expect(seenBy.at(-1)).toBe('read');
    expect(seenBy).toContain('delivered');
    const byAgent = await api<MessageRecord>(b, cookie2, 'GET', `/api/messages/${encodeURIComponent(messageId)}`);
    expect(byAgent.status).toBe(200);
    expect(byAgent.json.statusHistory.map((h) => h.status)).toEqual(expect.arrayContaining(['sent', 'delivered', 'read']));

    // 4. The emulated customer grants permission (their reply to the follow-up): the task shows it.
    const granted = await until('the task shows the permission granted', async () => {
      const r = await api(b, cookie2, 'GET', '/api/callbacks');
      const t = (r.json.items as CallbackTask[]).find((x) => x.id === id);
      return t?.permission?.state === 'granted' ? t : undefined;
    }, 20_000);
    expect(granted.permission).toMatchObject({ callAllowed: true });
    // The customer panel lists the same task with the same permission.
    const panel = await api(b, cookie2, 'GET', `/api/customers/${encodeURIComponent(customer)}`);
    expect((panel.json.callbacks as CallbackTask[]).find((x) => x.id === id)?.permission).toMatchObject({ state: 'granted', callAllowed: true, text: expect.any(String) });

    // 5. Two agents claim at once: one wins, the other is told who holds it.
    const cookie1 = await login(b.url, 'agent1');
    const [c1, c2] = await Promise.all([api(b, cookie1, 'POST', `/api/callbacks/${id}/claim`), api(b, cookie2, 'POST', `/api/callbacks/${id}/claim`)]);
    expect([c1.status, c2.status].sort()).toEqual([200, 409]);
    const [winner, loser] = c1.status === 200 ? (['agent1', c2] as const) : (['agent2', c1] as const);
    expect(JSON.stringify(loser.json)).toMatch(new RegExp(`claimed by ${winner}`));
    const claimed = taskOf(await boss.next('callback.updated', (m) => m.task.id === id && m.task.state === 'claimed', 10_000));
    expect(claimed.assignee).toBe(winner);

    // 6. The winner calls the customer back (a real Chromium offer), the customer answers.
    const caller = winner === 'agent1' ? agent1 : agent2;
    const host = await suite.peerHost();
    const sdp = await host.offer('callback');
    const ack = await caller.request({ type: 'call.dial', from: BUSINESS, to: customer, sdp }, 20_000);
    if (ack.type !== 'ack') throw new Error(`dial refused: ${ack.code} ${ack.message}`);
    const back = ack.wacid as string;
    const answer = await caller.next('call.remoteAnswer', (m) => m.wacid === back, 15_000);
    await host.applyAnswer('callback', answer.sdp);
    await caller.next('call.state', (m) => m.wacid === back && m.state === 'active', 15_000);
    expect(await host.connectedAt('callback', 15_000)).toBeGreaterThan(0);
    expect((await caller.request({ type: 'call.hangup', wacid: back })).type).toBe('ack');

    // 7. The task closes with the outcome, live and in history.
    const done = taskOf(await agent2.next('callback.updated', (m) => m.task.id === id && m.task.state === 'done', 20_000));
    expect(done).toMatchObject({ outcome: 'called-back', attempts: [{ wacid: back, outcome: 'answered', by: winner }] });
    const stored = await api(b, cookie2, 'GET', '/api/callbacks?state=done');
    expect((stored.json.items as CallbackTask[]).find((t) => t.id === id)).toMatchObject({ state: 'done', outcome: 'called-back' });
    expect(((await api(b, cookie2, 'GET', '/api/callbacks')).json.items as CallbackTask[]).find((t) => t.id === id)).toBeUndefined();
    await until('the call back in history, answered', async () => {
      const r = await api(b, bossCookie, 'GET', `/api/history/calls/${encodeURIComponent(back)}`);
      return r.status === 200 && r.json.outcome === 'answered' ? true : undefined;
    });
  }, 120_000);

  it('an opted-out customer gets no follow-up; a PAUSED template is refused naming its status; a permission request from the page is recorded and its status pushed to its sender', async () => {
    const b = await suite.startBridge({ history: true, agents: ['agent1'], supervisors: ['boss'], env: { MISSED_CALL_FOLLOWUP: 'interactive' }, policy: QUICK_MISS });
    await suite.control('PATCH', '/messaging/knobs', { stepDelayMs: 200, reviewDelayMs: 200 });
    const store = new MessagingStore(b.sb.history!.store.db);
    const boss = suite.track(await agentClient(b.url, 'boss', { available: false }));
    const agent1 = suite.track(await agentClient(b.url, 'agent1'));
    const bossCookie = await login(b.url, 'boss');

    // Opted out (the Service's contact.unsubscribe.created reaches the bridge), then a missed call.
    const optedOut = '+15550123611';
    await suite.control('POST', '/messaging/unsubscribers', { customer: optedOut });
    await until('the opt-out in history', async () => (!mayMessage(await store.optOutsOf([optedOut]), [optedOut]).ok ? true : undefined));
    const wacid = (await suite.control('POST', '/calls', { from: optedOut })).wacid as string;
    await agent1.next('call.revoked', (m) => m.wacid === wacid, 10_000);
    const decided = taskOf(await boss.next('callback.updated', (m) => m.task.customer === optedOut && m.task.followup !== undefined, 20_000));
    expect(decided.followup).toMatchObject({ code: 'OPTED_OUT' });
    expect(decided.followup!.messageId).toBeUndefined();
    const sentTo = ((await suite.control('GET', '/events?type=chat.message.updated')).items as Array<{ chatMessage?: { to?: string } }>).filter((e) => e.chatMessage?.to === optedOut);
    expect(sentTo).toEqual([]);

    // A template the Service paused: refused before the Service, naming the status.
    await emulatorRequest(b.emu, 'POST', `${b.emu.baseUrl}/chat/templates`, { wabaId: WABA, name: 'order_update', language: 'en_US', category: 'UTILITY', components: [{ type: 'BODY', text: 'Your order {{1}} is ready' }] });
    const send = () => fetch(`${b.url}/api/messages`, { method: 'POST', headers: { cookie: bossCookie, origin: b.url, 'content-type': 'application/json' }, body: JSON.stringify({ from: BUSINESS, to: '+15550123612', template: { name: 'order_update', language: 'en_US', parameters: ['A1'] } }) });
    await until('the template approved at the bridge', async () => ((await send()).status === 202 ? true : undefined));
    await suite.control('POST', `/messaging/templates/${WABA}/order_update/en_US/status`, { status: 'PAUSED' });
    const refused = await until('the pause seen by the bridge', async () => {
      const r = await send();
      return r.status === 409 ? ((await r.json()) as { error: { code: string; message: string } }) : undefined;
    });
    expect(refused.error.code).toBe('TEMPLATE_NOT_APPROVED');
    expect(refused.error.message).toMatch(/PAUSED/);

    // A permission request an agent sent from the Call back panel becomes a message record
    // with its sender: its status reaches that agent (agents get only their own messages' frames).
    const agentCookie = await login(b.url, 'agent1');
    const r = await fetch(`${b.url}/api/permissions/request`, { method: 'POST', headers: { cookie: agentCookie, origin: b.url, 'content-type': 'application/json' }, body: JSON.stringify({ from: BUSINESS, to: '+15550123613' }) });
    expect(r.status).toBe(202);
    const { messageId } = (await r.json()) as { messageId: string };
    const read = await agent1.next('message.updated', (m) => m.message.id === messageId && m.message.status === 'read', 15_000);
    expect(read.message).toMatchObject({ direction: 'outbound', from: BUSINESS, to: '+15550123613', type: 'interactive' });
  }, 90_000);

  it('without history the callback and messaging routes answer 503 saying why', async () => {
    const b = await suite.startBridge({ agents: ['agent1'] });
    const cookie = await login(b.url, 'agent1');
    for (const [method, path] of [['GET', '/api/callbacks'], ['POST', '/api/callbacks/x/claim'], ['GET', '/api/messages/m1'], ['GET', '/api/templates']] as const) {
      const r = await api(b, cookie, method, path);
      expect(r.status, `${method} ${path}`).toBe(503);
      expect(JSON.stringify(r.json)).toMatch(/need call history .*history is off/);
    }
    // Still guarded: no session, no answer about the feature.
    expect((await fetch(`${b.url}/api/callbacks`)).status).toBe(401);
  }, 30_000);

  it("with queues (QUEUES_FILE), a number's tasks go to its own agents and supervisors only, live and in the list", async () => {
    const N1 = { id: '100000000000001', phoneNumber: '+15550100001', wabaId: WABA };
    const N2 = { id: '100000000000002', phoneNumber: '+15550100002', wabaId: WABA };
    const dir = mkdtempSync(join(tmpdir(), 'sb-cbq-'));
    writeFileSync(join(dir, 'queues.json'), JSON.stringify({ [N1.id]: ['ann'], [N2.id]: ['bob'] }));
    const b = await suite.startBridge({ history: true, agents: ['ann', 'bob'], supervisors: ['boss'], emulator: { businessNumbers: [N1, N2] }, env: { QUEUES_FILE: join(dir, 'queues.json') } });
    const ann = suite.track(await agentClient(b.url, 'ann', { available: false }));
    const bob = suite.track(await agentClient(b.url, 'bob', { available: false }));
    const boss = suite.track(await agentClient(b.url, 'boss', { available: false }));
    // A caller to N1 waits (nobody available) and hangs up: abandoned, a task for N1.
    const customer = '+15550123701';
    const wacid = 'wacid.queue-scoped-1';
    expect(await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect(wacid, { phoneId: N1.id, to: N1.phoneNumber, from: customer }))).toBe(200);
    await sleep(300);
    expect(await postEvent(b, 'chat.call.terminate', 'callingTerminate', { wacid, phoneId: N1.id, status: 'FAILED', duration: 0 })).toBe(200);
    const forBoss = taskOf(await boss.next('callback.updated', (m) => m.task.customer === customer, 15_000));
    const forAnn = taskOf(await ann.next('callback.updated', (m) => m.task.customer === customer, 15_000));
    expect(forAnn).toMatchObject({ id: forBoss.id, businessNumber: N1.phoneNumber, reason: 'abandoned', state: 'open' });
    await sleep(500); // the task's pushes are sent in one window: bob would have had it by now
    expect(bob.received.filter((m) => m.type === 'callback.updated')).toEqual([]);
    const listed = async (name: string) => ((await api(b, await login(b.url, name), 'GET', '/api/callbacks')).json.items as CallbackTask[]).map((t) => t.id);
    expect(await listed('ann')).toEqual([forBoss.id]);
    expect(await listed('bob')).toEqual([]);
    expect(await listed('boss')).toEqual([forBoss.id]);
  }, 60_000);
});
