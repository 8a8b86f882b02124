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
import { unlink } from 'node:fs/promises';
import type { CallRecord } from '../store/store.ts';
import { handingOff, nextDue, transition, type Call, type CallEvent, type Effect } from './lifecycle.ts';
import { offered, view } from './views.ts';
import { NO_LIMIT } from './agentState.ts';
import { AnchorWork } from './anchorWork.ts';
import type { ApplierOptions, Committed } from './ports.ts';
import { fromRecord, toRecord } from './record.ts';
import { ServiceRequests } from './serviceRequests.ts';

/** Records live this long after their last change (ended ones must outlast late connects). */
const LIVE_TTL_MS = 4 * 3600 * 1000;
/** An ended call's record is only history (supervisors, late duplicates): one hour. */
const ENDED_TTL_MS = 3600 * 1000;
/** A tombstone must outlive the Service's retries of the late connect (~6 h of schedule). */
const TOMBSTONE_TTL_MS = 8 * 3600 * 1000;
/** Every this many sweeps, scan all stored calls (other nodes' calls, timers of dead nodes). */
const FULL_SWEEP_EVERY = 15;
const MAX_CAS_ATTEMPTS = 20;

export class Applier {
  /** Calls this node has seen live (not ended); the cheap sweep and `welcome` look here. */
  readonly live = new Set<string>();
  private readonly timers = new Map<string, { at: number; t: NodeJS.Timeout }>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private sweeps = 0;
  private closed = false;
  /** Committed transitions whose hook has not run yet (it runs after their effects, in commit order). */
  private readonly commits: Array<Parameters<Committed>> = [];

  private readonly anchorWork: AnchorWork;
  private readonly requests: ServiceRequests;

  constructor(private readonly o: ApplierOptions) {
    this.anchorWork = new AnchorWork(o, (event) => this.apply(event), (what, wacid, p) => this.background(what, wacid, p));
    this.requests = new ServiceRequests(o, (event) => this.apply(event));
  }

  start(): void {
    this.sweepTimer = setInterval(() => void this.sweep().catch((err: Error) => this.o.log.warn({ err: err.message }, 'sweep failed')), this.o.sweepMs);
    this.sweepTimer.unref();
  }

  close(): void {
    this.closed = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    for (const { t } of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    this.anchorWork.close();
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
   * a node that died), because that scan grows with the call history; `everyCall` at once
   * (another node died: `Router`'s `nodeLost`).
   */
  async sweep(everyCall = false): Promise<void> {
    const now = this.o.now();
    const full = this.sweeps++ % FULL_SWEEP_EVERY === 0 || everyCall;
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
        this.background('accept', call.wacid, this.requests.accept(call, e.sdp));
        return;
      case 'reject':
        this.background('reject', call.wacid, this.requests.signal('reject', call));
        return;
      case 'terminate':
        this.background('terminate', call.wacid, this.requests.signal('terminate', call));
        return;
      case 'anchor':
        this.background('anchor', call.wacid, this.anchorWork.openRoom(call));
        return;
      case 'callerLeg':
        this.background('callerLeg', call.wacid, this.anchorWork.joinCaller(call));
        return;
      case 'agentLeg':
        this.background('agentLeg', call.wacid, this.anchorWork.agentLeg(call, e.agent, e.conn, e.consult === true));
        return;
      case 'leaveRoom':
        if (this.o.anchor) this.background('leaveRoom', call.wacid, this.o.anchor.dropAgent(call.wacid, call.anchor, e.agent));
        return;
      case 'music':
        if (this.o.anchor) this.background('music', call.wacid, e.on ? this.o.anchor.playMusic(call.wacid, call.anchor) : this.o.anchor.stopMusic(call.wacid, call.anchor));
        return;
      case 'consult':
        // Awaited: the consult room must exist before the target's answer asks for a leg into it.
        await this.anchorWork.consult(call, e.agent);
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
        this.background('voicemailStart', call.wacid, this.anchorWork.voicemailStart(call, e.closed, { janus: e.janus, room: e.room }));
        return;
      case 'voicemailSave':
        this.anchorWork.stopSilenceWatch(call.wacid);
        // The recording stops before the room closes (the next effect), then the message is made and kept.
        // Another node holds the caller's leg (the terminate came here): destroying the room closes its recording.
        if (this.o.anchor) await (this.o.anchor.holds(call.wacid) ? this.o.anchor.stopRecordingCaller(call.wacid) : this.o.anchor.closeRoom(call.wacid, { janus: e.janus, room: e.room }));
        if (e.keep) this.background('voicemailSave', call.wacid, this.anchorWork.voicemailSave(call));
        else if (this.o.anchor) await unlink(this.o.anchor.recordingPath(call.wacid)).catch(() => undefined); // no message: the recording goes
        return;
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
}
