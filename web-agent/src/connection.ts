/**
 * The page's link to the server: one WebSocket to `/ws` speaking shared/protocol.ts, that
 * - validates every frame with the shared zod schemas (a bad frame is reported, not trusted);
 * - answers `ping` with `pong` and declares the socket dead when pings stop (heartbeat.ts);
 * - reconnects after any loss with a backoff policy, forever, until `stop()`;
 * - pairs requests with their `ack` / `error` by `id`, with a timeout.
 * On every (re)connect the server sends `welcome`, and the page rebuilds itself from it.
 */
import { PAGE_LEFT_CLOSE, parseServerMsg, type ClientMsg, type ServerMsg } from '../../shared/protocol.ts';
import type { BackoffPolicy } from './backoff.ts';
import { describeRefusal } from './format.ts';
import { t } from './i18n/index.ts';
import { setIceConfig } from './ice.ts';
import { silenceLimit, type WatchdogOptions } from './heartbeat.ts';
import type { Link } from './reducer.ts';

/** A request without its `id`: the connection assigns one. */
export type Request = ClientMsg extends infer M ? (M extends { id: string } ? Omit<M, 'id'> : never) : never;
type AckMsg = Extract<ServerMsg, { type: 'ack' }>;

/**
 * A request that did not get its ack. `code` is the server's (WsErrorCode) or one of ours;
 * `message` is the refusal in the user's language (from the code and `params`), and
 * `serverMessage` the server's English text.
 */
export class RequestError extends Error {
  readonly serverMessage: string;
  constructor(
    readonly code: string,
    serverMessage: string,
    readonly params?: Readonly<Record<string, string | number>>,
  ) {
    super(describeRefusal({ code, message: serverMessage, params }, Date.now()));
    this.serverMessage = serverMessage;
    this.name = 'RequestError';
  }
}
/** Codes of our own, for failures that never reached the server's answer. */
export const DISCONNECTED = 'DISCONNECTED';
export const TIMEOUT = 'TIMEOUT';

export interface ConnectionOptions {
  url: string;
  backoff: BackoffPolicy;
  watchdog?: WatchdogOptions;
  onMessage(msg: ServerMsg): void;
  onLink(link: Link): void;
  /** A frame failed validation: shown to the user, since it means client and server disagree. */
  onBadFrame(message: string): void;
  /** Connecting failed before any frame arrived (the upgrade may have been refused: 401). */
  onConnectFailed?(): void;
}

interface Pending {
  resolve(ack: AckMsg): void;
  reject(err: RequestError): void;
  timer: ReturnType<typeof setTimeout>;
}

export class Connection {
  private ws: WebSocket | undefined;
  private attempt = 0;
  private stopped = true;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private watchTimer: ReturnType<typeof setInterval> | undefined;
  private lastFrameAt = 0;
  private lastPingAt = 0;
  private pingIntervals: number[] = [];
  private gotFrame = false;
  private pending = new Map<string, Pending>();
  private seq = 0;
  private readonly tabId = Math.random().toString(36).slice(2, 12);
  /** Hidden by `pagehide` (its socket closed as `page left`) until a `pageshow` from the cache. */
  private hidden = false;

  constructor(private readonly opts: ConnectionOptions) {}

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    addEventListener('online', this.onOnline);
    addEventListener('pagehide', this.onPageHide);
    addEventListener('pageshow', this.onPageShow);
    document.addEventListener('visibilitychange', this.onVisible);
    this.open();
  }

  stop(): void {
    this.stopped = true;
    removeEventListener('online', this.onOnline);
    removeEventListener('pagehide', this.onPageHide);
    removeEventListener('pageshow', this.onPageShow);
    document.removeEventListener('visibilitychange', this.onVisible);
    clearTimeout(this.retryTimer);
    this.drop('stopped');
    this.opts.onLink('offline');
  }

  get isOpen(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /** Send a request and wait for its ack. Rejects with RequestError (server error, timeout, link lost). */
  request(msg: Request, timeoutMs = 10_000): Promise<AckMsg> {
    const id = `${this.tabId}-${++this.seq}`;
    return new Promise<AckMsg>((resolve, reject) => {
      if (!this.isOpen) {
        reject(new RequestError(DISCONNECTED, 'Not connected to the server: try again in a moment.'));
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new RequestError(TIMEOUT, 'The server did not answer in time.'));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.sendRaw({ ...msg, id } as ClientMsg);
    });
  }

  private sendRaw(msg: ClientMsg): void {
    this.ws?.send(JSON.stringify(msg));
  }

  private open(): void {
    if (this.stopped || this.hidden) return;
    // The tab id goes along (the same on every reconnect): monitoring finds this tab's call on its new socket.
    const ws = new WebSocket(`${this.opts.url}${this.opts.url.includes('?') ? '&' : '?'}tab=${this.tabId}`);
    this.ws = ws;
    this.gotFrame = false;
    this.pingIntervals = [];
    this.lastPingAt = 0;
    this.opts.onLink(this.attempt === 0 ? 'connecting' : 'reconnecting');
    ws.onopen = () => {
      this.lastFrameAt = Date.now();
      this.startWatchdog();
    };
    ws.onmessage = (ev) => this.onFrame(ev.data);
    ws.onclose = () => {
      if (this.ws !== ws) return;
      this.drop('closed');
      this.scheduleReconnect();
    };
    // An error is always followed by close; handling it there keeps one code path.
    ws.onerror = () => {};
  }

  private onFrame(data: unknown): void {
    if (typeof data !== 'string') {
      this.opts.onBadFrame('The server sent a binary frame; this page speaks JSON text frames only.');
      return;
    }
    const now = Date.now();
    this.lastFrameAt = now;
    const parsed = parseServerMsg(data);
    if (!parsed.ok) {
      this.opts.onBadFrame(t('error.badFrame', { detail: parsed.message }));
      return;
    }
    const msg = parsed.msg;
    if (!this.gotFrame) this.gotFrame = true;
    if (msg.type === 'welcome') this.attempt = 0; // a full resync: the link is healthy again
    // STUN/TURN for every peer connection this page makes from now on.
    if (msg.type === 'welcome' && msg.ice) setIceConfig(msg.ice);
    if (msg.type === 'ice.servers') {
      const { type: _t, ...ice } = msg;
      setIceConfig(ice);
    }
    if (msg.type === 'ping') {
      if (this.lastPingAt) this.pingIntervals = [...this.pingIntervals.slice(-4), now - this.lastPingAt];
      this.lastPingAt = now;
      this.sendRaw({ type: 'pong', t: msg.t });
    }
    if ((msg.type === 'ack' || msg.type === 'error') && msg.id !== undefined) {
      const p = this.pending.get(msg.id);
      if (p) {
        this.pending.delete(msg.id);
        clearTimeout(p.timer);
        if (msg.type === 'ack') p.resolve(msg);
        else p.reject(new RequestError(msg.code, msg.message, msg.params));
        return;
      }
    }
    this.opts.onMessage(msg);
  }

  private startWatchdog(): void {
    clearInterval(this.watchTimer);
    this.watchTimer = setInterval(() => this.checkAlive(), 250);
  }

  private checkAlive(): void {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return;
    const limit = silenceLimit(this.pingIntervals, this.opts.watchdog);
    if (Date.now() - this.lastFrameAt > limit) {
      // A half-open socket may take minutes to emit `close` on its own: give up on it now.
      this.drop('dead');
      this.scheduleReconnect();
    }
  }

  /** Forget the current socket: detach it, close it, fail its pending requests. */
  private drop(why: string, code = 4000): void {
    clearInterval(this.watchTimer);
    const ws = this.ws;
    this.ws = undefined;
    if (ws) {
      ws.onopen = ws.onmessage = ws.onclose = ws.onerror = null;
      try {
        ws.close(code, why);
      } catch {
        // already closing
      }
    }
    for (const [id, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new RequestError(DISCONNECTED, 'The connection to the server was lost before it answered.'));
      this.pending.delete(id);
    }
  }

  private scheduleReconnect(): void {
    if (this.stopped) return;
    if (!this.gotFrame) this.opts.onConnectFailed?.();
    this.opts.onLink('reconnecting');
    clearTimeout(this.retryTimer);
    const delay = this.opts.backoff.nextDelay(this.attempt++);
    this.retryTimer = setTimeout(() => this.open(), delay);
  }

  private readonly onOnline = () => {
    // The network came back: don't wait out the backoff.
    if (this.stopped || this.isOpen) return;
    clearTimeout(this.retryTimer);
    this.drop('network back');
    this.open();
  };

  /**
   * The page is going (reload, close, navigation): say so with the close code, so the server
   * ends at once a call whose audio lives in this page instead of waiting for it to reconnect.
   */
  private readonly onPageHide = () => {
    clearTimeout(this.retryTimer);
    this.drop('page left', PAGE_LEFT_CLOSE);
    this.hidden = true;
  };

  /** Back from the back/forward cache: connect again. */
  private readonly onPageShow = (e: PageTransitionEvent) => {
    if (!e.persisted || !this.hidden || this.stopped) return;
    this.hidden = false;
    this.open();
  };

  private readonly onVisible = () => {
    if (document.visibilityState === 'visible') this.checkAlive();
  };
}
