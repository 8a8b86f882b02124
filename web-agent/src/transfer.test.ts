import { describe, expect, test } from 'vitest';
import type { TransferTargets } from '../../shared/protocol.ts';
import { canSend, canTalkFirst, initialTransfer, reduceTransfer, transferRequest, type TransferEvent, type TransferState } from './transfer.ts';

const targets: TransferTargets = {
  agents: [
    { name: 'agent2', status: 'available', pickable: true },
    { name: 'agent3', status: 'away', reason: 'Lunch', pickable: false },
    { name: 'agent4', status: 'on-call', pickable: false },
  ],
  queues: [{ phoneId: 'p1', number: '+15550001000', waiting: 2 }],
};
const run = (...evs: TransferEvent[]): TransferState => evs.reduce(reduceTransfer, initialTransfer);

describe('the transfer dialog', () => {
  test('opens loading, for one call; nothing can be sent before the targets are read and one is chosen', () => {
    const s = run({ type: 'open', wacid: 'w1' });
    expect(s).toMatchObject({ open: true, wacid: 'w1', status: 'loading' });
    expect(canSend(s)).toBe(false);
    expect(canSend(run({ type: 'open', wacid: 'w1' }, { type: 'loaded', targets }))).toBe(false);
  });

  test('an agent away or on a call cannot be picked; an available one and a queue can', () => {
    const ready = run({ type: 'open', wacid: 'w1' }, { type: 'loaded', targets });
    expect(reduceTransfer(ready, { type: 'choose', choice: { agent: 'agent3' } }).choice).toBeUndefined();
    expect(reduceTransfer(ready, { type: 'choose', choice: { agent: 'agent4' } }).choice).toBeUndefined();
    expect(reduceTransfer(ready, { type: 'choose', choice: { agent: 'nobody' } }).choice).toBeUndefined();
    expect(reduceTransfer(ready, { type: 'choose', choice: { agent: 'agent2' } }).choice).toEqual({ agent: 'agent2' });
    expect(reduceTransfer(ready, { type: 'choose', choice: { queue: 'p1' } }).choice).toEqual({ queue: 'p1' });
  });

  test('cold to an agent or a queue, with the note trimmed; warm only to an agent', () => {
    const agent = run({ type: 'open', wacid: 'w1' }, { type: 'loaded', targets }, { type: 'choose', choice: { agent: 'agent2' } }, { type: 'note', note: '  billing question ' });
    expect(transferRequest(agent, 'cold')).toEqual({ type: 'call.transfer', wacid: 'w1', mode: 'cold', to: { agent: 'agent2' }, note: 'billing question' });
    expect(transferRequest(agent, 'warm')).toMatchObject({ mode: 'warm', to: { agent: 'agent2' } });
    const queue = reduceTransfer(agent, { type: 'choose', choice: { queue: 'p1' } });
    expect(canTalkFirst(queue)).toBe(false);
    expect(transferRequest(queue, 'warm')).toBeUndefined();
    expect(transferRequest(reduceTransfer(queue, { type: 'note', note: '' }), 'cold')).toEqual({ type: 'call.transfer', wacid: 'w1', mode: 'cold', to: { queue: 'p1' } });
    expect(reduceTransfer(agent, { type: 'note', note: 'x'.repeat(600) }).note).toHaveLength(500);
  });

  test('one transfer in flight; a chosen agent who went away meanwhile is dropped when the targets are read again; close forgets all', () => {
    const chosen = run({ type: 'open', wacid: 'w1' }, { type: 'loaded', targets }, { type: 'choose', choice: { agent: 'agent2' } });
    const sending = reduceTransfer(chosen, { type: 'sending' });
    expect(sending.status).toBe('sending');
    expect(canSend(sending)).toBe(false);
    expect(reduceTransfer(sending, { type: 'sending' })).toBe(sending);
    const refused = reduceTransfer(sending, { type: 'failed', error: 'agent2 is away' });
    const away = { ...targets, agents: targets.agents.map((a) => (a.name === 'agent2' ? { ...a, status: 'away' as const, pickable: false } : a)) };
    const again = reduceTransfer(refused, { type: 'loaded', targets: away });
    expect(again.choice).toBeUndefined();
    expect(again.error).toBeUndefined();
    expect(reduceTransfer(again, { type: 'close' })).toEqual(initialTransfer);
  });
});
