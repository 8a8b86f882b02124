/**
 * Routing: which agent rings next. Pure: the agents' state comes in, a name goes out.
 *
 * - Only agents who are connected, `available`, not ringing or holding a call, past their
 *   wrap-up, and in the number's queue are eligible.
 * - An agent who declined this call is never offered it again.
 * - Longest idle first (`idleSince` ascending), name as the tie-break so tests are stable.
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
  });
}

/** Read QUEUES_FILE once at start; a malformed file fails start with a message naming it. */
export function loadQueues(file: string | undefined): Queues {
  if (file === undefined) return EVERY_AGENT;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`QUEUES_FILE: cannot read ${file}: ${(err as Error).message}`);
  }
  const r = QueuesFile.safeParse(raw);
  if (!r.success) throw new Error(`QUEUES_FILE: ${file} must map phone ids to arrays of agent names`);
  return queuesFrom(r.data);
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
  call: { phoneId: string; declined: readonly string[] },
  agents: Iterable<AgentView>,
  queues: Queues,
  now: number,
): string | undefined {
  let best: AgentView | undefined;
  for (const a of agents) {
    if (!isEligible(a, now) || call.declined.includes(a.name) || !queues.takes(call.phoneId, a.name)) continue;
    if (!best || a.idleSince < best.idleSince || (a.idleSince === best.idleSince && a.name < best.name)) best = a;
  }
  return best?.name;
}
