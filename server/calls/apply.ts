/**
 * Applying events: the thin service around the pure lifecycle (`lifecycle.ts`).
 *
 * `apply(event)` reads the call record, runs `transition`, writes the result with
 * compare-and-set (re-reading and re-applying when another writer won), and only then runs
 * the effects: socket pushes through the hub, Service requests (preAccept + accept,
 * reject, terminate), and agent changes / routing handed to the router. Nothing here
 * decides what a call's next state is.
 *
 * Time is an input too: one timer per call at `nextDue`, and a sweep that also picks up
 * calls whose timer lived on a node that died.
 */
import type { ServerMsg } from '../../shared/protocol.ts';
import { clip, LIMITS } from '../../shared/limits.ts';
import type { Logger } from '../log/logger.ts';
import type { Hub } from '../push/hub.ts';
import { describeCallError } from '../../shared/callErrors.ts';
import { describeServiceError, OutcomeUnknownError, ServiceError } from '../service/errors.ts';
import type { Calls } from '../service/resources/calls.ts';
import type { CallRecord, Store } from '../store/store.ts';
import { handingOff, nextDue, transition, type Call, type CallEvent, type Effect, type Policy } from './lifecycle.ts';
import { offered, view } from './views.ts';
import { NO_LIMIT } from './agentState.ts';
import type { MediaAnchor } from '../anchor/anchor.ts';
import { readFile, unlink } from 'node:fs/promises';
import { mjrToOgg } from '../anchor/mjr.ts';
import type { QueueMedia } from './queueAudio.ts';
import { watchSilence } from './voicemail-silence.ts';

export type ServiceCalls = Pick<Calls, 'preAccept' | 'accept' | 'reject' | 'terminate' | 'connect'>;

/** What the engine needs of the media anchor (server/anchor, MEDIA_MODE=anchor). */
export type AnchorPort = Pick<
  MediaAnchor,
  | 'openRoom'
  | 'joinCaller'
  | 'agentOffer'
  | 'agentAnswer'
  | 'closeRoom'
  | 'rooms'
  | 'playMusic'
  | 'stopMusic'
  | 'setAgentMuted'
  | 'onServerLost'
  | 'dropAgent'
  | 'openConsult'
  | 'moveAgent'
  | 'closeConsult'
  | 'playPrompt'
  | 'recordCaller'
  | 'stopRecordingCaller'
  | 'recordingPath'
  | 'holds'
  | 'playFile'
  | 'stopFile'
>;

/**
 * Voicemail (anchor mode, server/calls/voicemail.ts): what the caller hears, how long each is,
 * when an unanswered call goes to it, and where a message goes (the archive, by the wiring).
 */
export interface VoicemailSettings {
  /** VOICEMAIL_AFTER_S in ms for a call's number (server/config/voicemail.ts); undefined: only out of hours. */
  afterMs?: ((phoneId: string, businessNumber: string) => number | undefined) | undefined;
  maxMs: number;
  promptFile: string;
  promptMs: number;
  /** The closed greeting followed by the prompt (one file), and its length. */
  closedFile: string;
  closedMs: number;
  /** VOICEMAIL_SILENCE_S in ms: the message ends after this long without the caller's voice (server/calls/voicemail-silence.ts); undefined: only at VOICEMAIL_MAX_S. */
  silenceMs?: number | undefined;
  /** Keep a message (Ogg/Opus): the archive, history's media row, the call-back task's link. */
  save(wacid: string, ogg: Buffer): Promise<void>;
}

/** What applying needs of routing (`router.ts`): the `route` effect and agent changes. */
export interface RoutingPort {
  route(wacid: string, announce: boolean, known?: CallRecord | null): Promise<boolean>;
  agentChange(change: AgentChange): void;
  /** Anchor mode: offer a transferred call: its target, else `prefer` (the first agent) when available, else the queue. */
  routeTransfer(wacid: string, prefer?: string): Promise<boolean>;
  /** The call's place in this node's queue follows its committed state. */
  track(call: Call): void;
  /** A queued call the sweep found (another node's, or one this node forgot): route it. */
  adopt(call: Call): void;
}

/**
 * One vocabulary for agent changes, from the lifecycle's effects to the board (and to the
 * other nodes' boards): the effect's own kind, with the call it is about.
 */
export type AgentChange =
  | { kind: 'offered'; agent: string; wacid: string }
  | { kind: 'agentBusy'; agent: string; wacid: string }
  | { kind: 'agentFree'; agent: string; wacid: string; wrapUntil: number; at?: number }
  | { kind: 'agentNoAnswer'; agent: string; wacid: string }
  | { kind: 'revoke'; agent: string; wacid: string };

/** A stored transition, with the record's version after it (history orders call facts by it). */
export type Committed = (before: Call | null, after: Call, event: CallEvent, version: number) => void;

/** What the call engine publishes on the call bus (server/events/bus.ts): each stored transition, behind its effects. */
export type CallBusEvents = { committed: Parameters<Committed> };

export interface ApplierOptions {
  store: Store;
  calls: ServiceCalls;
  hub: Hub;
  log: Logger;
  policy: Policy;
  now: () => number;
  /** After-call work: ms; 0 = until the agent ends it; `off` = none. */
  wrapUpMs: number | 'off';
  sweepMs: number;
  routing: () => RoutingPort;
  onCommitted?: Committed;
  onOffered?: (call: Call) => void;
  /** MEDIA_MODE=anchor: the media anchor the `anchor`, `agentLeg` and `closeRoom` effects drive. */
  anchor?: AnchorPort | undefined;
  /** Anchor mode: voicemail's sounds and where messages go (`voicemailStart` / `voicemailSave`). */
  voicemail?: VoicemailSettings | undefined;
  /** Anchor mode: queue audio's sounds (`queueGreeting`, `queuePosition`, `queueAudioStop`: server/calls/queueMedia.ts). */
  queueMedia?: QueueMedia | undefined;
}

/** Voicemail: the message is kept from this long before the prompt's end (the prompt starts a moment after the recording). */
const PROMPT_SLACK_MS = 300;

/** Records live this long after their last change (ended ones must outlast late connects). */
const LIVE_TTL_MS = 4 * 3600 * 1000;
/** An ended call's record is only history (supervisors, late duplicates): one hour. */
const ENDED_TTL_MS = 3600 * 1000;
/** A tombstone must outlive the Service's retries of the late connect (~6 h of schedule). */
const TOMBSTONE_TTL_MS = 8 * 3600 * 1000;
/** Every this many sweeps, scan all stored calls (other nodes' calls, timers of dead nodes). */
const FULL_SWEEP_EVERY = 15;
const MAX_CAS_ATTEMPTS = 20;
/**
 * A reject or terminate gives up this long before the call's next step is due (its retry,
 * or the end by timer): the retry, on whichever node, never goes while it is still in flight.
 */
const SIGNAL_MARGIN_MS = 500;

export class Applier {
  /** Calls this node has seen live (not ended); the cheap sweep and `welcome` look here. */
  readonly live = new Set<string>();
  private readonly timers = new Map<string, { at: number; t: NodeJS.Timeout }>();
  /** Rejects / terminates in flight from this node (`kind wacid`): never a second alongside. */
  private readonly signalling = new Set<string>();
  /** Voicemail: the silence watch of each message this node records (stopped when it is saved). */
  private readonly silenceWatches = new Map<string, () => void>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeps = 0;
  private closed = false;
  /** Committed transitions whose hook has not run yet (it runs after their effects, in commit order). */
  private readonly commits: Array<Parameters<Committed>> = [];

  constructor(private readonly o: ApplierOptions) {}

  start(): void {
    this.sweepTimer = setInterval(() => void this.sweep().catch((err: Error) => this.o.log.warn({ err: err.message }, 'sweep failed')), this.o.sweepMs);
    this.sweepTimer.unref();
  }

  close(): void {
    this.closed = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    for (const { t } of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    for (const stop of this.silenceWatches.values()) stop();
    this.silenceWatches.clear();
  }

  /**
   * Apply one event atomically and run its effects. Returns the call as stored after it.
   * `known`: the record as the caller just read or wrote it (saves a store round trip; a
   * stale one only costs a failed compare-and-set and a re-read).
   */
  async apply(event: CallEvent, known?: CallRecord | null): Promise<Call | null> {
    const { store, policy } = this.o;
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const rec = attempt === 0 && known !== undefined ? known : await store.getCall(event.wacid);
      const before = rec ? fromRecord(rec) : null;
      const { call, effects } = transition(before, event, policy);
      if (call === before) {
        await this.run(call, effects, rec);
        return call;
      }
      const after = call!;
      const ttl = after.state !== 'ended' ? LIVE_TTL_MS : after.tombstone ? TOMBSTONE_TTL_MS : ENDED_TTL_MS;
      const next = toRecord(after, rec?.version ?? 0);
      const stored = rec === null ? ((await store.createCall(next, ttl)) ? next : null) : await store.casCall(event.wacid, rec.version, next, ttl);
      if (stored) {
        this.committed(before, after, event, stored.version);
        await this.run(after, effects, stored);
        return after;
      }
      // Another writer (worker, tab, node) changed the call first: re-read and re-apply.
    }
    this.o.log.error({ wacid: event.wacid, event: event.type }, 'call update kept conflicting; event dropped');
    return null;
  }

  /**
   * A transition was committed to the store (before its effects run): this node's view of
   * live calls, routing and timers follow it now; the hook (history, the callback queue,
   * budgets, monitors, the wallboard) runs behind the effects — an offer is pushed before
   * anything that can wait — in commit order, and a hook that throws is logged, never
   * costing the call its effects.
   */
  private committed(before: Call | null, after: Call, event: CallEvent, version: number): void {
    if (after.state === 'ended') this.live.delete(after.wacid);
    else this.live.add(after.wacid);
    this.o.routing().track(after);
    this.schedule(after);
    if (!this.o.onCommitted) return;
    if (this.commits.length === 0) setImmediate(() => this.runHooks());
    this.commits.push([before, after, event, version]);
  }

  private runHooks(): void {
    for (const c of this.commits.splice(0)) {
      try {
        this.o.onCommitted!(...c);
      } catch (err) {
        this.o.log.error({ wacid: c[1].wacid, err: (err as Error).message }, 'commit hook failed');
      }
    }
  }

  private schedule(call: Call): void {
    const due = nextDue(call, this.o.policy);
    const cur = this.timers.get(call.wacid);
    if (cur && cur.at === due) return;
    if (cur) clearTimeout(cur.t);
    this.timers.delete(call.wacid);
    if (due === undefined || this.closed) return;
    const t = setTimeout(() => {
      this.timers.delete(call.wacid);
      void this.apply({ type: 'tick', wacid: call.wacid, at: this.o.now() }).catch((err: Error) =>
        this.o.log.warn({ wacid: call.wacid, err: err.message }, 'timer failed'),
      );
    }, Math.max(0, due - this.o.now()) + 5);
    t.unref();
    this.timers.set(call.wacid, { at: due, t });
  }

  /**
   * Fire overdue timers and route waiting calls. Usually over the calls this node knows;
   * every FULL_SWEEP_EVERY-th time over every stored call (calls of other nodes, timers of
   * a node that died), because that scan grows with the call history.
   */
  async sweep(): Promise<void> {
    const now = this.o.now();
    const full = this.sweeps++ % FULL_SWEEP_EVERY === 0;
    const recs = full ? await this.o.store.listLiveCalls() : await this.getMany([...this.live]);
    for (const rec of recs) {
      const call = fromRecord(rec);
      if (call.state === 'ended') {
        this.live.delete(call.wacid);
        continue;
      }
      this.live.add(call.wacid);
      const due = nextDue(call, this.o.policy);
      if (due !== undefined && due + 250 <= now) await this.apply({ type: 'tick', wacid: call.wacid, at: now });
      else if (call.state === 'queued' || (handingOff(call) && call.nextAgent === undefined)) this.o.routing().adopt(call);
    }
  }

  /** Records of these calls (expired ones are forgotten). */
  async getMany(wacids: string[]): Promise<CallRecord[]> {
    const out = await Promise.all(wacids.map((w) => this.o.store.getCall(w)));
    wacids.forEach((w, i) => {
      if (!out[i]) this.live.delete(w); // expired
    });
    return out.filter((r): r is CallRecord => r !== null);
  }

  // ---- effects --------------------------------------------------------------------------

  private async run(call: Call | null, effects: Effect[], stored: CallRecord | null): Promise<void> {
    // Routing last: it applies a newer state (ringing) and pushes it; a `notify` of this
    // (older, queued) state sent after it would overwrite ringing on the supervisors' screens
    // (and, for a transfer ringing back the agent who handed it on, end that agent's ring).
    const routes = (e: Effect) => e.kind === 'route' || e.kind === 'routeTransfer';
    const ordered = [...effects.filter((e) => !routes(e)), ...effects.filter(routes)];
    for (const e of ordered) {
      try {
        await this.effect(call, e, stored);
      } catch (err) {
        this.o.log.error({ wacid: call?.wacid, effect: e.kind, err: (err as Error).message }, 'effect failed');
      }
    }
  }

  private async effect(call: Call | null, e: Effect, stored: CallRecord | null): Promise<void> {
    const { hub } = this.o;
    if (e.kind === 'reply') {
      hub.toConn(e.conn, e.ok ? ({ type: 'ack', id: e.reqId, ...(e.result ?? {}) } as ServerMsg) : { type: 'error', id: e.reqId, code: e.code, message: e.message });
      return;
    }
    if (!call) return;
    const wacid = call.wacid;
    switch (e.kind) {
      case 'route':
        await this.o.routing().route(wacid, true, stored);
        return;
      case 'offer':
        // Every node's board learns the agent rings now (this node reserved it already; the
        // others would otherwise offer the same agent a second call).
        this.o.routing().agentChange({ kind: 'offered', agent: e.agent, wacid });
        hub.toUser(e.agent, offered(call));
        this.o.onOffered?.(call);
        return;
      case 'revoke':
        // The agent's own answer revokes the offer on its other tabs: the agent goes from
        // ringing straight to on the call (`agentBusy` follows), never "available" between.
        // An ended call keeps the agent it rang (the caller hung up while it rang): that agent
        // holds nothing, so the boards must drop the ringing, or it never rings again.
        const answeredByThem = call.agent === e.agent && call.state !== 'queued' && call.state !== 'ringing' && call.state !== 'ended';
        if (!answeredByThem) this.o.routing().agentChange({ kind: 'revoke', agent: e.agent, wacid });
        hub.toUser(e.agent, { type: 'call.revoked', wacid, reason: e.reason }, e.exceptConn);
        return;
      case 'notify': {
        const msg: ServerMsg = { type: 'call.state', ...view(call) };
        if (call.agent) hub.toUser(call.agent, msg);
        // A transfer under way: the agent who handed it on sees where it is.
        if (call.transfer && call.transfer.by !== call.agent) hub.toUser(call.transfer.by, msg);
        // A consult's target, the conference's other agents, and an agent who just left see it too.
        const others = new Set([call.consult?.target, ...(call.conference ?? []).map((m) => m.agent), e.also]);
        for (const name of others) if (name !== undefined && name !== call.agent) hub.toUser(name, msg);
        hub.toRole('supervisor', msg);
        return;
      }
      case 'remoteAnswer':
        hub.toUser(e.agent, { type: 'call.remoteAnswer', wacid, sdp: e.sdp });
        return;
      case 'agentBusy':
        this.o.routing().agentChange({ kind: 'agentBusy', agent: e.agent, wacid });
        return;
      case 'agentFree': {
        const at = this.o.now();
        this.o.routing().agentChange({ kind: 'agentFree', agent: e.agent, wacid, wrapUntil: !e.wrapUp || this.o.wrapUpMs === 'off' ? 0 : this.o.wrapUpMs === 0 ? NO_LIMIT : at + this.o.wrapUpMs, at });
        // The board's new state (after-call work with its countdown) is pushed by the router.
        return;
      }
      case 'agentNoAnswer':
        hub.toUser(e.agent, { type: 'presence', presence: 'away' });
        // The router then pushes `agent.state` away with reason `Missed a call` (why, for the page).
        this.o.routing().agentChange({ kind: 'agentNoAnswer', agent: e.agent, wacid });
        return;
      case 'accept':
        // Not awaited: the Service round trips must not hold up the event that claimed the call.
        this.background('accept', call.wacid, this.accept(call, e.sdp));
        return;
      case 'reject':
        this.background('reject', call.wacid, this.signal('reject', call));
        return;
      case 'terminate':
        this.background('terminate', call.wacid, this.signal('terminate', call));
        return;
      case 'anchor':
        this.background('anchor', call.wacid, this.openRoom(call));
        return;
      case 'callerLeg':
        this.background('callerLeg', call.wacid, this.joinCaller(call));
        return;
      case 'agentLeg':
        this.background('agentLeg', call.wacid, this.agentLeg(call, e.agent, e.conn, e.consult === true));
        return;
      case 'leaveRoom':
        if (this.o.anchor) this.background('leaveRoom', call.wacid, this.o.anchor.dropAgent(call.wacid, call.anchor, e.agent));
        return;
      case 'music':
        if (this.o.anchor) this.background('music', call.wacid, e.on ? this.o.anchor.playMusic(call.wacid, call.anchor) : this.o.anchor.stopMusic(call.wacid, call.anchor));
        return;
      case 'consult':
        // Awaited: the consult room must exist before the target's answer asks for a leg into it.
        await this.consult(call, e.agent);
        return;
      case 'moveAgent':
        // Awaited: the consult room is destroyed by a later effect of the same transition, and an
        // agent still in it then would be dropped from every room (measured: the caller heard nobody).
        if (this.o.anchor) await this.o.anchor.moveAgent(call.wacid, e.agent, e.to, call.anchor);
        return;
      case 'closeConsult':
        if (this.o.anchor) this.background('closeConsult', call.wacid, this.o.anchor.closeConsult(call.wacid));
        return;
      case 'routeTransfer':
        await this.o.routing().routeTransfer(wacid, e.prefer);
        return;
      case 'closeRoom':
        if (this.o.anchor) this.background('closeRoom', call.wacid, this.o.anchor.closeRoom(call.wacid, { janus: e.janus, room: e.room }));
        return;
      case 'roomMusic': // the caller waits (hold, the agent's page away): Janus plays the music, or stops
        if (this.o.anchor) this.background('roomMusic', call.wacid, this.o.anchor[e.on ? 'playMusic' : 'stopMusic'](call.wacid, { janus: e.janus, room: e.room }));
        return;
      case 'agentMuted': // hold: the agent out of the caller's mix, or back
        if (this.o.anchor) this.background('agentMuted', call.wacid, this.o.anchor.setAgentMuted(call.wacid, e.agent, e.muted, { janus: e.janus, room: e.room }));
        return;
      case 'queueGreeting':
      case 'queuePosition':
      case 'queueAudioStop':
        if (this.o.queueMedia) this.background(e.kind, call.wacid, this.o.queueMedia.run(call, e));
        return;
      case 'voicemailStart':
        this.background('voicemailStart', call.wacid, this.voicemailStart(call, e.closed, { janus: e.janus, room: e.room }));
        return;
      case 'voicemailSave':
        this.silenceWatches.get(call.wacid)?.();
        this.silenceWatches.delete(call.wacid);
        // The recording stops before the room closes (the next effect), then the message is made and kept.
        // Another node holds the caller's leg (the terminate came here): destroying the room closes its recording.
        if (this.o.anchor) await (this.o.anchor.holds(call.wacid) ? this.o.anchor.stopRecordingCaller(call.wacid) : this.o.anchor.closeRoom(call.wacid, { janus: e.janus, room: e.room }));
        if (e.keep) this.background('voicemailSave', call.wacid, this.voicemailSave(call));
        else if (this.o.anchor) await unlink(this.o.anchor.recordingPath(call.wacid)).catch(() => undefined); // no message: the recording goes
        return;
    }
  }

  /** Voicemail: the caller's own audio recorded (Janus, on the node that joined the caller), and the prompt played. */
  private async voicemailStart(call: Call, closed: boolean, where: { janus: string; room: number }): Promise<void> {
    const vm = this.o.voicemail;
    if (!this.o.anchor || !vm) throw new Error('voicemail is not set up on this node');
    await this.o.anchor.recordCaller(call.wacid);
    if (vm.silenceMs !== undefined) {
      this.silenceWatches.get(call.wacid)?.();
      const wacid = call.wacid;
      const stop = watchSilence({
        path: this.o.anchor.recordingPath(wacid),
        leadMs: closed ? vm.closedMs : vm.promptMs,
        silenceMs: vm.silenceMs,
        onSilent: () => {
          this.silenceWatches.delete(wacid);
          this.o.log.info({ wacid }, 'voicemail: the caller is silent; the message ends');
          this.background('voicemailSilent', wacid, this.apply({ type: 'voicemailSilent', wacid, at: this.o.now() }));
        },
        onError: (err) => this.o.log.warn({ wacid, err: err.message }, 'voicemail: the recording could not be measured'),
      });
      this.silenceWatches.set(wacid, stop);
    }
    await this.o.anchor.playPrompt(call.wacid, closed ? vm.closedFile : vm.promptFile, where);
    this.o.log.info({ wacid: call.wacid, closed }, 'voicemail: prompt playing, recording the caller');
  }

  /** Voicemail: Janus's recording of the caller made Ogg/Opus and kept; the raw recording removed. */
  private async voicemailSave(call: Call): Promise<void> {
    const vm = this.o.voicemail;
    if (!this.o.anchor || !vm) throw new Error('voicemail is not set up on this node');
    const path = this.o.anchor.recordingPath(call.wacid);
    // The recording starts with the prompt (recorded from the accept, so nothing after the tone is lost): the message is what follows it.
    const leadMs = call.voicemail?.closed ? vm.closedMs : vm.promptMs;
    const ogg = mjrToOgg(await readFile(path), `voicemail ${call.wacid} from ${call.from}`, Math.max(0, leadMs - PROMPT_SLACK_MS));
    await vm.save(call.wacid, ogg);
    await unlink(path).catch(() => undefined);
    this.o.log.info({ wacid: call.wacid, bytes: ogg.length }, 'voicemail: message archived');
  }

  /** Anchor mode: a room for the call (`anchored`, or `anchorFailed`: the call is refused). */
  private async openRoom(call: Call): Promise<void> {
    const at = () => this.o.now();
    try {
      if (!this.o.anchor) throw new Error('no media anchor on this node');
      const r = await this.o.anchor.openRoom(call.wacid);
      await this.apply({ type: 'anchored', wacid: call.wacid, at: at(), janus: r.janus, room: r.room });
    } catch (err) {
      await this.apply({ type: 'anchorFailed', wacid: call.wacid, at: at(), reason: clip((err as Error).message, LIMITS.reason) });
    }
  }

  /** Anchor mode: the caller joins the room with the Service's offer; Janus's answer comes back as `callerJoined`. */
  private async joinCaller(call: Call): Promise<void> {
    const at = () => this.o.now();
    const t0 = performance.now();
    try {
      if (!this.o.anchor || call.offerSdp === undefined) throw new Error('no media anchor on this node');
      const sdp = await this.o.anchor.joinCaller(call.wacid, call.offerSdp, call.anchor);
      this.o.log.info({ wacid: call.wacid, janus: call.anchor?.janus, room: call.anchor?.room, ms: Math.round(performance.now() - t0) }, 'caller joined the anchor room');
      await this.apply({ type: 'callerJoined', wacid: call.wacid, at: at(), sdp });
    } catch (err) {
      await this.apply({ type: 'anchorFailed', wacid: call.wacid, at: at(), reason: clip((err as Error).message, LIMITS.reason) });
    }
  }

  /** Anchor mode: Janus's offer for the agent's own leg, to the connection that answered (`call.legOffer`). */
  private async agentLeg(call: Call, agent: string, conn: string, consult = false): Promise<void> {
    try {
      if (!this.o.anchor) throw new Error('no media anchor on this node');
      const sdp = await this.o.anchor.agentOffer(call.wacid, agent, call.anchor, consult);
      this.o.hub.toConn(conn, { type: 'call.legOffer', wacid: call.wacid, sdp });
    } catch (err) {
      await this.apply({ type: 'legFailed', wacid: call.wacid, at: this.o.now(), agent, reason: clip((err as Error).message, LIMITS.reason) });
    }
  }

  /** Anchor mode, a warm transfer: the consult room, and the holder's leg moved into it (`consultFailed` if not). */
  private async consult(call: Call, agent: string): Promise<void> {
    try {
      if (!this.o.anchor) throw new Error('no media anchor on this node');
      await this.o.anchor.openConsult(call.wacid, call.anchor);
      await this.o.anchor.moveAgent(call.wacid, agent, 'consult', call.anchor);
    } catch (err) {
      await this.apply({ type: 'consultFailed', wacid: call.wacid, at: this.o.now(), reason: clip((err as Error).message, LIMITS.reason) });
    }
  }

  /**
   * The one error path for call work nobody awaits (effects that run after their event, an
   * agent's grace running out): a failure — the store timing out while an outcome is recorded
   * — is logged, never left as an unhandled rejection that would end the process. The call's
   * timers and the sweep settle what was not recorded.
   */
  background(what: string, wacid: string, p: Promise<unknown>): void {
    p.catch((err: unknown) => this.o.log.warn({ wacid, err: (err as Error)?.message ?? String(err) }, `${what} failed in the background`));
  }

  /** preAccept, then accept with the very same SDP; the outcome comes back as an event. */
  private async accept(call: Call, sdp: string): Promise<void> {
    const input = { phoneId: call.phoneId, wacid: call.wacid, sdpType: 'answer' as const, sdp };
    const opts = call.deadline !== undefined ? { deadline: call.deadline } : {};
    const at = () => this.o.now();
    try {
      await this.o.calls.preAccept(input, opts);
    } catch (err) {
      // preAccept is optional: if its outcome is unknown, accept with the same SDP is still right.
      if (!(err instanceof OutcomeUnknownError)) {
        await this.apply({ type: 'acceptRefused', wacid: call.wacid, at: at(), ...refusal(err) });
        return;
      }
      this.o.log.warn({ wacid: call.wacid }, 'preAccept outcome unknown; accepting with the same SDP');
    }
    try {
      await this.o.calls.accept(input, opts);
      await this.apply({ type: 'acceptOk', wacid: call.wacid, at: at() });
    } catch (err) {
      if (err instanceof OutcomeUnknownError) await this.apply({ type: 'acceptUnknown', wacid: call.wacid, at: at() });
      else await this.apply({ type: 'acceptRefused', wacid: call.wacid, at: at(), ...refusal(err) });
    }
  }

  /**
   * A reject or terminate. Its outcome arrives as the terminate event; when none comes the
   * lifecycle sends it again (`terminateRetryDue`). Two of them never overlap: this one gives
   * up before the call's next step is due (a POST without an answer by then counts as
   * unknown, and the missing terminate event is the reconciliation), and while one is in
   * flight from this node no second goes.
   */
  private async signal(kind: 'reject' | 'terminate', call: Call): Promise<void> {
    const key = `${kind} ${call.wacid}`;
    if (this.signalling.has(key)) {
      this.o.log.warn({ wacid: call.wacid }, `${kind} still in flight: not sent again`);
      return;
    }
    const due = nextDue(call, this.o.policy);
    const margin = Math.min(SIGNAL_MARGIN_MS, this.o.policy.terminateRetryMs / 2);
    this.signalling.add(key);
    try {
      await this.o.calls[kind]({ phoneId: call.phoneId, wacid: call.wacid }, due !== undefined ? { deadline: due - margin } : {});
      this.o.log.info({ wacid: call.wacid }, `${kind} sent`);
    } catch (err) {
      // The state already waits for the terminate event, with a timer; log and go on.
      this.o.log.warn({ wacid: call.wacid, err: (err as Error).message, code: (err as ServiceError).code }, `${kind} failed`);
    } finally {
      this.signalling.delete(key);
    }
  }
}

// ---- the stored record ------------------------------------------------------------------

export function fromRecord(rec: CallRecord): Call {
  if (!holdsCall(rec)) throw new Error(`call ${rec.wacid}: the stored record is not a call (no state, direction, from or to)`);
  const { version: _v, ...call } = rec;
  return call;
}

/** A record `toRecord` wrote: the store keeps plain JSON, the engine the call it came from. */
function holdsCall(rec: CallRecord): rec is CallRecord & Call {
  return typeof rec.state === 'string' && typeof rec.direction === 'string' && typeof rec.from === 'string' && typeof rec.to === 'string';
}

export function toRecord(call: Call, version: number): CallRecord {
  // JSON drops undefined fields, so cleared fields really disappear from the store.
  return { ...(JSON.parse(JSON.stringify(call)) as Call), version };
}

/**
 * The Service's reason for a refusal, in words for the agent (never secrets: the client
 * scrubs). It ends up in frames, so it is clipped to the frames' limits.
 */
export function refusal(err: unknown): { code: string; reason: string } {
  if (err instanceof ServiceError) {
    // The provider's numeric code (138xxx) when the Service passed one on: the page words it.
    const provider = (err.details as { code?: unknown } | undefined)?.code;
    const code = typeof provider === 'number' || (typeof provider === 'string' && /^\d{1,9}$/.test(provider)) ? String(provider) : err.code;
    // A 138xxx code we have words for leads the reason (the Service's own text follows).
    const words = describeCallError(code);
    const said = describeServiceError(err);
    return { code: clip(code, LIMITS.word), reason: clip(words ? `${words} — ${said}` : said, LIMITS.reason) };
  }
  return { code: 'INTERNAL', reason: clip((err as Error)?.message ?? 'unknown error', LIMITS.reason) };
}
