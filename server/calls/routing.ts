/**
 * Routing: which agent rings next. Pure: the agents' state comes in, a name goes out.
 *
 * - Only agents who are connected, `available`, not ringing or holding a call, past their
 *   wrap-up, and in the number's queue are eligible.
 * - An agent who declined this call is never offered it again.
 * - Longest idle first (`idleSince` ascending), name as the tie-break so tests are stable.
 * - With a routing table (queues kept by the admin page, `RoutingTable`): the number's
 *   queue; within it the highest priority tier (priority 1 first), longest idle within
 *   the tier; after the queue's overflow time the next queue's agents are added (after
 *   every agent of the first); the queue's skill requirement (a skill at a least level)
 *   applies to every candidate; disabled and removed users never ring.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';

export interface AgentView {
  name: string;
  presence: 'available' | 'away';
  /** At least one live connection (a tab or a program). */
  connected: boolean;
  /** Wacid of the call this agent rings for, if any. */
  ringing?: string | undefined;
  /** Wacid of the call this agent holds, if any. */
  holding?: string | undefined;
  /** Epoch ms the agent last became free (longest idle rings first). */
  idleSince: number;
  /** Epoch ms until which the agent is in wrap-up after a call. */
  wrapUntil: number;
}

/** Which agents take which business number. */
export interface Queues {
  /** True when `agent` takes calls to `phoneId`. */
  takes(phoneId: string, agent: string): boolean;
  /** The agents taking calls to `phoneId`; undefined when every agent does. */
  agents(phoneId: string): ReadonlySet<string> | undefined;
  /** The routing table (priorities, overflow, skills, who may ring), when queues are kept in the database. */
  table?(): RoutingTable;
  /** The phone ids the queues name (not `*`), for transfer targets; absent: none named. */
  numbers?(): readonly string[];
}

/** One queue as routing reads it. */
export interface QueueRule {
  name: string;
  /** The Service's phone ids whose calls it takes; `*`: every number no queue names. */
  numbers: readonly string[];
  /** Agent → priority (1 rings first). */
  members: ReadonlyMap<string, number>;
  /** How long one agent rings (default: RING_TIMEOUT_MS). */
  ringTimeoutMs?: number | undefined;
  /** After this long waiting, the agents of `overflowTo` are added. */
  overflowAfterMs?: number | undefined;
  overflowTo?: string | undefined;
  /** Only agents with this skill at this level or above ring. */
  skill?: { name: string; level: number } | undefined;
}

export interface RoutingTable {
  queues: ReadonlyMap<string, QueueRule>;
  /** Agent → skill → level. */
  skills: ReadonlyMap<string, ReadonlyMap<string, number>>;
  /** The users who may ring (enabled, role agent). */
  agents: ReadonlySet<string>;
}

/** The queue taking calls to `phoneId`: the one naming it, else the `*` one. */
export function queueFor(table: RoutingTable, phoneId: string): QueueRule | undefined {
  let fallback: QueueRule | undefined;
  for (const q of table.queues.values()) {
    if (q.numbers.includes(phoneId)) return q;
    if (q.numbers.includes('*')) fallback = q;
  }
  return fallback;
}

/** The queue and its overflow queues in order, each with when (ms of waiting) it joins. */
function chainOf(table: RoutingTable, first: QueueRule): Array<{ q: QueueRule; fromMs: number }> {
  const out = [{ q: first, fromMs: 0 }];
  const seen = new Set([first.name]);
  let at = 0;
  for (let q = first; q.overflowTo !== undefined && q.overflowAfterMs !== undefined; ) {
    const next = table.queues.get(q.overflowTo);
    if (!next || seen.has(next.name)) break;
    at += q.overflowAfterMs;
    out.push({ q: next, fromMs: at });
    seen.add(next.name);
    q = next;
  }
  return out;
}

/**
 * Who may ring for a call to `phoneId` that has waited `waitedMs`: agent → rank (lower
 * first: the queue's place in the overflow chain, then the priority). Undefined: no
 * queue takes the number, so every agent may (as without queues).
 */
export function candidates(table: RoutingTable, phoneId: string, waitedMs: number): Map<string, readonly [number, number]> | undefined {
  const first = queueFor(table, phoneId);
  if (!first) return undefined;
  const out = new Map<string, readonly [number, number]>();
  chainOf(table, first).forEach(({ q, fromMs }, i) => {
    if (waitedMs < fromMs) return;
    for (const [agent, priority] of q.members) {
      if (out.has(agent) || !table.agents.has(agent)) continue;
      if (first.skill && (table.skills.get(agent)?.get(first.skill.name) ?? 0) < first.skill.level) continue;
      out.set(agent, [i, priority]);
    }
  });
  return out;
}

/** When (epoch ms) the next overflow queue joins a call that arrived at `since`; undefined: none is left to join. */
export function nextOverflowAt(table: RoutingTable, phoneId: string, since: number, now: number): number | undefined {
  const first = queueFor(table, phoneId);
  if (!first) return undefined;
  return chainOf(table, first).map((c) => since + c.fromMs).find((at) => at > now);
}

/** How long an agent rings for a call to `phoneId` (undefined: the default). */
export function ringTimeoutFor(table: RoutingTable, phoneId: string): number | undefined {
  return queueFor(table, phoneId)?.ringTimeoutMs;
}

/** A live `Queues` over a routing table that may be replaced (the admin page's changes). */
export function queuesOfTable(current: () => RoutingTable): Queues {
  const agents = (phoneId: string): ReadonlySet<string> | undefined => {
    const t = current();
    const first = queueFor(t, phoneId);
    if (!first) return undefined;
    const out = new Set<string>();
    for (const { q } of chainOf(t, first)) for (const a of q.members.keys()) if (t.agents.has(a)) out.add(a);
    return out;
  };
  return Object.freeze({
    takes: (phoneId: string, agent: string) => agents(phoneId)?.has(agent) ?? true,
    agents,
    table: current,
    numbers: () => [...new Set([...current().queues.values()].flatMap((q) => q.numbers.filter((n) => n !== '*')))],
  });
}

/** Default: every agent takes every number. */
export const EVERY_AGENT: Queues = Object.freeze({ takes: () => true, agents: () => undefined });

/**
 * QUEUES_FILE format: `{ "<phoneId>": ["agent1", "agent2"], "*": ["agent3"] }`.
 * A number not listed goes to the `"*"` list when there is one, else to every agent.
 */
export const QueuesFile = z.record(z.string().min(1), z.array(z.string().min(1)));

export function queuesFrom(map: z.infer<typeof QueuesFile>): Queues {
  const sets = new Map(Object.entries(map).map(([k, v]) => [k, new Set(v)] as const));
  const fallback = sets.get('*');
  return Object.freeze({
    takes(phoneId: string, agent: string): boolean {
      const set = sets.get(phoneId) ?? fallback;
      return set === undefined || set.has(agent);
    },
    agents(phoneId: string): ReadonlySet<string> | undefined {
      return sets.get(phoneId) ?? fallback;
    },
    numbers: () => [...sets.keys()].filter((n) => n !== '*'),
  });
}

/** Read and validate QUEUES_FILE; a malformed file fails start with a message naming it. */
export function readQueuesFile(file: string): z.infer<typeof QueuesFile> {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`QUEUES_FILE: cannot read ${file}: ${(err as Error).message}`);
  }
  const r = QueuesFile.safeParse(raw);
  if (!r.success) throw new Error(`QUEUES_FILE: ${file} must map phone ids to arrays of agent names`);
  return r.data;
}

/** Read QUEUES_FILE once at start (undefined: every agent takes every number). */
export function loadQueues(file: string | undefined): Queues {
  return file === undefined ? EVERY_AGENT : queuesFrom(readQueuesFile(file));
}

export function isEligible(agent: AgentView, now: number): boolean {
  return agent.connected && agent.presence === 'available' && !agent.ringing && !agent.holding && now >= agent.wrapUntil;
}

/** Whether any agent could take a call now (before looking at numbers and declines). */
export function anyEligible(agents: Iterable<AgentView>, now: number): boolean {
  for (const a of agents) if (isEligible(a, now)) return true;
  return false;
}

/** The agent to ring for this call now, or undefined when nobody can take it. */
export function pickAgent(
  call: { phoneId: string; declined: readonly string[]; createdAt?: number },
  agents: Iterable<AgentView>,
  queues: Queues,
  now: number,
): string | undefined {
  const table = queues.table?.();
  const ranks = table ? candidates(table, call.phoneId, now - (call.createdAt ?? now)) : undefined;
  const NONE = [0, 0] as const;
  let best: AgentView | undefined;
  let bestRank: readonly [number, number] = NONE;
  for (const a of agents) {
    if (!isEligible(a, now) || call.declined.includes(a.name)) continue;
    const rank = ranks ? ranks.get(a.name) : table ? (table.agents.has(a.name) ? NONE : undefined) : queues.takes(call.phoneId, a.name) ? NONE : undefined;
    if (!rank) continue;
    const order = best ? rank[0] - bestRank[0] || rank[1] - bestRank[1] || a.idleSince - best.idleSince || (a.name < best.name ? -1 : 1) : -1;
    if (order < 0) {
      best = a;
      bestRank = rank;
    }
  }
  return best?.name;
}
