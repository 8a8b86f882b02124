/**
 * The call engine, assembled from its parts, each in a file of its own:
 *
 * - `apply.ts` — applying events: compare-and-set over the store, timers and the sweep,
 *   running the effects (pushes, Service requests); the one place a committed transition
 *   is seen (`onCommitted`);
 * - `router.ts` — routing: the agent board, this node's queue, the cross-node channels;
 * - `requests.ts` — client requests: role checks, request → event, presence, agents'
 *   connections coming and going;
 * - `views.ts` — what clients see: `view`, `offered`, `welcome`.
 *
 * `lifecycle.ts` stays the one pure transition function. This file also maps the call
 * signaling webhook events (typed by the workers) to lifecycle events.
 */
import type { Presence, ServerMsg, User } from '../../shared/protocol.ts';
import type { Logger } from '../log/logger.ts';
import type { Conn, Hub } from '../push/hub.ts';
import type { CallRecord, Store } from '../store/store.ts';
import { AgentBoard } from './agents.ts';
import type { QueueAudioSetting } from '../config/queueAudio.ts';
import { queueMedia } from './queueMedia.ts';
import { Applier } from './apply.ts';
import type { AnchorPort, Committed, ServiceCalls, VoicemailSettings } from './ports.ts';
import { fromRecord } from './record.ts';
import { DEFAULT_POLICY, type Call, type CallEvent, type Policy } from './lifecycle.ts';
import { hasLimit, NOT_SET } from './agentState.ts';
import { readWrapDraft, Requests, type CallRequest, type RequestsOptions, type Wrapup } from './requests.ts';
import { Router } from './router.ts';
import { EVERY_AGENT, type Queues } from './routing.ts';
import { isCallSignal, toCallEvent, type CallSignalEvent } from './signals.ts';
import { welcome } from './views.ts';

export type { ServiceCalls } from './ports.ts';
export { CALL_SIGNAL_TYPES, isCallSignal, toCallEvent, type CallSignalEvent } from './signals.ts';
export type { Wrapup } from './requests.ts';
export { offered, view } from './views.ts';

export interface EngineOptions {
  store: Store;
  calls: ServiceCalls;
  hub: Hub;
  log: Logger;
  policy?: Partial<Policy>;
  /** After-call work: ms (default 60 s); 0 = until the agent ends it; `off` = none. */
  wrapUpMs?: number | 'off';
  queues?: Queues;
  board?: AgentBoard;
  now?: () => number;
  /** How long a disconnected agent keeps its ringing offer (reconnect = offer replayed). */
  reconnectGraceMs?: number;
  /**
   * How long a lost socket that holds a call (not a page that left: that ends the call at
   * once) waits for the same page (its `tab`) to reconnect, on any node, before the call is
   * ended (`connLost`). Default 2000: with the terminate, well within 5 s of the loss.
   */
  pageLostGraceMs?: number;
  /** Period of the sweep over stored calls (timers of dead nodes, queued calls). */
  sweepMs?: number;
  /** Set when other nodes share the store (Redis): routing hints go through its pub/sub. */
  shared?: Store;
  /** Known calling permissions: a dial the permission budget refuses (code and words) is not placed. */
  permissions?: { dialRefusal(from: string, user: string): Promise<{ code: string; message: string; params?: Record<string, string | number> } | undefined> };
  /** The Service's phone id of a business number (a dialed call the store could not take is ended with it). */
  phoneIdOf?: (businessNumber: string) => Promise<string | undefined>;
  /** Which business numbers each agent may dial from (QUEUES_FILE, server/auth/scope.ts). */
  numberScope?: RequestsOptions['numberScope'];
  /** Welcomes and call events wait until `start()` has rebuilt the board (the server's wiring; tests without start leave it off). */
  waitForStart?: boolean;
  /** Called once per transition committed to the store (history's recorder hooks in here). */
  onCommitted?: Committed;
  /** Called as an offer is pushed to its agent (the webhook → offer latency metric). */
  onOffered?: (call: Call) => void;
  /** `DISPOSITIONS` / `AWAY_REASONS` (config); defaults as the config's. */
  dispositions?: readonly string[];
  awayReasons?: readonly string[];
  /** A wrap-up was given, or after-call work ran out (`Not set`): history and the contact note. */
  onWrapup?: (w: Wrapup) => void;
  /** MEDIA_MODE=anchor: inbound calls' caller legs go into rooms of this media anchor (server/anchor). */
  anchor?: AnchorPort;
  /** Anchor mode: voicemail (server/calls/voicemail.ts): after VOICEMAIL_AFTER_S unanswered, and out of hours. */
  voicemail?: VoicemailSettings;
  /** Anchor mode: each number's queue audio (`QUEUE_AUDIO_FILE`; undefined: off for that number): server/calls/queueAudio.ts. */
  queueAudio?: (phoneId: string, businessNumber: string) => QueueAudioSetting | undefined;
  /** Business hours (`HOURS_FILE`, server/hours): whether a number is closed at an instant; an inbound call then is refused at once. */
  closedAt?: (phoneId: string, businessNumber: string, at: number) => boolean;
  /** The node beat (server/calls/router.ts): its period, and the silence after which a node is taken for dead (tests shorten them). */
  beatMs?: number;
  nodeLostMs?: number;
  /** Anchor mode: period of the sweep that destroys rooms whose call is over or unknown (a node's crash left them). Default 60 s. */
  roomSweepMs?: number;
}

/** States in which the call's agent holds it (the lifecycle's `agentBusy` until `agentFree`). */
const HOLDING: ReadonlySet<Call['state']> = new Set(['answering', 'dialing', 'connected', 'active', 'ending']);

const DEFAULT_DISPOSITIONS = ['Resolved', 'Follow-up needed', 'Wrong number', 'Escalated', 'Other'];
const DEFAULT_AWAY_REASONS = ['Break', 'Lunch', 'Training', 'Meeting'];

export class CallEngine {
  readonly board: AgentBoard;
  readonly policy: Policy;
  private readonly applier: Applier;
  private readonly router: Router;
  private readonly requests: Requests;
  private readonly store: Store;
  private readonly log: Logger;
  private readonly dispositions: readonly string[];
  private readonly awayReasons: readonly string[];
  private readonly wrapUpMs: number | 'off';
  private readonly now: () => number;
  private readonly anchored: boolean;
  private readonly closedAt: EngineOptions['closedAt'];
  private readonly anchor: AnchorPort | undefined;
  private readonly voicemail: VoicemailSettings | undefined;
  private readonly queueAudio: EngineOptions['queueAudio'];
  private readonly roomSweepMs: number;
  private roomSweepTimer: NodeJS.Timeout | undefined;

  /**
   * Resolved once `start()` rebuilt the board (with `waitForStart`): welcomes and call events
   * wait for it, so a socket that connects to a node still restoring (it listens first) is not
   * welcomed without its call, and no call is routed by a board that does not know who is busy.
   */
  private readonly started: Promise<void>;
  private markStarted: () => void = () => undefined;

  constructor(o: EngineOptions) {
    this.started = o.waitForStart ? new Promise<void>((resolve) => (this.markStarted = resolve)) : Promise.resolve();
    this.anchored = o.anchor !== undefined;
    this.closedAt = o.closedAt;
    this.anchor = o.anchor;
    this.voicemail = o.anchor ? o.voicemail : undefined;
    this.queueAudio = o.anchor ? o.queueAudio : undefined;
    this.roomSweepMs = o.roomSweepMs ?? 60_000;
    const now = o.now ?? Date.now;
    this.now = now;
    this.store = o.store;
    this.log = o.log;
    this.policy = Object.freeze({ ...DEFAULT_POLICY, ...o.policy });
    this.board = o.board ?? new AgentBoard(now);
    this.dispositions = o.dispositions ?? DEFAULT_DISPOSITIONS;
    this.awayReasons = o.awayReasons ?? DEFAULT_AWAY_REASONS;
    this.wrapUpMs = o.wrapUpMs ?? 60_000;
    const apply = (event: CallEvent, known?: CallRecord | null) => this.applier.apply(event, known);
    const hub = o.hub;
    this.router = new Router({
      store: o.store,
      board: this.board,
      queues: o.queues ?? EVERY_AGENT,
      log: o.log,
      now,
      node: o.hub.node,
      shared: o.shared,
      apply,
      // Every tab of the agent, and every supervisor (with the agent's name).
      pushState: (agent, state) => {
        hub.toUser(agent, { type: 'agent.state', ...state });
        hub.toRole('supervisor', { type: 'agents.state', name: agent, ...state });
      },
      wrapTimedOut: (agent, wacid) => this.applier.background('wrap-up timeout', wacid, this.timedOutWrapup(agent, wacid, now(), o.onWrapup)),
      ...(o.beatMs !== undefined ? { beatMs: o.beatMs } : {}),
      ...(o.nodeLostMs !== undefined ? { nodeLostMs: o.nodeLostMs } : {}),
      nodeLost: (node, agents) => {
        void this.applier.sweep(true).catch((err: Error) => this.log.warn({ node, err: err.message }, 'sweep after a lost node failed'));
        void this.ringingOfLostNode(node, agents.length).catch((err: Error) => this.log.warn({ node, err: err.message }, 'calls ringing on a lost node not moved on'));
      },
    });
    this.applier = new Applier({
      store: o.store,
      calls: o.calls,
      hub: o.hub,
      log: o.log,
      policy: this.policy,
      now,
      wrapUpMs: this.wrapUpMs,
      sweepMs: o.sweepMs ?? 2_000,
      routing: () => this.router,
      ...(o.onCommitted ? { onCommitted: o.onCommitted } : {}),
      ...(o.onOffered ? { onOffered: o.onOffered } : {}),
      anchor: o.anchor,
      voicemail: o.voicemail,
      queueMedia: o.anchor && o.queueAudio ? queueMedia({ anchor: o.anchor, store: o.store, settingOf: o.queueAudio, log: o.log }) : undefined,
    });
    this.requests = new Requests({
      store: o.store,
      calls: o.calls,
      hub: o.hub,
      log: o.log,
      now,
      router: this.router,
      apply,
      background: (what, wacid, p) => this.applier.background(what, wacid, p),
      graceMs: o.reconnectGraceMs ?? 4_000,
      pageLostGraceMs: o.pageLostGraceMs ?? 2_000,
      permissions: o.permissions,
      phoneIdOf: o.phoneIdOf,
      numberScope: o.numberScope,
      dispositions: this.dispositions,
      awayReasons: this.awayReasons,
      wrapUpMs: o.wrapUpMs ?? 60_000,
      onWrapup: o.onWrapup,
      anchor: o.anchor,
    });
  }

  /**
   * A node is lost: a call ringing an agent now connected nowhere (it rang on the dead node)
   * moves on after the reconnect grace (a tab reconnecting to a live node keeps it). Read
   * from the store, as `restore()` does, not from this board alone: this node may have missed
   * the `offered` message (it subscribes as it starts), and the call would then ring on to its
   * ring timeout (CI: re-offered 20.8 s after the kill, not ~13.5 s).
   */
  private async ringingOfLostNode(node: string, agents: number): Promise<void> {
    const rang: Record<string, string> = {};
    for (const rec of await this.store.listLiveCalls()) {
      const call = fromRecord(rec);
      if (call.state !== 'ringing' || !call.agent || this.board.view(call.agent).connected || this.board.facts(call.agent).elsewhere.size > 0) continue;
      if (this.board.view(call.agent).ringing !== call.wacid) this.board.offered(call.agent, call.wacid);
      rang[call.agent] = call.wacid;
      this.requests.ringingWithoutConnection(call.agent, call.wacid, call.ringUntil);
    }
    // One line per lost node (not one per agent): how many had connections there, and what rang the ones connected nowhere now.
    this.log.warn({ node, agents, ringing: rang }, 'agents of a lost node');
  }

  /** After-call work ran out with no disposition: `Not set` is recorded (with the call's parties when still stored). */
  private async timedOutWrapup(agent: string, wacid: string, at: number, onWrapup: ((w: Wrapup) => void) | undefined): Promise<void> {
    if (!onWrapup) return;
    const rec = await this.store.getCall(wacid).catch(() => null);
    const call = rec ? fromRecord(rec) : null;
    const customer = call ? (call.direction === 'USER_INITIATED' ? call.from : call.to) : undefined;
    const businessNumber = call ? (call.direction === 'USER_INITIATED' ? call.to : call.from) : undefined;
    // What the agent typed is kept (`call.wrapupDraft`): the countdown ends the wrap-up, never the notes.
    const draft = await readWrapDraft(this.store, wacid, agent);
    onWrapup({ wacid, agent, disposition: NOT_SET, ...(draft?.notes.trim() ? { notes: draft.notes.trim() } : {}), at, customer, businessNumber });
  }

  /**
   * Start: the cross-node channels, the board rebuilt from the stored live calls (a node
   * that starts — after a crash too — knows which agents ring for or hold which call before
   * it routes anything), then the timers and the sweep.
   */
  async start(): Promise<void> {
    void this.router.start().catch((err: Error) => this.log.error({ err: err.message }, 'route channel subscribe failed'));
    for (let attempt = 1; ; attempt++) {
      try {
        await this.restore();
        break;
      } catch (err) {
        // Nothing is routed from a board that does not know who is busy: try until it works.
        this.log.error({ err: (err as Error).message, attempt }, 'agent board not rebuilt from the store; trying again');
        await new Promise((r) => setTimeout(r, Math.min(attempt * 500, 5000)));
      }
    }
    this.applier.start();
    this.markStarted();
    if (this.anchor) {
      this.anchor.onServerLost((url, reason) => void this.roomsLost(url, reason).catch((err: Error) => this.log.error({ janus: url, err: err.message }, 'calls of a lost Janus not ended')));
      this.roomSweepTimer = setInterval(() => void this.sweepRooms().catch((err: Error) => this.log.warn({ err: err.message }, 'room sweep failed')), this.roomSweepMs);
      this.roomSweepTimer.unref();
    }
  }

  /**
   * Anchor mode: a Janus is lost (killed, restarted, unreachable): every live call whose room
   * was there lost its caller's audio, and ends cleanly at the Service saying why. Every node
   * learns it from its own connection; the events are idempotent (compare-and-set).
   */
  async roomsLost(url: string, reason: string): Promise<number> {
    let n = 0;
    for (const rec of await this.store.listLiveCalls()) {
      const call = fromRecord(rec);
      if (call.state === 'ended' || call.anchor?.janus !== url) continue;
      await this.applier.apply({ type: 'roomLost', wacid: call.wacid, at: this.now(), reason: `${url} ${reason}` }, rec);
      n++;
    }
    this.log.warn({ janus: url, calls: n }, 'calls of a lost Janus ended');
    return n;
  }

  /**
   * Anchor mode: destroy the rooms of ours (on every reachable Janus) whose call has ended or
   * is no longer stored — left by a node that crashed before its call's end destroyed them,
   * or a room made twice. A live call still being placed (no room on its record yet) is left
   * alone. Returns how many were destroyed.
   */
  async sweepRooms(): Promise<number> {
    if (!this.anchor) return 0;
    let destroyed = 0;
    for (const r of await this.anchor.rooms()) {
      const rec = await this.store.getCall(r.wacid);
      const call = rec ? fromRecord(rec) : undefined;
      const orphan = !call || call.state === 'ended' || (call.anchor !== undefined && (call.anchor.room !== r.room || call.anchor.janus !== r.janus));
      if (!orphan) continue;
      await this.anchor.closeRoom(call?.anchor?.room === r.room ? r.wacid : `orphan:${r.janus}:${r.room}`, { janus: r.janus, room: r.room });
      destroyed++;
      this.log.info({ wacid: r.wacid, janus: r.janus, room: r.room }, 'orphan room destroyed');
    }
    return destroyed;
  }

  /**
   * Rebuild the board from the live calls in the store: an agent a call rings for rings
   * again here (its offer is in `welcome`), an agent holding one is busy (never offered
   * another). A ringing call whose agent has no connection anywhere moves on after the
   * reconnect grace (`Requests.ringingWithoutConnection`), without counting as a missed call.
   */
  private async restore(): Promise<void> {
    const ringing: Call[] = [];
    for (const rec of await this.store.listLiveCalls()) {
      const call = fromRecord(rec);
      if (!call.agent || call.state === 'ended') continue;
      this.applier.live.add(call.wacid);
      if (call.state === 'ringing') {
        this.board.offered(call.agent, call.wacid);
        ringing.push(call);
      } else if (HOLDING.has(call.state)) {
        this.board.agentBusy(call.agent, call.wacid);
      }
      this.board.observe(call.agent);
    }
    for (const call of ringing) this.requests.ringingWithoutConnection(call.agent!, call.wacid, call.ringUntil);
    if (ringing.length > 0 || this.applier.live.size > 0) this.log.info({ live: this.applier.live.size, ringing: ringing.length }, 'agent board rebuilt from the stored calls');
  }

  close(): void {
    clearInterval(this.roomSweepTimer);
    this.router.close();
    this.applier.close();
    this.requests.close();
  }

  /** Apply one lifecycle event (see `Applier.apply`). */
  apply(event: CallEvent, known?: CallRecord | null): Promise<Call | null> {
    return this.applier.apply(event, known);
  }

  sweep(): Promise<void> {
    return this.applier.sweep();
  }

  /**
   * Handle one call signaling event (`chat.call.connect`, `chat.call.terminate`,
   * `chat.call.status.updated`), as the workers parsed it. `receivedAt` is when the receiver
   * took it: the accept window counts from there (or from dialTime when earlier), not from
   * processing.
   */
  async handleEvent(event: CallSignalEvent, receivedAt: number): Promise<void> {
    await this.started;
    const e = toCallEvent(event, receivedAt);
    // Anchor mode: an inbound call's caller goes into a media room (business-initiated calls stay direct for now).
    if (this.anchored && e.type === 'connect' && e.direction === 'USER_INITIATED') e.media = 'anchor';
    // Anchor mode: voicemail on offer (after VOICEMAIL_AFTER_S unanswered when set; out of hours always).
    const vm = this.voicemail;
    if (vm && e.type === 'connect' && e.media === 'anchor') {
      const afterMs = vm.afterMs?.(e.phoneId, e.to);
      e.voicemail = { ...(afterMs !== undefined ? { afterMs } : {}), maxMs: vm.maxMs, promptMs: vm.promptMs, closedMs: vm.closedMs };
    }
    // Anchor mode: the number's queue audio (the bridge answers at once: greeting, music, place in the queue).
    const qa = e.type === 'connect' && e.media === 'anchor' ? this.queueAudio?.(e.phoneId, e.to) : undefined;
    if (qa && e.type === 'connect') e.queueAudio = { greetingMs: qa.greetingMs, positionEveryMs: qa.positionEveryMs, maxWaitMs: qa.maxWaitMs };
    // Outside the number's business hours (judged at receipt): refused at once, nobody rings.
    if (e.type === 'connect' && e.direction === 'USER_INITIATED' && this.closedAt?.(e.phoneId, e.to, receivedAt)) e.closed = true;
    // A connect is almost always new: created without reading first (one store round trip
    // less before the offer); one already known fails the create and is read and applied.
    await this.applier.apply(e, e.type === 'connect' ? null : undefined);
  }

  async welcome(user: User): Promise<ServerMsg> {
    await this.started;
    // What the agent chose (presence, after-call work), kept in the store: a node that
    // started after the agent's last change knows it from there only.
    if (user.roles.includes('agent')) {
      await this.router.restoreAgent(user.name);
      this.resumeWrap(user.name);
    }
    const msg = await welcome(user, {
      store: this.store,
      board: this.board,
      live: () => this.applier.live,
      getMany: (w) => this.applier.getMany(w),
      fromRecord,
      dispositions: this.dispositions,
      awayReasons: this.awayReasons,
    });
    // In after-call work: what was typed so far, and whom the call was with (a reload keeps both).
    const f = user.roles.includes('agent') ? this.board.facts(user.name) : undefined;
    if (msg.type === 'welcome' && f?.wrapWacid && f.wrapUntil > this.now()) {
      const [draft, rec] = await Promise.all([readWrapDraft(this.store, f.wrapWacid, user.name), this.store.getCall(f.wrapWacid).catch(() => null)]);
      const call = rec ? fromRecord(rec) : undefined;
      const caller = call ? (call.direction === 'USER_INITIATED' ? call.from : call.to) : undefined;
      msg.wrapDraft = {
        wacid: f.wrapWacid,
        ...(caller ? { caller } : {}),
        ...(draft?.disposition ? { disposition: draft.disposition } : {}),
        ...(draft ? { notes: draft.notes } : {}),
      };
    }
    return msg;
  }

  /**
   * The agent's first page here again during after-call work (a reload, a crashed tab, a
   * call ended because its page went): the countdown ran while the agent had no page to type
   * in, so it starts again in full — once per wrap-up (a second reload gets nothing more).
   */
  private resumeWrap(agent: string): void {
    const f = this.board.facts(agent);
    const now = this.now();
    if (!f.wrapWacid || f.wrapResumed || typeof this.wrapUpMs !== 'number' || !hasLimit(f.wrapUntil) || f.wrapUntil <= now) return;
    if (this.board.connectionsHere(agent) !== 1) return; // another page of the agent's was there all along
    this.router.wrapExtend(agent, f.wrapWacid, Math.max(f.wrapUntil, now + this.wrapUpMs), 'page');
  }

  /** Queues or agents changed (the admin page): waiting calls are offered again by the new rules. */
  routingChanged(): void {
    this.router.routeQueuedSoon();
  }

  /** The user logged out: an agent goes away (the next login runs the ready-check before Available). */
  loggedOut(user: User): void {
    if (user.roles.includes('agent') && this.board.presence(user.name) === 'available') this.router.presence(user.name, 'away');
  }

  agentConnected(conn: Conn): void {
    this.requests.agentConnected(conn);
  }

  /**
   * A socket closed: `left` — the page went (its `pagehide` close, or the browser's going-away);
   * `lost` — anything else but our own stop (the same page may reconnect); `node-stopping` —
   * this node is shutting down (the page reconnects elsewhere with its call intact).
   */
  agentDisconnected(conn: Conn, how: 'left' | 'lost' | 'node-stopping' = 'lost'): void {
    if (how !== 'node-stopping') this.requests.holderClosed(conn, how === 'left');
    this.requests.agentDisconnected(conn);
  }

  setPresence(user: User, status: Presence, conn: Conn, reqId: string, reason?: string): void {
    this.requests.setPresence(user, status, conn, reqId, reason);
  }

  /** A call request from a client (answer, decline, hangup, dial). */
  request(conn: Conn, msg: CallRequest): Promise<void> {
    return this.requests.request(conn, msg);
  }
}
