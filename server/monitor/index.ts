/**
 * Monitoring relay (the flow is in `shared/protocol.ts`). The media never
 * touches the server: it checks roles, keeps who monitors what, and relays the offer, the
 * answer and the end between exactly two tabs (the agent's tab holding the call and the
 * supervisor's requesting tab).
 *
 * Everything is in the store, so any node can act on a monitor: the call may end on one
 * node, the agent's socket close on a second, the supervisor's on a third; pushes reach a
 * tab on any node through the hub's `toConn`. Keys (all with a TTL, so nothing sticks):
 * - `monitor:<id>`        the monitor (JSON `Monitor`);
 * - `monitor-call:<wacid>` → id: one monitor per call at a time (taken with setNX);
 * - `monitor-conn:<conn>`  → id: one monitor per tab at a time (both tabs; setNX);
 * - `monitor-ended:<id>`  the end is done once, whichever node sees it first (setNX);
 * - `conn-live:<conn>`    a socket open on some node (the agent's tab must be connected);
 * - `conn-tab:<conn>`     → the page's tab id of that socket (kept after it closes), and
 *   `tab-conn:<user>:<tab>` → that tab's newest socket. The call record names the socket
 *   that answered; when the tab has reconnected since (a new socket, maybe on another
 *   node), `monitor.start` follows the tab to its socket now. A reloaded page is a new tab
 *   (its call's media went with the old page), so it is never taken for the holding one.
 *
 * A call on the media anchor (MEDIA_MODE=anchor, server/anchor) is monitored on Janus, not
 * through the agent's page: the supervisor's tab gets a leg of its own into the call's room
 * (Janus offers, the tab answers with `monitor.signal` answer), joined muted to listen and
 * unmuted to barge; the agent's tab only shows it (`monitor.started {via:"anchor"}`), and
 * the monitor outlives the agent's tab (a reload does not end it). Whisper — the agent hears
 * the supervisor and the caller does not — is a mix the room does not make: the leg stays
 * muted in the room (as listening) and the supervisor's voice goes to the agent alone over
 * the whisper link, a connection between the two tabs whose offer (the agent's tab) and
 * answer (the supervisor's) are relayed here like a direct monitor's (`monitor.signal
 * {path:"whisper"}`); `anchorRouting` is the table. No room or leg of its own: the monitor's
 * end (stop, call end, either tab going) closes it in both tabs. The agent's reloaded page,
 * once it holds the call again, is told of the monitor (`callMoved`) and offers a new link.
 */
import { randomUUID } from 'node:crypto';
import { anchorRouting, monitorShown, type ClientMsg, type MonitorEndReason, type MonitorMode, type ServerMsg } from '../../shared/protocol.ts';
import type { Logger } from '../log/logger.ts';
import type { Conn, Hub } from '../push/hub.ts';
import type { Store } from '../store/store.ts';
import type { Audit } from '../audit/trail.ts';
import type { MediaAnchor, RoomRef } from '../anchor/anchor.ts';
import { fromRecord } from '../calls/record.ts';

type MonitorRequest = Extract<ClientMsg, { type: 'monitor.start' | 'monitor.mode' | 'monitor.signal' }>;

export const MONITOR_TYPES: ReadonlySet<string> = new Set(['monitor.start', 'monitor.mode', 'monitor.signal']);

export function isMonitorRequest(msg: ClientMsg): msg is MonitorRequest {
  return MONITOR_TYPES.has(msg.type);
}

interface Monitor {
  monitorId: string;
  wacid: string;
  mode: MonitorMode;
  supervisor: string;
  supervisorConn: string;
  agent: string;
  agentConn: string;
  /** On the media anchor: the room the supervisor's leg joined (absent: the agent's tab relays). */
  anchor?: RoomRef;
}

/** What monitoring needs of the media anchor. */
export type MonitorAnchor = Pick<MediaAnchor, 'agentOffer' | 'agentAnswer' | 'setAgentMuted' | 'dropAgent'>;

/** The supervisor's leg in the call's room: a display name no agent has (user names have no colon). */
export const monitorLeg = (m: Pick<Monitor, 'monitorId' | 'supervisor'>): string => `monitor:${m.supervisor}:${m.monitorId.slice(0, 8)}`;

/** A timeline entry of the call (history's `timeline` fact). */
export type MonitorTimeline = (entry: { wacid: string; key: string; at: string; event: string; detail: Record<string, unknown> }) => void;

export interface MonitorsOptions {
  store: Store;
  hub: Hub;
  log: Logger;
  /** MONITOR_SHOW_LISTENING: the agent sees a supervisor who only listens. */
  showListening: boolean;
  timeline?: MonitorTimeline | undefined;
  now?: () => number;
  /** The audit trail: who monitored which call of which agent (start, mode, stop). */
  audit?: Audit | undefined;
  /** MEDIA_MODE=anchor: calls held in Janus rooms are monitored there. */
  anchor?: MonitorAnchor | undefined;
}

/** Monitors outlive no call: a call record lives at most 4 h. */
const TTL_MS = 4 * 3600 * 1000;
/** Sockets live at most as long as their login session (12 h by default). */
const CONN_TTL_MS = 24 * 3600 * 1000;

export class Monitors {
  private readonly now: () => number;

  constructor(private readonly o: MonitorsOptions) {
    this.now = o.now ?? Date.now;
  }

  /** A socket opened on this node. */
  async connOpened(conn: Conn): Promise<void> {
    const { store } = this.o;
    await store.set(`conn-live:${conn.id}`, conn.user.name, CONN_TTL_MS);
    if (!conn.tab) return;
    await store.set(`conn-tab:${conn.id}`, conn.tab, CONN_TTL_MS);
    await store.set(`tab-conn:${conn.user.name}:${conn.tab}`, conn.id, CONN_TTL_MS);
  }

  /** A socket closed on this node: the monitor it was a side of ends. */
  async connClosed(conn: Conn): Promise<void> {
    await this.o.store.del(`conn-live:${conn.id}`);
    const id = await this.o.store.get(`monitor-conn:${conn.id}`);
    const m = id ? await this.load(id) : undefined;
    if (m) await this.end(m, m.agentConn === conn.id ? 'agent-gone' : 'supervisor-gone', conn.id);
  }

  /** A call's record reached `ended` (on whichever node committed it). */
  async callEnded(wacid: string): Promise<void> {
    const id = await this.o.store.get(`monitor-call:${wacid}`);
    const m = id ? await this.load(id) : undefined;
    if (m) await this.end(m, 'call-ended');
  }

  /**
   * A call on the media anchor is held by a new socket of its agent now (the page reloaded
   * and took it back): its monitor's agent side moves there, told with `monitor.started`
   * (the new page shows it, and in whisper offers a new whisper link).
   */
  async callMoved(wacid: string, agent: string, conn: string): Promise<void> {
    const id = await this.o.store.get(`monitor-call:${wacid}`);
    const m = id ? await this.load(id) : undefined;
    if (!m || !m.anchor || m.agent !== agent || m.agentConn === conn) return;
    if ((await this.o.store.get(`monitor-ended:${m.monitorId}`)) !== null) return;
    const next: Monitor = { ...m, agentConn: conn };
    await this.o.store.set(`monitor:${m.monitorId}`, JSON.stringify(next), TTL_MS);
    this.o.hub.toConn(conn, { type: 'monitor.started', monitorId: m.monitorId, wacid: m.wacid, mode: m.mode, supervisor: m.supervisor, agent: m.agent, via: 'anchor', side: 'agent', shown: monitorShown(m.mode, this.o.showListening) });
  }

  async handle(conn: Conn, msg: MonitorRequest): Promise<void> {
    const fail = (code: string, message: string, params?: Record<string, string>) => this.o.hub.toConn(conn.id, { type: 'error', id: msg.id, code, message, ...(params ? { params } : {}) });
    const ack = (extra: Record<string, unknown> = {}) => this.o.hub.toConn(conn.id, { type: 'ack', id: msg.id, ...extra } as ServerMsg);
    switch (msg.type) {
      case 'monitor.start':
        return this.start(conn, msg, fail, ack);
      case 'monitor.mode': {
        const m = await this.load(msg.monitorId);
        if (!m) return fail('NOT_FOUND', 'no such monitor');
        if (m.supervisorConn !== conn.id) return fail('FORBIDDEN', "only this monitor's supervisor changes its mode");
        // Ended meanwhile (on any node): do not write it back.
        if ((await this.o.store.get(`monitor-ended:${m.monitorId}`)) !== null) return fail('NOT_FOUND', 'the monitor has ended');
        // The room takes the supervisor's voice only in barge (listen: heard by nobody;
        // whisper: the agent's tab plays it from the whisper link).
        if (m.anchor && this.o.anchor) {
          const muted = await this.o.anchor.setAgentMuted(m.wacid, monitorLeg(m), anchorRouting(msg.mode).legMutedInRoom, m.anchor).then(() => true, (err: unknown) => {
            this.o.log.warn({ wacid: m.wacid, monitorId: m.monitorId, err: (err as Error).message }, 'monitor leg mute failed');
            return false;
          });
          if (!muted) return fail('UNAVAILABLE', 'the media server did not change the mode; try again');
        }
        // Read again: the agent's side may have moved meanwhile (`callMoved`, on any node).
        const next = { ...((await this.load(m.monitorId)) ?? m), mode: msg.mode };
        await this.o.store.set(`monitor:${m.monitorId}`, JSON.stringify(next), TTL_MS);
        ack();
        const frame = { type: 'monitor.mode' as const, monitorId: m.monitorId, wacid: m.wacid, mode: msg.mode };
        if (next.agentConn) this.o.hub.toConn(next.agentConn, { ...frame, shown: monitorShown(msg.mode, this.o.showListening) });
        this.o.hub.toConn(m.supervisorConn, { ...frame, shown: true });
        this.timeline(m, `monitor:${m.monitorId}:mode:${this.now()}`, 'monitor.mode', { mode: msg.mode });
        this.o.audit?.({ action: 'monitor.mode', actor: m.supervisor, subject: m.agent, target: m.wacid, detail: { mode: msg.mode, from: m.mode, monitorId: m.monitorId } });
        return;
      }
      case 'monitor.signal': {
        const m = await this.load(msg.monitorId);
        if (!m) return fail('NOT_FOUND', 'no such monitor');
        const fromAgent = m.agentConn === conn.id;
        if (!fromAgent && m.supervisorConn !== conn.id) return fail('FORBIDDEN', 'only the two tabs of this monitor signal it');
        if (msg.kind === 'offer' && !fromAgent) return fail('BAD_REQUEST', "kind: an offer comes from the agent's tab");
        if (msg.kind === 'answer' && fromAgent) return fail('BAD_REQUEST', "kind: an answer comes from the supervisor's tab");
        if (msg.kind === 'end') {
          ack();
          await this.end(m, msg.reason ?? (fromAgent ? 'failed' : 'stopped'));
          return;
        }
        if (m.anchor && msg.path === 'whisper') {
          // The whisper link: relayed between the two tabs (the agent's tab offers).
          if (!m.agentConn) return fail('CONFLICT', "the agent's tab holding the call is not connected");
          const { id: _id, ...relayed } = msg;
          this.o.hub.toConn(fromAgent ? m.supervisorConn : m.agentConn, relayed);
          ack();
          return;
        }
        if (m.anchor) {
          // Janus offered the supervisor's leg; its answer completes it (the agent's tab signals nothing).
          if (fromAgent || !this.o.anchor) return fail('BAD_REQUEST', 'kind: this monitor is on the media anchor; only the supervisor answers');
          try {
            await this.o.anchor.agentAnswer(m.wacid, msg.sdp!, monitorLeg(m));
          } catch (err) {
            fail('UNAVAILABLE', 'the media server did not take the answer');
            await this.end(m, 'failed');
            this.o.log.warn({ wacid: m.wacid, monitorId: m.monitorId, err: (err as Error).message }, 'monitor leg answer failed');
            return;
          }
          ack();
          return;
        }
        const { id: _id, ...relayed } = msg;
        this.o.hub.toConn(fromAgent ? m.supervisorConn : m.agentConn, relayed);
        ack();
        return;
      }
    }
  }

  private async start(conn: Conn, msg: Extract<MonitorRequest, { type: 'monitor.start' }>, fail: (code: string, message: string, params?: Record<string, string>) => void, ack: (extra?: Record<string, unknown>) => void): Promise<void> {
    const { store } = this.o;
    if (!conn.user.roles.includes('supervisor')) return fail('FORBIDDEN', 'only supervisors monitor calls');
    const rec = await store.getCall(msg.wacid);
    if (!rec) return fail('NOT_FOUND', 'no such call');
    const agent = typeof rec.agent === 'string' ? rec.agent : undefined;
    const answeredOn = typeof rec.conn === 'string' ? rec.conn : undefined;
    if (rec.state !== 'active' || !agent || !answeredOn) return fail('CONFLICT', 'the call is not live with an agent');
    const room = this.o.anchor ? fromRecord(rec).anchor : undefined;
    const agentConn = await this.holdingConn(agent, answeredOn);
    // On the anchor the agent's tab only shows the monitor: it may be reloading meanwhile.
    if (!agentConn && !room) return fail('CONFLICT', "the agent's tab holding the call is not connected");
    if (agentConn === conn.id || (room && agent === conn.user.name)) return fail('CONFLICT', 'you hold this call yourself');
    const m: Monitor = { monitorId: randomUUID(), wacid: msg.wacid, mode: msg.mode, supervisor: conn.user.name, supervisorConn: conn.id, agent, agentConn: agentConn ?? '', ...(room ? { anchor: room } : {}) };
    // Claims in order, each undone when a later one fails (nothing left stuck). On the
    // anchor the agent's tab is not a side: its closing does not end the monitor.
    const claims = [`monitor-call:${m.wacid}`, `monitor-conn:${conn.id}`, ...(room ? [] : [`monitor-conn:${agentConn}`])];
    const why = ['the call is already monitored', 'this tab already monitors a call; stop it first', "the agent's tab is already monitored"];
    for (let i = 0; i < claims.length; i++) {
      if (!(await store.setNX(claims[i]!, m.monitorId, TTL_MS))) {
        for (const k of claims.slice(0, i)) await store.del(k);
        return fail('CONFLICT', why[i]!);
      }
    }
    await store.set(`monitor:${m.monitorId}`, JSON.stringify(m), TTL_MS);
    let offer: string | undefined;
    if (room && this.o.anchor) {
      try {
        offer = await this.o.anchor.agentOffer(m.wacid, monitorLeg(m), room, false, anchorRouting(m.mode).legMutedInRoom);
      } catch (err) {
        this.o.log.warn({ wacid: m.wacid, monitorId: m.monitorId, err: (err as Error).message }, 'monitor leg could not join the room');
        await this.end(m, 'failed', conn.id);
        return fail('UNAVAILABLE', 'the media server did not open a leg for monitoring; try again');
      }
    }
    ack({ monitorId: m.monitorId });
    const frame = { type: 'monitor.started' as const, monitorId: m.monitorId, wacid: m.wacid, mode: m.mode, supervisor: m.supervisor, agent: m.agent, ...(room ? { via: 'anchor' as const } : {}) };
    if (m.agentConn) this.o.hub.toConn(m.agentConn, { ...frame, side: 'agent', shown: monitorShown(m.mode, this.o.showListening) });
    this.o.hub.toConn(m.supervisorConn, { ...frame, side: 'supervisor', shown: true });
    if (offer !== undefined) this.o.hub.toConn(m.supervisorConn, { type: 'monitor.signal', monitorId: m.monitorId, kind: 'offer', sdp: offer });
    this.timeline(m, `monitor:${m.monitorId}:started`, 'monitor.started', { supervisor: m.supervisor, mode: m.mode });
    this.o.audit?.({ action: 'monitor.start', actor: m.supervisor, subject: m.agent, target: m.wacid, detail: { mode: m.mode, monitorId: m.monitorId } });
    this.o.log.info({ wacid: m.wacid, monitorId: m.monitorId, supervisor: m.supervisor, mode: m.mode }, 'monitor started');
  }

  /**
   * The live socket of the tab that answered on `answeredOn`: the tab's newest socket (it
   * may have reconnected before the server noticed the old one die), else `answeredOn`
   * while open (a client that names no tab), else none.
   */
  private async holdingConn(agent: string, answeredOn: string): Promise<string | undefined> {
    const { store } = this.o;
    const live = async (c: string | null) => (c !== null && (await store.get(`conn-live:${c}`)) !== null ? c : undefined);
    const tab = await store.get(`conn-tab:${answeredOn}`);
    return (tab !== null ? await live(await store.get(`tab-conn:${agent}:${tab}`)) : undefined) ?? live(answeredOn);
  }

  /** End once (any node): `monitor.ended` to each tab still there (not `gone`). */
  private async end(m: Monitor, reason: MonitorEndReason, gone?: string): Promise<void> {
    const { store, hub } = this.o;
    if (!(await store.setNX(`monitor-ended:${m.monitorId}`, reason, TTL_MS))) return;
    await Promise.all([`monitor:${m.monitorId}`, `monitor-call:${m.wacid}`, `monitor-conn:${m.supervisorConn}`, ...(m.anchor ? [] : [`monitor-conn:${m.agentConn}`])].map((k) => store.del(k)));
    // Both tabs are told first: a slow Janus must not leave the agent's page saying "monitored".
    const frame: ServerMsg = { type: 'monitor.ended', monitorId: m.monitorId, wacid: m.wacid, reason };
    for (const c of [m.agentConn, m.supervisorConn]) if (c && c !== gone) hub.toConn(c, frame);
    this.timeline(m, `monitor:${m.monitorId}:ended`, 'monitor.ended', { reason });
    this.o.audit?.({ action: 'monitor.stop', actor: m.supervisor, subject: m.agent, target: m.wacid, detail: { reason, monitorId: m.monitorId } });
    this.o.log.info({ wacid: m.wacid, monitorId: m.monitorId, reason }, 'monitor ended');
    // Then the supervisor's leg leaves the room (the call's end destroys the room anyway).
    if (m.anchor && this.o.anchor && reason !== 'call-ended') await this.o.anchor.dropAgent(m.wacid, m.anchor, monitorLeg(m)).catch((err: unknown) => this.o.log.warn({ wacid: m.wacid, monitorId: m.monitorId, err: (err as Error).message }, 'monitor leg did not leave the room'));
  }

  private async load(id: string): Promise<Monitor | undefined> {
    const raw = await this.o.store.get(`monitor:${id}`);
    return raw ? (JSON.parse(raw) as Monitor) : undefined;
  }

  private timeline(m: Monitor, key: string, event: string, detail: Record<string, unknown>): void {
    this.o.timeline?.({ wacid: m.wacid, key, at: new Date(this.now()).toISOString(), event, detail });
  }
}
