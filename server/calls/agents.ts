/**
 * The agent board: what routing needs to know about each agent (presence, connections,
 * the call it rings for or holds, idle time, wrap-up). In-process, one per node, changed
 * only by the engine and the gateway, synchronously, so a reservation (`reserve`) can
 * never hand one agent two calls at once on this node.
 */
import type { AgentState as AgentStateView, Presence } from '../../shared/protocol.ts';
import { deriveAgentState, MISSED_A_CALL, sameState, type AgentFacts, type DerivedState } from './agentState.ts';
import type { AgentView } from './routing.ts';

/** Why after-call work lasts longer (`AgentBoard.wrapExtend`). */
export type WrapExtension = 'more' | 'typing' | 'page';

interface AgentState extends AgentFacts {
  conns: number;
  elsewhere: Set<string>;
  /** When the agent was last freed from a call (after-call work counts from then, on every node). */
  freedAt?: number;
  /** The state last derived (and since when its status holds). */
  last?: DerivedState;
  since: number;
}

/**
 * What the store keeps of an agent for a node that starts later (a restart after a crash, or
 * a new node): what the agent chose and its after-call work. Calls it rings for or holds are
 * read from the call records; connections are each node's own.
 */
export interface StoredAgent {
  presence: Presence;
  reason?: string | undefined;
  idleSince: number;
  wrapWacid?: string | undefined;
  wrapUntil: number;
  wrapExtended?: boolean | undefined;
  wrapResumed?: boolean | undefined;
  freedAt?: number | undefined;
}

export class AgentBoard {
  private readonly agents = new Map<string, AgentState>();

  constructor(private readonly now: () => number = Date.now) {}

  private entry(name: string): AgentState {
    let a = this.agents.get(name);
    if (!a) {
      // New agents start away: the page's ready-check (microphone, ringtone) sets available.
      a = { name, presence: 'away', connected: false, conns: 0, idleSince: this.now(), wrapUntil: 0, elsewhere: new Set(), since: this.now() };
      this.agents.set(name, a);
    }
    return a;
  }

  view(name: string): Readonly<AgentView> {
    return this.entry(name);
  }

  views(): Iterable<Readonly<AgentView>> {
    return this.agents.values();
  }

  presence(name: string): Presence {
    return this.entry(name).presence;
  }

  /** The agent's state now (`agent.state` without its type). */
  state(name: string): AgentStateView {
    // Read only: a change seen here must still be pushed by the next `observe`.
    const a = this.entry(name);
    const now = this.now();
    const cur = deriveAgentState(a, now);
    return { ...cur, since: a.last && a.last.status === cur.status ? a.since : startOf(a, cur.status, now) };
  }

  /**
   * Derive the agent's state again; returns it when it differs from the last one derived
   * (the caller pushes it), undefined when nothing changed.
   */
  observe(name: string): AgentStateView | undefined {
    const a = this.entry(name);
    const now = this.now();
    const next = deriveAgentState(a, now);
    if (a.last && sameState(a.last, next)) return undefined;
    if (!a.last || a.last.status !== next.status) a.since = startOf(a, next.status, now);
    a.last = next;
    return { ...next, since: a.since };
  }

  facts(name: string): Readonly<AgentFacts> {
    return this.entry(name);
  }

  setPresence(name: string, p: Presence, reason?: string): boolean {
    const a = this.entry(name);
    const r = p === 'away' ? reason : undefined;
    if (a.presence === p && a.awayReason === r) return false;
    a.awayReason = r;
    if (a.presence === p) return true;
    a.presence = p;
    // Becoming available starts the idle clock, so a returning agent does not jump the line.
    if (p === 'available' && !a.holding) a.idleSince = this.now();
    return true;
  }

  /** A connection opened; returns the agent's connection count. */
  connect(name: string): number {
    const a = this.entry(name);
    a.conns += 1;
    a.connected = true;
    return a.conns;
  }

  /** A connection closed; returns how many remain. `connected` stays true until `gone`. */
  disconnect(name: string): number {
    const a = this.entry(name);
    a.conns = Math.max(0, a.conns - 1);
    return a.conns;
  }

  /** Another node's connections of this agent: `connected` there or not any more. */
  elsewhere(name: string, node: string, connected: boolean): void {
    const a = this.entry(name);
    if (connected) a.elsewhere.add(node);
    else a.elsewhere.delete(node);
  }

  /** The reconnect grace ran out with no connection: routing skips the agent. */
  gone(name: string): boolean {
    const a = this.entry(name);
    if (a.conns > 0) return false;
    a.connected = false;
    return true;
  }

  /** The agent's facts the store keeps (`StoredAgent`). */
  stored(name: string): StoredAgent {
    const a = this.entry(name);
    return { presence: a.presence, reason: a.awayReason, idleSince: a.idleSince, wrapWacid: a.wrapWacid, wrapUntil: a.wrapUntil, wrapExtended: a.wrapExtended, wrapResumed: a.wrapResumed, freedAt: a.freedAt };
  }

  /** Take what the store kept of the agent (this board knew nothing newer of it). */
  restore(name: string, s: StoredAgent): void {
    const a = this.entry(name);
    a.presence = s.presence;
    a.awayReason = s.presence === 'away' ? s.reason : undefined;
    a.idleSince = s.idleSince;
    // After-call work only while it lasts, and never over a call the agent holds now.
    if (s.wrapWacid && s.wrapUntil > this.now() && !a.holding) {
      a.wrapWacid = s.wrapWacid;
      a.wrapUntil = s.wrapUntil;
      a.wrapExtended = s.wrapExtended;
      a.wrapResumed = s.wrapResumed;
      a.freedAt = s.freedAt;
    }
  }

  /** How many connections the agent has on this node. */
  connectionsHere(name: string): number {
    return this.entry(name).conns;
  }

  /** Agents with connections on this node. */
  connectedHere(): string[] {
    return [...this.agents.values()].filter((a) => a.conns > 0).map((a) => a.name);
  }

  /** Take the agent for ringing `wacid`; false when it already rings for or holds a call. */
  reserve(name: string, wacid: string): boolean {
    const a = this.entry(name);
    if (a.ringing || a.holding) return false;
    a.ringing = wacid;
    return true;
  }

  // Agent changes, named as the lifecycle's effects name them (`lifecycle.ts` Effect).

  /** `wacid` was offered to this agent (by this node or another): it rings now. */
  offered(name: string, wacid: string): void {
    const a = this.entry(name);
    if (!a.holding) a.ringing = wacid;
  }

  /** The offer of `wacid` to this agent ended (declined, answered elsewhere, moved on). */
  revoke(name: string, wacid: string): void {
    const a = this.entry(name);
    if (a.ringing === wacid) a.ringing = undefined;
  }

  /** The agent holds `wacid` now (answered or dialed). */
  agentBusy(name: string, wacid: string): void {
    const a = this.entry(name);
    if (a.ringing === wacid) a.ringing = undefined;
    a.holding = wacid;
  }

  /** The agent's call `wacid` is over; in wrap-up until `wrapUntil`. */
  agentFree(name: string, wacid: string, wrapUntil: number, at = this.now()): void {
    const a = this.entry(name);
    if (a.ringing === wacid) a.ringing = undefined;
    if (a.holding === wacid) {
      a.holding = undefined;
      a.freedAt = at;
      a.wrapUntil = wrapUntil;
      a.idleSince = Math.max(this.now(), wrapUntil);
      // A disposition is due for this call (after-call work), unless there is no wrap-up time.
      a.wrapWacid = wrapUntil > this.now() ? wacid : undefined;
      a.wrapExtended = false;
      a.wrapResumed = false;
    }
  }

  /** After-call work for `wacid` ended (disposition given, or its countdown ran out). */
  wrapEnd(name: string, wacid: string): void {
    const a = this.entry(name);
    if (a.wrapWacid !== wacid) return;
    a.wrapWacid = undefined;
    a.wrapExtended = false;
    a.wrapResumed = false;
    if (a.wrapUntil > this.now()) {
      a.wrapUntil = this.now();
      a.idleSince = this.now();
    }
  }

  /**
   * After-call work for `wacid` now ends at `until`: "More time" (`more`, once), the time the
   * agent spent typing (`typing`), or a page back after none was left (`page`, once).
   */
  wrapExtend(name: string, wacid: string, until: number, why: WrapExtension = 'more'): void {
    const a = this.entry(name);
    if (a.wrapWacid !== wacid) return;
    a.wrapUntil = until;
    a.idleSince = until;
    if (why === 'more') a.wrapExtended = true;
    if (why === 'page') a.wrapResumed = true;
  }

  /** The agent let a call ring out: set away, so calls stop ringing at an empty desk. */
  agentNoAnswer(name: string): void {
    this.setPresence(name, 'away', MISSED_A_CALL);
  }
}

/**
 * When a new status began: after-call work from the moment the call freed the agent (so
 * `until - since` is exactly the wrap-up time), anything else from now.
 */
function startOf(a: AgentState, status: string, now: number): number {
  return status === 'after-call-work' && a.freedAt !== undefined && a.freedAt <= now ? a.freedAt : now;
}
