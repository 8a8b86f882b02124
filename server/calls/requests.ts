/**
 * Client requests: role checks, then each request becomes a lifecycle event (answer,
 * decline, hangup, dial) or a board change (presence); plus agents' connections coming and
 * going (a disconnected agent keeps its ringing offer for a grace, then the call moves on).
 * Refusals go back to the requesting connection as `error` frames with the request's id.
 */
import { WRAP_TYPING_PAUSE_MS, type ClientMsg, type ErrorParams, type Presence, type ServerMsg, type User } from '../../shared/protocol.ts';
import { hasLimit } from './agentState.ts';
import { clip, LIMITS } from '../../shared/limits.ts';
import type { Logger } from '../log/logger.ts';
import type { Conn, Hub } from '../push/hub.ts';
import { OutcomeUnknownError, type ServiceError } from '../service/errors.ts';
import { isStoreDown, type CallRecord, type Store } from '../store/store.ts';
import type { AnchorPort, ServiceCalls } from './ports.ts';
import { fromRecord } from './record.ts';
import { refusal } from './serviceRequests.ts';
import type { Call, CallEvent } from './lifecycle.ts';
import type { Router } from './router.ts';

const clipReason = (s: string) => clip(s, LIMITS.reason);

/** A dialed call's first write: tried this often, this far apart, before the call is ended at the Service. */
const DIAL_TRACK_ATTEMPTS = 3;
const DIAL_TRACK_RETRY_MS = 300;
/** A ringing call whose agent has no connection moves on this long before its ring timeout. */
const RING_END_MARGIN_MS = 500;

export type CallRequest = Exclude<ClientMsg, { type: 'presence.set' } | { type: 'pong' }>;

export interface RequestsOptions {
  store: Store;
  calls: ServiceCalls;
  hub: Hub;
  log: Logger;
  now: () => number;
  router: Router;
  apply: (event: CallEvent, known?: CallRecord | null) => Promise<Call | null>;
  /** Work nobody awaits (a timer's): its failure is logged (`Applier.background`), never unhandled. */
  background: (what: string, wacid: string, p: Promise<unknown>) => void;
  /** How long a disconnected agent keeps its ringing offer (reconnect = offer replayed). */
  graceMs: number;
  /** How long a lost socket holding a call waits for its page (same `tab`) to connect again before the call is ended. */
  pageLostGraceMs: number;
  /**
   * Known calling permissions (`server/permissions/`): a `call.dial` the permission budget
   * refuses (rejected / expired / revoked permission: `NO_PERMISSION`; 5 connected calls in
   * 24 h: `CALL_LIMIT`) is refused with that code and words (nothing sent).
   */
  permissions?: { dialRefusal(from: string, user: string): Promise<{ code: string; message: string; params?: ErrorParams } | undefined> } | undefined;
  /**
   * The Service's phone id of a business number (E.164), to terminate a dialed call that
   * could not be tracked (the store down) before its connect event brought the id.
   */
  phoneIdOf?: ((businessNumber: string) => Promise<string | undefined>) | undefined;
  /** Which business numbers each agent may dial from (QUEUES_FILE); without it: all. */
  numberScope?: { allows(user: User, businessNumber: string): Promise<boolean> } | undefined;
  /** `DISPOSITIONS` and `AWAY_REASONS` (config): what `call.wrapup` and `presence.set` may name. */
  dispositions: readonly string[];
  awayReasons: readonly string[];
  /** `WRAP_UP_MS`: how much "More time" adds. */
  wrapUpMs: number | 'off';
  /** A disposition was given (or `Not set` recorded): history, and the contact note when configured. */
  onWrapup?: ((w: Wrapup) => void) | undefined;
  /** MEDIA_MODE=anchor: the agent's answers to its leg offers (`call.legAnswer`) go to it. */
  anchor?: AnchorPort | undefined;
}

/** One wrap-up: what `call.wrapup` saves (the call's customer and number for the contact note). */
export interface Wrapup {
  wacid: string;
  agent: string;
  disposition: string;
  notes?: string | undefined;
  at: number;
  /** The customer (E.164 or BSUID) and the business number, when the call record was at hand. */
  customer?: string | undefined;
  businessNumber?: string | undefined;
}

/** What an agent typed so far in after-call work (`call.wrapupDraft`), kept by wacid. */
export interface WrapDraft {
  agent: string;
  disposition?: string | undefined;
  notes: string;
  at: number;
}
export const wrapDraftKey = (wacid: string) => `wrapdraft:${wacid}`;
/** A draft outlives any after-call work (the `Not set` record and a reload both read it). */
const WRAP_DRAFT_TTL_MS = 24 * 3600 * 1000;

/** The agent's draft of `wacid`'s wrap-up, when the store has one of this agent's. */
export async function readWrapDraft(store: Pick<Store, 'get'>, wacid: string, agent: string): Promise<WrapDraft | undefined> {
  const raw = await store.get(wrapDraftKey(wacid)).catch(() => null);
  if (raw === null) return undefined;
  try {
    const d = JSON.parse(raw) as WrapDraft;
    return d.agent === agent && typeof d.notes === 'string' ? d : undefined;
  } catch {
    return undefined;
  }
}

export class Requests {
  private readonly graceTimers = new Map<string, NodeJS.Timeout>();
  /** Each agent's last draft (this node): drafts close together are typing, and the countdown waits. */
  private readonly lastDraft = new Map<string, { wacid: string; at: number }>();
  private readonly lostTimers = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(private readonly o: RequestsOptions) {}

  close(): void {
    this.closed = true;
    for (const t of this.graceTimers.values()) clearTimeout(t);
    this.graceTimers.clear();
    for (const t of this.lostTimers) clearTimeout(t);
    this.lostTimers.clear();
  }

  /**
   * A socket closed; if it holds the user's call (answered or dialed there: the audio is in
   * that page, direct mode), the call is ended — at once when the page left, else after
   * `pageLostGraceMs` unless the page attached again meanwhile (the lifecycle's `connLost`
   * compares the record's connection, so a reconnect that attached, on any node, and another
   * tab of the same user, change nothing). The call record is in the store: any node applies it.
   */
  holderClosed(conn: Conn, left: boolean): void {
    const wacid = this.o.router.board.view(conn.user.name).holding;
    if (!wacid || this.closed) return;
    const lose = () => this.o.background('connLost', wacid, this.o.apply({ type: 'connLost', wacid, at: this.o.now(), agent: conn.user.name, conn: conn.id }));
    if (left) return lose();
    const t = setTimeout(() => {
      this.lostTimers.delete(t);
      if (!this.closed) lose();
    }, this.o.pageLostGraceMs);
    t.unref();
    this.lostTimers.add(t);
  }

  agentConnected(conn: Conn): void {
    this.reattach(conn);
    if (!conn.user.roles.includes('agent')) return;
    const g = this.graceTimers.get(conn.user.name);
    if (g) clearTimeout(g);
    this.graceTimers.delete(conn.user.name);
    // The first connection here: the other nodes count the agent online (state pushed).
    if (this.o.router.board.connect(conn.user.name) === 1) this.o.router.connection(conn.user.name, true);
    this.o.router.routeQueuedSoon();
  }

  /** The page holding the user's call reconnected (same `tab`): the call is held on this socket now. */
  private reattach(conn: Conn): void {
    const wacid = this.o.router.board.view(conn.user.name).holding;
    if (!conn.tab || !wacid || this.closed) return;
    this.o.background('attach', wacid, this.o.apply({ type: 'attach', wacid, at: this.o.now(), agent: conn.user.name, conn: conn.id, tab: conn.tab }));
  }

  /** The last connection of an agent went: after the grace, its ringing call moves on. */
  agentDisconnected(conn: Conn): void {
    if (!conn.user.roles.includes('agent')) return;
    const name = conn.user.name;
    const board = this.o.router.board;
    if (board.disconnect(name) > 0 || this.closed) return;
    const t = setTimeout(() => {
      this.graceTimers.delete(name);
      if (!board.gone(name)) return;
      this.o.router.connection(name, false);
      const ringing = board.view(name).ringing;
      // A timer's work: the store timing out here must not end the process.
      if (ringing) this.o.background('agentGone', ringing, this.o.apply({ type: 'agentGone', wacid: ringing, at: this.o.now(), agent: name }));
    }, this.o.graceMs);
    t.unref();
    this.graceTimers.set(name, t);
  }

  /**
   * A call rings `name` but no connection of the agent is known (this node just started: the
   * socket that showed the offer died with the old process). If the agent connects here or
   * on another node within the reconnect grace, `welcome` replays the offer; otherwise the
   * call moves on (`agentGone`: queued again, offered to the next agent, the agent not set
   * away). It moves on before its ring timeout would (a missed call sets the agent away, and
   * nobody could answer it on a dead node).
   */
  ringingWithoutConnection(name: string, wacid: string, ringUntil: number | undefined): void {
    const board = this.o.router.board;
    if (this.closed || board.view(name).connected || this.graceTimers.has(name)) return;
    const wait = Math.max(0, Math.min(this.o.graceMs, (ringUntil ?? Infinity) - this.o.now() - RING_END_MARGIN_MS));
    const t = setTimeout(() => {
      this.graceTimers.delete(name);
      if (!board.gone(name) || board.facts(name).elsewhere.size > 0 || board.view(name).ringing !== wacid) return;
      this.o.background('agentGone', wacid, this.o.apply({ type: 'agentGone', wacid, at: this.o.now(), agent: name }));
    }, wait);
    t.unref();
    this.graceTimers.set(name, t);
  }

  setPresence(user: User, status: Presence, conn: Conn, reqId: string, reason?: string): void {
    const { hub } = this.o;
    if (!user.roles.includes('agent')) {
      hub.toConn(conn.id, { type: 'error', id: reqId, code: 'FORBIDDEN', message: 'only agents have a presence' });
      return;
    }
    if (reason !== undefined && (status !== 'away' || !this.o.awayReasons.includes(reason))) {
      const message = status !== 'away' ? 'reason: only away takes a reason' : `reason: must be one of ${this.o.awayReasons.join(', ')}`;
      hub.toConn(conn.id, { type: 'error', id: reqId, code: 'BAD_REQUEST', message });
      return;
    }
    // This node's board, and every other node's (the agent's other tabs may be there).
    this.o.router.presence(user.name, status, reason);
    hub.toConn(conn.id, { type: 'ack', id: reqId, presence: status } as ServerMsg);
    // Every tab of this agent shows the same presence.
    hub.toUser(user.name, { type: 'presence', presence: status }, conn.id);
  }

  /** A call request from a client (answer, decline, hangup, dial). */
  async request(conn: Conn, msg: CallRequest): Promise<void> {
    const user = conn.user;
    const fail = (code: string, message: string, params?: ErrorParams) => this.o.hub.toConn(conn.id, { type: 'error', id: msg.id, code, message, ...(params ? { params } : {}) });
    const at = this.o.now();
    switch (msg.type) {
      case 'call.answer':
      case 'call.decline':
      case 'call.hangup': {
        if (!user.roles.includes('agent')) return fail('FORBIDDEN', 'only agents take calls');
        // The record read here is the one the event applies to (no second read).
        const rec = await this.o.store.getCall(msg.wacid);
        if (!rec) return fail('NOT_FOUND', 'no such call');
        const common = { wacid: msg.wacid, at, agent: user.name, conn: conn.id, reqId: msg.id };
        const holding = this.o.router.board.view(user.name).holding;
        if (msg.type === 'call.answer' && holding && holding !== msg.wacid) {
          // One conversation per agent: a late answer to an earlier offer must not take a second call.
          return fail('CONFLICT', 'you are already on another call');
        }
        if (msg.type === 'call.answer') {
          // Direct mode: the page's answer to the caller's offer is the business SDP. Anchor mode: none (Janus answers).
          if (msg.sdp === undefined && fromRecord(rec).media !== 'anchor') return fail('BAD_REQUEST', 'sdp: required, the complete SDP answer to the offer');
          await this.o.apply({ type: 'answer', ...common, ...(conn.tab ? { tab: conn.tab } : {}), sdp: msg.sdp ?? '' }, rec);
        }
        else await this.o.apply({ type: msg.type === 'call.decline' ? 'decline' : 'hangup', ...common }, rec);
        return;
      }
      case 'call.hold':
      case 'call.resume': {
        if (!user.roles.includes('agent')) return fail('FORBIDDEN', 'only agents take calls');
        const rec = await this.o.store.getCall(msg.wacid);
        if (!rec) return fail('NOT_FOUND', 'no such call');
        await this.o.apply({ type: msg.type === 'call.hold' ? 'hold' : 'resume', wacid: msg.wacid, at, agent: user.name, conn: conn.id, reqId: msg.id }, rec);
        return;
      }
      case 'call.path': {
        // The holder's page (an agent's call, or a supervisor's call back): the lifecycle checks who holds it.
        const rec = await this.o.store.getCall(msg.wacid);
        if (!rec) return fail('NOT_FOUND', 'no such call');
        await this.o.apply({ type: 'path', wacid: msg.wacid, at, agent: user.name, conn: conn.id, reqId: msg.id, path: msg.path }, rec);
        return;
      }
      case 'call.legAnswer':
        return this.legAnswer(conn, msg, fail);
      case 'call.transfer': {
        if (!user.roles.includes('agent')) return fail('FORBIDDEN', 'only agents take calls');
        const rec = await this.o.store.getCall(msg.wacid);
        if (!rec) return fail('NOT_FOUND', 'no such call');
        if (fromRecord(rec).media !== 'anchor') return fail('CONFLICT', 'transfer is not available: it needs the media anchor (MEDIA_MODE=anchor); in direct mode the caller’s audio ends in your page');
        const common = { wacid: msg.wacid, at, agent: user.name, conn: conn.id, reqId: msg.id };
        if (msg.action !== undefined) return void (await this.o.apply({ type: 'transferAction', ...common, action: msg.action }, rec));
        const to = msg.to!;
        if ('agent' in to && to.agent !== user.name) {
          const t = this.o.router.transferable(to.agent);
          if (!t.ok) return fail('CONFLICT', `to.agent: ${t.why}`);
        }
        if ('queue' in to && !this.o.router.hasQueue(to.queue)) return fail('BAD_REQUEST', `to.queue: no queue ${JSON.stringify(to.queue)} in QUEUES_FILE`);
        await this.o.apply({ type: 'transfer', ...common, to, mode: msg.mode ?? 'cold', ...(msg.note ? { note: msg.note } : {}) }, rec);
        return;
      }
      case 'transfer.targets': {
        if (!user.roles.includes('agent')) return fail('FORBIDDEN', 'only agents transfer calls');
        const targets = await this.o.router.transferTargets(user.name, msg.wacid);
        this.o.hub.toConn(conn.id, { type: 'ack', id: msg.id, ...targets } as ServerMsg);
        return;
      }
      case 'call.rejoin': {
        if (!user.roles.includes('agent')) return fail('FORBIDDEN', 'only agents take calls');
        const rec = await this.o.store.getCall(msg.wacid);
        if (!rec) return fail('NOT_FOUND', 'no such call');
        await this.o.apply({ type: 'rejoin', wacid: msg.wacid, at, agent: user.name, conn: conn.id, ...(conn.tab ? { tab: conn.tab } : {}), reqId: msg.id }, rec);
        return;
      }
      case 'call.wrapup':
        return this.wrapup(conn, msg, fail);
      case 'call.wrapupDraft': {
        if (!user.roles.includes('agent')) return fail('FORBIDDEN', 'only agents do after-call work');
        const f = this.o.router.board.facts(user.name);
        if (f.wrapWacid !== msg.wacid || f.wrapUntil <= at) return fail('CONFLICT', 'you are not in after-call work for this call');
        const draft: WrapDraft = { agent: user.name, notes: msg.notes, ...(msg.disposition ? { disposition: msg.disposition } : {}), at };
        await this.o.store.set(wrapDraftKey(msg.wacid), JSON.stringify(draft), WRAP_DRAFT_TTL_MS);
        // Typing: the time since the previous draft (when it came less than a pause ago) is not counted.
        const last = this.lastDraft.get(user.name);
        this.lastDraft.set(user.name, { wacid: msg.wacid, at });
        let until = f.wrapUntil;
        if (last?.wacid === msg.wacid && at - last.at < WRAP_TYPING_PAUSE_MS && at > last.at && hasLimit(until)) {
          until += at - last.at;
          this.o.router.wrapExtend(user.name, msg.wacid, until, 'typing');
        }
        this.o.hub.toConn(conn.id, { type: 'ack', id: msg.id, ...(hasLimit(until) ? { until } : {}) } as ServerMsg);
        return;
      }
      case 'agent.moreTime': {
        if (!user.roles.includes('agent')) return fail('FORBIDDEN', 'only agents do after-call work');
        const f = this.o.router.board.facts(user.name);
        if (!f.wrapWacid || f.wrapUntil <= at) return fail('CONFLICT', 'you are not in after-call work');
        if (!hasLimit(f.wrapUntil)) return fail('CONFLICT', 'after-call work has no time limit: it lasts until you end it');
        if (f.wrapExtended) return fail('CONFLICT', 'more time was already given once for this call');
        const until = f.wrapUntil + (typeof this.o.wrapUpMs === 'number' ? this.o.wrapUpMs : 0);
        this.o.router.wrapExtend(user.name, f.wrapWacid, until);
        this.o.hub.toConn(conn.id, { type: 'ack', id: msg.id, until } as ServerMsg);
        return;
      }
      case 'call.dial':
        return this.dial(conn, msg, fail);
    }
  }

  /**
   * Anchor mode: the answer to the agent's leg offer, from the connection holding the call;
   * once Janus took it the leg is ready (`legReady`: the accept goes to the Service).
   */
  private async legAnswer(conn: Conn, msg: Extract<CallRequest, { type: 'call.legAnswer' }>, fail: (code: string, message: string) => void): Promise<void> {
    const rec = await this.o.store.getCall(msg.wacid);
    if (!rec) return fail('NOT_FOUND', 'no such call');
    const call = fromRecord(rec);
    if (call.media !== 'anchor' || !this.o.anchor) return fail('CONFLICT', 'this call has no media room');
    // The holder's leg, or a warm transfer's target joining the consult room.
    const consulting = call.consult?.target === conn.user.name && call.consult.conn === conn.id;
    if (!consulting && (call.agent !== conn.user.name || call.conn !== conn.id)) return fail('FORBIDDEN', 'you do not hold this call on this connection');
    if (call.state !== 'answering' && call.state !== 'active') return fail('CONFLICT', `the call is ${call.state}`);
    try {
      await this.o.anchor.agentAnswer(msg.wacid, msg.sdp, conn.user.name);
    } catch (err) {
      const reason = clipReason((err as Error).message);
      await this.o.apply({ type: 'legFailed', wacid: msg.wacid, at: this.o.now(), agent: conn.user.name, reason });
      return fail('BAD_REQUEST', `sdp: the media server refused the answer (${reason})`);
    }
    this.o.hub.toConn(conn.id, { type: 'ack', id: msg.id });
    await this.o.apply({ type: 'legReady', wacid: msg.wacid, at: this.o.now(), agent: conn.user.name, conn: conn.id });
  }

  /** The disposition (and notes) of the agent's call: saved, and its after-call work ends. */
  private async wrapup(conn: Conn, msg: Extract<CallRequest, { type: 'call.wrapup' }>, fail: (code: string, message: string) => void): Promise<void> {
    const { user } = conn;
    if (!user.roles.includes('agent')) return fail('FORBIDDEN', 'only agents wrap up calls');
    if (!this.o.dispositions.includes(msg.disposition)) return fail('BAD_REQUEST', `disposition: must be one of ${this.o.dispositions.join(', ')}`);
    const rec = await this.o.store.getCall(msg.wacid);
    const f = this.o.router.board.facts(user.name);
    // The call record lives an hour after the end; the board's after-call work names the call too.
    if (!rec && f.wrapWacid !== msg.wacid) return fail('NOT_FOUND', 'no such call');
    const call = rec ? fromRecord(rec) : null;
    if (call) {
      if (call.agent !== user.name || call.startedAt === undefined) return fail('FORBIDDEN', 'you did not take this call');
      if (call.state !== 'ended') return fail('CONFLICT', 'the call is still going on: hang up first');
    }
    const customer = call ? (call.direction === 'USER_INITIATED' ? call.from : call.to) : undefined;
    const businessNumber = call ? (call.direction === 'USER_INITIATED' ? call.to : call.from) : undefined;
    this.o.onWrapup?.({ wacid: msg.wacid, agent: user.name, disposition: msg.disposition, notes: msg.notes, at: this.o.now(), customer, businessNumber });
    this.o.router.wrapEnd(user.name, msg.wacid);
    this.lastDraft.delete(user.name);
    // The draft has done its job (a failure only leaves it to expire).
    this.o.store.del(wrapDraftKey(msg.wacid)).catch(() => undefined);
    this.o.hub.toConn(conn.id, { type: 'ack', id: msg.id });
  }

  private async dial(conn: Conn, msg: Extract<CallRequest, { type: 'call.dial' }>, fail: (code: string, message: string, params?: ErrorParams) => void): Promise<void> {
    const { user } = conn;
    if (!user.roles.includes('supervisor') && !user.roles.includes('agent')) return fail('FORBIDDEN', 'only agents and supervisors place calls');
    if (this.o.numberScope && !(await this.o.numberScope.allows(user, msg.from))) return fail('FORBIDDEN', 'from: not one of the numbers you take calls for');
    // The interface: do not call after a rejection, an expired or revoked permission, or past
    // the connected-calls-per-day limit. Unknown, requested or granted → the Service decides.
    // A failed lookup does not block the call.
    const refused = await this.o.permissions
      ?.dialRefusal(msg.from, msg.to ?? msg.recipient ?? '')
      .catch((err: Error) => void this.o.log.warn({ err: err.message }, 'permission lookup failed; dialing anyway'));
    if (refused) return fail(refused.code, refused.message, refused.params);
    let wacid: string;
    try {
      const r = await this.o.calls.connect({ from: msg.from, ...(msg.to ? { to: msg.to } : {}), ...(msg.recipient ? { recipient: msg.recipient } : {}), sdpType: 'offer', sdp: msg.sdp });
      wacid = r.wacid;
    } catch (err) {
      const why = refusal(err).reason;
      return fail(err instanceof OutcomeUnknownError ? 'OUTCOME_UNKNOWN' : 'SERVICE_ERROR', why, { serviceReason: why.slice(0, 1000) });
    }
    const dialed: CallEvent = {
      type: 'dialed',
      wacid,
      at: this.o.now(),
      agent: user.name,
      conn: conn.id,
      ...(conn.tab ? { tab: conn.tab } : {}),
      reqId: msg.id,
      // Until the connect event brings the Service's phone id (lifecycle `onConnect`).
      phoneId: msg.from,
      from: msg.from,
      to: msg.to ?? msg.recipient ?? '',
      sdp: msg.sdp,
    };
    // The Service is ringing the user now: the call must be tracked, or ended there.
    for (let attempt = 1; ; attempt++) {
      try {
        await this.o.apply({ ...dialed, at: this.o.now() });
        return;
      } catch (err) {
        if (attempt < DIAL_TRACK_ATTEMPTS) {
          await new Promise((r) => setTimeout(r, DIAL_TRACK_RETRY_MS));
          continue;
        }
        this.o.log.error({ wacid, err: (err as Error).message }, 'dialed call could not be tracked; ending it at the Service');
        const ended = await this.terminateUntracked(wacid, msg.from);
        const down = isStoreDown(err);
        return fail(
          down ? 'UNAVAILABLE' : 'INTERNAL',
          `the call could not be tracked (${down ? 'the store is unavailable' : 'internal error'}); ${ended ? 'it was ended at the Service' : 'ending it at the Service failed'}`,
        );
      }
    }
  }

  /** End at the Service a dialed call the store could not take (its phone id looked up by number). */
  private async terminateUntracked(wacid: string, from: string): Promise<boolean> {
    try {
      const phoneId = (await this.o.phoneIdOf?.(from)) ?? from;
      await this.o.calls.terminate({ phoneId, wacid });
      this.o.log.warn({ wacid }, 'untracked dialed call terminated at the Service');
      return true;
    } catch (err) {
      this.o.log.error({ wacid, err: (err as Error).message, code: (err as ServiceError).code }, 'untracked dialed call could not be terminated: the user may be ringing');
      return false;
    }
  }
}
