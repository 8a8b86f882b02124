/**
 * The call engine: the thin service around the pure lifecycle (`lifecycle.ts`).
 *
 * `apply(event)` reads the call record, runs `transition`, writes the result with
 * compare-and-set (re-reading and re-applying when another writer won), and only then runs
 * the effects: Service requests, socket pushes through the hub, routing, agent bookkeeping.
 * Nothing here decides what a call's next state is.
 *
 * Inputs: webhook events (`handleWebhook`), client requests (`request`), time (per-call
 * timers at `nextDue`, plus a sweep that also picks up calls whose timer lived on a node
 * that died), agents coming and going (`agentConnected`, `agentDisconnected`, presence).
 */
import { Presence, type CallView, type ClientMsg, type ServerMsg, type User } from '../../shared/protocol.ts';
import { PROTOCOL_VERSION } from '../../shared/protocol.ts';
import { clip, LIMITS } from '../../shared/limits.ts';
import type { EventOf, KnownEvent } from '../../shared/events.ts';
import type { Logger } from '../log/logger.ts';
import { describeServiceError, OutcomeUnknownError, ServiceError } from '../service/errors.ts';
import type { Calls } from '../service/resources/calls.ts';
import { StoreUnavailableError, type CallRecord, type Store } from '../store/store.ts';
import type { Conn, Hub } from '../push/hub.ts';
import { AgentBoard } from './agents.ts';
import { DEFAULT_POLICY, nextDue, transition, type Call, type CallEvent, type Effect, type Policy } from './lifecycle.ts';
import { EVERY_AGENT, pickAgent, type Queues } from './routing.ts';

export type ServiceCalls = Pick<Calls, 'preAccept' | 'accept' | 'reject' | 'terminate' | 'connect'>;

export interface EngineOptions {
  store: Store;
  calls: ServiceCalls;
  hub: Hub;
  log: Logger;
  policy?: Partial<Policy>;
  wrapUpMs?: number;
  queues?: Queues;
  board?: AgentBoard;
  now?: () => number;
  /** How long a disconnected agent keeps its ringing offer (reconnect = offer replayed). */
  reconnectGraceMs?: number;
  /** Period of the sweep over stored calls (timers of dead nodes, queued calls). */
  sweepMs?: number;
  /** Set when other nodes share the store (Redis): routing hints go through its pub/sub. */
  shared?: Store;
  /**
   * Known calling permissions (`server/permissions/`): a `call.dial` to a user whose
   * permission is known rejected or expired is refused with `NO_PERMISSION` (nothing sent).
   */
  permissions?: { dialRefusal(from: string, user: string): Promise<string | undefined> };
  /**
   * The Service's phone id of a business number (E.164), to terminate a dialed call that
   * could not be tracked (the store down) before its connect event brought the id.
   */
  phoneIdOf?: (businessNumber: string) => Promise<string | undefined>;
}

const ROUTE_CHANNEL = 'calls-route';
const AGENTS_CHANNEL = 'calls-agents';

/** Routing-state changes of one agent, applied on every node's board. */
type BoardOp =
  | { op: 'release' | 'hold' | 'free' | 'away'; agent: string; wacid: string; wrapUntil?: number }
  /** The agent chose a presence in one tab; every node's board takes it (tabs may sit on several nodes). */
  | { op: 'presence'; agent: string; presence: Presence };

/** Records live this long after their last change (ended ones must outlast late connects). */
const LIVE_TTL_MS = 4 * 3600 * 1000;
/** An ended call's record is only history (supervisors, late duplicates): one hour. */
const ENDED_TTL_MS = 3600 * 1000;
/** A tombstone must outlive the Service's retries of the late connect (~6 h of schedule). */
const TOMBSTONE_TTL_MS = 8 * 3600 * 1000;
/** Every this many sweeps, scan all stored calls (other nodes' calls, timers of dead nodes). */
const FULL_SWEEP_EVERY = 15;
const MAX_CAS_ATTEMPTS = 20;
/** A dialed call's first write: tried this often, this far apart, before the call is ended at the Service. */
const DIAL_TRACK_ATTEMPTS = 3;
const DIAL_TRACK_RETRY_MS = 300;

export class CallEngine {
  readonly board: AgentBoard;
  readonly policy: Policy;
  private readonly store: Store;
  private readonly calls: ServiceCalls;
  private readonly hub: Hub;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly wrapUpMs: number;
  private readonly queues: Queues;
  private readonly graceMs: number;
  private readonly sweepMs: number;
  private readonly timers = new Map<string, { at: number; t: NodeJS.Timeout }>();
  private readonly graceTimers = new Map<string, NodeJS.Timeout>();
  /** Queued calls known to this node, by deadline (earliest first is routed first). */
  private readonly queued = new Map<string, number>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeps = 0;
  /** Calls this node has seen live (not ended); the cheap sweep and `welcome` look here. */
  private readonly live = new Set<string>();
  private readonly shared: Store | undefined;
  private readonly permissions: EngineOptions['permissions'];
  private readonly phoneIdOf: EngineOptions['phoneIdOf'];
  private unsubscribe: (() => Promise<void>) | undefined;
  private closed = false;
  private routing = false;
  private routeAgain = false;

  constructor(o: EngineOptions) {
    this.store = o.store;
    this.calls = o.calls;
    this.hub = o.hub;
    this.log = o.log;
    this.now = o.now ?? Date.now;
    this.policy = Object.freeze({ ...DEFAULT_POLICY, ...o.policy });
    this.wrapUpMs = o.wrapUpMs ?? 5_000;
    this.queues = o.queues ?? EVERY_AGENT;
    this.board = o.board ?? new AgentBoard(this.now);
    this.graceMs = o.reconnectGraceMs ?? 4_000;
    this.sweepMs = o.sweepMs ?? 2_000;
    this.shared = o.shared;
    this.permissions = o.permissions;
    this.phoneIdOf = o.phoneIdOf;
  }

  /**
   * With a shared store, each node knows only the agents connected to it: a call this node
   * cannot place is announced on `ROUTE_CHANNEL`, and every other node tries its own agents
   * (the `offer` transition lets exactly one of them win).
   */
  async startShared(): Promise<void> {
    if (!this.shared) return;
    this.unsubscribe = await this.shared.subscribe(ROUTE_CHANNEL, (msg) => {
      let hint: { node?: string; wacid?: string };
      try {
        hint = JSON.parse(msg) as { node?: string; wacid?: string };
      } catch {
        return;
      }
      if (hint.node === this.hub.node || typeof hint.wacid !== 'string') return;
      void this.route(hint.wacid, false).catch((err: Error) => this.log.warn({ err: err.message }, 'routing hint failed'));
    });
    const unsubAgents = await this.shared.subscribe(AGENTS_CHANNEL, (msg) => {
      let op: BoardOp & { node?: string };
      try {
        op = JSON.parse(msg) as BoardOp & { node?: string };
      } catch {
        return;
      }
      if (op.node === this.hub.node || typeof op.agent !== 'string') return;
      if (op.op === 'presence') {
        if (Presence.safeParse(op.presence).success) this.boardOp(op, true);
      } else if ((op.op === 'release' || op.op === 'hold' || op.op === 'free' || op.op === 'away') && typeof op.wacid === 'string') {
        this.boardOp(op, true);
      }
    });
    const unsubRoute = this.unsubscribe;
    this.unsubscribe = async () => {
      await unsubRoute?.();
      await unsubAgents();
    };
  }

  start(): void {
    void this.startShared().catch((err: Error) => this.log.error({ err: err.message }, 'route channel subscribe failed'));
    this.sweepTimer = setInterval(() => void this.sweep().catch((err: Error) => this.log.warn({ err: err.message }, 'sweep failed')), this.sweepMs);
    this.sweepTimer.unref();
  }

  close(): void {
    this.closed = true;
    void this.unsubscribe?.().catch(() => undefined);
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    for (const { t } of this.timers.values()) clearTimeout(t);
    for (const t of this.graceTimers.values()) clearTimeout(t);
    this.timers.clear();
    this.graceTimers.clear();
  }

  // ---- applying events ------------------------------------------------------------------

  /**
   * Apply one event atomically and run its effects. Returns the call as stored after it.
   * `known`: the record as the caller just read or wrote it (saves a store round trip; a
   * stale one only costs a failed compare-and-set and a re-read).
   */
  async apply(event: CallEvent, known?: CallRecord | null): Promise<Call | null> {
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const rec = attempt === 0 && known !== undefined ? known : await this.store.getCall(event.wacid);
      const before = rec ? fromRecord(rec) : null;
      const { call, effects } = transition(before, event, this.policy);
      if (call === before) {
        await this.run(call, effects, rec);
        return call;
      }
      const ttl = call!.state !== 'ended' ? LIVE_TTL_MS : call!.tombstone ? TOMBSTONE_TTL_MS : ENDED_TTL_MS;
      let stored: CallRecord | null;
      if (rec === null) {
        stored = (await this.store.createCall(toRecord(call!, 0), ttl)) ? toRecord(call!, 0) : null;
      } else {
        stored = await this.store.casCall(event.wacid, rec.version, toRecord(call!, rec.version), ttl);
      }
      if (stored) {
        this.track(call!);
        await this.run(call, effects, stored);
        return call;
      }
      // Another writer (worker, tab, node) changed the call first: re-read and re-apply.
    }
    this.log.error({ wacid: event.wacid, event: event.type }, 'call update kept conflicting; event dropped');
    return null;
  }

  private track(call: Call): void {
    if (call.state === 'queued') this.queued.set(call.wacid, call.deadline ?? Infinity);
    else this.queued.delete(call.wacid);
    if (call.state === 'ended') this.live.delete(call.wacid);
    else this.live.add(call.wacid);
    this.schedule(call);
  }

  private schedule(call: Call): void {
    const due = nextDue(call, this.policy);
    const cur = this.timers.get(call.wacid);
    if (cur && cur.at === due) return;
    if (cur) clearTimeout(cur.t);
    this.timers.delete(call.wacid);
    if (due === undefined || this.closed) return;
    const t = setTimeout(() => {
      this.timers.delete(call.wacid);
      void this.apply({ type: 'tick', wacid: call.wacid, at: this.now() }).catch((err: Error) =>
        this.log.warn({ wacid: call.wacid, err: err.message }, 'timer failed'),
      );
    }, Math.max(0, due - this.now()) + 5);
    t.unref();
    this.timers.set(call.wacid, { at: due, t });
  }

  // ---- effects --------------------------------------------------------------------------

  private async run(call: Call | null, effects: Effect[], stored: CallRecord | null): Promise<void> {
    for (const e of effects) {
      try {
        await this.effect(call, e, stored);
      } catch (err) {
        this.log.error({ wacid: call?.wacid, effect: e.kind, err: (err as Error).message }, 'effect failed');
      }
    }
  }

  private async effect(call: Call | null, e: Effect, stored: CallRecord | null): Promise<void> {
    switch (e.kind) {
      case 'reply':
        this.hub.toConn(
          e.conn,
          e.ok ? ({ type: 'ack', id: e.reqId, ...(e.result ?? {}) } as ServerMsg) : { type: 'error', id: e.reqId, code: e.code, message: e.message },
        );
        return;
    }
    if (!call) return;
    switch (e.kind) {
      case 'route':
        await this.route(call.wacid, true, stored);
        return;
      case 'offer':
        this.hub.toUser(e.agent, offered(call));
        return;
      case 'revoke':
        this.boardOp({ op: 'release', agent: e.agent, wacid: call.wacid });
        this.hub.toUser(e.agent, { type: 'call.revoked', wacid: call.wacid, reason: e.reason }, e.exceptConn);
        return;
      case 'notify': {
        const msg: ServerMsg = { type: 'call.state', ...view(call) };
        if (call.agent) this.hub.toUser(call.agent, msg);
        this.hub.toRole('supervisor', msg);
        return;
      }
      case 'remoteAnswer':
        this.hub.toUser(e.agent, { type: 'call.remoteAnswer', wacid: call.wacid, sdp: e.sdp });
        return;
      case 'agentBusy':
        this.boardOp({ op: 'hold', agent: e.agent, wacid: call.wacid });
        return;
      case 'agentFree':
        this.boardOp({ op: 'free', agent: e.agent, wacid: call.wacid, wrapUntil: e.wrapUp ? this.now() + this.wrapUpMs : 0 });
        return;
      case 'agentNoAnswer':
        this.boardOp({ op: 'away', agent: e.agent, wacid: call.wacid });
        this.hub.toUser(e.agent, { type: 'presence', presence: 'away' });
        return;
      case 'accept':
        // Not awaited: the Service round trips must not hold up the event that claimed the call.
        void this.accept(call, e.sdp);
        return;
      case 'reject':
        void this.signal('reject', call);
        return;
      case 'terminate':
        void this.signal('terminate', call);
        return;
    }
  }

  /**
   * A change to an agent's routing state. The agent's sockets may live on another node,
   * whose board is the one routing reads: with a shared store the change goes to every node.
   */
  private boardOp(op: BoardOp, fromOtherNode = false): void {
    switch (op.op) {
      case 'release':
        this.board.release(op.agent, op.wacid);
        this.routeQueuedSoon();
        break;
      case 'hold':
        this.board.hold(op.agent, op.wacid);
        break;
      case 'free':
        this.board.free(op.agent, op.wacid, op.wrapUntil ?? 0);
        if ((op.wrapUntil ?? 0) > this.now()) setTimeout(() => this.routeQueuedSoon(), (op.wrapUntil ?? 0) - this.now() + 5).unref();
        this.routeQueuedSoon();
        break;
      case 'away':
        this.board.setPresence(op.agent, 'away');
        break;
      case 'presence':
        this.board.setPresence(op.agent, op.presence);
        if (op.presence === 'available') this.routeQueuedSoon();
        break;
    }
    if (!fromOtherNode && this.shared) {
      this.shared.publish(AGENTS_CHANNEL, JSON.stringify({ ...op, node: this.hub.node })).catch((err: Error) => {
        this.log.warn({ err: err.message }, 'agent state not published to other nodes');
      });
    }
  }

  /** preAccept, then accept with the very same SDP; the outcome comes back as an event. */
  private async accept(call: Call, sdp: string): Promise<void> {
    const input = { phoneId: call.phoneId, wacid: call.wacid, sdpType: 'answer' as const, sdp };
    const opts = call.deadline !== undefined ? { deadline: call.deadline } : {};
    const outcome = async (ev: Omit<Extract<CallEvent, { type: 'acceptOk' | 'acceptRefused' | 'acceptUnknown' }>, 'wacid' | 'at'>) =>
      this.apply({ ...ev, wacid: call.wacid, at: this.now() } as CallEvent);
    try {
      await this.calls.preAccept(input, opts);
    } catch (err) {
      // preAccept is optional: if its outcome is unknown, accept with the same SDP is still right.
      if (!(err instanceof OutcomeUnknownError)) {
        await outcome({ type: 'acceptRefused', ...refusal(err) });
        return;
      }
      this.log.warn({ wacid: call.wacid }, 'preAccept outcome unknown; accepting with the same SDP');
    }
    try {
      await this.calls.accept(input, opts);
      await outcome({ type: 'acceptOk' });
    } catch (err) {
      if (err instanceof OutcomeUnknownError) await outcome({ type: 'acceptUnknown' });
      else await outcome({ type: 'acceptRefused', ...refusal(err) });
    }
  }

  /** End at the Service a dialed call the store could not take (its phone id looked up by number). */
  private async terminateUntracked(wacid: string, from: string): Promise<boolean> {
    try {
      const phoneId = (await this.phoneIdOf?.(from)) ?? from;
      await this.calls.terminate({ phoneId, wacid });
      this.log.warn({ wacid }, 'untracked dialed call terminated at the Service');
      return true;
    } catch (err) {
      this.log.error({ wacid, err: (err as Error).message, code: (err as ServiceError).code }, 'untracked dialed call could not be terminated: the user may be ringing');
      return false;
    }
  }

  private async signal(kind: 'reject' | 'terminate', call: Call): Promise<void> {
    try {
      await this.calls[kind]({ phoneId: call.phoneId, wacid: call.wacid });
      this.log.info({ wacid: call.wacid }, `${kind} sent`);
    } catch (err) {
      // The state already waits for the terminate event, with a timer; log and go on.
      this.log.warn({ wacid: call.wacid, err: (err as Error).message, code: (err as ServiceError).code }, `${kind} failed`);
    }
  }

  // ---- routing --------------------------------------------------------------------------

  /** Offer one queued call to the best agent, if any can take it (else, once, ask the other nodes). */
  private async route(wacid: string, announce = true, known?: CallRecord | null): Promise<boolean> {
    const rec = known !== undefined ? known : await this.store.getCall(wacid);
    if (!rec) return false;
    const call = fromRecord(rec);
    if (call.state !== 'queued') return false;
    // Known here from now on, so an agent of this node freeing up later offers it too.
    this.queued.set(wacid, call.deadline ?? Infinity);
    const now = this.now();
    for (let tries = 0; tries < 3; tries++) {
      const agent = pickAgent(call, this.board.views(), this.queues, now);
      if (!agent) {
        if (announce && this.shared) {
          await this.shared.publish(ROUTE_CHANNEL, JSON.stringify({ node: this.hub.node, wacid })).catch((err: Error) => {
            this.log.warn({ err: err.message }, 'routing hint not published');
          });
        }
        return false;
      }
      if (!this.board.reserve(agent, wacid)) continue;
      const after = await this.apply({ type: 'offer', wacid, at: this.now(), agent }, rec);
      if (after?.state === 'ringing' && after.agent === agent) return true;
      this.board.release(agent, wacid);
      return false;
    }
    return false;
  }

  /** An agent may have become free: offer waiting calls, longest waiting first. */
  routeQueuedSoon(): void {
    if (this.routing) {
      this.routeAgain = true;
      return;
    }
    this.routing = true;
    setImmediate(() => {
      void this.routeQueued()
        .catch((err: Error) => this.log.warn({ err: err.message }, 'routing failed'))
        .finally(() => {
          this.routing = false;
          if (this.routeAgain) {
            this.routeAgain = false;
            this.routeQueuedSoon();
          }
        });
    });
  }

  private async routeQueued(): Promise<void> {
    const order = [...this.queued.entries()].sort((a, b) => a[1] - b[1]).map(([w]) => w);
    for (const wacid of order) {
      if (!pickAgent({ phoneId: '', declined: [] }, this.board.views(), { takes: () => true }, this.now())) return;
      await this.route(wacid);
    }
  }

  /**
   * Fire overdue timers and route waiting calls. Usually over the calls this node knows;
   * every FULL_SWEEP_EVERY-th time over every stored call (calls of other nodes, timers of
   * a node that died), because that scan grows with the call history.
   */
  async sweep(): Promise<void> {
    const now = this.now();
    const full = this.sweeps++ % FULL_SWEEP_EVERY === 0;
    const recs = full ? await this.store.listCalls() : await this.getMany([...this.live]);
    for (const rec of recs) {
      const call = fromRecord(rec);
      if (call.state === 'ended') {
        this.live.delete(call.wacid);
        continue;
      }
      this.live.add(call.wacid);
      const due = nextDue(call, this.policy);
      if (due !== undefined && due + 250 <= now) await this.apply({ type: 'tick', wacid: call.wacid, at: now });
      else if (call.state === 'queued' && !this.queued.has(call.wacid)) {
        this.queued.set(call.wacid, call.deadline ?? Infinity);
        this.routeQueuedSoon();
      }
    }
  }

  private async getMany(wacids: string[]): Promise<CallRecord[]> {
    const out = await Promise.all(wacids.map((w) => this.store.getCall(w)));
    wacids.forEach((w, i) => {
      if (!out[i]) this.live.delete(w); // expired
    });
    return out.filter((r): r is CallRecord => r !== null);
  }

  // ---- webhook events -------------------------------------------------------------------

  /**
   * Handle one call signaling event (`chat.call.connect`, `chat.call.terminate`,
   * `chat.call.status.updated`), as the workers parsed it. `receivedAt` is when the receiver
   * took it: the accept window counts from there (or from dialTime when earlier), not from
   * processing.
   */
  async handleEvent(event: CallSignalEvent, receivedAt: number): Promise<void> {
    await this.apply(toCallEvent(event, receivedAt));
  }

  // ---- clients ---------------------------------------------------------------------------

  /**
   * Everything `welcome` shows this user now: their ringing offers (with the SDP, so a
   * reconnected tab can still answer) and the calls they hold; for supervisors every live
   * call. Agents' calls are found through the board (no scan of the call history).
   */
  async welcome(user: User): Promise<ServerMsg> {
    const calls: CallView[] = [];
    const supervisor = user.roles.includes('supervisor');
    let recs: CallRecord[];
    if (supervisor) {
      recs = await this.store.listCalls();
    } else {
      const v = this.board.view(user.name);
      recs = await this.getMany([...new Set([v.ringing, v.holding, ...this.live].filter((w): w is string => typeof w === 'string'))]);
    }
    for (const rec of recs) {
      const call = fromRecord(rec);
      if (call.state === 'ended') continue;
      const mine = call.agent === user.name;
      if (mine && call.state === 'ringing') calls.push({ ...view(call), sdp: call.offerSdp! });
      else if (mine || supervisor) calls.push(view(call));
    }
    return { type: 'welcome', protocol: PROTOCOL_VERSION, user, presence: this.board.presence(user.name), calls };
  }

  agentConnected(conn: Conn): void {
    if (!conn.user.roles.includes('agent')) return;
    const g = this.graceTimers.get(conn.user.name);
    if (g) clearTimeout(g);
    this.graceTimers.delete(conn.user.name);
    this.board.connect(conn.user.name);
    this.routeQueuedSoon();
  }

  /** The last connection of an agent went: after the grace, its ringing call moves on. */
  agentDisconnected(conn: Conn): void {
    if (!conn.user.roles.includes('agent')) return;
    const name = conn.user.name;
    if (this.board.disconnect(name) > 0 || this.closed) return;
    const t = setTimeout(() => {
      this.graceTimers.delete(name);
      if (!this.board.gone(name)) return;
      const ringing = this.board.view(name).ringing;
      if (ringing) void this.apply({ type: 'agentGone', wacid: ringing, at: this.now(), agent: name });
    }, this.graceMs);
    t.unref();
    this.graceTimers.set(name, t);
  }

  setPresence(user: User, status: Presence, conn: Conn, reqId: string): void {
    if (!user.roles.includes('agent')) {
      this.hub.toConn(conn.id, { type: 'error', id: reqId, code: 'FORBIDDEN', message: 'only agents have a presence' });
      return;
    }
    // This node's board, and every other node's (the agent's other tabs may be there).
    this.boardOp({ op: 'presence', agent: user.name, presence: status });
    this.hub.toConn(conn.id, { type: 'ack', id: reqId, presence: status } as ServerMsg);
    // Every tab of this agent shows the same presence.
    this.hub.toUser(user.name, { type: 'presence', presence: status }, conn.id);
  }

  /** A call request from a client (answer, decline, hangup, dial). */
  async request(conn: Conn, msg: Exclude<ClientMsg, { type: 'presence.set' } | { type: 'pong' }>): Promise<void> {
    const user = conn.user;
    const fail = (code: string, message: string) => this.hub.toConn(conn.id, { type: 'error', id: msg.id, code, message });
    const at = this.now();
    switch (msg.type) {
      case 'call.answer':
      case 'call.decline':
      case 'call.hangup': {
        if (!user.roles.includes('agent')) return fail('FORBIDDEN', 'only agents take calls');
        if (!(await this.store.getCall(msg.wacid))) return fail('NOT_FOUND', 'no such call');
        const common = { wacid: msg.wacid, at, agent: user.name, conn: conn.id, reqId: msg.id };
        const holding = this.board.view(user.name).holding;
        if (msg.type === 'call.answer' && holding && holding !== msg.wacid) {
          // One conversation per agent: a late answer to an earlier offer must not take a second call.
          return fail('CONFLICT', 'you are already on another call');
        }
        if (msg.type === 'call.answer') await this.apply({ type: 'answer', ...common, sdp: msg.sdp });
        else await this.apply({ type: msg.type === 'call.decline' ? 'decline' : 'hangup', ...common });
        return;
      }
      case 'call.dial': {
        if (!user.roles.includes('supervisor') && !user.roles.includes('agent')) return fail('FORBIDDEN', 'only agents and supervisors place calls');
        // The interface: do not call after a rejection or an expired permission. Unknown,
        // requested or granted → the Service decides. A failed lookup does not block the call.
        const refused = await this.permissions
          ?.dialRefusal(msg.from, msg.to ?? msg.recipient ?? '')
          .catch((err: Error) => void this.log.warn({ err: err.message }, 'permission lookup failed; dialing anyway'));
        if (refused) return fail('NO_PERMISSION', refused);
        let wacid: string;
        try {
          const r = await this.calls.connect({ from: msg.from, ...(msg.to ? { to: msg.to } : {}), ...(msg.recipient ? { recipient: msg.recipient } : {}), sdpType: 'offer', sdp: msg.sdp });
          wacid = r.wacid;
        } catch (err) {
          const r = refusal(err);
          return fail(err instanceof OutcomeUnknownError ? 'OUTCOME_UNKNOWN' : 'SERVICE_ERROR', r.reason);
        }
        const dialed: CallEvent = {
          type: 'dialed',
          wacid,
          at: this.now(),
          agent: user.name,
          conn: conn.id,
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
            await this.apply({ ...dialed, at: this.now() });
            return;
          } catch (err) {
            if (attempt < DIAL_TRACK_ATTEMPTS) {
              await new Promise((r) => setTimeout(r, DIAL_TRACK_RETRY_MS));
              continue;
            }
            this.log.error({ wacid, err: (err as Error).message }, 'dialed call could not be tracked; ending it at the Service');
            const ended = await this.terminateUntracked(wacid, msg.from);
            return fail(
              err instanceof StoreUnavailableError ? 'UNAVAILABLE' : 'INTERNAL',
              `the call could not be tracked (${err instanceof StoreUnavailableError ? 'the store is unavailable' : 'internal error'}); ${ended ? 'it was ended at the Service' : 'ending it at the Service failed'}`,
            );
          }
        }
      }
    }
  }
}

// ---- helpers --------------------------------------------------------------------------

function fromRecord(rec: CallRecord): Call {
  const { version: _v, ...rest } = rec;
  return rest as unknown as Call;
}

function toRecord(call: Call, version: number): CallRecord {
  // JSON drops undefined fields, so cleared fields really disappear from the store.
  return { ...(JSON.parse(JSON.stringify(call)) as Call), version } as unknown as CallRecord;
}

/** The offer frame to the agent a call rings for. */
export function offered(call: Call): Extract<ServerMsg, { type: 'call.offered' }> {
  return {
    type: 'call.offered',
    wacid: call.wacid,
    phoneId: call.phoneId,
    from: call.from,
    to: call.to,
    direction: call.direction,
    sdp: call.offerSdp!,
    deadline: call.deadline!,
  };
}

/** What clients see of a call (never the SDP, except in the ringing agent's offer). */
export function view(call: Call): CallView {
  const v: CallView = {
    wacid: call.wacid,
    phoneId: call.phoneId,
    from: call.from,
    to: call.to,
    direction: call.direction,
    state: call.state,
  };
  if (call.agent !== undefined) v.agent = call.agent;
  if (call.deadline !== undefined && (call.state === 'queued' || call.state === 'ringing')) v.deadline = call.deadline;
  if (call.startedAt !== undefined) v.startedAt = call.startedAt;
  if (call.endedAt !== undefined) v.endedAt = call.endedAt;
  if (call.result !== undefined) v.result = call.result;
  if (call.duration !== undefined) v.duration = call.duration;
  if (call.reason !== undefined) v.reason = call.reason;
  return v;
}

/**
 * The Service's reason for a refusal, in words for the agent (never secrets: the client
 * scrubs). It ends up in frames, so it is clipped to the frames' limits.
 */
function refusal(err: unknown): { code: string; reason: string } {
  if (err instanceof ServiceError) return { code: clip(err.code, LIMITS.word), reason: clip(describeServiceError(err), LIMITS.reason) };
  return { code: 'INTERNAL', reason: clip((err as Error)?.message ?? 'unknown error', LIMITS.reason) };
}

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined);

/** The webhook events that drive the call lifecycle. */
export const CALL_SIGNAL_TYPES = ['chat.call.connect', 'chat.call.terminate', 'chat.call.status.updated'] as const;
export type CallSignalEvent = EventOf<(typeof CALL_SIGNAL_TYPES)[number]>;

export function isCallSignal(event: KnownEvent): event is CallSignalEvent {
  return (CALL_SIGNAL_TYPES as readonly string[]).includes(event.type);
}

/** A call signaling event (validated by the workers) as a lifecycle event. */
export function toCallEvent(event: CallSignalEvent, at: number): CallEvent {
  switch (event.type) {
    case 'chat.call.connect': {
      const p = event.payload;
      return {
        type: 'connect',
        wacid: p.wacid,
        at,
        direction: p.direction,
        phoneId: p.phoneId,
        from: p.from ?? p.recipient ?? '',
        to: p.to ?? '',
        sdp: p.sdp,
        ...(p.dialTime !== undefined ? { dialTime: p.dialTime } : {}),
      };
    }
    case 'chat.call.terminate': {
      const p = event.payload;
      // The emulator (and, we expect, the Service) lists provider errors as errors[{code, message}].
      const first = p.errors?.[0];
      const errorCode = str(p.errorCode) ?? str(first?.code);
      const reason = p.errorMessage ?? str(first?.message) ?? str(p.reason);
      return {
        type: 'terminate',
        wacid: p.wacid,
        at,
        result: p.status ?? 'COMPLETED',
        ...(p.duration !== undefined ? { duration: p.duration } : {}),
        ...(errorCode !== undefined ? { errorCode } : {}),
        ...(reason !== undefined ? { reason } : {}),
        ...(p.phoneId !== undefined ? { phoneId: p.phoneId } : {}),
      };
    }
    case 'chat.call.status.updated':
      return { type: 'status', wacid: event.payload.wacid, at, value: event.payload.status };
  }
}
