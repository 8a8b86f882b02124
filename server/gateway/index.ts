/**
 * The WebSocket gateway (`GET /ws`, protocol in `shared/protocol.ts`).
 *
 * Upgrade: same Origin required (every browser sends one), then a session (401 without),
 * then any role. After the upgrade:
 * - `welcome` with the full state goes out first, on every (re)connect;
 * - each frame is size-checked (over 64 KiB → `TOO_LARGE`; over 1 MiB `ws` closes with 1009),
 *   validated, then handled in order per connection (a tab's answer cannot overtake its own
 *   earlier decline);
 * - bounds per socket, so that one socket cannot hold the node: at most
 *   `MAX_PENDING_REQUESTS` (32) requests queued or in flight, one more is refused at once
 *   with a `BUSY` error frame; `FLOOD_REFUSALS` (64) refusals (`BUSY`, binary or oversize
 *   frames) before the queue empties close the socket with 4029; a closed socket's queue is dropped (its requests are never
 *   handled); while the socket's unsent output is over `READ_PAUSE_BYTES` its requests wait
 *   and it is not read (TCP pushes back on the sender), and past `MAX_BUFFERED_BYTES` it is
 *   cut (a client that does not read cannot grow the node's memory);
 * - at most `MAX_SOCKETS_PER_SESSION` (10) sockets per login session on this node: one more
 *   is closed at once with 4002 (the ones open keep working);
 * - a heartbeat pings every `heartbeatMs`; a connection silent for `deadAfterMs` (no pong,
 *   no frame) is cut, so a half-open socket is noticed within 10 s and its agent's ringing
 *   call moves on after the engine's reconnect grace;
 * - a page names its tab (`/ws?tab=<id>`, kept across its reconnects): monitoring reaches the
 *   tab holding a call on whichever connection it has now;
 * - each socket belongs to the login session it was opened with: when that session ends
 *   (logout on any node, announced through the store's pub/sub; or expiry, seen by the
 *   heartbeat) the socket is closed with 4001 and frames still arriving on it are dropped;
 *   every 5 s each open session's key is looked up too: one the store no longer has (it
 *   lost its data) ends the same way.
 */
import { randomUUID } from 'node:crypto';
import { upgradeWebSocket } from '@hono/node-server';
import { Hono } from 'hono';
import type { WebSocket } from 'ws';
import {
  CLOSE_SESSION_ENDED,
  CLOSE_TOO_MANY_SOCKETS,
  FLOOD_REFUSALS,
  PAGE_LEFT_CLOSE,
  MAX_PENDING_REQUESTS,
  MAX_SOCKETS_PER_SESSION,
  type IceConfig,
  type ServerMsg,
  type User,
} from '../../shared/protocol.ts';
import type { Auth } from '../auth/index.ts';
import type { CallEngine } from '../calls/engine.ts';
import type { Logger } from '../log/logger.ts';
import { HttpForbidden, HttpUnauthorized } from '../ops/errors.ts';
import type { Conn, Hub } from '../push/hub.ts';
import type { Monitors } from '../monitor/index.ts';
import type { IceIssuer } from '../ice/ice.ts';
import { socketOf } from '../ops/internals.ts';
import { z } from 'zod';
import { parseQuery } from '../ops/validate.ts';
import { createRequests, errorFrame, type Live } from './requests.ts';

export { createWsServer, guardUpgrades, HARD_MAX_PAYLOAD } from './upgrade.ts';

/** A beat's sockets are pinged over this many even turns of the heartbeat, not all at once. */
const BEAT_TICKS = 20;
/** Unsent output over which a socket's requests wait and the socket is not read until it drains. */
export const READ_PAUSE_BYTES = 1024 * 1024;
/** Unsent output over which a socket is cut: its client does not read what it is sent. */
export const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;
/** A socket closed by the server that does not complete the closing handshake is cut after this. */
const CLOSE_GRACE_MS = 2_000;

export interface GatewayOptions extends SocketLimits {
  auth: Pick<Auth, 'sessionOf' | 'sameOrigin' | 'sessions'>;
  engine: CallEngine;
  hub: Hub;
  log: Logger;
  heartbeatMs?: number;
  deadAfterMs?: number;
  /**
   * How often the sessions of open sockets are looked up in the store (default 5 s): a
   * socket whose session key is gone (the store lost its data, or a logout whose
   * announcement this node missed) is closed like one whose session ended.
   */
  sessionCheckMs?: number;
  now?: () => number;
  /** Monitoring relay: `monitor.*` requests and every socket's open and close. */
  monitors?: Pick<Monitors, 'handle' | 'connOpened' | 'connClosed'> | undefined;
  /** STUN/TURN for the user's pages: in `welcome`, renewed with `ice.servers`. */
  ice?: IceIssuer | undefined;
}

/** Per-socket bounds (defaults from shared/protocol.ts and above; tests make them small). */
export interface SocketLimits {
  maxPending?: number;
  floodRefusals?: number;
  maxSocketsPerSession?: number;
  readPauseBytes?: number;
  maxBufferedBytes?: number;
}

/** A page's tab id (`/ws?tab=`); anything else is ignored (the socket has no tab). */
const TAB_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Close code of a socket whose login session ended (logout or expiry). */
export const SESSION_ENDED_CLOSE = CLOSE_SESSION_ENDED;

export interface Gateway {
  routes: Hono;
  /** Listen for sessions ended on any node (their sockets are closed). */
  start(): Promise<void>;
  /** Stop the heartbeat and close every socket. */
  close(): void;
  /** This node's sockets now: how many, requests queued or in flight, unsent bytes (all sockets). */
  stats(): { sockets: number; pending: number; bufferedBytes: number };
}

/** `tab`: the page's tab id (reconnects of one tab share it); a malformed one counts as none (a page of an older version). */
const SocketQuery = z.object({ tab: z.string().regex(TAB_ID).optional().catch(undefined) });

export function createGateway(o: GatewayOptions): Gateway {
  const { engine, hub, log } = o;
  const now = o.now ?? Date.now;
  // A silent socket is cut at its first beat after deadAfterMs: at most 7 + 2 = 9 s (< 10 s).
  const heartbeatMs = o.heartbeatMs ?? 2_000;
  const deadAfterMs = o.deadAfterMs ?? 7_000;
  const maxPending = o.maxPending ?? MAX_PENDING_REQUESTS;
  const floodRefusals = o.floodRefusals ?? FLOOD_REFUSALS;
  const maxSocketsPerSession = o.maxSocketsPerSession ?? MAX_SOCKETS_PER_SESSION;
  const readPauseBytes = o.readPauseBytes ?? READ_PAUSE_BYTES;
  const maxBufferedBytes = o.maxBufferedBytes ?? MAX_BUFFERED_BYTES;
  const live = new Map<string, Live>();
  /** This node's sockets by login session. */
  const bySid = new Map<string, Set<Live>>();

  let unsubscribe: (() => Promise<void>) | undefined;
  /** This node is stopping: its sockets close, the pages go on elsewhere (their calls too). */
  let stopping = false;
  const { onFrame } = createRequests({ engine, monitors: o.monitors, log, now, maxPending, floodRefusals, readPauseBytes, live, shut });

  /** The socket's session ended: no frame of it is handled any more; close it. */
  function endSession(l: Live, why: string): void {
    if (l.ended) return;
    l.ended = true;
    log.info({ user: l.conn.user.name, conn: l.conn.id }, `${why}; closing socket`);
    shut(l, SESSION_ENDED_CLOSE, 'session ended');
  }

  /** Close a socket from our side: nothing more of it is handled, its queue is dropped. */
  function shut(l: Live, code: number, reason: string): void {
    l.closed = true;
    l.pending.length = 0;
    l.raw.close(code, reason);
    // A client that never completes the closing handshake is cut.
    setTimeout(() => l.raw.terminate(), CLOSE_GRACE_MS).unref();
  }

  /** After a write: a socket whose unsent output passed the bound does not read; cut it. */
  function checkBuffered(l: Live): void {
    if (l.raw.bufferedAmount <= maxBufferedBytes || l.raw.readyState === l.raw.CLOSED) return;
    log.warn({ user: l.conn.user.name, conn: l.conn.id, buffered: l.raw.bufferedAmount }, 'socket does not read what it is sent; cutting it');
    l.closed = true;
    l.pending.length = 0;
    l.raw.terminate();
  }

  // A beat is spread over the heartbeat: each socket is visited once every heartbeatMs, a
  // 1/BEAT_TICKS share of them every heartbeatMs/BEAT_TICKS. Thousands of pings written at
  // once (and their pongs read at once) would hold up the webhooks and offers arriving
  // meanwhile, on this node and in the agents' browsers alike.
  const beatOne = (l: Live, t: number) => {
    // Closed since the beat began (the sockets are visited over several turns).
    if (l.ended || !live.has(l.conn.id)) return;
    if (l.expiresAt <= t) return endSession(l, 'session expired');
    if (t - l.lastSeen > deadAfterMs) {
      log.info({ user: l.conn.user.name, conn: l.conn.id }, 'heartbeat missed; closing socket');
      l.raw.terminate();
      return;
    }
    if (l.raw.readyState !== l.raw.OPEN) return;
    // Protocol-level ping: answered by the browser's network stack even in a throttled or
    // frozen tab. A page that answered the last JSON ping is alive as it is: its socket
    // needs no second ping (nor a second pong to read), until a JSON pong comes late.
    // Both pings in one write to the network.
    const socket = socketOf(l.raw);
    socket?.cork();
    if (t - l.pongAt > heartbeatMs * 1.5) l.raw.ping();
    l.conn.send(JSON.stringify({ type: 'ping', t } satisfies ServerMsg));
    socket?.uncork();
  };
  // Each socket has its turn (slot) for as long as it lives: visited exactly every heartbeatMs.
  const slots = Array.from({ length: BEAT_TICKS }, () => new Set<Live>());
  let nextSlot = 0;
  let tick = 0;
  const beat = setInterval(() => {
    const t = now();
    for (const l of [...slots[tick]!]) beatOne(l, t);
    tick = (tick + 1) % BEAT_TICKS;
  }, heartbeatMs / BEAT_TICKS);
  beat.unref();

  // Each open session's key, looked up once per period (one GET per session, not per socket).
  const sessionCheckMs = o.sessionCheckMs ?? 5_000;
  let checking = false;
  const sessionCheck = setInterval(() => {
    if (checking || live.size === 0) return;
    checking = true;
    const bySid = new Map<string, Live[]>();
    for (const l of live.values()) if (!l.ended) (bySid.get(l.sid) ?? bySid.set(l.sid, []).get(l.sid)!).push(l);
    void Promise.all(
      [...bySid].map(async ([sid, ls]) => {
        // The store down is not a session gone: nothing is closed then.
        const exists = await o.auth.sessions.exists(sid).catch(() => true);
        if (!exists) for (const l of ls) endSession(l, 'session no longer in the store');
      }),
    ).finally(() => (checking = false));
  }, sessionCheckMs);
  sessionCheck.unref();

  const routes = new Hono();
  routes.get('/ws', async (c, next) => {
    // Refusals are thrown: `app.onError` renders them like every other, with the request id.
    if (!o.auth.sameOrigin(c.req.raw, true)) throw new HttpForbidden('cross-origin WebSocket refused');
    const s = await o.auth.sessionOf(c.req.raw);
    if (!s) throw new HttpUnauthorized('log in first');
    const { tab } = parseQuery(c, SocketQuery);
    const handler = upgradeWebSocket(() => handlers(s.user, s.session, tab));
    return handler(c, next);
  });

  function handlers(user: User, session: { sid: string; expiresAt: number }, tab: string | undefined) {
    let l: Live | undefined;
    return {
      onOpen(_e: Event, ws: { raw?: unknown; send(s: string): void; close(code?: number, reason?: string): void }) {
        const raw = ws.raw as WebSocket;
        const mine = bySid.get(session.sid);
        if (mine && mine.size >= maxSocketsPerSession) {
          // Before anything is set up for it: the session's open sockets keep working.
          log.warn({ user: user.name, sockets: mine.size }, 'too many sockets for one session; refusing another');
          raw.close(CLOSE_TOO_MANY_SOCKETS, `too many sockets for this session (at most ${maxSocketsPerSession})`);
          setTimeout(() => raw.terminate(), CLOSE_GRACE_MS).unref();
          return;
        }
        let me!: Live;
        const conn: Conn = {
          id: randomUUID(),
          user,
          ...(tab ? { tab } : {}),
          send: (text) => {
            if (raw.readyState !== raw.OPEN) return;
            raw.send(text, { binary: false });
            checkBuffered(me);
          },
          sendMany: (frames) => {
            if (raw.readyState !== raw.OPEN) return;
            // One write to the network for all of them (ws corks each frame's header and payload the same way).
            const socket = socketOf(raw);
            socket?.cork();
            for (const f of frames) raw.send(f, { binary: false });
            socket?.uncork();
            checkBuffered(me);
          },
          // Frames built once for every socket (server/push/frame.ts) go straight to the
          // network: with no extension negotiated (compression would change the bytes) ws
          // writes its own frames synchronously to the same socket, so the order holds.
          sendFramed: (bytes) => {
            const socket = socketOf(raw);
            if (raw.readyState !== raw.OPEN || raw.extensions !== '' || !socket?.writable) return false;
            socket.write(bytes);
            checkBuffered(me);
            return true;
          },
          close: (code, reason) => raw.close(code, reason),
          kill: () => raw.terminate(),
        };
        l = me = {
          conn,
          raw,
          lastSeen: now(),
          welcomed: Promise.resolve(),
          pending: [],
          busy: false,
          refused: 0,
          closed: false,
          sid: session.sid,
          expiresAt: session.expiresAt,
          ended: false,
          slot: nextSlot++ % BEAT_TICKS,
          pongAt: 0,
        };
        live.set(conn.id, me);
        let set = bySid.get(session.sid);
        if (!set) bySid.set(session.sid, (set = new Set()));
        set.add(me);
        slots[me.slot]!.add(me);
        raw.on('pong', () => (me.lastSeen = now()));
        // Frames are read from ws itself: Hono's adapter would build a DOM MessageEvent and
        // copy each frame before it reached us (half of them are heartbeat pongs).
        raw.on('message', (data: Buffer, isBinary: boolean) => onFrame(me, data, isBinary));
        hub.add(conn);
        engine.agentConnected(conn);
        o.monitors?.connOpened(conn).catch((err: Error) => log.warn({ conn: conn.id, err: err.message }, 'monitor: socket not recorded'));
        // welcome first: requests wait for it, so no reply can overtake it.
        me.welcomed = (async () => {
          const msg = await engine.welcome(user);
          // Only pages that make peer connections (agents', supervisors') get TURN credentials.
          if (msg.type === 'welcome' && o.ice && user.roles.some((r) => r === 'agent' || r === 'supervisor')) msg.ice = issueIce(me, user.name);
          conn.send(JSON.stringify(msg));
        })().catch((err: Error) => {
          // No state to show (the store is down): say so and close, so the client reconnects later.
          log.warn({ conn: conn.id, err: err.message }, 'welcome failed; closing socket');
          conn.send(JSON.stringify(errorFrame(undefined, err)));
          conn.close(1011, 'state unavailable');
        });
        log.info({ user: user.name, conn: conn.id }, 'socket open');
      },
      onClose(e: { code?: number }) {
        const me = l;
        if (!me) return;
        // How the page went decides when a call it holds is ended (`engine.agentDisconnected`).
        const how = stopping ? 'node-stopping' : e.code === PAGE_LEFT_CLOSE || e.code === 1001 ? 'left' : 'lost';
        // Its queue goes with it: nothing more is handled for a socket that is gone.
        me.closed = true;
        me.pending.length = 0;
        live.delete(me.conn.id);
        const set = bySid.get(me.sid);
        set?.delete(me);
        if (set?.size === 0) bySid.delete(me.sid);
        slots[me.slot]!.delete(me);
        clearTimeout(me.iceTimer);
        hub.remove(me.conn);
        engine.agentDisconnected(me.conn, how);
        o.monitors?.connClosed(me.conn).catch((err: Error) => log.warn({ conn: me.conn.id, err: err.message }, 'monitor: close not handled'));
        log.info({ user: user.name, conn: me.conn.id }, 'socket closed');
      },
    };
  }

  /**
   * This user's STUN/TURN servers, with credentials of their own (never logged); minted ones
   * are sent again (`ice.servers`) at half their life, for as long as the socket lives.
   */
  function issueIce(me: Live, userName: string): IceConfig {
    const { config, renewAt } = o.ice!.issue(userName, now());
    clearTimeout(me.iceTimer);
    if (renewAt !== undefined) {
      me.iceTimer = setTimeout(() => {
        if (me.closed) return;
        me.conn.send(JSON.stringify({ type: 'ice.servers', ...issueIce(me, userName) } satisfies ServerMsg));
      }, Math.max(1_000, renewAt - now()));
      me.iceTimer.unref?.();
    }
    return config;
  }

  return {
    routes,
    async start() {
      unsubscribe ??= await o.auth.sessions.onEnded((sid) => {
        for (const l of [...(bySid.get(sid) ?? [])]) endSession(l, 'session ended (logout)');
      });
    },
    stats() {
      let pending = 0;
      let bufferedBytes = 0;
      for (const l of live.values()) {
        pending += l.pending.length;
        bufferedBytes += l.raw.bufferedAmount;
      }
      return { sockets: live.size, pending, bufferedBytes };
    },
    close() {
      stopping = true;
      clearInterval(beat);
      clearInterval(sessionCheck);
      void unsubscribe?.().catch(() => undefined);
      unsubscribe = undefined;
      for (const l of live.values()) {
        l.closed = true;
        l.pending.length = 0;
        l.raw.terminate();
      }
      live.clear();
      bySid.clear();
    },
  };
}
