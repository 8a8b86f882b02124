/**
 * An in-process stand-in for the Switchboard server, just enough to drive the web-agent
 * pages in a real browser: it serves the real `buildWebAgent()` bundle, a session-cookie
 * login, `/api/me`, and a `/ws` endpoint speaking shared/protocol.ts. Every frame it sends
 * is validated with the shared `ServerMsg` schema and every frame it receives with
 * `parseClientMsg`, so a test cannot pass on frames the real server would refuse.
 *
 * It holds no call logic: the test decides what the "server" says and when. The real
 * server's end-to-end tests are the server engineer's.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { buildWebAgent, type WebAsset } from '../../web-agent/build.ts';
import { ServerMsg, parseClientMsg, type AgentState, type CallView, type ClientMsg, type Presence, type User } from '../../shared/protocol.ts';

export interface StandInOptions {
  user?: User;
  /** `GET /api/me` says `demo: true`. */
  demo?: boolean;
}

export interface Client {
  ws: WebSocket;
  socket: Socket;
  /** Frames this client sent, in order. */
  received: ClientMsg[];
}

/** A canned HTTP answer: JSON, or raw bytes with their headers. */
export type CannedAnswer = { status?: number; json?: unknown; body?: Uint8Array; headers?: Record<string, string> };
/** `body`: the parsed JSON body of a POST/PUT/PATCH (undefined for other methods). */
type Route = (url: URL, body?: unknown) => CannedAnswer | Promise<CannedAnswer>;

type Reply = { ack: Record<string, unknown> } | { error: { code: string; message: string } } | 'none';
type Handler = (msg: ClientMsg & { id: string }, client: Client) => Reply | Promise<Reply>;

let assetsPromise: Promise<Map<string, WebAsset>> | undefined;

export class StandIn {
  readonly clients = new Set<Client>();
  /** Every client frame, from every client, in order. */
  readonly received: Array<{ client: Client; msg: ClientMsg }> = [];
  /** What `welcome` lists (offers ringing and live calls). */
  readonly calls = new Map<string, CallView>();
  presence: Presence = 'away';
  /** More `welcome` fields (agentState, dispositions, awayReasons); validated like every frame. */
  welcomeExtras: { agentState?: AgentState; dispositions?: string[]; awayReasons?: string[] } = {};
  demoCalls = 0;
  readonly user: User;
  private readonly handlers = new Map<string, Handler>();
  private readonly waiters = new Set<() => void>();
  private pingTimer: ReturnType<typeof setInterval> | undefined;
  /** Frames that failed validation (each test asserts there are none). */
  readonly badFrames: string[] = [];
  /** Clients that get no frames at all (a half-open socket as the page sees it). */
  readonly frozen = new Set<Client>();
  /** Canned answers by `METHOD /path` (see `answer`). */
  private readonly routes = new Map<string, Route>();
  /** Every request to a canned route, in order (`/path?query`). */
  readonly requests: string[] = [];

  private constructor(
    private readonly http: Server,
    private readonly wss: WebSocketServer,
    readonly url: string,
    readonly opts: StandInOptions,
  ) {
    this.user = opts.user ?? { name: 'agent1', roles: ['agent'] };
    this.handle('presence.set', (m) => {
      if (m.type === 'presence.set') this.presence = m.status;
      return { ack: {} };
    });
    this.handle('call.decline', (m) => {
      if (m.type === 'call.decline') this.calls.delete(m.wacid);
      return { ack: {} };
    });
    this.handle('call.hangup', () => ({ ack: {} }));
    this.handle('call.answer', () => ({ ack: {} }));
  }

  static async start(opts: StandInOptions = {}): Promise<StandIn> {
    const assets = await (assetsPromise ??= buildWebAgent());
    const wss = new WebSocketServer({ noServer: true });
    let self: StandIn | undefined;
    const http = createServer((req, res) => void self!.route(req, res, assets));
    http.on('upgrade', (req, socket, head) => {
      // The page names its tab (`/ws?tab=<id>`), as with the real server.
      if (new URL(req.url ?? '/', 'http://x').pathname !== '/ws' || !hasSession(req)) {
        socket.end('HTTP/1.1 401 Unauthorized\r\n\r\n');
        return;
      }
      wss.handleUpgrade(req, socket as Socket, head, (ws) => self!.accept(ws, socket as Socket));
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    const { port } = http.address() as AddressInfo;
    // 127.0.0.1, not localhost: a secure context for getUserMedia on a plain-http origin.
    self = new StandIn(http, wss, `http://127.0.0.1:${port}`, opts);
    return self;
  }

  /** Replace how a request type is answered (default: a plain ack). */
  handle(type: ClientMsg['type'], handler: Handler): void {
    this.handlers.set(type, handler);
  }

  /**
   * Answer `METHOD /path` (any query) with a canned answer, behind the same session check
   * as the rest of `/api`: the page tests for API routes the real server has its own tests for.
   */
  answer(method: string, path: string, answer: Route): void {
    this.routes.set(`${method} ${path}`, answer);
  }

  /** Send a validated frame to every (or one) client. */
  send(msg: ServerMsg, to?: Client): void {
    const text = JSON.stringify(ServerMsg.parse(msg));
    for (const c of to ? [to] : this.clients) {
      if (!this.frozen.has(c) && c.ws.readyState === c.ws.OPEN) c.ws.send(text);
    }
  }

  /** Ring: remember the offer (for later welcomes) and send `call.offered`. */
  offer(call: { wacid: string; from: string; to?: string; sdp: string; deadline: number; phoneId?: string }): void {
    const view: CallView = {
      wacid: call.wacid,
      phoneId: call.phoneId ?? 'phone-1',
      from: call.from,
      to: call.to ?? '+15550001000',
      direction: 'USER_INITIATED',
      state: 'ringing',
      deadline: call.deadline,
      sdp: call.sdp,
    };
    this.calls.set(call.wacid, view);
    this.send({ type: 'call.offered', ...view, sdp: call.sdp, deadline: call.deadline });
  }

  /** Send `call.state` and keep the view for later welcomes (ended calls leave it). */
  state(view: CallView): void {
    if (view.state === 'ended') this.calls.delete(view.wacid);
    else this.calls.set(view.wacid, view);
    this.send({ type: 'call.state', ...view });
  }

  /** Send `ping` every `ms` to every client (the page learns the interval from these). */
  startPings(ms: number): void {
    clearInterval(this.pingTimer);
    this.pingTimer = setInterval(() => this.send({ type: 'ping', t: Date.now() }), ms);
  }

  /** Wait until `pred` holds (checked on every received frame and connection). */
  async until<T>(pred: () => T | undefined | false, timeoutMs = 10_000, what = 'condition'): Promise<T> {
    const first = pred();
    if (first) return first;
    return new Promise<T>((resolve, reject) => {
      const check = () => {
        const v = pred();
        if (!v) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(v);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`stand-in: timed out waiting for ${what}`));
      }, timeoutMs);
      this.waiters.add(check);
    });
  }

  /** The first received frame of `type` (after `after` frames), waiting for it. */
  async frame<T extends ClientMsg['type']>(type: T, after = 0, timeoutMs = 10_000): Promise<Extract<ClientMsg, { type: T }>> {
    return this.until(
      () => this.received.slice(after).find((r) => r.msg.type === type)?.msg as Extract<ClientMsg, { type: T }> | undefined,
      timeoutMs,
      `a ${type} frame`,
    );
  }

  async close(): Promise<void> {
    clearInterval(this.pingTimer);
    for (const c of this.clients) c.socket.destroy();
    this.wss.close();
    await new Promise<void>((r) => this.http.close(() => r()));
  }

  private notify(): void {
    for (const w of [...this.waiters]) w();
  }

  private accept(ws: WebSocket, socket: Socket): void {
    const client: Client = { ws, socket, received: [] };
    this.clients.add(client);
    ws.on('close', () => {
      this.clients.delete(client);
      this.notify();
    });
    ws.on('message', async (data, isBinary) => {
      const parsed = isBinary ? ({ ok: false, message: 'binary frame' } as const) : parseClientMsg(data.toString());
      // A frame the real server would refuse is a test failure, not something to skip.
      if (!parsed.ok) {
        this.badFrames.push(`${parsed.message}: ${data.toString().slice(0, 200)}`);
        return;
      }
      const msg = parsed.msg;
      client.received.push(msg);
      this.received.push({ client, msg });
      this.notify();
      if (!('id' in msg)) return;
      const handler = this.handlers.get(msg.type);
      const reply = handler ? await handler(msg as ClientMsg & { id: string }, client) : { ack: {} };
      if (reply === 'none') return;
      if ('ack' in reply) this.send({ type: 'ack', id: msg.id, ...reply.ack }, client);
      else this.send({ type: 'error', id: msg.id, ...reply.error }, client);
    });
    this.send({ type: 'welcome', protocol: 1, user: this.user, presence: this.presence, calls: [...this.calls.values()], ...this.welcomeExtras }, client);
    this.notify();
  }

  private async route(req: IncomingMessage, res: import('node:http').ServerResponse, assets: Map<string, WebAsset>): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    const json = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    const body = async () => {
      let raw = '';
      for await (const chunk of req) raw += chunk;
      return raw ? JSON.parse(raw) : {};
    };
    if (req.method === 'POST' && path === '/api/login') {
      const { name, password } = (await body()) as { name?: string; password?: string };
      if (name === this.user.name && password === this.user.name) {
        return json(200, { name, roles: this.user.roles }, { 'set-cookie': 'sid=ok; HttpOnly; SameSite=Strict; Path=/' });
      }
      return json(401, { error: { status: 401, code: 'UNAUTHORIZED', message: 'wrong name or password', requestId: 'r1' } });
    }
    if (req.method === 'POST' && path === '/api/logout') return json(200, {}, { 'set-cookie': 'sid=; Max-Age=0; Path=/' });
    if (path.startsWith('/api/') && !hasSession(req)) {
      return json(401, { error: { status: 401, code: 'UNAUTHORIZED', message: 'log in first', requestId: 'r2' } });
    }
    const canned = this.routes.get(`${req.method} ${path}`);
    if (canned) {
      this.requests.push(req.url ?? path);
      this.notify();
      const a = await canned(new URL(req.url ?? path, this.url), req.method === 'GET' || req.method === 'HEAD' ? undefined : await body());
      if (a.body) {
        res.writeHead(a.status ?? 200, { 'content-length': String(a.body.length), ...a.headers });
        return void res.end(a.body);
      }
      return json(a.status ?? 200, a.json ?? {}, a.headers);
    }
    if (req.method === 'GET' && path === '/api/me') return json(200, { ...this.user, ...(this.opts.demo ? { demo: true } : {}) });
    if (req.method === 'POST' && path === '/api/demo/call') {
      this.demoCalls++;
      this.notify();
      return json(202, {});
    }
    const asset = assets.get(path);
    if (!asset) return json(404, { error: { status: 404, code: 'NOT_FOUND', message: `${path} not found`, requestId: 'r3' } });
    if (asset.contentType.startsWith('text/html') && path !== '/login' && !hasSession(req)) {
      res.writeHead(302, { location: `/login?next=${encodeURIComponent(path)}` });
      return void res.end();
    }
    res.writeHead(200, { 'content-type': asset.contentType, 'cache-control': 'no-cache' });
    res.end(asset.body);
  }
}

function hasSession(req: IncomingMessage): boolean {
  return /(?:^|;\s*)sid=ok(?:;|$)/.test(req.headers.cookie ?? '');
}
