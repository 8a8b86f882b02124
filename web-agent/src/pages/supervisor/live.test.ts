import { describe, expect, it } from 'vitest';
import { liveStateText } from './live.ts';

describe('liveStateText: a live call as the console names it', () => {
  it('says whom it rings and who talks; callbacks say so; an unknown state shows its own name', () => {
    const v = (state: string, agent?: string, direction = 'USER_INITIATED') => liveStateText({ state, agent, direction } as Parameters<typeof liveStateText>[0]);
    expect(v('queued')).toBe('waiting for an agent');
    expect(v('ringing', 'agent1')).toBe('ringing agent1');
    expect(v('active', 'agent2')).toBe('on call with agent2');
    expect(v('held', 'agent2')).toBe('on hold by agent2');
    // The server keeps a held call `active` with `heldSince`: it reads as on hold.
    expect(liveStateText({ state: 'active', agent: 'agent2', direction: 'USER_INITIATED', heldSince: 1 })).toBe('on hold by agent2');
    expect(v('dialing', 'boss', 'BUSINESS_INITIATED')).toBe('boss dialing · callback');
    expect(v('something-new')).toBe('something-new');
  });
});
