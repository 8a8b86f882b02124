/**
 * The wallboard's figures (issue 17 item 1), one pure function of three inputs, so every
 * node computes the same board from the same shared sources:
 * - today's calls from history (the system of record, shared by every node);
 * - the live calls from the store (Redis: every node's calls);
 * - the agents' states (an interface: whatever source knows them).
 *
 * Definitions (inbound calls only; counts since the start of today, server's TZ):
 * - offered: calls received today that are settled (answered, abandoned, missed, rejected,
 *   failed; an answered call counts from its answer). Calls still waiting count in
 *   `waiting` / `ringing`, not yet in `offered`.
 * - serviceLevel: answered within SLA_SECONDS (wait ≤ SLA) / offered; 1 when nothing was offered.
 * - asaMs: mean wait of the answered calls; ahtMs: mean talk + hold of the answered calls
 *   that ended. Both rounded to whole ms, 0 when there are none.
 * - waiting: live calls queued (nobody rings); ringing: live calls ringing an agent;
 *   longestWaitMs: the longest-waiting of those, now.
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
}

const SETTLED = new Set(['answered', 'abandoned', 'missed', 'rejected', 'failed']);

interface Acc {
  waiting: number;
  ringing: number;
  longestWaitMs: number;
  offered: number;
  answered: number;
  abandoned: number;
  missed: number;
  withinSla: number;
  waitSum: number;
  handled: number;
  handleSum: number;
}

const empty = (): Acc => ({ waiting: 0, ringing: 0, longestWaitMs: 0, offered: 0, answered: 0, abandoned: 0, missed: 0, withinSla: 0, waitSum: 0, handled: 0, handleSum: 0 });

export function computeWallboard(input: WallboardInput): Wallboard {
  const slaMs = input.slaSeconds * 1000;
  const by = new Map<string, Acc>();
  const acc = (n: string) => {
    let a = by.get(n);
    if (!a) by.set(n, (a = empty()));
    return a;
  };
  for (const n of input.numbers ?? []) acc(n);
  const callsToday = new Map<string, number>();
  for (const c of input.today) {
    if (c.agent && (c.outcome === 'answered' || c.answeredAt !== undefined)) callsToday.set(c.agent, (callsToday.get(c.agent) ?? 0) + 1);
    if (c.direction !== 'inbound' || !c.businessNumber) continue;
    // An answered call still talking counts as answered (its outcome is `in-progress`).
    const outcome = c.outcome === 'in-progress' && c.answeredAt !== undefined ? 'answered' : c.outcome;
    if (!SETTLED.has(outcome)) continue;
    const a = acc(c.businessNumber);
    a.offered++;
    if (outcome === 'abandoned') a.abandoned++;
    if (outcome === 'missed') a.missed++;
    if (outcome !== 'answered') continue;
    a.answered++;
    const wait = c.waitMs ?? 0;
    a.waitSum += wait;
    if (wait <= slaMs) a.withinSla++;
    if (c.endedAt !== undefined && c.talkMs !== undefined) {
      a.handled++;
      a.handleSum += c.talkMs + (c.holdMs ?? 0);
    }
  }
  for (const l of input.live) {
    if (l.direction !== 'USER_INITIATED') continue;
    const waiting = l.state === 'queued';
    const ringing = l.state === 'ringing';
    if (!waiting && !ringing) continue;
    const a = acc(l.businessNumber);
    if (waiting) a.waiting++;
    else a.ringing++;
    a.longestWaitMs = Math.max(a.longestWaitMs, Math.max(0, input.now - l.createdAt));
  }
  const numbers: WallboardNumber[] = [...by.entries()]
    .sort(([x], [y]) => x.localeCompare(y))
    .map(([businessNumber, a]) => ({
      businessNumber,
      waiting: a.waiting,
      ringing: a.ringing,
      longestWaitMs: a.longestWaitMs,
      offered: a.offered,
      answered: a.answered,
      abandoned: a.abandoned,
      missed: a.missed,
      serviceLevel: a.offered === 0 ? 1 : a.withinSla / a.offered,
      asaMs: a.answered === 0 ? 0 : Math.round(a.waitSum / a.answered),
      ahtMs: a.handled === 0 ? 0 : Math.round(a.handleSum / a.handled),
    }));
  // An agent who took calls today but whom no source knows now is shown offline.
  const known = new Set(input.agents.map((g) => g.name));
  const absent = [...callsToday.keys()].filter((n) => !known.has(n)).map((name): AgentInput => ({ name, status: 'offline', since: startOfDay(input.now) }));
  const agents: WallboardAgent[] = [...input.agents, ...absent]
    .sort((x, y) => x.name.localeCompare(y.name))
    .map((g) => ({ name: g.name, status: g.status, ...(g.reason ? { reason: g.reason } : {}), since: g.since, callsToday: callsToday.get(g.name) ?? 0 }));
  return { numbers, agents, at: input.now };
}

/** Midnight of `now`'s day in the server's time zone (process TZ), as epoch ms. */
export function startOfDay(now: number): number {
  const d = new Date(now);
  d.setHours(0, 0, 0, 0);
  return d.getTime();
}
