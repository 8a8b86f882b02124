import { describe, expect, it } from 'vitest';
import { CALL_STATES } from '../server/calls/lifecycle.ts';
import { CallStateName, callSeconds, isFinalState, MAX_FRAME_BYTES, monitorShown, parseClientMsg, parseServerMsg } from './protocol.ts';

describe('call states', () => {
  it('are the engine\'s states, one list; only ended is final', () => {
    expect(CallStateName.options).toEqual([...CALL_STATES]);
    expect(CallStateName.options.filter(isFinalState)).toEqual(['ended']);
  });
  it('a call.state with a name the engine never sends is refused', () => {
    const frame = { type: 'call.state', wacid: 'w', phoneId: 'p', from: 'a', to: 'b', direction: 'USER_INITIATED' };
    expect(parseServerMsg(JSON.stringify({ ...frame, state: 'completed' })).ok).toBe(false);
    expect(parseServerMsg(JSON.stringify({ ...frame, state: 'ringing' })).ok).toBe(true);
  });
  it('duration comes from the server\'s startedAt/endedAt', () => {
    expect(callSeconds({}, 5_000)).toBeUndefined();
    expect(callSeconds({ startedAt: 1_000, endedAt: 62_400 }, 99_999)).toBe(61);
    expect(callSeconds({ startedAt: 1_000 }, 11_000)).toBe(10);
  });
});

describe('WebSocket protocol v1', () => {
  it('accepts a call.answer with id, wacid and sdp', () => {
    const r = parseClientMsg(JSON.stringify({ type: 'call.answer', id: '1', wacid: 'w1', sdp: 'v=0\r\n' }));
    expect(r.ok && r.msg.type).toBe('call.answer');
  });
  it('names the missing field of an invalid request and keeps its id for the error reply', () => {
    // `call.answer` takes no sdp in anchor mode (the server refuses it without one in direct mode, naming sdp).
    const r = parseClientMsg(JSON.stringify({ type: 'call.legAnswer', id: '7', wacid: 'w1' }));
    expect(r).toEqual({ ok: false, id: '7', message: expect.stringMatching(/^sdp: /) });
  });
  it('refuses a frame that is not JSON', () => {
    expect(parseClientMsg('{nope')).toEqual({ ok: false, message: 'frame is not valid JSON' });
  });
  it('refuses an unknown message type', () => {
    expect(parseClientMsg(JSON.stringify({ type: 'call.steal', id: '1', wacid: 'w' })).ok).toBe(false);
  });
  it('call.dial needs to or recipient', () => {
    const r = parseClientMsg(JSON.stringify({ type: 'call.dial', id: '1', from: '+1555', sdp: 'v=0' }));
    expect(r.ok).toBe(false);
    const r2 = parseClientMsg(JSON.stringify({ type: 'call.dial', id: '1', from: '+1555', recipient: 'US.abc', sdp: 'v=0' }));
    expect(r2.ok).toBe(true);
  });
  it('call.transfer: mode and to start one, action finishes a warm one; not both, not neither', () => {
    const ok = (m: Record<string, unknown>) => parseClientMsg(JSON.stringify({ type: 'call.transfer', id: '1', wacid: 'w', ...m })).ok;
    expect(ok({ mode: 'cold', to: { agent: 'agent2' }, note: 'billing' })).toBe(true);
    expect(ok({ mode: 'warm', to: { agent: 'agent2' } })).toBe(true);
    expect(ok({ mode: 'cold', to: { queue: '100000000000001' } })).toBe(true);
    expect(ok({ action: 'complete' })).toBe(true);
    expect(ok({ action: 'conference' })).toBe(true);
    expect(ok({})).toBe(false);
    expect(ok({ mode: 'cold' })).toBe(false);
    expect(ok({ mode: 'cold', to: { agent: 'a' }, action: 'cancel' })).toBe(false);
    expect(ok({ mode: 'blind', to: { agent: 'a' } })).toBe(false);
    expect(ok({ mode: 'cold', to: { agent: 'a', queue: 'q' } })).toBe(false);
    const r = parseClientMsg(JSON.stringify({ type: 'call.transfer', id: '1', wacid: 'w', mode: 'cold' }));
    expect(r.ok ? '' : r.message).toMatch(/action|mode and to/);
  });
  it('parses a welcome with a ringing offer', () => {
    const r = parseServerMsg(JSON.stringify({
      type: 'welcome', protocol: 1, user: { name: 'a', roles: ['agent'] }, presence: 'away',
      calls: [{ wacid: 'w', phoneId: 'p', from: '+1', to: '+2', direction: 'USER_INITIATED', state: 'ringing', deadline: 1, sdp: 'v=0' }],
    }));
    expect(r.ok && r.msg.type === 'welcome' && r.msg.calls[0]?.sdp).toBe('v=0');
  });
  it('a frame limit of 64 KiB is exported for both ends', () => {
    expect(MAX_FRAME_BYTES).toBe(65536);
  });
});

describe('monitoring frames', () => {
  it('monitor.start needs a mode of listen, whisper or barge', () => {
    expect(parseClientMsg(JSON.stringify({ type: 'monitor.start', id: '1', wacid: 'w1', mode: 'barge' })).ok).toBe(true);
    expect(parseClientMsg(JSON.stringify({ type: 'monitor.start', id: '1', wacid: 'w1', mode: 'spy' }))).toMatchObject({ ok: false, id: '1', message: expect.stringMatching(/^mode: /) });
  });
  it('an offer or answer carries sdp and an end does not, both ways', () => {
    const ok = [
      { kind: 'offer', sdp: 'v=0\r\n' },
      { kind: 'answer', sdp: 'v=0\r\n' },
      { kind: 'end', reason: 'stopped' },
      { kind: 'end' },
    ];
    const bad = [{ kind: 'offer' }, { kind: 'end', sdp: 'v=0\r\n' }];
    for (const f of ok) {
      expect(parseClientMsg(JSON.stringify({ type: 'monitor.signal', id: '1', monitorId: 'm1', ...f })).ok).toBe(true);
      expect(parseServerMsg(JSON.stringify({ type: 'monitor.signal', monitorId: 'm1', ...f })).ok).toBe(true);
    }
    for (const f of bad) {
      expect(parseClientMsg(JSON.stringify({ type: 'monitor.signal', id: '1', monitorId: 'm1', ...f }))).toMatchObject({ ok: false, message: /^sdp: offer and answer carry sdp/ });
      expect(parseServerMsg(JSON.stringify({ type: 'monitor.signal', monitorId: 'm1', ...f })).ok).toBe(false);
    }
  });
  it('a client signal is a request (id); the relayed one has none', () => {
    expect(parseClientMsg(JSON.stringify({ type: 'monitor.signal', monitorId: 'm1', kind: 'end' })).ok).toBe(false);
  });
  it('monitor.started, monitor.mode and monitor.ended reach the pages', () => {
    const started = { type: 'monitor.started', monitorId: 'm1', wacid: 'w1', mode: 'listen', side: 'agent', supervisor: 'sup', agent: 'agent1', shown: false };
    expect(parseServerMsg(JSON.stringify(started)).ok).toBe(true);
    expect(parseServerMsg(JSON.stringify({ type: 'monitor.mode', monitorId: 'm1', wacid: 'w1', mode: 'whisper', shown: true })).ok).toBe(true);
    expect(parseServerMsg(JSON.stringify({ type: 'monitor.ended', monitorId: 'm1', wacid: 'w1', reason: 'agent-gone' })).ok).toBe(true);
    expect(parseServerMsg(JSON.stringify({ type: 'monitor.ended', monitorId: 'm1', wacid: 'w1', reason: 'bored' })).ok).toBe(false);
  });
  it('listening is shown to the agent only when the setting says so; whisper and barge always', () => {
    expect(monitorShown('listen', false)).toBe(false);
    expect(monitorShown('listen', true)).toBe(true);
    expect(monitorShown('whisper', false)).toBe(true);
    expect(monitorShown('barge', false)).toBe(true);
  });
});
