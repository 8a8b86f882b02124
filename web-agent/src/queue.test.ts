import { describe, expect, it } from 'vitest';
import type { CallbackTask, MessageRecord } from '../../shared/records.ts';
import { followupsToFetch, initialQueue, queueView, reduceQueue, type QueueState } from './queue.ts';
import { inLanguage } from './i18n/testing.ts';

// The pages' words in English (the catalogue the server serves).
inLanguage('en');

const NOW = Date.parse('2026-11-24T10:30:00Z');
const TZ = 'UTC';

function task(over: Partial<CallbackTask> = {}): CallbackTask {
  return {
    id: 't1',
    customer: '+15550123601',
    businessNumber: '+15550100001',
    reason: 'missed',
    createdAt: '2026-11-24T10:18:00.000Z',
    state: 'open',
    attempts: [],
    misses: [{ wacid: 'wacid.1', at: '2026-11-24T10:18:00.000Z', reason: 'missed' }],
    updatedAt: '2026-11-24T10:18:00.000Z',
    version: 1,
    permission: { state: 'unknown', text: 'No permission on record.', callAllowed: false, requestAllowed: true },
    ...over,
  };
}

function message(status: MessageRecord['status'], updateTime: string): MessageRecord {
  return { id: 'm1', direction: 'outbound', from: '+15550100001', to: '+15550123601', type: 'interactive', status, statusHistory: [], createTime: '2026-11-24T10:18:01.000Z', updateTime };
}

const run = (...evs: Parameters<typeof reduceQueue>[1][]): QueueState => evs.reduce(reduceQueue, initialQueue);

describe('call-back queue state', () => {
  it('a task frame adds the task; a done frame removes it; an older version never replaces a newer one', () => {
    let s = run({ type: 'task', task: task() });
    expect(Object.keys(s.tasks)).toEqual(['t1']);
    s = reduceQueue(s, { type: 'task', task: task({ version: 3, state: 'claimed', assignee: 'agent2', permission: undefined }) });
    expect(s.tasks.t1).toMatchObject({ state: 'claimed', assignee: 'agent2' });
    // The frame without permission words keeps the last known ones.
    expect(s.tasks.t1!.permission?.state).toBe('unknown');
    expect(reduceQueue(s, { type: 'task', task: task({ version: 2 }) })).toBe(s);
    s = reduceQueue(s, { type: 'task', task: task({ version: 4, state: 'done', outcome: 'called-back' }) });
    expect(s.tasks).toEqual({});
    // A list answer from before it closed does not bring it back.
    expect(reduceQueue(s, { type: 'loaded', items: [task({ version: 3, state: 'claimed', assignee: 'agent2' })], since: s.pushes }).tasks).toEqual({});
  });

  it("a voicemail task offers each message to play, newest first, with when it was left; other misses offer none", () => {
    const misses = [
      { wacid: 'w1', at: '2026-11-24T10:18:00.000Z', reason: 'voicemail' as const, voicemail: '/api/archive/w1/voicemail-w1.ogg' },
      { wacid: 'w2', at: '2026-11-24T10:20:00.000Z', reason: 'missed' as const },
      { wacid: 'w3', at: '2026-11-24T10:25:00.000Z', reason: 'voicemail' as const, voicemail: '/api/archive/w3/voicemail-w3.ogg' },
    ];
    const [row] = queueView(run({ type: 'task', task: task({ reason: 'voicemail', misses, missCount: 3 }) }), 'agent1', false, NOW, TZ);
    expect(row!.reasonText).toBe('Left a voicemail (3 calls)');
    expect(row!.voicemails.map((v) => v.url)).toEqual(['/api/archive/w3/voicemail-w3.ogg', '/api/archive/w1/voicemail-w1.ogg']);
    expect(row!.voicemails[0]!.label).toMatch(/^Voicemail message from .*10:25/);
    expect(queueView(run({ type: 'task', task: task() }), 'agent1', false, NOW, TZ)[0]!.voicemails).toEqual([]);
  });

  it('the list answer is the truth for tasks not done, but a newer frame seen meanwhile is kept', () => {
    let s = run({ type: 'task', task: task({ id: 'gone' }) }, { type: 'task', task: task({ version: 5, state: 'claimed', assignee: 'a' }) });
    s = reduceQueue(s, { type: 'loaded', items: [task({ version: 4 })], since: s.pushes });
    expect(Object.keys(s.tasks)).toEqual(['t1']);
    expect(s.tasks.t1!.version).toBe(5);
    expect(s.loaded).toBe(true);
  });

  it('a claimed task in the list answer stays, with who holds it (the pages list open and claimed tasks)', () => {
    const s = run({ type: 'loaded', items: [task({ version: 3, state: 'claimed', assignee: 'agent2' })], since: 0 });
    expect(queueView(s, 'boss', true, NOW, TZ)).toMatchObject([{ state: 'claimed', assignee: 'agent2', callBlockedReason: 'Claimed by agent2.' }]);
    expect(queueView(s, 'agent2', false, NOW, TZ)).toMatchObject([{ state: 'claimed', mine: true }]);
  });

  it('a task first pushed while a list read is under way is kept when the answer lacks it (the read was made before the task existed)', () => {
    let s = run({ type: 'loaded', items: [task({ id: 'old' })], since: 0 });
    const since = s.pushes; // noted when the read is sent
    s = reduceQueue(s, { type: 'task', task: task({ id: 'new', createdAt: '2026-11-24T10:29:00.000Z' }) }); // its push overtakes the answer
    s = reduceQueue(s, { type: 'loaded', items: [task({ id: 'old' })], since });
    expect(Object.keys(s.tasks).sort()).toEqual(['new', 'old']);
    // A read sent after that push is the truth for it again: absent there, it is dropped.
    s = reduceQueue(s, { type: 'loaded', items: [task({ id: 'old' })], since: s.pushes });
    expect(Object.keys(s.tasks)).toEqual(['old']);
  });

  it('follow-up status: read while not final, then shown in words; a late lower update is ignored', () => {
    let s = run({ type: 'task', task: task({ followup: { at: '2026-11-24T10:18:01.000Z', code: 'SENT', messageId: 'm1' } }) });
    expect(followupsToFetch(s)).toEqual(['m1']);
    expect(queueView(s, 'agent1', false, NOW, TZ)[0]!.followupText).toBe('Follow-up sent, waiting for delivery');
    s = reduceQueue(s, { type: 'message', message: message('read', '2026-11-24T10:18:05.000Z') });
    s = reduceQueue(s, { type: 'message', message: message('delivered', '2026-11-24T10:18:04.000Z') });
    const row = queueView(s, 'agent1', false, NOW, TZ)[0]!;
    expect(row).toMatchObject({ followupStatus: 'read', followupText: 'Follow-up read' });
    expect(followupsToFetch(s)).toEqual([]);
  });

  it('a follow-up not sent says why', () => {
    const s = run({ type: 'task', task: task({ followup: { at: '2026-11-24T10:18:01.000Z', code: 'OPTED_OUT', reason: 'the customer unsubscribed' } }) });
    expect(queueView(s, 'x', false, NOW, TZ)[0]).toMatchObject({ followupStatus: 'opted_out', followupText: 'No follow-up: the customer opted out of messages' });
  });

  it('the row: customer, number, reason, waiting since in local time, attempts, permission and when calls are allowed', () => {
    const s = run({ type: 'task', task: task({ permission: { state: 'requested', text: 'Asked; waiting for the reply.', callAllowed: false, requestAllowed: false, nextAt: Date.parse('2026-11-24T14:05:00Z'), nextFor: 'request', callCode: 'SERVICE_DECIDES', requestCode: 'RATION' } }) });
    const r = queueView(s, 'agent1', false, NOW, TZ)[0]!;
    expect(r).toMatchObject({
      customerText: expect.stringContaining('555'),
      reasonText: 'Missed: rang an agent, nobody answered',
      waitingText: 'today at 10:18 (12 min)',
      attemptsText: 'No call back yet',
      permissionState: 'requested',
      permissionText: 'No permission is known here; the call is refused unless the customer has allowed it. A permission request was sent recently.',
      allowedText: 'You can ask again today at 14:05.',
      canClaim: true,
      canCall: false,
      callBlockedReason: 'Claim the task first.',
      canDone: true,
    });
  });

  it('Call is for the assignee with calls allowed; Done for the assignee or a supervisor once claimed; a refusal is shown on the task', () => {
    const granted = { state: 'granted' as const, text: 'Permission granted.', callAllowed: true, requestAllowed: false };
    let s = run({ type: 'task', task: task({ state: 'claimed', assignee: 'agent1', permission: granted }) });
    expect(queueView(s, 'agent1', false, NOW, TZ)[0]).toMatchObject({ mine: true, canCall: true, canDone: true, canClaim: false, allowedText: 'Calls allowed now.' });
    expect(queueView(s, 'agent2', false, NOW, TZ)[0]).toMatchObject({ mine: false, canCall: false, canDone: false, callBlockedReason: 'Claimed by agent1.' });
    expect(queueView(s, 'boss', true, NOW, TZ)[0]).toMatchObject({ canDone: true });
    s = reduceQueue(s, { type: 'busy', id: 't1', action: 'done' });
    expect(queueView(s, 'agent1', false, NOW, TZ)[0]).toMatchObject({ busy: 'done', canCall: false, canDone: false });
    s = reduceQueue(s, { type: 'actionFailed', id: 't1', message: 'callback task t1 cannot be claimed: it is claimed by agent2' });
    expect(queueView(s, 'agent1', false, NOW, TZ)[0]!.error).toMatch(/claimed by agent2/);
  });
});

describe('the queue tells the truth about permission', () => {
  it('an unknown permission is said plainly (a call may be refused), never "Calls allowed now", and "Ask permission" is offered', () => {
    const s = run({ type: 'task', task: task({ permission: { state: 'unknown', text: 'No permission is known here; the Service refuses the call unless the user has allowed it.', callAllowed: true, requestAllowed: true } }) });
    const [row] = queueView(s, 'agent1', false, NOW, TZ);
    expect(row!.permissionText).toMatch(/^Permission not known: .*may be refused/);
    expect(row!.allowedText).toBe('Ask permission first.');
    expect(row!.canAsk).toBe(true);
    // Granted: nothing to ask.
    const granted = run({ type: 'task', task: task({ permission: { state: 'granted', text: 'Allowed permanently.', callAllowed: true, requestAllowed: false } }) });
    expect(queueView(granted, 'agent1', false, NOW, TZ)[0]).toMatchObject({ allowedText: 'Calls allowed now.', canAsk: false });
  });

  it("a call back refused (138006) or not answered is said on its task; a permission request's result too", () => {
    let s = run({ type: 'task', task: task() });
    s = reduceQueue(s, { type: 'callOutcome', businessNumber: '+15550100001', customer: '+15550123601', message: 'Call back refused: no call permission (138006)' });
    expect(queueView(s, 'agent1', false, NOW, TZ)[0]!.error).toBe('Call back refused: no call permission (138006)');
    expect(reduceQueue(s, { type: 'callOutcome', businessNumber: '+1', customer: '+2', message: 'x' })).toBe(s);
    s = reduceQueue(s, { type: 'actionDone', id: 't1', note: 'Permission asked.' });
    expect(queueView(s, 'agent1', false, NOW, TZ)[0]!.note).toBe('Permission asked.');
  });
});
