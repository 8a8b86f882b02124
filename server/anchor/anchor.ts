/**
 * The media anchor (MEDIA_MODE=anchor): each call's caller leg held in a Janus AudioBridge
 * room, so the caller's audio no longer ends in one agent's page.
 *
 * - `openRoom(wacid)`: the least loaded reachable Janus of `JANUS_URLS` gets a room (at the
 *   connect event). `joinCaller(wacid, offer)`: the caller joins with the Service's offer,
 *   non-trickle, right before preAccept; Janus's complete answer (candidates inline, Opus,
 *   SHA-256 fingerprint) is the business SDP for preAccept and accept alike.
 * - `agentOffer(wacid)`: a leg for the agent into the same room, Janus offering
 *   (`generate_offer`); `agentAnswer(wacid, sdp)` completes it with the agent's answer. A
 *   new offer replaces the agent's previous leg (a page that came back).
 * - `closeRoom(wacid, where)`: the legs detached and the room destroyed (a room left behind
 *   keeps a mixer thread), also for a room this process did not open (named on the record).
 *
 * Knows nothing of calls' states: the call engine (server/calls) decides when.
 */
import { randomInt } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../log/logger.ts';
import { JanusError, type JanusMessage, type JanusServer } from './janus.ts';
import { JanusPool } from './pool.ts';

/** Where a call's room is: named on the call record, so any node can find and destroy it. */
export interface RoomRef {
  /** The Janus WebSocket API URL (one of JANUS_URLS). */
  janus: string;
  room: number;
}

/** Rooms this bridge makes say so in their description (`sb:<wacid>`): the orphan sweep touches no other room. */
export const ROOM_TAG = 'sb:';

/** A consult room's description: `sb:<wacid>#consult` (the orphan sweep reads the wacid before the `#`). */
const CONSULT_TAG = '#consult';

export interface AnchorOptions {
  urls: readonly string[];
  apiSecret?: string | undefined;
  log: Logger;
  /** AudioBridge jitter buffer in 20 ms packets: 2 takes the mixer's added delay from ~180 ms to ~60 ms. */
  prebuffering?: number;
  /** What `playMusic` plays (an Ogg/Opus path on the Janus machine: HOLD_MUSIC_FILE). */
  holdMusicFile?: string;
  /** A Janus whose control socket stays lost this long counts as lost (its calls end). Default 3 s. */
  lostAfterMs?: number;
  /**
   * Where Janus writes a voicemail caller's recording (`.mjr`) and this process reads it: a
   * folder both see at this path (Janus beside the bridge, or a shared volume). The wiring
   * gives `<ARCHIVE_DIR>/.voicemail`.
   */
  recordDir?: string;
}

/** The announcement id of voicemail's prompt (or closed greeting) in a room. */
export const PROMPT_ID = 'sb-prompt';

/** The announcement id of the music a room plays while the caller waits (one per room). */
export const MUSIC_ID = 'sb-music';

interface Leg {
  server: JanusServer;
  room: number;
  /** The caller's handle, when this process joined the caller. */
  caller: number | undefined;
  /** The agents' legs by agent name (one, or more in a consult or a conference). */
  agents: Map<string, number>;
  /** A warm transfer's consult room (the agents talk there while the caller hears music). */
  consult?: number | undefined;
}

export class MediaAnchor {
  private readonly pool: JanusPool;
  private readonly legs = new Map<string, Leg>();
  private readonly lostListeners: Array<(url: string, reason: string) => void> = [];

  constructor(private readonly o: AnchorOptions) {
    this.pool = new JanusPool({ urls: o.urls, apiSecret: o.apiSecret, log: o.log, lostAfterMs: o.lostAfterMs, onLost: (url, reason) => this.lost(url, reason) });
  }

  /**
   * `listener` learns of a Janus lost for good (killed, restarted, unreachable past its
   * `lostAfterMs`): every call whose room was there has lost its caller's audio.
   */
  onServerLost(listener: (url: string, reason: string) => void): void {
    this.lostListeners.push(listener);
  }

  private lost(url: string, reason: string): void {
    for (const [wacid, leg] of this.legs) if (leg.server.url === url) this.legs.delete(wacid);
    for (const l of this.lostListeners) l(url, reason);
  }

  /** Every Janus of JANUS_URLS that does not answer now (readiness names them). */
  unreachable(): string[] {
    return this.pool.unreachable();
  }

  /** Connects to every Janus; one that does not answer is tried again when a call needs one. */
  async start(): Promise<void> {
    await this.pool.start();
  }

  /** Reachable Janus servers now (readiness). */
  reachable(): string[] {
    return this.pool.reachable();
  }

  /** A room for the call on the least loaded reachable Janus (no legs yet). */
  async openRoom(wacid: string): Promise<RoomRef> {
    const leg = await this.createRoom(wacid);
    return { janus: leg.server.url, room: leg.room };
  }

  /**
   * The caller's leg into the call's room, joined with the Service's offer (non-trickle):
   * Janus's complete answer comes back — the business SDP. Joined right before preAccept, not
   * while the call rings: Janus starts its connectivity checks at the join, and a caller that
   * gets the answer much later (after a ring) connects only after those checks backed off
   * (~0.9 s measured, against ~0.1 s when the answer follows the join at once).
   */
  async joinCaller(wacid: string, callerOffer: string, where?: RoomRef): Promise<string> {
    const leg = await this.legOf(wacid, where);
    if (leg.caller !== undefined) throw new Error(`call ${wacid}: the caller has joined already`);
    leg.caller = await leg.server.attach((m) => this.legEvent(wacid, 'caller', m));
    const joined = await leg.server.message(leg.caller, { request: 'join', room: leg.room, display: 'caller', codec: 'opus' }, { type: 'offer', sdp: callerOffer });
    if (joined.jsep?.type !== 'answer' || !joined.jsep.sdp) throw new Error(`janus gave no answer to the caller's offer (${JSON.stringify(joined.plugindata?.data ?? {}).slice(0, 200)})`);
    return joined.jsep.sdp;
  }

  /** The call's room as this process drives it: its own, or one named by the record (any session may join a room). */
  private async legOf(wacid: string, where?: RoomRef): Promise<Leg> {
    let leg = this.legs.get(wacid);
    if (!leg && where && this.o.urls.includes(where.janus)) {
      const server = await this.pool.server(where.janus);
      if (server) this.legs.set(wacid, (leg = { server, room: where.room, caller: undefined, agents: new Map() }));
    }
    if (!leg) throw new Error(`call ${wacid} has no room reachable from this node`);
    return leg;
  }

  /**
   * Business-initiated (not wired into the dial yet): a room whose user leg Janus offers
   * (`generate_offer`), complete and non-trickle: the offer for the Service's connect; the
   * user's answer (the connect event's SDP) completes it with `userAnswer`.
   */
  async openRoomForDial(wacid: string): Promise<RoomRef & { offer: string }> {
    const leg = await this.createRoom(wacid);
    try {
      leg.caller = await leg.server.attach((m) => this.legEvent(wacid, 'caller', m));
      const joined = await leg.server.message(leg.caller, { request: 'join', room: leg.room, display: 'user', codec: 'opus', generate_offer: true });
      if (joined.jsep?.type !== 'offer' || !joined.jsep.sdp) throw new Error(`janus gave no offer for the user's leg (${JSON.stringify(joined.plugindata?.data ?? {}).slice(0, 200)})`);
      return { janus: leg.server.url, room: leg.room, offer: joined.jsep.sdp };
    } catch (err) {
      await this.closeRoom(wacid, { janus: leg.server.url, room: leg.room });
      throw err;
    }
  }

  /** Business-initiated: the user's answer to `openRoomForDial`'s offer. */
  async userAnswer(wacid: string, sdp: string): Promise<void> {
    const leg = this.legs.get(wacid);
    if (!leg || leg.caller === undefined) throw new Error(`call ${wacid} has no user leg waiting for an answer on this node`);
    await leg.server.message(leg.caller, { request: 'configure' }, { type: 'answer', sdp });
  }

  /** A room on the least loaded Janus, registered for the call (no legs yet). */
  private async createRoom(wacid: string): Promise<Leg> {
    const existing = this.legs.get(wacid);
    if (existing) throw new Error(`call ${wacid} already has a room (${existing.room})`);
    const server = await this.pool.pick();
    const control = this.pool.controlOf(server.url)!;
    for (let tries = 0; ; tries++) {
      const room = randomInt(1, 2 ** 47);
      try {
        await server.message(control, {
          request: 'create',
          room,
          description: `${ROOM_TAG}${wacid}`.slice(0, 128),
          sampling_rate: 48000,
          default_prebuffering: this.o.prebuffering ?? 2,
          permanent: false,
        });
        const leg: Leg = { server, room, caller: undefined, agents: new Map() };
        this.legs.set(wacid, leg);
        return leg;
      } catch (err) {
        // 486: a room with that number exists already (another call's): draw another.
        if (!(err instanceof JanusError && err.code === 486) || tries >= 3) throw err;
      }
    }
  }

  /**
   * An offer for the agent's leg into the call's room, or its consult room (`consult`: a warm
   * transfer's target joins the first agent there). Janus offers; the agent answers with `agentAnswer`.
   * `muted`: joins without being heard in the mix (a supervisor who listens, server/monitor).
   */
  async agentOffer(wacid: string, name: string, where?: RoomRef, consult = false, muted = false): Promise<string> {
    // Any session may join a room: a room opened by another process (named on the record) is joined from here.
    const leg = await this.legOf(wacid, where);
    const room = consult ? leg.consult : leg.room;
    if (room === undefined) throw new Error(`call ${wacid} has no consult room on this node`);
    const old = leg.agents.get(name);
    if (old !== undefined) {
      // A page that came back: its old leg goes, the new one joins the same room.
      leg.agents.delete(name);
      await leg.server.detach(old);
    }
    const handle = await leg.server.attach((m) => this.legEvent(wacid, 'agent', m));
    leg.agents.set(name, handle);
    const joined = await leg.server.message(handle, { request: 'join', room, display: name.slice(0, 64), codec: 'opus', generate_offer: true, ...(muted ? { muted: true } : {}) });
    if (joined.jsep?.type !== 'offer' || !joined.jsep.sdp) throw new Error(`janus gave no offer for the agent's leg (${JSON.stringify(joined.plugindata?.data ?? {}).slice(0, 200)})`);
    return joined.jsep.sdp;
  }

  /** The agent's answer to `agentOffer`: the leg is complete (ICE and DTLS follow). */
  async agentAnswer(wacid: string, sdp: string, name?: string): Promise<void> {
    const leg = this.legs.get(wacid);
    const handle = leg && (name !== undefined ? leg.agents.get(name) : [...leg.agents.values()].at(-1));
    if (!leg || handle === undefined) throw new Error(`call ${wacid} has no agent leg waiting for an answer on this node`);
    await leg.server.message(handle, { request: 'configure' }, { type: 'answer', sdp });
  }

  /** The agent's leg leaves the call (a transfer: the first agent is out at once; a conference member leaves); the caller stays. */
  async dropAgent(wacid: string, where?: RoomRef, name?: string): Promise<void> {
    const leg = await this.legOf(wacid, where);
    for (const [who, handle] of [...leg.agents]) {
      if (name !== undefined && who !== name) continue;
      leg.agents.delete(who);
      await leg.server.detach(handle);
    }
  }

  /** A warm transfer: a consult room beside the call's (same Janus), where the agents talk while the caller hears music. */
  async openConsult(wacid: string, where?: RoomRef): Promise<number> {
    const leg = await this.legOf(wacid, where);
    if (leg.consult !== undefined) return leg.consult;
    const control = this.pool.controlOf(leg.server.url);
    if (control === undefined) throw new Error(`janus ${leg.server.url} is not connected`);
    const room = randomInt(1, 2 ** 47);
    await leg.server.message(control, { request: 'create', room, description: `${ROOM_TAG}${wacid}${CONSULT_TAG}`.slice(0, 128), sampling_rate: 48000, default_prebuffering: this.o.prebuffering ?? 2, permanent: false });
    leg.consult = room;
    return room;
  }

  /** The agent's leg moves (AudioBridge `changeroom`, the same peer connection) into the consult room or back into the call's. */
  async moveAgent(wacid: string, name: string, to: 'call' | 'consult', where?: RoomRef): Promise<void> {
    const leg = await this.legOf(wacid, where);
    const handle = leg.agents.get(name);
    const room = to === 'consult' ? leg.consult : leg.room;
    if (handle === undefined || room === undefined) throw new Error(`call ${wacid}: no leg of ${name} or no ${to} room on this node`);
    await leg.server.message(handle, { request: 'changeroom', room, display: name.slice(0, 64) });
  }

  /** The consult room is over (its agents moved back or left): destroyed. Safe twice. */
  async closeConsult(wacid: string): Promise<void> {
    const leg = this.legs.get(wacid);
    const room = leg?.consult;
    if (!leg || room === undefined) return;
    leg.consult = undefined;
    await this.destroy(leg.server.url, room, wacid);
  }

  /** Every room of ours on the reachable Janus servers, with the call it was made for (the orphan sweep). */
  async rooms(): Promise<Array<RoomRef & { wacid: string }>> {
    const out: Array<RoomRef & { wacid: string }> = [];
    for (const url of this.o.urls) {
      const server = await this.pool.server(url);
      const control = this.pool.controlOf(url);
      if (!server || control === undefined) continue;
      const r = await server.message(control, { request: 'list' }).catch(() => undefined);
      for (const x of (r?.plugindata?.data.list ?? []) as Array<{ room: number; description?: string }>) {
        if (x.description?.startsWith(ROOM_TAG)) out.push({ janus: url, room: x.room, wacid: x.description.slice(ROOM_TAG.length).split('#')[0]! });
      }
    }
    return out;
  }

  /** Whether this node holds the call's room (its legs are driven from here). */
  holds(wacid: string): boolean {
    return this.legs.has(wacid);
  }

  /**
   * The legs detached and the room destroyed. `where` (from the call record) finds a room
   * this process did not open; a room already gone is not an error. Safe twice.
   */
  async closeRoom(wacid: string, where?: RoomRef): Promise<void> {
    const leg = this.legs.get(wacid);
    this.legs.delete(wacid);
    if (leg) {
      await Promise.all([leg.caller, ...leg.agents.values()].filter((h): h is number => h !== undefined).map((h) => leg.server.detach(h)));
      if (leg.consult !== undefined) await this.destroy(leg.server.url, leg.consult, wacid);
    }
    const url = leg?.server.url ?? where?.janus;
    const room = leg?.room ?? where?.room;
    if (url === undefined || room === undefined) return;
    await this.destroy(url, room, wacid);
  }

  private async destroy(url: string, room: number, wacid: string): Promise<void> {
    if (!this.o.urls.includes(url)) return;
    const server = await this.pool.server(url);
    const control = this.pool.controlOf(url);
    if (!server || control === undefined) return;
    try {
      await server.message(control, { request: 'destroy', room, permanent: false });
    } catch (err) {
      // 485: no such room (destroyed already).
      if (!(err instanceof JanusError && err.code === 485)) this.o.log.warn({ wacid, janus: url, room, err: (err as Error).message }, 'room not destroyed');
    }
  }

  /** The control handle of the Janus holding the call's room (this node's or the record's), and the room. */
  private async controlOf(wacid: string, where?: RoomRef): Promise<{ server: JanusServer; control: number; room: number }> {
    const leg = this.legs.get(wacid);
    const url = leg?.server.url ?? where?.janus;
    const room = leg?.room ?? where?.room;
    if (url === undefined || room === undefined || !this.o.urls.includes(url)) throw new Error(`call ${wacid} has no room`);
    const server = await this.pool.server(url);
    const control = this.pool.controlOf(url);
    if (!server || control === undefined) throw new JanusError('DISCONNECTED', `${url}: not reachable`);
    return { server, control, room };
  }

  /**
   * Music into the call's room while the caller waits (hold, the agent's page away): Janus
   * plays `holdMusicFile` in a loop (`play_file`). Playing already is not an error.
   */
  async playMusic(wacid: string, where?: RoomRef): Promise<void> {
    if (!this.o.holdMusicFile) throw new Error('no hold music file configured');
    await this.playFile(wacid, MUSIC_ID, this.o.holdMusicFile, true, where);
  }

  /** The room's music stops (none playing is not an error). */
  async stopMusic(wacid: string, where?: RoomRef): Promise<void> {
    await this.stopFile(wacid, MUSIC_ID, where);
  }

  /** `file` (an Ogg/Opus path Janus reads) plays into the call's room as announcement `id` (looped or once); that id playing already is not an error. */
  async playFile(wacid: string, id: string, file: string, loop: boolean, where?: RoomRef): Promise<void> {
    const { server, control, room } = await this.controlOf(wacid, where);
    try {
      await server.message(control, { request: 'play_file', room, file_id: id, filename: file, loop });
    } catch (err) {
      // 490: an announcement of that id plays already.
      if (!(err instanceof JanusError && err.code === 490)) throw err;
    }
  }

  /** Announcement `id` stops (none playing, or the room gone, is not an error). */
  async stopFile(wacid: string, id: string, where?: RoomRef): Promise<void> {
    const { server, control, room } = await this.controlOf(wacid, where);
    try {
      await server.message(control, { request: 'stop_file', room, file_id: id });
    } catch (err) {
      // 485: the room is gone (nothing plays); an id not playing is no error for Janus.
      if (!(err instanceof JanusError && err.code === 485)) throw err;
    }
  }

  /**
   * The agent leaves the caller's mix (`muted`: the room no longer takes its audio; hold) or
   * comes back. By the participant's display name (the agent's), so any node can do it.
   */
  async setAgentMuted(wacid: string, agent: string, muted: boolean, where?: RoomRef): Promise<void> {
    const { server, control, room } = await this.controlOf(wacid, where);
    const r = await server.message(control, { request: 'listparticipants', room });
    const ids = ((r.plugindata?.data.participants ?? []) as Array<{ id: number; display?: string }>).filter((p) => p.display === agent.slice(0, 64)).map((p) => p.id);
    for (const id of ids) await server.message(control, { request: muted ? 'mute' : 'unmute', room, id });
  }

  /**
   * Voicemail: `file` (an Ogg/Opus path Janus can read) plays once into the call's room. The
   * hold music stops first (one sound at a time).
   */
  async playPrompt(wacid: string, file: string, where?: RoomRef): Promise<void> {
    await this.stopFile(wacid, MUSIC_ID, where).catch(() => undefined);
    await this.playFile(wacid, PROMPT_ID, file, false, where);
  }

  /** Where the caller's recording of a call is (`<recordDir>/<wacid>-audio.mjr`: Janus adds `-audio.mjr`). */
  recordingPath(wacid: string): string {
    if (!this.o.recordDir) throw new Error('no voicemail recording folder configured');
    return `${this.recordingBase(wacid)}-audio.mjr`;
  }

  private recordingBase(wacid: string): string {
    return join(this.o.recordDir!, encodeURIComponent(wacid).replace(/\./g, '%2E'));
  }

  /**
   * Voicemail: Janus records the caller's own audio (AudioBridge participant recording: the
   * Opus packets the caller sends, not the mix) to `recordingPath(wacid)`. The caller's leg
   * must have been joined by this process (the voicemail's accept runs where it joined).
   */
  async recordCaller(wacid: string): Promise<string> {
    const leg = this.legs.get(wacid);
    if (!leg || leg.caller === undefined) throw new Error(`call ${wacid}: the caller's leg is not on this node`);
    const path = this.recordingPath(wacid);
    mkdirSync(this.o.recordDir!, { recursive: true });
    await leg.server.message(leg.caller, { request: 'configure', record: true, filename: this.recordingBase(wacid) });
    return path;
  }

  /** The caller's recording stops (Janus closes the file). A leg already gone closed it already: not an error. */
  async stopRecordingCaller(wacid: string): Promise<void> {
    const leg = this.legs.get(wacid);
    if (!leg || leg.caller === undefined) return;
    await leg.server.message(leg.caller, { request: 'configure', record: false }).catch((err: Error) => this.o.log.warn({ wacid, err: err.message }, 'caller recording not stopped (its leg is gone?)'));
  }

  /** Who is in the call's room now (display names and whether each is muted): tests and the supervisors' checks. */
  async participants(wacid: string, where?: RoomRef): Promise<Array<{ display: string; muted: boolean }>> {
    const { server, control, room } = await this.controlOf(wacid, where);
    const r = await server.message(control, { request: 'listparticipants', room });
    return ((r.plugindata?.data.participants ?? []) as Array<{ display?: string; muted?: boolean }>).map((p) => ({ display: p.display ?? '', muted: p.muted === true }));
  }

  private legEvent(wacid: string, who: 'caller' | 'agent', m: JanusMessage): void {
    if (m.janus === 'webrtcup' || m.janus === 'hangup') this.o.log.info({ wacid, leg: who, janus: m.janus }, `anchor ${who} leg ${m.janus === 'webrtcup' ? 'connected' : 'hung up'}`);
  }

  /** Closes every connection (rooms stay until their calls' ends destroy them, or Janus's reclaim timeout). Safe twice. */
  close(): void {
    this.pool.close();
  }
}
