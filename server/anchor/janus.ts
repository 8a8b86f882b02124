/**
 * One Janus server over its raw JSON API (WebSocket, subprotocol `janus-protocol`): one
 * socket, one Janus session, requests matched to answers by transaction.
 *
 * - Keepalives every `keepaliveMs` (Janus drops a session silent for its `session_timeout`, 60 s).
 * - The control socket lost (Janus restarted its transport, a network blip): reconnect with
 *   backoff and `claim` the session. Janus keeps a session whose socket went for its
 *   `reclaim_session_timeout` (it must be set: with the default 0 the session, and every
 *   caller's leg in it, is destroyed the moment the socket closes). Requests made while the
 *   socket is down fail at once (`JanusError` code `DISCONNECTED`): callers decide.
 * - Plugin messages answer `ack` first and then an `event` carrying the same transaction;
 *   synchronous plugin requests (create, destroy, list) answer `success` at once. Both
 *   resolve `request`; errors (`janus: error`, or the plugin's `error_code`) reject it.
 * - `JANUS_API_SECRET` goes as `apisecret` on every request; it is never logged.
 */
import WebSocket from 'ws';
import { fullJitter, type Backoff } from '../../shared/backoff.ts';
import type { Logger } from '../log/logger.ts';

export interface Jsep {
  type: 'offer' | 'answer';
  sdp: string;
  trickle?: boolean;
}

export interface JanusMessage {
  janus: string;
  transaction?: string;
  session_id?: number;
  sender?: number;
  data?: unknown;
  plugindata?: { plugin: string; data: Record<string, unknown> };
  jsep?: Jsep;
  error?: { code: number; reason: string };
}

/** A refusal from Janus (its own code and reason), or the socket gone (`DISCONNECTED`), or no answer (`TIMEOUT`). */
export class JanusError extends Error {
  override readonly name = 'JanusError';
  constructor(
    readonly code: number | 'DISCONNECTED' | 'TIMEOUT',
    message: string,
  ) {
    super(message);
  }
}

export interface JanusServerOptions {
  url: string;
  apiSecret?: string | undefined;
  log: Logger;
  /** Keepalive period (Janus's session_timeout is 60 s by default). */
  keepaliveMs?: number;
  /** A request without an answer this long fails with `TIMEOUT`. */
  requestTimeoutMs?: number;
  /** Reconnect delays after the control socket is lost. */
  backoff?: Backoff;
  /**
   * The control socket lost and not back (reconnects failing) this long: the server counts as
   * lost (`onLost`); a Janus that restarts lost its sessions anyway. Default 3 s.
   */
  lostAfterMs?: number;
  /** Janus is lost for good: its session (and every leg in it) is gone, or it stopped answering. */
  onLost?: (reason: string) => void;
}

type Pending = { resolve: (m: JanusMessage) => void; reject: (e: Error) => void; t: NodeJS.Timeout };

/** Events Janus pushes on a handle without a transaction of ours (webrtcup, hangup, media, slowlink, plugin events). */
export type HandleListener = (m: JanusMessage) => void;

export class JanusServer {
  readonly url: string;
  private ws: WebSocket | undefined;
  private sessionId: number | undefined;
  private n = 0;
  private readonly pending = new Map<string, Pending>();
  private readonly listeners = new Map<number, HandleListener>();
  private keepalive: NodeJS.Timeout | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private attempts = 0;
  private closed = false;
  /** When the control socket went (the reconnects' start), while it is down. */
  private downSince: number | undefined;
  private readonly backoff: Backoff;

  private constructor(private readonly o: JanusServerOptions) {
    this.url = o.url;
    this.backoff = o.backoff ?? fullJitter({ baseMs: 250, maxMs: 5_000, minMs: 100 });
  }

  /** Connects and creates the session; rejects when Janus is not reachable. */
  static async connect(o: JanusServerOptions): Promise<JanusServer> {
    const s = new JanusServer(o);
    await s.open();
    const created = await s.request({ janus: 'create' });
    s.sessionId = (created.data as { id: number }).id;
    s.keepalive = setInterval(() => {
      if (s.ws?.readyState === WebSocket.OPEN && s.sessionId !== undefined) void s.request({ janus: 'keepalive' }).catch(() => undefined);
    }, o.keepaliveMs ?? 15_000);
    s.keepalive.unref();
    return s;
  }

  /** Whether the control socket is up (requests can go). */
  get up(): boolean {
    return this.ws?.readyState === WebSocket.OPEN && this.sessionId !== undefined;
  }

  /** The session is lost for good (Janus forgot it, or `close`): a new connection is needed. */
  get gone(): boolean {
    return this.closed || this.sessionId === undefined;
  }

  get session(): number | undefined {
    return this.sessionId;
  }

  private open(): Promise<void> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(this.o.url, 'janus-protocol', { handshakeTimeout: 5_000 });
      let opened = false;
      ws.once('open', () => {
        opened = true;
        this.ws = ws;
        ws.on('message', (d) => this.onMessage(String(d)));
        ws.once('close', () => this.onClose(ws));
        resolve();
      });
      // Before `open`: the connect failed. After it: `close` follows, which reconnects.
      ws.on('error', (err) => {
        if (!opened) reject(new JanusError('DISCONNECTED', `${this.o.url}: ${err.message}`));
        else this.o.log.warn({ janus: this.url, err: err.message }, 'janus control socket error');
      });
    });
  }

  private onMessage(text: string): void {
    let m: JanusMessage;
    try {
      m = JSON.parse(text) as JanusMessage;
    } catch {
      this.o.log.warn({ janus: this.url }, 'janus sent a frame that is not JSON');
      return;
    }
    if (m.janus === 'ack') return; // an async request's receipt: its event follows
    const p = m.transaction !== undefined ? this.pending.get(m.transaction) : undefined;
    if (p) {
      this.pending.delete(m.transaction!);
      clearTimeout(p.t);
      const pluginError = m.plugindata?.data.error_code;
      if (m.janus === 'error') p.reject(new JanusError(m.error?.code ?? 0, m.error?.reason ?? 'janus error'));
      else if (pluginError !== undefined) p.reject(new JanusError(Number(pluginError), String(m.plugindata?.data.error ?? 'plugin error')));
      else p.resolve(m);
      return;
    }
    if (m.sender !== undefined) this.listeners.get(m.sender)?.(m);
  }

  private onClose(ws: WebSocket): void {
    if (this.ws !== ws) return;
    this.ws = undefined;
    for (const [t, p] of this.pending) {
      clearTimeout(p.t);
      p.reject(new JanusError('DISCONNECTED', `${this.url}: control socket closed`));
      this.pending.delete(t);
    }
    if (this.closed) return;
    this.o.log.warn({ janus: this.url }, 'janus control socket lost; reconnecting to claim the session');
    this.downSince ??= Date.now();
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    const delay = this.backoff.nextDelay(this.attempts++);
    this.reconnectTimer = setTimeout(() => void this.reconnect(), delay);
    this.reconnectTimer.unref();
  }

  /** A new socket, and the session claimed on it (its handles, rooms and peer connections kept). */
  private async reconnect(): Promise<void> {
    if (this.closed) return;
    try {
      await this.open();
      await this.request({ janus: 'claim' });
      this.attempts = 0;
      this.downSince = undefined;
      this.o.log.info({ janus: this.url, session: this.sessionId }, 'janus session claimed on a new control socket');
    } catch (err) {
      this.o.log.warn({ janus: this.url, err: (err as Error).message }, 'janus reconnect failed');
      // The session is gone for good (expired, Janus restarted): its calls' media is lost.
      if (err instanceof JanusError && typeof err.code === 'number') return this.lose(`its session is gone (${err.message})`);
      this.ws?.terminate();
      if (Date.now() - (this.downSince ?? Date.now()) >= (this.o.lostAfterMs ?? 3_000)) return this.lose(`not answering for ${Math.round((Date.now() - this.downSince!) / 1000)} s (${(err as Error).message})`);
      if (!this.closed && !this.ws) this.scheduleReconnect();
    }
  }

  /** Lost for good: the session is forgotten (a new connection makes a new one) and `onLost` says why. */
  private lose(reason: string): void {
    if (this.sessionId === undefined) return;
    this.sessionId = undefined;
    this.downSince = undefined;
    const ws = this.ws;
    this.ws = undefined;
    ws?.close();
    this.o.log.error({ janus: this.url, reason }, 'janus lost: its calls\' media is gone');
    this.o.onLost?.(reason);
  }

  /** One request; resolves with its answer (`success`, or the plugin's `event`). */
  request(body: Record<string, unknown>, timeoutMs = this.o.requestTimeoutMs ?? 10_000): Promise<JanusMessage> {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return Promise.reject(new JanusError('DISCONNECTED', `${this.url}: not connected`));
    const transaction = `sb${++this.n}`;
    const frame = {
      ...body,
      ...(this.sessionId !== undefined && body.janus !== 'create' ? { session_id: this.sessionId } : {}),
      ...(this.o.apiSecret ? { apisecret: this.o.apiSecret } : {}),
      transaction,
    };
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        this.pending.delete(transaction);
        reject(new JanusError('TIMEOUT', `${this.url}: no answer to ${String(body.janus)} in ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(transaction, { resolve, reject, t });
      ws.send(JSON.stringify(frame));
    });
  }

  /** A plugin handle (AudioBridge by default), with a listener for its events. */
  async attach(listener?: HandleListener, plugin = 'janus.plugin.audiobridge'): Promise<number> {
    const handle = ((await this.request({ janus: 'attach', plugin })).data as { id: number }).id;
    if (listener) this.listeners.set(handle, listener);
    return handle;
  }

  /** Detaches a handle (its peer connection closes); a handle already gone is not an error. */
  async detach(handle: number): Promise<void> {
    this.listeners.delete(handle);
    await this.request({ janus: 'detach', handle_id: handle }).catch(() => undefined);
  }

  /** A plugin message on a handle, with an SDP (non-trickle: complete, candidates inline). */
  message(handle: number, body: Record<string, unknown>, jsep?: Jsep): Promise<JanusMessage> {
    return this.request({ janus: 'message', handle_id: handle, body, ...(jsep ? { jsep: { type: jsep.type, sdp: jsep.sdp, trickle: false } } : {}) });
  }

  /** Closes the socket; the session (and what it holds) goes when Janus's reclaim timeout passes. Safe twice. */
  close(): void {
    this.closed = true;
    clearInterval(this.keepalive);
    clearTimeout(this.reconnectTimer);
    const ws = this.ws;
    this.ws = undefined;
    for (const p of this.pending.values()) {
      clearTimeout(p.t);
      p.reject(new JanusError('DISCONNECTED', `${this.url}: closed`));
    }
    this.pending.clear();
    ws?.close();
  }

  /** Destroys the session (its handles and their legs) and closes. */
  async destroy(): Promise<void> {
    if (this.up) await this.request({ janus: 'destroy' }, 2_000).catch(() => undefined);
    this.close();
  }
}
