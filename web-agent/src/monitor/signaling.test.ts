import { describe, expect, test } from 'vitest';
import { pairedSignaling, serverSignaling, type SignalMessage } from './signaling.ts';

describe('signaling', () => {
  test('paired ends deliver to each other, and what arrives before a handler is kept for it', async () => {
    const [a, b] = pairedSignaling();
    await a.send({ monitorId: 'm1', kind: 'offer', sdp: 'v=0' });
    await new Promise((r) => setTimeout(r, 5));
    const got: SignalMessage[] = [];
    b.onSignal((m) => got.push(m));
    expect(got).toEqual([{ monitorId: 'm1', kind: 'offer', sdp: 'v=0' }]);
    const back: SignalMessage[] = [];
    a.onSignal((m) => back.push(m));
    await b.send({ monitorId: 'm1', kind: 'end', reason: 'stopped' });
    await new Promise((r) => setTimeout(r, 5));
    expect(back).toEqual([{ monitorId: 'm1', kind: 'end', reason: 'stopped' }]);
  });
  test('the server path sends monitor.signal requests and fails when the request fails', async () => {
    const sent: unknown[] = [];
    const end = serverSignaling(async (m) => void sent.push(m));
    await end.send({ monitorId: 'm1', kind: 'answer', sdp: 'v=0' });
    expect(sent).toEqual([{ type: 'monitor.signal', monitorId: 'm1', kind: 'answer', sdp: 'v=0' }]);
    const failing = serverSignaling(async () => {
      throw new Error('NOT_FOUND');
    });
    await expect(failing.send({ monitorId: 'm1', kind: 'end' })).rejects.toThrow('NOT_FOUND');
  });
});
