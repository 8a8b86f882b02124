/**
 * The `/ws` upgrade before the gateway sees it: the `ws` server (its hard frame cap) and the
 * Host check that answers a bad upgrade in the error shape.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { errorBody } from '../ops/errors.ts';
import { REQUEST_ID } from '../ops/request.ts';

/** Hard cap where `ws` itself closes the socket (1009); frames between this and 64 KiB get an error frame. */
export const HARD_MAX_PAYLOAD = 1024 * 1024;

/**
 * Answers an upgrade whose Host does not name this server itself, before the adapter sees
 * it: `@hono/node-server` cannot build a URL from a malformed Host (`a b`, `[::1`,
 * `host:99999`) and answered those with an empty 500, and answers every refused upgrade
 * without a body. Here they get 403 in the error shape (`{error: {status, code, message,
 * requestId}}`) like any other refusal; every other upgrade goes on to the adapter's
 * listeners as before. Call once, after `serve(...)`.
 */
export function guardUpgrades(server: Pick<Server, 'listeners' | 'removeAllListeners' | 'on'>, hostOk: (host: string | null) => boolean): void {
  const inner = server.listeners('upgrade') as Array<(req: IncomingMessage, socket: Duplex, head: Buffer) => void>;
  server.removeAllListeners('upgrade');
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (req.headers.upgrade?.toLowerCase() === 'websocket' && !hostOk(req.headers.host ?? null)) {
      const given = req.headers['x-request-id'];
      const requestId = typeof given === 'string' && REQUEST_ID.test(given) ? given : `req_${randomUUID()}`;
      const body = JSON.stringify(errorBody(403, 'FORBIDDEN', 'Host: must name this server (PUBLIC_URL)', requestId));
      socket.on('error', () => undefined);
      socket.end(
        `HTTP/1.1 403 Forbidden\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
          `X-Content-Type-Options: nosniff\r\nX-Request-ID: ${requestId}\r\n\r\n${body}`,
      );
      return;
    }
    for (const l of inner) l.call(server, req, socket, head);
  });
}

/** The `ws` server to pass to `serve({ websocket: { server } })`. */
export function createWsServer(): WebSocketServer {
  return new WebSocketServer({ noServer: true, maxPayload: HARD_MAX_PAYLOAD });
}
