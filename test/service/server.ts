/**
 * A real local HTTP server for client tests (node:http on 127.0.0.1). It records every
 * request that reaches it (method, url, headers, body, arrival time) so tests can prove
 * what was sent, and how often, and when.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Seen {
  method: string;
  url: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  rawHeaders: string[];
  body: string;
  json: any;
  at: number;
}

export type Handler = (req: Seen, res: ServerResponse) => void | Promise<void>;

export interface TestServer {
  /** Base URL including `/v2`. */
  baseUrl: string;
  origin: string;
  seen: Seen[];
  setHandler(h: Handler): void;
  close(): Promise<void>;
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'service-request-id': `req_${Math.random().toString(16).slice(2)}`, ...headers });
  res.end(text);
}

export function serviceError(res: ServerResponse, status: number, code: string, message: string, headers: Record<string, string> = {}, chatApiError?: unknown): void {
  json(res, status, { error: { status, code, message, requestId: 'req_body_1', ...(chatApiError ? { chatApiError } : {}) } }, headers);
}

export async function startServer(handler: Handler): Promise<TestServer> {
  let h = handler;
  const seen: Seen[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const body = Buffer.concat(chunks).toString('utf8');
      const u = new URL(req.url ?? '/', 'http://x');
      let parsed: unknown;
      try {
        parsed = body ? JSON.parse(body) : undefined;
      } catch {
        parsed = undefined;
      }
      const s: Seen = {
        method: req.method ?? '',
        url: req.url ?? '',
        path: u.pathname.replace(/^\/v2/, ''),
        query: u.searchParams,
        headers: req.headers,
        rawHeaders: req.rawHeaders,
        body,
        json: parsed,
        at,
      };
      seen.push(s);
      Promise.resolve(h(s, res)).catch((err) => {
        if (!res.headersSent) json(res, 500, { error: { status: 500, code: 'TEST_HANDLER', message: String(err) } });
      });
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    baseUrl: `${origin}/v2`,
    origin,
    seen,
    setHandler(nh) {
      h = nh;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}

/**
 * A handler for chat sends that answers 429 when more than `limit` requests from the same
 * sender (`from`) arrived within the last `windowMs` (a sliding window, the strictest
 * common server-side reading of "N rps"). Counts what it answered.
 */
export function perSenderLimitedSends(limit: number, windowMs = 1000) {
  const arrivals = new Map<string, number[]>();
  const stats = { accepted: 0, rejected429: 0 };
  const handler: Handler = (req, res) => {
    const from = String(req.json?.from ?? '?');
    const log = arrivals.get(from) ?? [];
    arrivals.set(from, log);
    const now = req.at;
    while (log.length > 0 && log[0]! <= now - windowMs) log.shift();
    if (log.length >= limit) {
      stats.rejected429++;
      return serviceError(res, 429, 'RATE_LIMITED', `more than ${limit} requests per second from ${from}`, { 'retry-after': '1' });
    }
    log.push(now);
    stats.accepted++;
    json(res, 200, { id: `msg_${stats.accepted}`, from, to: req.json?.to, status: 'accepted', externalId: req.json?.externalId });
  };
  return { handler, stats };
}
