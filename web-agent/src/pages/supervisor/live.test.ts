import { describe, expect, it } from 'vitest';
import { legsText, liveStateText, rangText, timeText } from './live.ts';
import { inLanguage } from '../../i18n/testing.ts';

// The pages' words in English (the catalogue the server serves).
inLanguage('en');

describe('liveStateText: a live call as the console names it', () => {
  it('says whom it rings and who talks; callbacks say so; an unknown state shows its own name', () => {
    const v = (state: string, agent?: string, direction = 'USER_INITIATED') => liveStateText({ state, agent, direction } as Parameters<typeof liveStateText>[0]);
    expect(v('queued')).toBe('waiting for an agent');
    expect(v('ringing', 'agent1')).toBe('ringing agent1');
    expect(v('active', 'agent2')).toBe('on call with agent2');
    expect(v('held', 'agent2')).toBe('on hold by agent2');
    // Anchor mode: a call in voicemail has no agent; it reads as what it is.
    expect(liveStateText({ state: 'answering', direction: 'USER_INITIATED', voicemail: { phase: 'joining' } })).toBe('answering for voicemail');
    expect(liveStateText({ state: 'active', direction: 'USER_INITIATED', voicemail: { phase: 'recording', closed: true } })).toBe('leaving a voicemail');
    expect(liveStateText({ state: 'ending', direction: 'USER_INITIATED', voicemail: { phase: 'recording' } })).toBe('ending');
    // The server keeps a held call `active` with `heldSince`: it reads as on hold.
    expect(liveStateText({ state: 'active', agent: 'agent2', direction: 'USER_INITIATED', heldSince: 1 })).toBe('on hold by agent2');
    expect(v('dialing', 'boss', 'BUSINESS_INITIATED')).toBe('boss dialing · callback');
    expect(v('something-new')).toBe('something-new');
  });
});

describe("timeText: the live calls' countdowns tell the truth", () => {
  it('a ringing call shows the ring time left (RING_TIMEOUT_MS) and the accept window, labelled; a waiting one the accept window; a started one its talk time', () => {
    const now = 1_000_000;
    expect(timeText({ state: 'ringing', ringUntil: now + 12_000, deadline: now + 27_000 }, now)).toBe('rings 0:12 more · accept window 0:27');
    expect(timeText({ state: 'queued', deadline: now + 27_000 }, now)).toBe('accept window 0:27');
    expect(timeText({ state: 'active', startedAt: now - 65_000, deadline: now }, now)).toBe('1:05');
  });
});

describe('a missed call says whom it rang, not "–" and "The call was rejected"', () => {
  it('rang text', () => {
    expect(rangText(['agent1'])).toBe('rang agent1');
    expect(rangText(['agent1', 'agent1'])).toBe('rang agent1 twice');
    expect(rangText(['agent1', 'agent2', 'agent1', 'agent3'])).toBe('rang agent1 twice, agent2 and agent3');
  });
});

describe('legsText: everyone on an anchored call', () => {
  it('a conference and a consult name every agent on the call; a consult still ringing names who consults whom; a transfer waiting says the caller hears music; one agent alone adds nothing', () => {
    expect(legsText({ agent: 'agent1' })).toBe('');
    expect(legsText({ agent: 'agent1', conference: ['agent2', 'agent3'] })).toMatch(/^ · on the call: agent1, agent2,? and agent3$/); // the list as the locale joins it
    expect(legsText({ agent: 'agent1', consult: { by: 'agent1', target: 'agent2', phase: 'talking' } })).toBe(' · on the call: agent1 and agent2 · agent1 consulting agent2');
    expect(legsText({ agent: 'agent1', consult: { by: 'agent1', target: 'agent2', phase: 'ringing' } })).toBe(' · agent1 consulting agent2');
    expect(legsText({ transfer: { by: 'agent1', ringing: 'agent2' } })).toBe(' · transferred by agent1, caller hears music');
  });
});
