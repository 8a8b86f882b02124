/**
 * What one socket sends, after the upgrade: each frame is size-checked (over 64 KiB →
 * `TOO_LARGE`), a bare `pong` is taken as it is, everything else is queued — at most
 * `maxPending` queued or in flight, one more refused at once with `BUSY`, `floodRefusals`
 * refusals close the socket (4029) — and handled in order, one at a time (validated, then
 * to the engine or the monitors), not read while the socket's unsent output is over
 * `readPauseBytes`. Also the socket's state (`Live`), which the gateway keeps.
 */
import type { WebSocket } from 'ws';
import { CLOSE_TOO_MANY_REQUESTS, MAX_FRAME_BYTES, parseClientMsg, type ServerMsg } from '../../shared/protocol.ts';
import type { CallEngine } from '../calls/engine.ts';
import type { Logger } from '../log/logger.ts';
import { isMonitorRequest, type Monitors } from '../monitor/index.ts';
import { socketOf } from '../ops/internals.ts';
import type { Conn } from '../push/hub.ts';
import { isStoreDown } from '../store/store.ts';

/** A `pong` as `JSON.stringify` writes it (the protocol's `Pong`: a number `t`, nothing else). */
const PONG = /^\{"type":"pong","t":-?\d+(\.\d+)?\}$/;

export interface Live {
  conn: Conn;
  raw: WebSocket;
  lastSeen: number;
  /** Until the welcome is sent: requests wait for it (no reply may overtake it). */
  welcomed: Promise<void>;
  /** Requests received, not yet handled (at most maxPending, the one in hand included). */
  pending: string[];
  /** A request is being handled (the pump runs). */
  busy: boolean;
  /** Requests refused since the queue last emptied. */
  refused: number;
  /** Closed (or closing): nothing more of it is handled. */
  closed: boolean;
  /** The login session the socket was opened with, and when it expires. */
  sid: string;
  expiresAt: number;
  /** Set once the session ended: frames arriving after that are dropped. */
  ended: boolean;
  /** Its turn in the heartbeat (0 … BEAT_TICKS − 1). */
  slot: number;
  /** When its page last answered a JSON ping (0: never). */
  pongAt: number;
  /** Sends the socket fresh TURN credentials before its current ones expire. */
  iceTimer?: ReturnType<typeof setTimeout> | undefined;
}

/** A request's `id` as its client wrote it (a refused frame is not validated), when it is one. */
function requestIdOf(text: string): string | undefined {
  try {
    const id = (JSON.parse(text) as { id?: unknown } | null)?.id;
    return typeof id === 'string' && id.length > 0 && id.length <= 64 ? id : undefined;
  } catch {
    return undefined;
  }
}

/** The error frame for a request that failed: UNAVAILABLE while the store is down, else INTERNAL. */
export function errorFrame(id: string | undefined, err: unknown): ServerMsg {
  const down = isStoreDown(err);
  return {
    type: 'error',
    ...(id ? { id } : {}),
    code: down ? 'UNAVAILABLE' : 'INTERNAL',
    message: down ? 'the server cannot reach its store; try again shortly' : 'internal error',
  };
}

export interface RequestOptions {
  engine: Pick<CallEngine, 'setPresence' | 'request'>;
  monitors?: Pick<Monitors, 'handle'> | undefined;
  log: Logger;
  now: () => number;
  maxPending: number;
  floodRefusals: number;
  readPauseBytes: number;
  /** This node's sockets by connection id (a `pong` written otherwise is parsed, then marks its socket). */
  live: ReadonlyMap<string, Live>;
  /** The gateway's close of a socket (with its code and reason). */
  shut(l: Live, code: number, reason: string): void;
}

/** The frame handler of every socket (`onFrame`), over the gateway's sockets. */
export function createRequests(o: RequestOptions): { onFrame(me: Live, data: Buffer, isBinary: boolean): void } {
  const { engine, log, now, maxPending, floodRefusals, readPauseBytes, live, shut } = o;

  function onFrame(me: Live, data: Buffer, isBinary: boolean): void {
    if (me.ended || me.closed) return;
    me.lastSeen = now();
    if (isBinary) {
      if (flooding(me)) return;
      me.conn.send(JSON.stringify({ type: 'error', code: 'BAD_REQUEST', message: 'text frames only' } satisfies ServerMsg));
      return;
    }
    if (data.length > MAX_FRAME_BYTES) {
      if (flooding(me)) return;
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
    if (me.pending.length >= maxPending) return refuse(me, text);
    me.pending.push(text);
    if (!me.busy) void pump(me);
  }

  /**
   * One more refusal (a request past the bound, a binary or oversize frame): true when the
   * socket has had too many, and is closed (4029).
   */
  function flooding(me: Live): boolean {
    if (++me.refused < floodRefusals) return false;
    log.warn({ user: me.conn.user.name, conn: me.conn.id, pending: me.pending.length, refused: me.refused }, 'socket floods requests; closing it');
    shut(me, CLOSE_TOO_MANY_REQUESTS, 'too many requests');
    return true;
  }

  /** One request too many: refused at once (`BUSY`); a socket that keeps at it is closed. */
  function refuse(me: Live, text: string): void {
    if (flooding(me)) return;
    const id = requestIdOf(text);
    me.conn.send(JSON.stringify({ type: 'error', ...(id ? { id } : {}), code: 'BUSY', message: `${me.pending.length} requests of this socket are waiting (at most ${maxPending}): send it again once some are answered` } satisfies ServerMsg));
  }

  /** Handle the socket's requests in order, one at a time, while it is open. */
  async function pump(me: Live): Promise<void> {
    me.busy = true;
    try {
      await me.welcomed;
      while (me.pending.length > 0 && !me.closed && !me.ended) {
        // Its client is not reading our answers: stop reading its requests until it does.
        if (me.raw.bufferedAmount > readPauseBytes) {
          await drained(me);
          continue;
        }
        // Still counted in `pending` while in hand: the bound covers queued and in flight.
        const text = me.pending[0]!;
        try {
          await handle(me.conn, text);
        } catch (err) {
          log.error({ conn: me.conn.id, err: (err as Error).message }, 'frame handling failed');
        }
        me.pending.shift();
      }
    } finally {
      me.busy = false;
      if (me.pending.length === 0) me.refused = 0;
    }
  }

  /** Until the socket's unsent output drained (or it closed); it is not read meanwhile. */
  function drained(me: Live): Promise<void> {
    const socket = socketOf(me.raw);
    if (!socket || socket.destroyed) {
      me.closed = true;
      return Promise.resolve();
    }
    me.raw.pause();
    return new Promise<void>((resolve) => {
      const done = () => {
        socket.off('drain', done);
        socket.off('close', done);
        if (!me.closed) me.raw.resume();
        resolve();
      };
      socket.on('drain', done);
      socket.on('close', done);
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

  return { onFrame };
}
