/** computeWallboard's rules at their edges, with a fixed clock (the day's figures: test/e2e/wallboard.test.ts). */
import { describe, expect, it } from 'vitest';
import { computeWallboard, startOfDay } from './compute.ts';

const NOW = new Date(2026, 10, 24, 15, 0, 0).getTime();
const N = '+15550001000';

describe('computeWallboard', () => {
  it('no calls: service level 1, averages 0; numbers always shown are listed', () => {
    const w = computeWallboard({ today: [], live: [], agents: [], now: NOW, slaSeconds: 20, numbers: [N] });
    expect(w).toEqual({ numbers: [{ businessNumber: N, waiting: 0, ringing: 0, longestWaitMs: 0, offered: 0, answered: 0, abandoned: 0, missed: 0, serviceLevel: 1, asaMs: 0, ahtMs: 0, transfers: 0 }], agents: [], at: NOW, timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone });
  });

  it('a wait of exactly SLA_SECONDS is within; an unanswered call in progress is not offered yet; outbound live calls and active ones are not waiting', () => {
    const w = computeWallboard({
      today: [
        { businessNumber: N, direction: 'inbound', outcome: 'answered', waitMs: 20_000, talkMs: 1_000, endedAt: 'x', agent: 'a' },
        { businessNumber: N, direction: 'inbound', outcome: 'answered', waitMs: 20_001, talkMs: 3_000, holdMs: 2_000, endedAt: 'x', agent: 'a' },
        { businessNumber: N, direction: 'inbound', outcome: 'in-progress' },
      ],
      live: [
        { businessNumber: N, direction: 'USER_INITIATED', state: 'queued', createdAt: NOW - 7_000 },
        { businessNumber: N, direction: 'USER_INITIATED', state: 'active', createdAt: NOW - 90_000 },
        { businessNumber: N, direction: 'BUSINESS_INITIATED', state: 'ringing', createdAt: NOW - 50_000 },
      ],
      agents: [{ name: 'b', status: 'available', since: NOW - 1_000 }],
      now: NOW,
      slaSeconds: 20,
    });
    expect(w.numbers[0]).toEqual({ businessNumber: N, waiting: 1, ringing: 0, longestWaitMs: 7_000, offered: 2, answered: 2, abandoned: 0, missed: 0, serviceLevel: 0.5, asaMs: 20_001, ahtMs: 3_000, transfers: 0 }); // (20 000 + 20 001) / 2 rounded; (1 000 + 3 000 + 2 000 hold) / 2
    // An agent with calls today whom no source knows is offline since midnight.
    expect(w.agents).toEqual([
      { name: 'a', status: 'offline', since: startOfDay(NOW), callsToday: 2, transfersToday: 0 },
      { name: 'b', status: 'available', since: NOW - 1_000, callsToday: 0, transfersToday: 0 },
    ]);
  });

  it('a call accepted whose audio never flowed (no-audio) is offered, not answered, and not among the agent’s calls', () => {
    const w = computeWallboard({
      today: [
        { businessNumber: N, direction: 'inbound', outcome: 'answered', waitMs: 5_000, talkMs: 60_000, answeredAt: 'x', endedAt: 'x', agent: 'a' },
        { businessNumber: N, direction: 'inbound', outcome: 'no-audio', waitMs: 4_000, answeredAt: 'x', endedAt: 'x', agent: 'a' },
      ],
      live: [],
      agents: [],
      now: NOW,
      slaSeconds: 20,
    });
    expect(w.numbers[0]).toMatchObject({ offered: 2, answered: 1, serviceLevel: 0.5, asaMs: 5_000, ahtMs: 60_000 });
    expect(w.agents).toEqual([{ name: 'a', status: 'offline', since: startOfDay(NOW), callsToday: 1, transfersToday: 0 }]);
  });
  it('transfers: per number of the call and per agent who transferred; an agent known only by a transfer is listed', () => {
    const w = computeWallboard({
      today: [{ businessNumber: N, direction: 'inbound', outcome: 'answered', waitMs: 1_000, answeredAt: 'x', agent: 'b' }],
      transfers: [
        { businessNumber: N, agent: 'a', count: 2 },
        { businessNumber: N, agent: 'b', count: 1 },
      ],
      live: [],
      agents: [{ name: 'b', status: 'on-call', since: NOW - 1_000 }],
      now: NOW,
      slaSeconds: 20,
    });
    expect(w.numbers[0]).toMatchObject({ businessNumber: N, answered: 1, transfers: 3 });
    expect(w.agents).toEqual([
      { name: 'a', status: 'offline', since: startOfDay(NOW), callsToday: 0, transfersToday: 2 },
      { name: 'b', status: 'on-call', since: NOW - 1_000, callsToday: 1, transfersToday: 1 },
    ]);
  });
});
