/**
 * The wallboard's figures, one pure function of three inputs, so every
 * node computes the same board from the same shared sources:
 * - today's calls from history (the system of record, shared by every node);
 * - the live calls from the store (Redis: every node's calls);
 * - the agents' states (an interface: whatever source knows them).
 *
 * Definitions (inbound calls only; counts since the start of today, server's TZ):
 * - offered: calls received today that are settled (answered, abandoned, missed, rejected,
 *   failed, no-audio; an answered call counts from its answer). A `no-audio` call (accepted,
 *   dropped by the Service because no audio ever flowed) is offered, never answered, and
 *   not among the agent's calls handled. Calls still waiting count in
 *   `waiting` / `ringing`, not yet in `offered`.
 * - serviceLevel: answered within SLA_SECONDS (wait ≤ SLA) / offered; 1 when nothing was offered.
 * - asaMs: mean wait of the answered calls; ahtMs: mean talk + hold of the answered calls
 *   that ended (per number: the call's, however many agents talked in it; per agent: their
 *   legs' when the call has legs). Both rounded to whole ms, 0 when there are none.
 * - waiting: live calls queued (nobody rings); ringing: live calls ringing an agent;
 *   longestWaitMs: the longest-waiting of those, now.
 * - transfers: cold transfers sent and warm ones completed (anchor mode), per business number
 *   of the call and per agent who transferred (history's `transferCounts`); an agent who
 *   transferred a call is listed even with no call of their own.
 */
import type { AgentStatus, Wallboard, WallboardAgent, WallboardNumber } from '../../shared/protocol.ts';

/** One call of today, as history has it. */
export interface DayCall {
  businessNumber?: string | undefined;
  direction: 'inbound' | 'outbound';
  outcome: string;
  agent?: string | undefined;
  waitMs?: number | undefined;
  talkMs?: number | undefined;
  holdMs?: number | undefined;
  answeredAt?: string | undefined;
  endedAt?: string | undefined;
  /**
   * A group of calls alike in all of the above (history's `callGroups`): how many; waitMs,
   * talkMs and holdMs are then the group's sums. Default 1.
   */
  count?: number;
  /** The group's waits were all within the SLA (default: from waitMs). */
  withinSla?: boolean;
  /**
   * Anchor mode: each agent who talked with the caller (history's legs). When present, the
   * agents' figures come from these and not from `agent`; in a group, one per agent with the
   * number of the group's calls they talked in and the sums of their talk and hold.
   */
  legs?: readonly DayLeg[] | undefined;
}

/** One agent's part of a call (or of a group's calls: `count` of them, talk and hold summed). */
export interface DayLeg {
  agent: string;
  talkMs: number;
  holdMs: number;
  /** Default 1. */
  count?: number;
}

/** Transfers made by one agent in calls to one business number (history's `transferCounts`). */
export interface DayTransfers {
  businessNumber?: string | undefined;
  agent?: string | undefined;
  count: number;
}

/** One live call, as the store has it. */
export interface LiveCall {
  businessNumber: string;
  direction: 'USER_INITIATED' | 'BUSINESS_INITIATED';
  state: string;
  /** Epoch ms the call arrived. */
  createdAt: number;
}

/** One agent's state, from whatever knows it (the board today; richer states later). */
export interface AgentInput {
  name: string;
  status: AgentStatus;
  reason?: string | undefined;
  since: number;
}

export interface WallboardInput {
  today: readonly DayCall[];
  live: readonly LiveCall[];
  agents: readonly AgentInput[];
  now: number;
  slaSeconds: number;
  /** Numbers always shown (even with no calls today), e.g. from the phone number list. */
  numbers?: readonly string[];
  /** Today's transfers (default none). */
  transfers?: readonly DayTransfers[];
}

const SETTLED = new Set(['answered', 'abandoned', 'missed', 'rejected', 'failed', 'no-audio']);

/** A number's figures over a span of history (today on the wallboard; any range in reports). */
export interface NumberFigures {
  businessNumber: string;
  offered: number;
  answered: number;
  abandoned: number;
  missed: number;
  serviceLevel: number;
  asaMs: number;
  ahtMs: number;
  /** Transfers made in this number's calls. */
  transfers: number;
}

/**
 * An agent's figures over a span of history. callsHandled: calls they answered (either
 * direction; the wallboard's `callsToday`); inbound / outbound split it; ahtMs: mean talk +
 * hold of those that ended (the numbers' AHT rule). A call with legs (anchor mode: a transfer,
 * a consult, a conference) counts once for each agent who talked with the caller, with that
 * agent's own talk and hold; a call without (direct mode, older rows) is its `agent`'s whole.
 */
export interface AgentFigures {
  name: string;
  callsHandled: number;
  inbound: number;
  outbound: number;
  talkMs: number;
  holdMs: number;
  ahtMs: number;
  /** Calls this agent transferred (cold sent, warm completed). */
  transfers: number;
}

interface Acc {
  offered: number;
  answered: number;
  abandoned: number;
  missed: number;
  withinSla: number;
  waitSum: number;
  handled: number;
  handleSum: number;
  transfers: number;
}

const empty = (): Acc => ({ offered: 0, answered: 0, abandoned: 0, missed: 0, withinSla: 0, waitSum: 0, handled: 0, handleSum: 0, transfers: 0 });

/**
 * The history figures (the definitions above) of a set of calls, per number and per agent,
 * sorted by number / name. The wallboard passes today's rows; reports any range's.
 */
export function computeFigures(
  calls: readonly DayCall[],
  slaSeconds: number,
  numbers: readonly string[] = [],
  transfers: readonly DayTransfers[] = [],
): { numbers: NumberFigures[]; agents: AgentFigures[] } {
  const slaMs = slaSeconds * 1000;
  const by = new Map<string, Acc>();
  const acc = (n: string) => {
    let a = by.get(n);
    if (!a) by.set(n, (a = empty()));
    return a;
  };
  for (const n of numbers) acc(n);
  const agents = new Map<string, AgentFigures & { handled: number }>();
  const agent = (name: string) => {
    let g = agents.get(name);
    if (!g) agents.set(name, (g = { name, callsHandled: 0, inbound: 0, outbound: 0, talkMs: 0, holdMs: 0, ahtMs: 0, transfers: 0, handled: 0 }));
    return g;
  };
  for (const x of transfers) {
    if (x.agent) agent(x.agent).transfers += x.count;
    if (x.businessNumber) acc(x.businessNumber).transfers += x.count;
  }
  for (const c of calls) {
    const n = c.count ?? 1;
    // A call that never had audio (`no-audio`) was accepted but not handled.
    if (c.outcome !== 'no-audio' && (c.outcome === 'answered' || c.answeredAt !== undefined)) {
      const ended = c.endedAt !== undefined && c.talkMs !== undefined;
      const credit = (name: string, calls: number, talkMs: number, holdMs: number) => {
        const g = agent(name);
        g.callsHandled += calls;
        if (c.direction === 'inbound') g.inbound += calls;
        else g.outbound += calls;
        if (ended) {
          g.handled += calls;
          g.talkMs += talkMs;
          g.holdMs += holdMs;
        }
      };
      // Legs (a transfer, a consult, a conference): each agent who talked counts the call once, with their own talk and hold.
      if (c.legs !== undefined && c.legs.length > 0) for (const l of c.legs) credit(l.agent, l.count ?? 1, l.talkMs, l.holdMs);
      else if (c.agent) credit(c.agent, n, c.talkMs ?? 0, c.holdMs ?? 0);
    }
    if (c.direction !== 'inbound' || !c.businessNumber) continue;
    // An answered call still talking counts as answered (its outcome is `in-progress`).
    const outcome = c.outcome === 'in-progress' && c.answeredAt !== undefined ? 'answered' : c.outcome;
    if (!SETTLED.has(outcome)) continue;
    const a = acc(c.businessNumber);
    a.offered += n;
    if (outcome === 'abandoned') a.abandoned += n;
    if (outcome === 'missed') a.missed += n;
    if (outcome !== 'answered') continue;
    a.answered += n;
    const wait = c.waitMs ?? 0;
    a.waitSum += wait;
    if (c.withinSla ?? wait <= slaMs) a.withinSla += n;
    if (c.endedAt !== undefined && c.talkMs !== undefined) {
      a.handled += n;
      a.handleSum += c.talkMs + (c.holdMs ?? 0);
    }
  }
  return {
    numbers: [...by.entries()]
      .sort(([x], [y]) => x.localeCompare(y))
      .map(([businessNumber, a]) => ({
        businessNumber,
        offered: a.offered,
        answered: a.answered,
        abandoned: a.abandoned,
        missed: a.missed,
        serviceLevel: a.offered === 0 ? 1 : a.withinSla / a.offered,
        asaMs: a.answered === 0 ? 0 : Math.round(a.waitSum / a.answered),
        ahtMs: a.handled === 0 ? 0 : Math.round(a.handleSum / a.handled),
        transfers: a.transfers,
      })),
    agents: [...agents.values()]
      .sort((x, y) => x.name.localeCompare(y.name))
      .map(({ handled, ...g }) => ({ ...g, ahtMs: handled === 0 ? 0 : Math.round((g.talkMs + g.holdMs) / handled) })),
  };
}

interface LiveAcc {
  waiting: number;
  ringing: number;
  longestWaitMs: number;
}

export function computeWallboard(input: WallboardInput): Wallboard {
  const figures = computeFigures(input.today, input.slaSeconds, input.numbers, input.transfers);
  const live = new Map<string, LiveAcc>();
  for (const l of input.live) {
    if (l.direction !== 'USER_INITIATED') continue;
    const waiting = l.state === 'queued';
    const ringing = l.state === 'ringing';
    if (!waiting && !ringing) continue;
    let a = live.get(l.businessNumber);
    if (!a) live.set(l.businessNumber, (a = { waiting: 0, ringing: 0, longestWaitMs: 0 }));
    if (waiting) a.waiting++;
    else a.ringing++;
    a.longestWaitMs = Math.max(a.longestWaitMs, Math.max(0, input.now - l.createdAt));
  }
  const byNumber = new Map(figures.numbers.map((n) => [n.businessNumber, n]));
  const none = (businessNumber: string): NumberFigures => ({ businessNumber, offered: 0, answered: 0, abandoned: 0, missed: 0, serviceLevel: 1, asaMs: 0, ahtMs: 0, transfers: 0 });
  const numbers: WallboardNumber[] = [...new Set([...byNumber.keys(), ...live.keys()])]
    .sort((x, y) => x.localeCompare(y))
    .map((n) => {
      const f = byNumber.get(n) ?? none(n);
      const l = live.get(n) ?? { waiting: 0, ringing: 0, longestWaitMs: 0 };
      return { businessNumber: n, waiting: l.waiting, ringing: l.ringing, longestWaitMs: l.longestWaitMs, offered: f.offered, answered: f.answered, abandoned: f.abandoned, missed: f.missed, serviceLevel: f.serviceLevel, asaMs: f.asaMs, ahtMs: f.ahtMs, transfers: f.transfers };
    });
  const callsToday = new Map(figures.agents.map((g) => [g.name, g.callsHandled]));
  const transfersToday = new Map(figures.agents.map((g) => [g.name, g.transfers]));
  // An agent who took calls today but whom no source knows now is shown offline.
  const known = new Set(input.agents.map((g) => g.name));
  const absent = [...callsToday.keys()].filter((n) => !known.has(n)).map((name): AgentInput => ({ name, status: 'offline', since: startOfDay(input.now) }));
  const agents: WallboardAgent[] = [...input.agents, ...absent]
    .sort((x, y) => x.name.localeCompare(y.name))
    .map((g) => ({ name: g.name, status: g.status, ...(g.reason ? { reason: g.reason } : {}), since: g.since, callsToday: callsToday.get(g.name) ?? 0, transfersToday: transfersToday.get(g.name) ?? 0 }));
  return { numbers, agents, at: input.now, timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone };
}

/** Midnight of `now`'s day in the server's time zone (process TZ), as epoch ms. */
export function startOfDay(now: number): number {
  const d = new Date(now);
  d.setHours(0, 0, 0, 0);
  return d.getTime();
}
