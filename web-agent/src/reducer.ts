/**
 * The pages' state as a pure reducer: server frames (validated by shared/protocol.ts) and
 * a few local facts ("this tab is answering") go in, a new immutable state comes out.
 * The DOM and WebRTC code only read this state and run effects; they never decide what a
 * call's state is on their own, so every (re)connect's `welcome` can rebuild the screen.
 */
import { callSeconds, isFinalState, type AgentStateMsg, type CallView, type Presence, type ServerMsg, type User } from '../../shared/protocol.ts';

/** The WebSocket as the user sees it. */
export type Link = 'connecting' | 'online' | 'reconnecting' | 'offline';

/**
 * This tab's part in a call.
 * - none: seen here, not touched here (ringing, or held by another tab)
 * - answering: this tab built an answer and sent `call.answer`; no ack yet
 * - held: the ack came; this tab plays and sends the audio
 * - hangingUp: this tab sent `call.hangup`; the call stays shown until it has ended
 * - declined: declined in this browser; never rings here again unless offered anew
 */
export type Local = 'none' | 'answering' | 'held' | 'hangingUp' | 'declined';

export interface CallEntry {
  view: CallView;
  local: Local;
  /** Local time the current offer arrived (for the countdown's progress bar). */
  offeredAt?: number;
  /** Local time this tab got the ack (the call timer runs from here: no clock skew). */
  heldAt?: number;
  /** Set when the offer was taken away (`call.revoked`); the reason as the server gave it. */
  revoked?: string;
  /** Every ring of this call seen here (supervisors): the agent, once per ring. */
  rang?: string[];
  /** The offer is a transfer (anchor mode): who handed it on, their note, whether it is a consult ("Transferred by A: …"). */
  transferred?: { by: string; note?: string | undefined; consult?: true | undefined };
}

export interface EndedCall {
  wacid: string;
  from: string;
  to: string;
  direction: CallView['direction'];
  agent?: string;
  result: string;
  reason?: string;
  /** The Service's numeric error code of a failed call (138xxx). */
  errorCode?: number;
  /** Seconds, when known. */
  duration?: number;
  /** Local ms. */
  endedAt: number;
  /** The agents it rang (one entry per ring), for a call nobody answered. */
  rang?: string[];
}

export interface MediaItem {
  wacid: string;
  kind: 'recording' | 'transcription';
  url: string;
  at: number;
}

export interface UiError {
  message: string;
  code?: string;
  at: number;
  /** The call it is about: the error goes when that call and its wrap-up are over, or the next call rings. */
  wacid?: string;
}

export interface UiState {
  link: Link;
  me?: User;
  presence: Presence;
  /** Live calls by wacid (ended ones leave this map). */
  calls: Record<string, CallEntry>;
  /** This agent's ended calls in this page's lifetime, newest first. */
  history: EndedCall[];
  /** Every ended call seen (supervisor view), newest first, bounded. */
  ended: EndedCall[];
  /** The call that just ended for this agent; shown until dismissed or the next ring. */
  lastEnded?: EndedCall;
  media: MediaItem[];
  error?: UiError;
  /** Server clock minus local clock, ms, estimated from `ping.t` (deadlines are server time). */
  skewMs: number;
  /** The last `agent.state` the server sent (wrap-up with its end; away with its reason). */
  agent?: Omit<AgentStateMsg, 'type'>;
}

export type UiEvent =
  | { type: 'server'; msg: ServerMsg; now: number }
  | { type: 'link'; link: Link }
  | { type: 'local'; wacid: string; local: Local; now: number }
  | { type: 'error'; message: string; code?: string; now: number; wacid?: string | undefined }
  | { type: 'dismissError' }
  | { type: 'dismissEnded' };

export const initialState: UiState = {
  link: 'connecting',
  presence: 'away',
  calls: {},
  history: [],
  ended: [],
  media: [],
  skewMs: 0,
};

const ENDED_LIMIT = 50;
/** Skew estimates beyond this are a different clock, not skew: ignore them. */
const MAX_SKEW_MS = 10 * 60_000;

/** Over: the state is final (shared/protocol.ts decides), or the server stamped its end. */
export function isOver(view: CallView): boolean {
  return isFinalState(view.state) || view.endedAt !== undefined;
}

export function reduce(state: UiState, ev: UiEvent): UiState {
  switch (ev.type) {
    case 'link':
      return ev.link === state.link ? state : { ...state, link: ev.link };
    case 'error':
      return { ...state, error: { message: ev.message, ...(ev.code ? { code: ev.code } : {}), at: ev.now, ...(ev.wacid ? { wacid: ev.wacid } : {}) } };
    case 'dismissError':
      return state.error ? omit(state, 'error') : state;
    case 'dismissEnded':
      return state.lastEnded ? omit(state, 'lastEnded') : state;
    case 'local': {
      const entry = state.calls[ev.wacid];
      if (!entry) return state;
      const next: CallEntry = { ...entry, local: ev.local };
      if (ev.local === 'held' && entry.heldAt === undefined) next.heldAt = ev.now;
      const after = { ...state, calls: { ...state.calls, [ev.wacid]: next } };
      // Declined here: the agent's list shows it (the server revokes it from other tabs).
      return ev.local === 'declined' && entry.local !== 'declined' ? recordUnanswered(after, entry, 'DECLINED', ev.now) : after;
    }
    case 'server':
      return onServer(state, ev.msg, ev.now);
  }
}

function onServer(state: UiState, msg: ServerMsg, now: number): UiState {
  switch (msg.type) {
    case 'welcome': {
      // The server's view is the truth after every (re)connect: rebuild the call list from
      // it, keeping only this tab's own facts (what it is doing with a call it still lists).
      let next: UiState = { ...state, link: 'online', me: msg.user, presence: msg.presence, calls: {} };
      if (msg.presence === 'available' && next.agent?.status === 'away') next = omit(next, 'agent');
      // The server's own state of the agent (time in state, wrap-up) when it sends one.
      if (msg.agentState) next = { ...next, agent: msg.agentState };
      const calls: Record<string, CallEntry> = {};
      for (const view of msg.calls) {
        const prev = state.calls[view.wacid];
        if (isOver(view)) continue;
        const entry: CallEntry = { view: prev ? { ...prev.view, ...view } : view, local: prev?.local ?? 'none' };
        if (view.state === 'ringing' && view.sdp) entry.offeredAt = prev?.offeredAt ?? now;
        if (prev?.heldAt !== undefined) entry.heldAt = prev.heldAt;
        calls[view.wacid] = entry;
      }
      next = { ...next, calls };
      // A call this tab was answering or holding that the server no longer lists is over:
      // record it so it cannot linger on screen as a ghost.
      for (const [wacid, prev] of Object.entries(state.calls)) {
        if (calls[wacid] || !isMine(state, prev)) continue;
        next = recordEnd(next, prev, { ...prev.view, state: 'ended', reason: prev.view.reason ?? 'The server no longer lists this call.' }, now);
      }
      return next;
    }
    case 'call.offered': {
      const prev = state.calls[msg.wacid];
      // The offer's `transfer` (who handed it on, the note) is the entry's; the view's `transfer` is the call's state.
      const { type: _t, transfer, ...fields } = msg;
      const keep = prev && (prev.local === 'answering' || prev.local === 'held' || prev.local === 'hangingUp');
      const entry: CallEntry = {
        view: { ...prev?.view, ...fields, state: keep ? prev.view.state : 'ringing' },
        local: keep ? prev.local : 'none',
        offeredAt: prev && !prev.revoked && prev.offeredAt !== undefined ? prev.offeredAt : now,
      };
      if (prev?.heldAt !== undefined) entry.heldAt = prev.heldAt;
      const handedOn = transfer ?? (keep ? prev.transferred : undefined);
      if (handedOn) entry.transferred = handedOn;
      const next = { ...state, calls: { ...state.calls, [msg.wacid]: entry } };
      if (keep) return next;
      // A new call rings: nothing of the last one stays (its ending, an error about it).
      const fresh = omit(next, 'lastEnded');
      return fresh.error?.wacid !== undefined && fresh.error.wacid !== msg.wacid ? omit(fresh, 'error') : fresh;
    }
    case 'call.revoked': {
      const prev = state.calls[msg.wacid];
      if (!prev || prev.local === 'held' || prev.local === 'hangingUp') return state;
      const { sdp: _sdp, ...view } = prev.view;
      const entry: CallEntry = { ...prev, view, revoked: msg.reason, local: prev.local === 'declined' ? 'declined' : 'none' };
      const next = { ...state, calls: { ...state.calls, [msg.wacid]: entry } };
      // An offer that rang here and went unanswered (or was declined in another tab) is the
      // agent's to see in the list; one taken by someone else is not.
      const result = UNANSWERED[msg.reason];
      return result && prev.view.sdp !== undefined ? recordUnanswered(next, prev, result, now) : next;
    }
    case 'call.state': {
      const { type: _t, ...fields } = msg;
      const prev = state.calls[msg.wacid];
      // Anchor mode's who-is-where fields are whole in every frame: absent means over (and
      // no `agent`: nobody holds it, e.g. a cold transfer on its way to the next agent).
      const { transfer: _tr, consult: _co, conference: _cf, ...kept } = prev?.view ?? fields;
      if (fields.media === 'anchor' && fields.agent === undefined) delete kept.agent;
      const merged: CallView = prev ? { ...kept, ...fields } : fields;
      // A transfer or consult ringing this agent: the call itself is active (the caller hears
      // music), and the offer still rings here until answered, declined or taken back.
      const me = state.me?.name;
      const stillRings =
        prev?.transferred !== undefined && prev.local === 'none' && !prev.revoked && prev.view.state === 'ringing' && merged.state === 'active' && me !== undefined &&
        (merged.transfer?.ringing === me || (merged.consult?.target === me && merged.consult.phase === 'ringing'));
      const view: CallView = stillRings ? { ...merged, state: 'ringing' } : merged;
      // A new ring (another agent, or the same one again): counted, so a missed call can say whom it rang.
      const newRing = !stillRings && view.state === 'ringing' && view.agent !== undefined && (prev?.view.state !== 'ringing' || prev.view.agent !== view.agent);
      const rang = newRing ? [...(prev?.rang ?? []), view.agent!] : prev?.rang;
      // Anchor mode: this tab's leg is off the call while the call goes on (transferred on, a
      // consult cancelled, a conference left): the call is no longer this tab's (its session ends).
      if (prev && (prev.local === 'held' || prev.local === 'hangingUp') && view.media === 'anchor' && view.state === 'active' && state.me && !onTheCall(view, state.me.name)) {
        const { sdp: _sdp, ...rest } = view;
        return { ...state, calls: { ...state.calls, [msg.wacid]: { ...prev, view: rest, local: 'none' } } };
      }
      if (isOver(view)) {
        const entry = { ...(prev ?? { view, local: 'none' as const }), ...(rang ? { rang } : {}) };
        const calls = { ...state.calls };
        delete calls[msg.wacid];
        return recordEnd({ ...state, calls }, entry, view, now);
      }
      return { ...state, calls: { ...state.calls, [msg.wacid]: { ...(prev ?? { local: 'none' }), view, ...(rang ? { rang } : {}) } } };
    }
    case 'media.available': {
      if (state.media.some((m) => m.wacid === msg.wacid && m.kind === msg.kind)) return state;
      return { ...state, media: [{ wacid: msg.wacid, kind: msg.kind, url: msg.url, at: now }, ...state.media] };
    }
    case 'presence': {
      if (msg.presence === state.presence) return state;
      // Available again: an away reason (or a stale wrap-up) no longer applies.
      const next = { ...state, presence: msg.presence };
      return msg.presence === 'available' && next.agent?.status === 'away' ? omit(next, 'agent') : next;
    }
    case 'agent.state': {
      const { type: _t, ...agent } = msg;
      const next = { ...state, agent };
      // The call and its wrap-up are over: an error about that call is old news.
      const over = agent.status === 'available' || agent.status === 'away';
      return over && next.error?.wacid !== undefined && !tabCall(next) ? omit(next, 'error') : next;
    }
    case 'ping': {
      const skew = msg.t - now;
      return Math.abs(skew) <= MAX_SKEW_MS ? { ...state, skewMs: skew } : state;
    }
    case 'call.remoteAnswer':
    // Anchor mode (MEDIA_MODE=anchor): the pages do not join media rooms yet; program agents do.
    case 'call.legOffer':
    case 'ack':
    case 'error':
      // Answers to this tab's requests: the controller that sent them handles these.
      return state;
    case 'permission.updated':
    case 'callback.updated':
    case 'message.updated':
    case 'agents.state':
    case 'wallboard': // the supervisor console's wallboard keeps its own figures
      // Shown by the callback, customer and supervisor panels, which keep their own lists.
      return state;
    case 'monitor.started':
    case 'monitor.mode':
    case 'monitor.ended':
    case 'monitor.signal':
      // Monitoring media lives in this tab's monitor controller (src/monitor/), not in the call list.
      return state;
    case 'ice.servers':
      // STUN/TURN credentials go to the peer connections (src/ice.ts, set by the connection), not the screen.
      return state;
  }
}

/** Does this call concern this agent (answered here or held by this agent anywhere)? */
function isMine(state: UiState, entry: CallEntry): boolean {
  if (entry.local === 'answering' || entry.local === 'held' || entry.local === 'hangingUp') return true;
  return state.me !== undefined && entry.view.agent === state.me.name;
}

/** `call.revoked` reasons that mean "it rang here and nobody here took it" → the list's result. */
const UNANSWERED: Record<string, string | undefined> = { 'not answered': 'MISSED', declined: 'DECLINED', 'caller hung up': 'MISSED' };

/** A call that rang here and was not taken here: into this agent's list (once), not as lastEnded. */
function recordUnanswered(state: UiState, entry: CallEntry, result: string, now: number): UiState {
  if (state.history.some((h) => h.wacid === entry.view.wacid)) return state;
  const v = entry.view;
  const item: EndedCall = { wacid: v.wacid, from: v.from, to: v.to, direction: v.direction, result, endedAt: now };
  return { ...state, history: [item, ...state.history] };
}

function recordEnd(state: UiState, entry: CallEntry, view: CallView, now: number): UiState {
  // The server's figures first (its duration, else endedAt − startedAt); the tab's own
  // timer only for an end the server never reported (it dropped the call from `welcome`).
  const duration =
    view.duration ??
    (view.startedAt !== undefined && view.endedAt !== undefined
      ? callSeconds(view, view.endedAt)
      : entry.heldAt !== undefined
        ? Math.max(0, Math.round((now - entry.heldAt) / 1000))
        : undefined);
  const ended: EndedCall = {
    wacid: view.wacid,
    from: view.from,
    to: view.to,
    direction: view.direction,
    // A call that rang agents and was answered by none was missed, whatever the Service calls its end (REJECTED at the window's close).
    result: view.startedAt === undefined && entry.rang?.length ? 'MISSED' : (view.result ?? (entry.local === 'held' || entry.heldAt !== undefined ? 'COMPLETED' : entry.view.state === 'ringing' ? 'MISSED' : 'ENDED')),
    ...(view.startedAt === undefined && entry.rang?.length ? { rang: entry.rang } : {}),
    endedAt: now,
    ...(view.agent !== undefined ? { agent: view.agent } : {}),
    ...(view.reason !== undefined ? { reason: view.reason } : {}),
    ...(view.errorCode !== undefined ? { errorCode: view.errorCode } : {}),
    ...(duration !== undefined ? { duration } : {}),
  };
  let next: UiState = {
    ...state,
    ended: [ended, ...state.ended.filter((e) => e.wacid !== ended.wacid)].slice(0, ENDED_LIMIT),
  };
  // This agent's history: calls it held, and calls that rang here until the caller gave up
  // (a missed call is worth seeing). An offer taken by another agent is not ours.
  const rangHere = entry.view.sdp !== undefined && !entry.revoked && entry.local === 'none';
  if (isMine(state, { ...entry, view }) || rangHere) {
    next = {
      ...next,
      history: [ended, ...next.history.filter((e) => e.wacid !== ended.wacid)],
      lastEnded: ended,
    };
  }
  return next;
}

function omit<T extends object, K extends keyof T>(obj: T, key: K): T {
  const copy = { ...obj };
  delete copy[key];
  return copy;
}

// ---- selectors ---------------------------------------------------------------------------

/**
 * Anchor mode: whether `name` is on the call now: holds it, is the transfer's target ringing or
 * joining, the consult's target, or one of the conference's other agents.
 */
export function onTheCall(view: Pick<CallView, 'agent' | 'transfer' | 'consult' | 'conference'>, name: string): boolean {
  return view.agent === name || view.transfer?.ringing === name || view.consult?.target === name || (view.conference ?? []).includes(name);
}

/** Everyone on the call (anchor mode), the holder first: the agents whose legs are in the call's room or its consult. */
export function callLegs(view: Pick<CallView, 'agent' | 'consult' | 'conference'>): string[] {
  const out = [...(view.agent !== undefined ? [view.agent] : []), ...(view.conference ?? [])];
  if (view.consult && view.consult.phase !== 'ringing' && !out.includes(view.consult.target)) out.push(view.consult.target);
  return out;
}

/** Offers ringing in this tab now: offered to this agent, not revoked, declined or expired. */
export function ringingCalls(state: UiState, now: number): CallEntry[] {
  const serverNow = now + state.skewMs;
  return Object.values(state.calls)
    .filter(
      (c) =>
        c.view.state === 'ringing' &&
        c.view.sdp !== undefined &&
        !c.revoked &&
        c.local === 'none' &&
        (ringEnd(c.view) ?? Infinity) > serverNow,
    )
    .sort((a, b) => (ringEnd(a.view) ?? Infinity) - (ringEnd(b.view) ?? Infinity));
}

/**
 * When an offer stops ringing here (server clock): its ring timeout (`ringUntil`,
 * RING_TIMEOUT_MS), never after the accept window (`deadline`); the agent's countdown.
 */
export function ringEnd(view: Pick<CallView, 'ringUntil' | 'deadline' | 'startedAt'>): number | undefined {
  // A call already accepted (a transfer or a consult ringing this agent) has no accept window
  // left to end the ring: only its ring timeout. Bounding it by the old deadline hid every
  // transfer ring that came more than the accept window after the caller's connect.
  const deadline = view.startedAt === undefined ? view.deadline : undefined;
  if (view.ringUntil !== undefined && deadline !== undefined) return Math.min(view.ringUntil, deadline);
  return view.ringUntil ?? deadline;
}

/** The call this tab is answering, holding or hanging up, if any. */
export function tabCall(state: UiState): CallEntry | undefined {
  return Object.values(state.calls).find((c) => c.local === 'answering' || c.local === 'held' || c.local === 'hangingUp');
}

/** Calls this agent holds in another tab or window (no audio here). */
export function callsElsewhere(state: UiState): CallEntry[] {
  const me = state.me?.name;
  if (me === undefined) return [];
  return Object.values(state.calls).filter((c) => c.local === 'none' && c.view.agent === me && c.view.state !== 'ringing');
}

/**
 * What the agent is doing, for the presence line: on a call (here or in another tab), in
 * wrap-up until `until` (server time), or the presence the agent chose (away may carry the
 * server's reason).
 */
export type AgentShown =
  | { status: 'on-call' }
  | { status: 'wrap-up'; until: number; secondsLeft: number }
  | { status: 'available' }
  | { status: 'away'; reason?: string };

export function agentShown(state: UiState, now: number): AgentShown {
  if (tabCall(state) || callsElsewhere(state).length > 0) return { status: 'on-call' };
  const serverNow = now + state.skewMs;
  const a = state.agent;
  if (state.presence === 'available' && a?.status === 'after-call-work' && a.until !== undefined && a.until > serverNow) {
    return { status: 'wrap-up', until: a.until, secondsLeft: Math.ceil((a.until - serverNow) / 1000) };
  }
  if (state.presence === 'available') return { status: 'available' };
  return a?.status === 'away' && a.reason ? { status: 'away', reason: a.reason } : { status: 'away' };
}

/** Live calls for a supervisor's list, oldest first. */
export function liveCalls(state: UiState): CallView[] {
  return Object.values(state.calls)
    .map((c) => c.view)
    .sort((a, b) => (a.startedAt ?? a.deadline ?? 0) - (b.startedAt ?? b.deadline ?? 0));
}
