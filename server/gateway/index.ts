/**
 * The WebSocket gateway (`GET /ws`, protocol in `shared/protocol.ts`).
 *
 * Upgrade: same Origin required (every browser sends one), then a session (401 without),
 * then any role. After the upgrade:
 * - `welcome` with the full state goes out first, on every (re)connect;
 * - each frame is size-checked (over 64 KiB → `TOO_LARGE`), validated, then handled in
 *   order per connection (a tab's answer cannot overtake its own earlier decline);
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
import type { Socket } from 'node:net';
import { upgradeWebSocket } from '@hono/node-server';
import { Hono } from 'hono';
import { WebSocketServer, type WebSocket } from 'ws';
import { MAX_FRAME_BYTES, parseClientMsg, type ServerMsg, type User } from '../../shared/protocol.ts';
import type { Auth } from '../auth/index.ts';
import type { CallEngine } from '../calls/engine.ts';
import type { Logger } from '../log/logger.ts';
import { HttpForbidden, HttpUnauthorized } from '../ops/errors.ts';
import { StoreUnavailableError } from '../store/store.ts';
import type { Conn, Hub } from '../push/hub.ts';
import { isMonitorRequest, type Monitors } from '../monitor/index.ts';

/** Hard cap where `ws` itself closes the socket (1009); frames between this and 64 KiB get an error frame. */
export const HARD_MAX_PAYLOAD = 1024 * 1024;
/** A beat's sockets are pinged over this many even turns of the heartbeat, not all at once. */
const BEAT_TICKS = 20;

/** The network socket under a `ws` socket (`ws` keeps it in `_socket`): corked writes, frames written as they are. */
const socketOf = (raw: WebSocket) => (raw as unknown as { _socket?: Socket })._socket;

/** The `ws` server to pass to `serve({ websocket: { server } })`. */
export function createWsServer(): WebSocketServer {
  return new WebSocketServer({ noServer: true, maxPayload: HARD_MAX_PAYLOAD });
}

export interface GatewayOptions {
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
  /** Monitoring relay (issue 17): `monitor.*` requests and every socket's open and close. */
  monitors?: Pick<Monitors, 'handle' | 'connOpened' | 'connClosed'> | undefined;
}

/** A `pong` as `JSON.stringify` writes it (the protocol's `Pong`: a number `t`, nothing else). */
const PONG = /^\{"type":"pong","t":-?\d+(\.\d+)?\}$/;

/** A page's tab id (`/ws?tab=`); anything else is ignored (the socket has no tab). */
const TAB_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Close code of a socket whose login session ended (logout or expiry). */
export const SESSION_ENDED_CLOSE = 4001;

export interface Gateway {
  routes: Hono;
  /** Listen for sessions ended on any node (their sockets are closed). */
  start(): Promise<void>;
  /** Stop the heartbeat and close every socket. */
  close(): void;
}

interface Live {
  conn: Conn;
  raw: WebSocket;
  lastSeen: number;
  queue: Promise<void>;
  /** The login session the socket was opened with, and when it expires. */
  sid: string;
  expiresAt: number;
  /** Set once the session ended: frames arriving after that are dropped. */
  ended: boolean;
  /** Its turn in the heartbeat (0 … BEAT_TICKS − 1). */
  slot: number;
  /** When its page last answered a JSON ping (0: never). */
  pongAt: number;
}

/** The error frame for a request that failed: UNAVAILABLE while the store is down, else INTERNAL. */
function errorFrame(id: string | undefined, err: unknown): ServerMsg {
  const down = err instanceof StoreUnavailableError;
  return {
    type: 'error',
    ...(id ? { id } : {}),
    code: down ? 'UNAVAILABLE' : 'INTERNAL',
    message: down ? 'the server cannot reach its store; try again shortly' : 'internal error',
  };
}

export function createGateway(o: GatewayOptions): Gateway {
  const { engine, hub, log } = o;
  const now = o.now ?? Date.now;
  // A silent socket is cut at its first beat after deadAfterMs: at most 7 + 2 = 9 s (< 10 s).
  const heartbeatMs = o.heartbeatMs ?? 2_000;
  const deadAfterMs = o.deadAfterMs ?? 7_000;
  const live = new Map<string, Live>();

  let unsubscribe: (() => Promise<void>) | undefined;

  /** The socket's session ended: no frame of it is handled any more; close it. */
  function endSession(l: Live, why: string): void {
    if (l.ended) return;
    l.ended = true;
    log.info({ user: l.conn.user.name, conn: l.conn.id }, `${why}; closing socket`);
    l.raw.close(SESSION_ENDED_CLOSE, 'session ended');
    // A client that never completes the closing handshake is cut.
    setTimeout(() => l.raw.terminate(), 2_000).unref();
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
    const tab = c.req.query('tab');
    const handler = upgradeWebSocket(() => handlers(s.user, s.session, tab && TAB_ID.test(tab) ? tab : undefined));
    return handler(c, next);
  });

  function handlers(user: User, session: { sid: string; expiresAt: number }, tab: string | undefined) {
    let l: Live | undefined;
    return {
      onOpen(_e: Event, ws: { raw?: unknown; send(s: string): void; close(code?: number, reason?: string): void }) {
        const raw = ws.raw as WebSocket;
        const conn: Conn = {
          id: randomUUID(),
          user,
          ...(tab ? { tab } : {}),
          send: (text) => {
            if (raw.readyState === raw.OPEN) raw.send(text, { binary: false });
          },
          sendMany: (frames) => {
            if (raw.readyState !== raw.OPEN) return;
            // One write to the network for all of them (ws corks each frame's header and payload the same way).
            const socket = socketOf(raw);
            socket?.cork();
            for (const f of frames) raw.send(f, { binary: false });
            socket?.uncork();
          },
          // Frames built once for every socket (server/push/frame.ts) go straight to the
          // network: with no extension negotiated (compression would change the bytes) ws
          // writes its own frames synchronously to the same socket, so the order holds.
          sendFramed: (bytes) => {
            const socket = socketOf(raw);
            if (raw.readyState !== raw.OPEN || raw.extensions !== '' || !socket?.writable) return false;
            socket.write(bytes);
            return true;
          },
          close: (code, reason) => raw.close(code, reason),
          kill: () => raw.terminate(),
        };
        l = { conn, raw, lastSeen: now(), queue: Promise.resolve(), sid: session.sid, expiresAt: session.expiresAt, ended: false, slot: nextSlot++ % BEAT_TICKS, pongAt: 0 };
        const me = l;
        live.set(conn.id, me);
        slots[me.slot]!.add(me);
        raw.on('pong', () => (me.lastSeen = now()));
        // Frames are read from ws itself: Hono's adapter would build a DOM MessageEvent and
        // copy each frame before it reached us (half of them are heartbeat pongs).
        raw.on('message', (data: Buffer, isBinary: boolean) => onFrame(me, data, isBinary));
        hub.add(conn);
        engine.agentConnected(conn);
        o.monitors?.connOpened(conn).catch((err: Error) => log.warn({ conn: conn.id, err: err.message }, 'monitor: socket not recorded'));
        // welcome first: queue it so no reply can overtake it.
        me.queue = me.queue.then(async () => conn.send(JSON.stringify(await engine.welcome(user)))).catch((err: Error) => {
          // No state to show (the store is down): say so and close, so the client reconnects later.
          log.warn({ conn: conn.id, err: err.message }, 'welcome failed; closing socket');
          conn.send(JSON.stringify(errorFrame(undefined, err)));
          conn.close(1011, 'state unavailable');
        });
        log.info({ user: user.name, conn: conn.id }, 'socket open');
      },
      onClose() {
        const me = l;
        if (!me) return;
        live.delete(me.conn.id);
        slots[me.slot]!.delete(me);
        hub.remove(me.conn);
        engine.agentDisconnected(me.conn);
        o.monitors?.connClosed(me.conn).catch((err: Error) => log.warn({ conn: me.conn.id, err: err.message }, 'monitor: close not handled'));
        log.info({ user: user.name, conn: me.conn.id }, 'socket closed');
      },
    };
  }

  function onFrame(me: Live, data: Buffer, isBinary: boolean): void {
    if (me.ended) return;
    me.lastSeen = now();
    if (isBinary) {
      me.conn.send(JSON.stringify({ type: 'error', code: 'BAD_REQUEST', message: 'text frames only' } satisfies ServerMsg));
      return;
    }
    if (data.length > MAX_FRAME_BYTES) {
      me.conn.send(JSON.stringify({ type: 'error', code: 'TOO_LARGE', message: `frame over ${MAX_FRAME_BYTES} bytes` } satisfies ServerMsg));
      return;
    }
    const text = data.toString('utf8');
    // A heartbeat pong exactly as the pages write it is what it looks like: it has done its
    // work (lastSeen) and needs no parse. Any other spelling goes through the full parse.
    if (text.length < 48 && PONG.test(text)) {
      me.pongAt = me.lastSeen;
      return;
    }
    me.queue = me.queue.then(() => (me.ended ? undefined : handle(me.conn, text))).catch((err: Error) => {
      log.error({ conn: me.conn.id, err: err.message }, 'frame handling failed');
    });
  }

  async function handle(conn: Conn, text: string): Promise<void> {
    const r = parseClientMsg(text);
    if (!r.ok) {
      conn.send(JSON.stringify({ type: 'error', ...(r.id ? { id: r.id } : {}), code: 'BAD_REQUEST', message: r.message } satisfies ServerMsg));
      return;
    }
    const msg = r.msg;
    try {
      switch (msg.type) {
        case 'pong': {
          const l = live.get(conn.id);
          if (l) l.pongAt = now();
          return;
        }
        case 'presence.set':
          engine.setPresence(conn.user, msg.status, conn, msg.id, msg.reason);
          return;
        default:
          if (isMonitorRequest(msg)) {
            if (o.monitors) await o.monitors.handle(conn, msg);
            else conn.send(JSON.stringify({ type: 'error', id: msg.id, code: 'UNAVAILABLE', message: 'monitoring is not enabled on this server' } satisfies ServerMsg));
            return;
          }
          await engine.request(conn, msg);
      }
    } catch (err) {
      // Every request gets an answer, also when the store is down.
      log.error({ conn: conn.id, type: msg.type, err: (err as Error).message }, 'request failed');
      conn.send(JSON.stringify(errorFrame('id' in msg ? msg.id : undefined, err)));
    }
  }

  return {
    routes,
    async start() {
      unsubscribe ??= await o.auth.sessions.onEnded((sid) => {
        for (const l of live.values()) if (l.sid === sid) endSession(l, 'session ended (logout)');
      });
    },
    close() {
      clearInterval(beat);
      clearInterval(sessionCheck);
      void unsubscribe?.().catch(() => undefined);
      unsubscribe = undefined;
      for (const l of live.values()) l.raw.terminate();
      live.clear();
    },
  };
}
