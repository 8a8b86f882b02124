/**
 * An agent's state (`agent.state`, wave 2 contract) derived from what the board knows: one
 * pure function, so the pages, the supervisors and routing can never disagree about it.
 *
 * Order matters: a call (ringing, on it) outranks after-call work, which outranks presence;
 * an agent with no connection on any node is offline whatever else is set.
 */
import type { AgentState, AgentStatus } from '../../shared/protocol.ts';
import type { AgentView } from './routing.ts';

/** Away reason set by the server when an offer rang out unanswered. */
export const MISSED_A_CALL = 'Missed a call';
/** Disposition recorded when after-call work ended by its countdown without one. */
export const NOT_SET = 'Not set';
/**
 * `wrapUntil` of after-call work with no countdown (WRAP_UP_MS=0: until the agent ends it).
 * A number (it is stored as JSON); never sent to pages (`agent.state` then has no `until`).
 */
export const NO_LIMIT = Number.MAX_SAFE_INTEGER;
/** Whether after-call work ending at `until` has a countdown. */
export const hasLimit = (until: number) => until < NO_LIMIT;

export interface AgentFacts extends AgentView {
  /** Connections on other nodes (their node ids): not routable from here, but the agent is online. */
  elsewhere: ReadonlySet<string>;
  awayReason?: string | undefined;
  /** The call whose after-call work is open (a disposition is still due). */
  wrapWacid?: string | undefined;
  /** "More time" was used for this after-call work. */
  wrapExtended?: boolean | undefined;
  /** A page came back during this after-call work and got the whole countdown again (once). */
  wrapResumed?: boolean | undefined;
}

/** The state without `since` (the board stamps when it last changed). */
export type DerivedState = Omit<AgentState, 'since'>;

export function deriveAgentState(a: AgentFacts, now: number): DerivedState {
  const status = ((): AgentStatus => {
    if (!a.connected && a.elsewhere.size === 0) return 'offline';
    if (a.holding) return 'on-call';
    if (a.ringing) return 'ringing';
    if (a.wrapWacid && now < a.wrapUntil) return 'after-call-work';
    return a.presence === 'available' ? 'available' : 'away';
  })();
  const s: DerivedState = { status };
  if (status === 'on-call' && a.holding) s.wacid = a.holding;
  if (status === 'ringing' && a.ringing) s.wacid = a.ringing;
  if (status === 'after-call-work') {
    s.wacid = a.wrapWacid!;
    if (hasLimit(a.wrapUntil)) s.until = a.wrapUntil;
    if (a.wrapExtended) s.extended = true;
  }
  if (status === 'away' && a.awayReason) s.reason = a.awayReason;
  return s;
}

/** Same state (a change of any field is a new state to push; `since` restarts only on a new status). */
export function sameState(x: DerivedState, y: DerivedState): boolean {
  return x.status === y.status && x.reason === y.reason && x.until === y.until && x.wacid === y.wacid && x.extended === y.extended;
}
