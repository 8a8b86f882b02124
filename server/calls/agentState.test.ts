import { describe, expect, it } from 'vitest';
import { callErrorReason, describeCallError } from '../../shared/callErrors.ts';
import { AgentBoard } from './agents.ts';
import { deriveAgentState, MISSED_A_CALL, type AgentFacts } from './agentState.ts';
import { BadRequestError } from '../service/errors.ts';
import { refusal } from './serviceRequests.ts';
import { toCallEvent, view } from './engine.ts';
import { transition, type Call } from './lifecycle.ts';

const base: AgentFacts = { name: 'a1', presence: 'available', connected: true, idleSince: 0, wrapUntil: 0, elsewhere: new Set() };

describe('deriveAgentState (pure)', () => {
  it('a call outranks after-call work, which outranks presence; no connection anywhere is offline', () => {
    expect(deriveAgentState(base, 10)).toEqual({ status: 'available' });
    expect(deriveAgentState({ ...base, presence: 'away', awayReason: 'Lunch' }, 10)).toEqual({ status: 'away', reason: 'Lunch' });
    expect(deriveAgentState({ ...base, ringing: 'w1' }, 10)).toEqual({ status: 'ringing', wacid: 'w1' });
    expect(deriveAgentState({ ...base, holding: 'w1', ringing: 'w2' }, 10)).toEqual({ status: 'on-call', wacid: 'w1' });
    expect(deriveAgentState({ ...base, presence: 'away', wrapWacid: 'w1', wrapUntil: 50, wrapExtended: true }, 10)).toEqual({ status: 'after-call-work', wacid: 'w1', until: 50, extended: true });
    // The countdown over: presence again (the router records Not set and clears it).
    expect(deriveAgentState({ ...base, wrapWacid: 'w1', wrapUntil: 50 }, 50)).toEqual({ status: 'available' });
    expect(deriveAgentState({ ...base, connected: false, holding: 'w1' }, 10)).toEqual({ status: 'offline' });
    // Connected on another node only: online here too (not routable from here).
    expect(deriveAgentState({ ...base, connected: false, elsewhere: new Set(['node-b']) }, 10)).toEqual({ status: 'available' });
  });

  it('the board stamps since on a new status only, and a ring-out sets away with Missed a call', () => {
    let t = 1_000;
    const board = new AgentBoard(() => t);
    board.connect('a1');
    board.setPresence('a1', 'available');
    expect(board.observe('a1')).toEqual({ status: 'available', since: 1_000 });
    t = 2_000;
    expect(board.observe('a1')).toBeUndefined();
    board.agentNoAnswer('a1');
    expect(board.observe('a1')).toEqual({ status: 'away', reason: MISSED_A_CALL, since: 2_000 });
    t = 3_000;
    board.setPresence('a1', 'away', 'Break');
    expect(board.observe('a1')).toEqual({ status: 'away', reason: 'Break', since: 2_000 });
    board.setPresence('a1', 'available');
    board.reserve('a1', 'w1');
    board.agentBusy('a1', 'w1');
    board.agentFree('a1', 'w1', 8_000);
    expect(board.observe('a1')).toEqual({ status: 'after-call-work', wacid: 'w1', until: 8_000, since: 3_000 });
    board.wrapEnd('a1', 'w1');
    expect(board.observe('a1')).toEqual({ status: 'available', since: 3_000 });
  });
});

describe('a failed call in words', () => {
  it('138xxx codes are worded, the Service message kept; other codes keep the message', () => {
    expect(describeCallError('138006')).toBe('No calling permission from this customer');
    expect(callErrorReason(138021, 'no media for 10 s')).toBe('No audio was received from the other side (138021: no media for 10 s)');
    expect(callErrorReason('999', 'odd')).toBe('odd');
  });

  it('a terminate with a 138xxx error reaches call.state with errorCode and the words', () => {
    const ev = toCallEvent(
      { type: 'chat.call.terminate', payload: { wacid: 'w1', status: 'FAILED', errors: [{ code: 138023, message: 'no media' }] } } as unknown as Parameters<typeof toCallEvent>[0],
      5_000,
    );
    const active: Call = { wacid: 'w1', phoneId: 'p', direction: 'USER_INITIATED', from: '+1555', to: '+1666', state: 'active', createdAt: 0, offeredTo: ['a1'], declined: [], agent: 'a1', startedAt: 1_000 };
    const ended = transition(active, ev).call!;
    expect(view(ended)).toMatchObject({ state: 'ended', result: 'FAILED', errorCode: 138023, reason: 'The call was accepted but no audio ever flowed (138023: no media)' });
  });

  it('an accept the Service refused with a provider code carries that code to call.state', () => {
    const err = new BadRequestError({ status: 400, code: 'BAD_REQUEST', message: 'sdp: differs from the preAccepted one', details: { code: 138008, message: 'SDP answer does not match' } });
    const r = refusal(err);
    expect(r).toEqual({ code: '138008', reason: 'sdp: differs from the preAccepted one (138008: SDP answer does not match)' });
    const answering: Call = { wacid: 'w1', phoneId: 'p', direction: 'USER_INITIATED', from: '+1555', to: '+1666', state: 'answering', createdAt: 0, offeredTo: ['a1'], declined: [], agent: 'a1' };
    const after = transition(answering, { type: 'acceptRefused', wacid: 'w1', at: 10, ...r }).call!;
    expect(view(after)).toMatchObject({ errorCode: 138008, reason: r.reason });
  });

  it('a refused accept with a 138xxx code we have words for: the words lead; the REJECTED terminate that follows keeps them', () => {
    const err = new BadRequestError({ status: 400, code: 'BAD_REQUEST', message: 'accept refused', details: { code: 138019, message: 'setup failed' } });
    const r = refusal(err);
    expect(r).toEqual({ code: '138019', reason: 'The call could not be set up — accept refused (138019: setup failed)' });
    const answering: Call = { wacid: 'w1', phoneId: 'p', direction: 'USER_INITIATED', from: '+1555', to: '+1666', state: 'answering', createdAt: 0, offeredTo: ['a1'], declined: [], agent: 'a1' };
    const rejecting = transition(answering, { type: 'acceptRefused', wacid: 'w1', at: 10, ...r }).call!;
    const ev = toCallEvent({ type: 'chat.call.terminate', payload: { wacid: 'w1', status: 'FAILED', reason: 'REJECTED' } } as unknown as Parameters<typeof toCallEvent>[0], 20);
    expect(view(transition(rejecting, ev).call!)).toMatchObject({ state: 'ended', result: 'FAILED', errorCode: 138019, reason: r.reason });
  });
});
