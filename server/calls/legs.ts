/**
 * Anchor mode: who talked with the caller, and how long (a call's legs). Pure.
 *
 * A transfer, a consult or a conference changes who is on the call; the call record keeps a
 * tally per agent (`Call.legTimes`) so that every observation of the call (history's call
 * fact) carries all of it: history takes the fact of the higher version, whatever the order.
 *
 * Who talks with the caller (`onCall`): the holder and the conference's other agents, once
 * the call was answered (`startedAt`) and until it ended; nobody while a cold transfer rings
 * or joins its target (the caller hears music), nobody while a handed-off call waits for its
 * next agent, nobody in voicemail. A warm transfer's consult keeps the holder on the call (it
 * is their call, the caller on music as on a hold); its target joins the caller only on
 * `complete` (or `conference`): a cancelled consult adds no leg.
 *
 * Hold: what the call's `holdMs` grew by in a transition is the holder's (only the holder
 * holds). Talk of an agent runs from when they came on the call to when they left it, or to
 * the call's end (`endedAt`), holds included, as the call's `talkMs`: one agent alone is one
 * leg with the call's talk and hold.
 *
 * The tally is written only once it differs from that one leg (lazily): a call one agent
 * held from answer to end carries none, and `legsOf` gives its one leg.
 */
import type { CallStateName } from '../../shared/protocol.ts';

/** What of a call record the legs read (lifecycle.ts's `Call` has these; this file does not import it: no cycle). */
export interface LegCall {
  media?: 'anchor';
  state: CallStateName;
  agent?: string;
  startedAt?: number;
  endedAt?: number;
  holdMs?: number;
  handoffUntil?: number;
  voicemail?: unknown;
  transfer?: unknown;
  conference?: ReadonlyArray<{ agent: string }>;
  legTimes?: LegTime[];
}

/** One agent's part of a call, as the record keeps it. */
export interface LegTime {
  agent: string;
  /** Theirs was the answer that connected the caller (the first leg); not set for those who came by a transfer, a consult or a handoff. */
  answered?: true;
  /** Talk time of the agent's finished stretches on the call. */
  talkMs: number;
  holdMs: number;
  /** On the call now: since when (epoch ms). */
  since?: number;
}

/** A leg as history records it: the agent's talk (holds included) and hold, whether they answered. */
export interface Leg {
  agent: string;
  talkMs: number;
  holdMs: number;
  answered: boolean;
}

/** The agents talking with the caller in this record (anchor mode); none in direct mode. */
export function onCall(c: LegCall): string[] {
  if (c.media !== 'anchor' || c.startedAt === undefined || c.state === 'ended' || c.voicemail !== undefined || c.handoffUntil !== undefined) return [];
  const members = (c.conference ?? []).map((m) => m.agent);
  if (c.transfer !== undefined || c.agent === undefined) return members;
  return [c.agent, ...members.filter((m) => m !== c.agent)];
}

/** The one leg of a call nobody else joined: its holder from the answer on. */
function implicit(c: LegCall, holdMs: number): LegTime[] | undefined {
  if (c.agent === undefined || c.startedAt === undefined) return undefined;
  return [{ agent: c.agent, answered: true, talkMs: 0, holdMs, since: c.startedAt }];
}

/**
 * The record after a transition with its tally brought up to date (`before` → `after` at
 * `at`); `after` itself when the tally did not change (a transition that changed nothing
 * stays the same object).
 */
export function trackLegs<C extends LegCall>(before: C | null, after: C | null, at: number): C | null {
  if (after === null || after === before || after.media !== 'anchor' || after.startedAt === undefined) return after;
  const on = onCall(after);
  let tally = after.legTimes;
  if (tally === undefined) {
    // Still the one leg? Its holder was `before`'s (or answers now), alone on the call.
    const first = before?.startedAt !== undefined ? before.agent : after.agent;
    if (first === undefined) return after;
    if (after.state === 'ended' || (on.length === 1 && on[0] === first)) return after;
    const base = implicit({ ...after, agent: first }, before?.holdMs ?? 0);
    if (base === undefined) return after;
    tally = base;
  }
  const next = tally.map((l) => ({ ...l }));
  const entry = (agent: string) => next.find((l) => l.agent === agent);
  // Hold: what the holder put on hold since `before`.
  const held = (after.holdMs ?? 0) - (before?.holdMs ?? 0);
  const holder = before?.agent ?? after.agent;
  if (held > 0 && holder !== undefined) {
    const l = entry(holder);
    if (l) l.holdMs += held;
  }
  const end = after.state === 'ended' ? (after.endedAt ?? at) : at;
  for (const l of next) {
    if (l.since !== undefined && !on.includes(l.agent)) {
      l.talkMs += Math.max(0, end - l.since);
      delete l.since;
    }
  }
  for (const agent of on) {
    const l = entry(agent);
    if (l === undefined) next.push({ agent, talkMs: 0, holdMs: 0, since: at });
    else if (l.since === undefined) l.since = at;
  }
  if (after.legTimes !== undefined && JSON.stringify(next) === JSON.stringify(after.legTimes)) return after;
  return { ...after, legTimes: next };
}

/**
 * The call's legs (anchor mode, answered by an agent): one per agent who talked with the
 * caller, in the order they came on. An agent still on the call counts their finished
 * stretches only (the whole once it ended). Undefined in direct mode, for a call no agent
 * answered, and for voicemail.
 */
export function legsOf(c: LegCall): Leg[] | undefined {
  if (c.media !== 'anchor' || c.startedAt === undefined || c.voicemail !== undefined) return undefined;
  const tally = c.legTimes ?? implicit(c, c.holdMs ?? 0);
  if (tally === undefined || tally.length === 0) return undefined;
  const end = c.state === 'ended' ? c.endedAt : undefined;
  return tally.map((l) => ({
    agent: l.agent,
    talkMs: l.talkMs + (l.since !== undefined && end !== undefined ? Math.max(0, end - l.since) : 0),
    holdMs: l.holdMs,
    answered: l.answered === true,
  }));
}
