/** computeWallboard's rules at their edges, with a fixed clock (the day's figures: test/e2e/wallboard.test.ts). */
import { describe, expect, it } from 'vitest';
import { computeFigures, computeWallboard, startOfDay, type DayCall } from './compute.ts';

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

  it('legs: a transferred call counts once for each agent who talked, with their own talk and hold; the number keeps the call', () => {
    const transferred: DayCall = {
      businessNumber: N, direction: 'inbound', outcome: 'answered', waitMs: 3_000, answeredAt: 'x', endedAt: 'x', agent: 'b', talkMs: 38_000, holdMs: 6_000,
      legs: [{ agent: 'a', talkMs: 7_000, holdMs: 2_000 }, { agent: 'b', talkMs: 28_000, holdMs: 4_000 }],
    };
    const direct: DayCall = { businessNumber: N, direction: 'inbound', outcome: 'answered', waitMs: 1_000, answeredAt: 'x', endedAt: 'x', agent: 'a', talkMs: 60_000 };
    const f = computeFigures([transferred, direct], 20);
    expect(f.agents).toEqual([
      { name: 'a', callsHandled: 2, inbound: 2, outbound: 0, talkMs: 67_000, holdMs: 2_000, ahtMs: 34_500, transfers: 0 },
      { name: 'b', callsHandled: 1, inbound: 1, outbound: 0, talkMs: 28_000, holdMs: 4_000, ahtMs: 32_000, transfers: 0 },
    ]);
    // Per number: the call's own talk and hold, once (not the sum of the legs).
    expect(f.numbers).toEqual([expect.objectContaining({ answered: 2, ahtMs: (38_000 + 6_000 + 60_000) / 2 })]);
    // The wallboard's calls today follow the same split.
    const w = computeWallboard({ today: [transferred, direct], live: [], agents: [], now: NOW, slaSeconds: 20 });
    expect(w.agents.map((g) => [g.name, g.callsToday])).toEqual([['a', 2], ['b', 1]]);
  });

  it('legs: a conference of three counts for each; a call still on counts as handled without talk; a group’s legs carry their counts and sums', () => {
    const f = computeFigures(
      [
        { direction: 'inbound', outcome: 'answered', answeredAt: 'x', endedAt: 'x', agent: 'a', talkMs: 47_000, legs: [{ agent: 'a', talkMs: 47_000, holdMs: 0 }, { agent: 'b', talkMs: 15_000, holdMs: 0 }, { agent: 'c', talkMs: 22_000, holdMs: 0 }] },
        { direction: 'inbound', outcome: 'in-progress', answeredAt: 'x', agent: 'c', legs: [{ agent: 'a', talkMs: 5_000, holdMs: 0 }, { agent: 'c', talkMs: 0, holdMs: 0 }] },
        // A group (history's callGroups) of 3 calls with legs: agent d in all 3, e in 2.
        { direction: 'inbound', outcome: 'answered', answeredAt: 'x', endedAt: 'x', count: 3, talkMs: 90_000, holdMs: 0, legs: [{ agent: 'd', count: 3, talkMs: 60_000, holdMs: 3_000 }, { agent: 'e', count: 2, talkMs: 30_000, holdMs: 0 }] },
      ],
      20,
    );
    expect(f.agents.map((g) => [g.name, g.callsHandled, g.talkMs, g.holdMs, g.ahtMs])).toEqual([
      ['a', 2, 47_000, 0, 47_000],
      ['b', 1, 15_000, 0, 15_000],
      ['c', 2, 22_000, 0, 22_000],
      ['d', 3, 60_000, 3_000, 21_000],
      ['e', 2, 30_000, 0, 15_000],
    ]);
  });

  it('calls without legs (direct mode, older rows) keep the rule: the whole call is its agent’s', () => {
    const f = computeFigures([{ direction: 'outbound', outcome: 'answered', answeredAt: 'x', endedAt: 'x', agent: 'a', talkMs: 10_000, holdMs: 1_000 }], 20);
    expect(f.agents).toEqual([{ name: 'a', callsHandled: 1, inbound: 0, outbound: 1, talkMs: 10_000, holdMs: 1_000, ahtMs: 11_000, transfers: 0 }]);
  });
});
