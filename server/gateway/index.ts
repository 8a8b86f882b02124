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
 *   call moves on after the engine's reconnect grace.
 */
import { randomUUID } from 'node:crypto';
import { upgradeWebSocket } from '@hono/node-server';
import { Hono } from 'hono';
import { WebSocketServer, type WebSocket } from 'ws';
import { MAX_FRAME_BYTES, parseClientMsg, type ServerMsg, type User } from '../../shared/protocol.ts';
import type { Auth } from '../auth/index.ts';
import { sameOrigin } from '../auth/session.ts';
import type { CallEngine } from '../calls/engine.ts';
import type { Logger } from '../log/logger.ts';
import { StoreUnavailableError } from '../store/store.ts';
import type { Conn, Hub } from './hub.ts';

export { Hub, type Conn } from './hub.ts';

/** Hard cap where `ws` itself closes the socket (1009); frames between this and 64 KiB get an error frame. */
export const HARD_MAX_PAYLOAD = 1024 * 1024;

/** The `ws` server to pass to `serve({ websocket: { server } })`. */
export function createWsServer(): WebSocketServer {
  return new WebSocketServer({ noServer: true, maxPayload: HARD_MAX_PAYLOAD });
}

export interface GatewayOptions {
  auth: Pick<Auth, 'userOf'>;
  engine: CallEngine;
  hub: Hub;
  log: Logger;
  heartbeatMs?: number;
  deadAfterMs?: number;
  now?: () => number;
}

export interface Gateway {
  routes: Hono;
  /** Stop the heartbeat and close every socket. */
  close(): void;
}

interface Live {
  conn: Conn;
  raw: WebSocket;
  lastSeen: number;
  queue: Promise<void>;
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
  // A silent socket is cut at the first beat after deadAfterMs: at most 7 + 2 = 9 s (< 10 s).
  const heartbeatMs = o.heartbeatMs ?? 2_000;
  const deadAfterMs = o.deadAfterMs ?? 7_000;
  const live = new Map<string, Live>();

  const beat = setInterval(() => {
    const t = now();
    for (const l of live.values()) {
      if (t - l.lastSeen > deadAfterMs) {
        log.info({ user: l.conn.user.name, conn: l.conn.id }, 'heartbeat missed; closing socket');
        l.raw.terminate();
        continue;
      }
      // Protocol-level ping: answered by the browser's network stack even in a throttled tab.
      l.raw.ping();
      l.conn.send(JSON.stringify({ type: 'ping', t } satisfies ServerMsg));
    }
  }, heartbeatMs);
  beat.unref();

  const routes = new Hono();
  routes.get('/ws', async (c, next) => {
    if (!sameOrigin(c.req.raw, true)) return c.json({ error: { status: 403, code: 'FORBIDDEN', message: 'cross-origin WebSocket refused', requestId: randomUUID() } }, 403);
    const user = await o.auth.userOf(c.req.raw);
    if (!user) return c.json({ error: { status: 401, code: 'UNAUTHORIZED', message: 'log in first', requestId: randomUUID() } }, 401);
    const handler = upgradeWebSocket(() => handlers(user));
    return handler(c, next);
  });

  function handlers(user: User) {
    let l: Live | undefined;
    return {
      onOpen(_e: Event, ws: { raw?: unknown; send(s: string): void; close(code?: number, reason?: string): void }) {
        const raw = ws.raw as WebSocket;
        const conn: Conn = {
          id: randomUUID(),
          user,
          send: (text) => {
            if (raw.readyState === raw.OPEN) raw.send(text);
          },
          close: (code, reason) => raw.close(code, reason),
          kill: () => raw.terminate(),
        };
        l = { conn, raw, lastSeen: now(), queue: Promise.resolve() };
        const me = l;
        live.set(conn.id, me);
        raw.on('pong', () => (me.lastSeen = now()));
        hub.add(conn);
        engine.agentConnected(conn);
        // welcome first: queue it so no reply can overtake it.
        me.queue = me.queue.then(async () => conn.send(JSON.stringify(await engine.welcome(user)))).catch((err: Error) => {
          // No state to show (the store is down): say so and close, so the client reconnects later.
          log.warn({ conn: conn.id, err: err.message }, 'welcome failed; closing socket');
          conn.send(JSON.stringify(errorFrame(undefined, err)));
          conn.close(1011, 'state unavailable');
        });
        log.info({ user: user.name, conn: conn.id }, 'socket open');
      },
      onMessage(e: MessageEvent) {
        const me = l;
        if (!me) return;
        me.lastSeen = now();
        const data = e.data;
        const size = typeof data === 'string' ? Buffer.byteLength(data) : (data as ArrayBuffer).byteLength;
        if (typeof data !== 'string') {
          me.conn.send(JSON.stringify({ type: 'error', code: 'BAD_REQUEST', message: 'text frames only' } satisfies ServerMsg));
          return;
        }
        if (size > MAX_FRAME_BYTES) {
          me.conn.send(JSON.stringify({ type: 'error', code: 'TOO_LARGE', message: `frame over ${MAX_FRAME_BYTES} bytes` } satisfies ServerMsg));
          return;
        }
        me.queue = me.queue.then(() => handle(me.conn, data)).catch((err: Error) => {
          log.error({ conn: me.conn.id, err: err.message }, 'frame handling failed');
        });
      },
      onClose() {
        const me = l;
        if (!me) return;
        live.delete(me.conn.id);
        hub.remove(me.conn);
        engine.agentDisconnected(me.conn);
        log.info({ user: user.name, conn: me.conn.id }, 'socket closed');
      },
    };
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
        case 'pong':
          return;
        case 'presence.set':
          engine.setPresence(conn.user, msg.status, conn, msg.id);
          return;
        default:
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
    close() {
      clearInterval(beat);
      for (const l of live.values()) l.raw.terminate();
      live.clear();
    },
  };
}
