/**
 * Routing at run time: the agent board, this node's queue of waiting calls, and the
 * cross-node channels. Which agent rings next is the pure rule of `routing.ts`; this file
 * keeps the state that rule reads and offers calls through the applier (`offer` event,
 * whose transition lets exactly one offer win).
 *
 * With a shared store each node knows only the agents connected to it: a call this node
 * cannot place is announced on `ROUTE_CHANNEL` and every other node tries its own agents;
 * agent changes go to every node's board on `AGENTS_CHANNEL` (an agent's tabs may sit on
 * several nodes).
 */
import { Presence, type AgentState, type TransferTargets } from '../../shared/protocol.ts';
import type { Logger } from '../log/logger.ts';
import type { CallRecord, Store } from '../store/store.ts';
import { AgentBoard, type StoredAgent, type WrapExtension } from './agents.ts';
import { hasLimit } from './agentState.ts';
import type { AgentChange, RoutingPort } from './ports.ts';
import { fromRecord } from './record.ts';
import type { Call, CallEvent } from './lifecycle.ts';
import { anyEligible, EVERY_AGENT, isEligible, nextOverflowAt, pickAgent, ringTimeoutFor, type Queues } from './routing.ts';
import { transferTargetsOf, waiting } from './transfer-targets.ts';

const ROUTE_CHANNEL = 'calls-route';
const AGENTS_CHANNEL = 'calls-agents';
/** Store key of what an agent chose (`StoredAgent`), for nodes that start later. */
const agentKey = (name: string) => `agent:${name}`;
/** Kept this long after the agent's last change. */
const AGENT_TTL_MS = 7 * 24 * 3600 * 1000;

/**
 * What goes to the other nodes' boards: an agent change, a presence chosen in one tab,
 * after-call work ended or extended, or whether the agent has connections on the sender.
 */
type BoardMessage =
  | AgentChange
  | { kind: 'presence'; agent: string; presence: Presence; reason?: string | undefined }
  | { kind: 'wrapEnd'; agent: string; wacid: string }
  /** `typing`: the countdown stood still while the agent typed; `page`: a page came back (once); neither: "More time" (once). */
  | { kind: 'wrapExtend'; agent: string; wacid: string; wrapUntil: number; typing?: boolean; page?: boolean }
  | { kind: 'conn'; agent: string; connected: boolean }
  /** A node started: the others say which agents they hold connections of (`conn`). */
  | { kind: 'hello'; agent: string }
  /** A node is alive (every `beatMs`): a node silent for `nodeLostMs` is taken for dead. */
  | { kind: 'beat'; agent: string };

/** Each node says it is alive this often on `AGENTS_CHANNEL`. */
const BEAT_MS = 2_000;
/** A node silent this long died (SIGKILL, power, partition): its connections and its calls' timers are taken over. */
const NODE_LOST_MS = 4 * BEAT_MS;

export interface RouterOptions {
  store: Store;
  board: AgentBoard;
  queues: Queues;
  log: Logger;
  now: () => number;
  /** This node's id (the hub's): its own channel messages are skipped. */
  node: string;
  /** Set when other nodes share the store (Redis). */
  shared?: Store | undefined;
  apply: (event: CallEvent, known?: CallRecord | null) => Promise<Call | null>;
  /** The agent's state changed through a change made on this node: push it (agent and supervisors). */
  pushState?: (agent: string, state: AgentState) => void;
  /** After-call work for `wacid` ran out with no disposition (history records `Not set`). */
  wrapTimedOut?: (agent: string, wacid: string) => void;
  /**
   * Another node stopped beating (it died), `agents` had connections there: this node takes
   * over its calls' timers (a full sweep of the stored calls), and rings on from those agents
   * who are now connected nowhere. Without it a call ringing an agent on the dead node rang on
   * until some node's periodic full sweep (every 30 s) noticed, often past the accept window.
   */
  nodeLost?: (node: string, agents: string[]) => void;
  beatMs?: number;
  nodeLostMs?: number;
}

export class Router implements RoutingPort {
  readonly board: AgentBoard;
  /** Queued calls known to this node, by deadline (earliest first is routed first). */
  private readonly queued = new Map<string, number>();
  private unsubscribe: (() => Promise<void>) | undefined;
  private routing = false;
  private routeAgain = false;
  /**
   * Agents whose presence or after-call work changed on this board since the process
   * started (here or on another node): the board knows better than the store then.
   */
  private readonly touched = new Set<string>();
  /** Agents read back from the store (or being read), once each. */
  private readonly restored = new Map<string, Promise<void>>();
  /** Queued calls waiting for their next overflow queue: wacid → timer (routed again when it joins). */
  private readonly overflowTimers = new Map<string, NodeJS.Timeout>();
  /** Other nodes on the channels: node → when last heard (any message, a beat at least). */
  private readonly nodes = new Map<string, number>();
  /** Nodes taken for dead (→ when): a message from one again (a long stall, not a death) brings it back. Forgotten after an hour. */
  private readonly lostNodes = new Map<string, number>();
  private beatTimer: NodeJS.Timeout | undefined;

  constructor(private readonly o: RouterOptions) {
    this.board = o.board;
  }

  async start(): Promise<void> {
    const shared = this.o.shared;
    if (!shared) return;
    const unsubRoute = await shared.subscribe(ROUTE_CHANNEL, (msg) => {
      const hint = parseJson(msg) as { node?: unknown; wacid?: unknown } | undefined;
      if (!hint || hint.node === this.o.node || typeof hint.wacid !== 'string') return;
      void this.route(hint.wacid, false).catch((err: Error) => this.o.log.warn({ err: err.message }, 'routing hint failed'));
    });
    const unsubAgents = await shared.subscribe(AGENTS_CHANNEL, (msg) => {
      const m = parseJson(msg) as (BoardMessage & { node?: unknown }) | undefined;
      if (!m || m.node === this.o.node || typeof m.agent !== 'string') return;
      if (typeof m.node === 'string') this.heard(m.node);
      if (m.kind === 'beat') return;
      if (m.kind === 'presence') {
        if (Presence.safeParse(m.presence).success) this.apply({ ...m, reason: typeof m.reason === 'string' ? m.reason : undefined }, true);
      } else if (m.kind === 'hello') {
        // A node (re)started and knows nobody's connections: tell it ours.
        for (const agent of this.o.board.connectedHere()) this.publishBoard({ kind: 'conn', agent, connected: true });
      } else if (m.kind === 'conn') {
        if (typeof m.node === 'string' && typeof m.connected === 'boolean') this.o.board.elsewhere(m.agent, m.node, m.connected);
        this.o.board.observe(m.agent);
        // Online elsewhere: this board shows it to its supervisors with what it chose.
        if (m.connected === true) void this.restoreAgent(m.agent);
      } else if (m.kind === 'wrapExtend') {
        if (typeof m.wacid === 'string' && typeof m.wrapUntil === 'number') this.apply({ ...m, typing: m.typing === true, page: m.page === true }, true);
      } else if ((m.kind === 'wrapEnd' || m.kind === 'offered' || m.kind === 'agentBusy' || m.kind === 'agentFree' || m.kind === 'agentNoAnswer' || m.kind === 'revoke') && typeof m.wacid === 'string') {
        this.apply(m, true);
      }
    });
    this.unsubscribe = async () => {
      await unsubRoute();
      await unsubAgents();
    };
    this.publishBoard({ kind: 'hello', agent: '*' });
    const beatMs = this.o.beatMs ?? BEAT_MS;
    let lastTurn = this.o.now();
    this.beatTimer = setInterval(() => {
      this.publishBoard({ kind: 'beat', agent: '*' });
      // This node's own loop stalled (its timers run before the messages that waited): the
      // others' beats are not read yet, so nobody is judged on this turn.
      const stalled = this.o.now() - lastTurn > 2 * beatMs;
      lastTurn = this.o.now();
      if (!stalled) this.checkNodes();
    }, beatMs);
    this.beatTimer.unref();
  }

  private heard(node: string): void {
    this.nodes.set(node, this.o.now());
    if (!this.lostNodes.delete(node)) return;
    // A node taken for dead spoke again (its loop stalled, or the network healed): its
    // connections were forgotten here, so ask every node to say its own again.
    this.o.log.warn({ node }, 'a node taken for dead is back');
    this.publishBoard({ kind: 'hello', agent: '*' });
  }

  /** Nodes silent for `nodeLostMs`: their agents' connections are forgotten and their calls taken over. */
  private checkNodes(): void {
    const lostBefore = this.o.now() - (this.o.nodeLostMs ?? NODE_LOST_MS);
    for (const [node, at] of this.lostNodes) if (at < this.o.now() - 3_600_000) this.lostNodes.delete(node);
    for (const [node, at] of this.nodes) {
      if (at > lostBefore) continue;
      this.nodes.delete(node);
      this.lostNodes.set(node, this.o.now());
      this.o.log.warn({ node, silentMs: this.o.now() - at }, 'a node stopped beating; taking over its calls');
      // Every surviving node sees the same: the first of them (by id) pushes the agents' new state, once.
      const pushes = [...this.nodes.keys()].every((n) => n > this.o.node);
      const agents: string[] = [];
      for (const v of [...this.board.views()]) {
        if (!this.board.facts(v.name).elsewhere.has(node)) continue;
        agents.push(v.name);
        this.board.elsewhere(v.name, node, false);
        const changed = this.board.observe(v.name);
        if (changed && pushes) this.o.pushState?.(v.name, changed);
      }
      this.o.nodeLost?.(node, agents);
    }
  }

  private publishBoard(m: BoardMessage): void {
    this.o.shared?.publish(AGENTS_CHANNEL, JSON.stringify({ ...m, node: this.o.node })).catch((err: Error) => {
      this.o.log.warn({ err: err.message }, 'agent state not published to other nodes');
    });
  }

  /**
   * Read back what the store kept of the agent (its presence, after-call work), once per
   * process, unless this board learned something newer meanwhile. A node that started
   * after a crash knows nothing else of the agent: without this the agent would be `away`
   * (the default) whatever it chose, and its after-call work forgotten. Awaited before the
   * agent's `welcome`; a store that cannot answer leaves the board as it is.
   */
  restoreAgent(name: string): Promise<void> {
    let p = this.restored.get(name);
    if (p) return p;
    p = (async () => {
      if (this.touched.has(name)) return;
      const raw = await this.o.store.get(agentKey(name)).catch((err: Error) => {
        this.o.log.warn({ agent: name, err: err.message }, 'agent state not read back from the store');
        this.restored.delete(name); // try again at the next connection
        return null;
      });
      if (raw === null || this.touched.has(name)) return;
      let s: StoredAgent;
      try {
        s = JSON.parse(raw) as StoredAgent;
      } catch {
        return;
      }
      if (!Presence.safeParse(s.presence).success || typeof s.idleSince !== 'number' || typeof s.wrapUntil !== 'number') return;
      this.board.restore(name, s);
      const changed = this.board.observe(name);
      if (changed) this.o.pushState?.(name, changed);
      const wait = s.wrapUntil - this.o.now();
      if (wait > 0 && hasLimit(s.wrapUntil)) setTimeout(() => this.routeQueuedSoon(), wait + 5).unref();
      if (s.presence === 'available') this.routeQueuedSoon();
    })();
    this.restored.set(name, p);
    return p;
  }

  close(): void {
    if (this.beatTimer) clearInterval(this.beatTimer);
    void this.unsubscribe?.().catch(() => undefined);
    for (const t of this.overflowTimers.values()) clearTimeout(t);
    this.overflowTimers.clear();
  }

  /**
   * A queued call nobody could take: routed again when its queue's next overflow queue
   * joins (each node that tried it, so the node holding the overflow agents offers it).
   */
  private overflowLater(wacid: string, phoneId: string, since: number): void {
    const table = this.o.queues.table?.();
    const at = table ? nextOverflowAt(table, phoneId, since, this.o.now()) : undefined;
    if (at === undefined || this.overflowTimers.has(wacid)) return;
    const t = setTimeout(() => {
      this.overflowTimers.delete(wacid);
      void this.route(wacid, false).catch((err: Error) => this.o.log.warn({ wacid, err: err.message }, 'overflow routing failed'));
    }, at - this.o.now() + 5);
    t.unref();
    this.overflowTimers.set(wacid, t);
  }

  track(call: Call): void {
    if (waiting(call)) this.queued.set(call.wacid, waitsUntil(call));
    // A transferred caller waiting for someone to take it (hearing music) goes first.
    else if (call.state === 'active' && call.transfer && !call.transfer.ringing && !call.transfer.answered) this.queued.set(call.wacid, 0);
    else {
      this.queued.delete(call.wacid);
      clearTimeout(this.overflowTimers.get(call.wacid));
      this.overflowTimers.delete(call.wacid);
    }
  }

  adopt(call: Call): void {
    if (this.queued.has(call.wacid)) return;
    this.queued.set(call.wacid, call.deadline ?? Infinity);
    this.routeQueuedSoon();
  }

  /** An agent change from the lifecycle's effects: this node's board, then every other node's. */
  agentChange(change: AgentChange): void {
    this.apply(change);
  }

  /** The agent chose a presence (and an away reason) in one tab: every node's board takes it. */
  presence(agent: string, presence: Presence, reason?: string): void {
    this.apply({ kind: 'presence', agent, presence, reason });
  }

  /** After-call work for `wacid` ends now (the agent gave a disposition). */
  wrapEnd(agent: string, wacid: string): void {
    this.apply({ kind: 'wrapEnd', agent, wacid });
  }

  /** After-call work for `wacid` ends at `wrapUntil` instead (`why`: see `AgentBoard.wrapExtend`). */
  wrapExtend(agent: string, wacid: string, wrapUntil: number, why: WrapExtension = 'more'): void {
    this.apply({ kind: 'wrapExtend', agent, wacid, wrapUntil, ...(why === 'typing' ? { typing: true } : why === 'page' ? { page: true } : {}) });
  }

  /**
   * This node's connections of the agent came (first) or went (grace over): the other nodes
   * count the agent online (not routable from there), and the state is pushed.
   */
  connection(agent: string, connected: boolean): void {
    this.apply({ kind: 'conn', agent, connected });
  }

  /** The countdown of after-call work: at its end (extended: later) `Not set` and ready again. */
  private wrapTimer(agent: string, wacid: string, at: number): void {
    if (!hasLimit(at)) return; // WRAP_UP_MS=0: until the agent ends it
    setTimeout(() => {
      const f = this.board.facts(agent);
      if (f.wrapWacid !== wacid) return;
      if (f.wrapUntil > this.o.now()) return this.wrapTimer(agent, wacid, f.wrapUntil);
      this.o.wrapTimedOut?.(agent, wacid);
      this.wrapEnd(agent, wacid);
    }, Math.max(0, at - this.o.now()) + 5).unref();
  }

  private apply(m: BoardMessage, fromOtherNode = false): void {
    const { board } = this;
    const chosen = m.kind === 'presence' || m.kind === 'agentNoAnswer' || m.kind === 'agentFree' || m.kind === 'wrapEnd' || m.kind === 'wrapExtend';
    if (chosen) this.touched.add(m.agent);
    switch (m.kind) {
      case 'revoke':
        board.revoke(m.agent, m.wacid);
        this.routeQueuedSoon();
        break;
      case 'offered':
        board.offered(m.agent, m.wacid);
        break;
      case 'agentBusy':
        board.agentBusy(m.agent, m.wacid);
        break;
      case 'agentFree': {
        board.agentFree(m.agent, m.wacid, m.wrapUntil, typeof m.at === 'number' ? m.at : undefined);
        const wait = m.wrapUntil - this.o.now();
        if (wait > 0 && hasLimit(m.wrapUntil)) setTimeout(() => this.routeQueuedSoon(), wait + 5).unref();
        // The node that freed the agent runs the countdown (one `Not set`, one push).
        if (!fromOtherNode && board.facts(m.agent).wrapWacid === m.wacid) this.wrapTimer(m.agent, m.wacid, m.wrapUntil);
        this.routeQueuedSoon();
        break;
      }
      case 'wrapEnd':
        board.wrapEnd(m.agent, m.wacid);
        this.routeQueuedSoon();
        break;
      case 'wrapExtend': {
        board.wrapExtend(m.agent, m.wacid, m.wrapUntil, m.page === true ? 'page' : m.typing === true ? 'typing' : 'more');
        const wait = m.wrapUntil - this.o.now();
        if (wait > 0 && hasLimit(m.wrapUntil)) setTimeout(() => this.routeQueuedSoon(), wait + 5).unref();
        break;
      }
      case 'conn':
      case 'hello':
      case 'beat':
        // This node's own connections are counted by the gateway (`connect` / `gone`).
        break;
      case 'agentNoAnswer':
        board.agentNoAnswer(m.agent);
        break;
      case 'presence':
        board.setPresence(m.agent, m.presence, m.reason);
        if (m.presence === 'available') this.routeQueuedSoon();
        break;
    }
    // Every node derives the state (so its `since` and welcome are right); the node where the
    // change was made pushes it, once.
    const changed = board.observe(m.agent);
    if (changed && !fromOtherNode) this.o.pushState?.(m.agent, changed);
    if (!fromOtherNode) this.publishBoard(m);
    // The node where the change was made keeps it in the store, for nodes that start later.
    if (chosen && !fromOtherNode) {
      this.o.store.set(agentKey(m.agent), JSON.stringify(board.stored(m.agent)), AGENT_TTL_MS).catch((err: Error) => {
        this.o.log.warn({ agent: m.agent, err: err.message }, 'agent state not kept in the store');
      });
    }
  }

  /** Offer one queued call to the best agent, if any can take it (else, once, ask the other nodes). */
  async route(wacid: string, announce = true, known?: CallRecord | null): Promise<boolean> {
    const rec = known !== undefined ? known : await this.o.store.getCall(wacid);
    if (!rec) return false;
    const call = fromRecord(rec);
    if (call.state === 'active' && call.transfer) return this.routeTransfer(wacid, call.transfer.tried.length > 0 ? call.transfer.by : undefined, rec);
    if (!waiting(call)) return false;
    // Known here from now on, so an agent of this node freeing up later offers it too.
    this.queued.set(wacid, waitsUntil(call));
    const now = this.o.now();
    for (let tries = 0; tries < 3; tries++) {
      const agent = pickAgent(call, this.board.views(), this.o.queues, now);
      if (!agent) {
        this.overflowLater(wacid, call.phoneId, call.createdAt);
        if (announce && this.o.shared) {
          await this.o.shared.publish(ROUTE_CHANNEL, JSON.stringify({ node: this.o.node, wacid })).catch((err: Error) => {
            this.o.log.warn({ err: err.message }, 'routing hint not published');
          });
        }
        return false;
      }
      if (!this.board.reserve(agent, wacid)) continue;
      const table = this.o.queues.table?.();
      const ringMs = table ? ringTimeoutFor(table, call.phoneId) : undefined;
      const after = await this.o.apply({ type: 'offer', wacid, at: this.o.now(), agent, ...(ringMs !== undefined ? { ringMs } : {}) }, rec);
      if ((after?.state === 'ringing' && after.agent === agent) || after?.nextAgent === agent) return true;
      this.board.revoke(agent, wacid);
      return false;
    }
    return false;
  }

  /**
   * Whether a transfer may go to this agent now: connected, available, not ringing or on a
   * call, past after-call work (an away or busy agent cannot be picked); else why not.
   */
  transferable(name: string): { ok: true } | { ok: false; why: string } {
    const v = [...this.board.views()].find((a) => a.name === name);
    if (!v || !v.connected) return { ok: false, why: `${name} is not online` };
    if (v.presence !== 'available') return { ok: false, why: `${name} is away` };
    if (v.ringing !== undefined || v.holding !== undefined) return { ok: false, why: `${name} is on a call` };
    if (!isEligible(v, this.o.now())) return { ok: false, why: `${name} is in after-call work` };
    return { ok: true };
  }

  /** Whom `self` can transfer a call to now (`transfer.targets`; transfer-targets.ts, from every node's live calls). */
  async transferTargets(self: string, wacid?: string): Promise<TransferTargets> {
    const live = (await this.o.store.listLiveCalls()).map(fromRecord).filter((c) => c.state !== 'ended');
    return transferTargetsOf({ self, wacid, live, board: this.board, queues: this.o.queues, transferable: (name) => this.transferable(name).ok, hasQueue: (phoneId) => this.hasQueue(phoneId) });
  }

  /** Whether `phoneId` names a queue a transfer can go to (QUEUES_FILE lists it, or every agent takes every number). */
  hasQueue(phoneId: string): boolean {
    // With the directory's table and no queue kept at all, every agent takes every number: any number is a queue.
    const table = this.o.queues.table?.();
    return this.o.queues === EVERY_AGENT || this.o.queues.agents(phoneId) !== undefined || (table !== undefined && table.queues.size === 0);
  }

  /**
   * A transferred call (anchor mode, the caller hearing music): its target agent when
   * available; else `prefer` (the first agent, after the target did not take it) when
   * available; else the longest idle available agent of the queue (the target queue, or the
   * call's number's). Nobody: it waits here, first in line, for the next free agent.
   */
  async routeTransfer(wacid: string, prefer?: string, known?: CallRecord | null): Promise<boolean> {
    const rec = known !== undefined && known !== null ? known : await this.o.store.getCall(wacid);
    if (!rec) return false;
    const call = fromRecord(rec);
    const t = call.transfer;
    if (call.state !== 'active' || !t || t.ringing || t.answered) return false;
    const now = this.o.now();
    const views = [...this.board.views()];
    const one = (name: string | undefined) => (name === undefined ? undefined : pickAgent(call, views.filter((v) => v.name === name), EVERY_AGENT, now));
    const target = 'agent' in t.to ? t.to.agent : undefined;
    const queue = 'queue' in t.to ? t.to.queue : call.phoneId;
    const agent =
      (t.tried.length === 0 ? one(target) : undefined) ??
      (prefer !== undefined && !t.tried.includes(prefer) ? one(prefer) : undefined) ??
      pickAgent({ phoneId: queue, declined: [...call.declined, ...t.tried, ...(prefer !== undefined && t.tried.includes(prefer) ? [prefer] : [])] }, views, this.o.queues, now);
    this.queued.set(wacid, 0);
    if (!agent || !this.board.reserve(agent, wacid)) return false;
    const after = await this.o.apply({ type: 'offer', wacid, at: this.o.now(), agent }, rec);
    if (after?.transfer?.ringing === agent) {
      this.queued.delete(wacid);
      return true;
    }
    this.board.revoke(agent, wacid);
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
        .catch((err: Error) => this.o.log.warn({ err: err.message }, 'routing failed'))
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
      if (!anyEligible(this.board.views(), this.o.now())) return;
      await this.route(wacid);
    }
  }
}

function waitsUntil(call: Call): number {
  return call.handoffUntil ?? call.deadline ?? Infinity;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
