/**
 * A private Janus (Meetecho's WebRTC server, Debian's `janus` 1.1.x) with the AudioBridge
 * plugin and the WebSocket API only, for tests and benches of the media anchor. Janus never
 * gathers loopback candidates, so it runs inside a network namespace the caller made
 * (`test/support/netns.ts`): its only address is the namespace's veth end, its API listens
 * there, and every packet stays on this machine. The configuration is generated in a
 * folder of its own (never /etc/janus); `close()` stops it and removes the folder.
 *
 *   const ns = await createNetns();
 *   const janus = await startJanus(ns);          // janus.url: ws://<ns address>:<port>
 *   const api = await JanusApi.connect(janus.url);
 */
import WebSocket from 'ws';
import { janusAvailable, startPrivateJanus } from '../../server/anchor/private-janus.ts';
import type { Netns } from './netns.ts';

export { janusAvailable };

export interface TestJanus {
  /** The WebSocket API (`janus-protocol`), on the namespace's address. */
  url: string;
  /** The Janus process (`ip netns exec` execs janus: the same pid). */
  pid: number;
  /** Its log so far (what it printed). */
  log(): string;
  /** `kill -9`: Janus dies at once, its sessions, rooms and legs with it (the fault tests). Resolves once it exited. */
  crash(): Promise<void>;
  close(): Promise<void>;
}

export async function startJanus(ns: Pick<Netns, 'name' | 'nsAddress'>, o: { port?: number; rtpPorts?: string } = {}): Promise<TestJanus> {
  // The namespace is the test's own: no other process listens there. `ip netns exec` execs janus (the same process).
  const j = await startPrivateJanus({ wsIp: ns.nsAddress, wsPort: o.port ?? 8188, ...(o.rtpPorts ? { rtpPorts: o.rtpPorts } : {}), prefix: ['ip', 'netns', 'exec', ns.name] });
  return {
    url: j.url,
    pid: j.pid,
    log: j.log,
    crash: async () => {
      j.kill('SIGKILL');
      await j.exited;
    },
    close: j.close,
  };
}

/** Janus's JSON API over one WebSocket: requests by transaction, events kept for `nextEvent`. */
export class JanusApi {
  private n = 0;
  private readonly waiting = new Map<string, (m: JanusMessage) => void>();
  private readonly events: JanusMessage[] = [];
  private keepalive: NodeJS.Timeout | undefined;
  sessionId: number | undefined;

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (d) => {
      const m = JSON.parse(String(d)) as JanusMessage;
      if (m.janus === 'ack') return;
      const w = m.transaction !== undefined ? this.waiting.get(m.transaction) : undefined;
      if (w) {
        this.waiting.delete(m.transaction!);
        w(m);
      } else this.events.push(m);
    });
  }

  static async connect(url: string): Promise<JanusApi> {
    const ws = new WebSocket(url, 'janus-protocol');
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const api = new JanusApi(ws);
    const s = await api.request({ janus: 'create' });
    api.sessionId = (s.data as { id: number }).id;
    api.keepalive = setInterval(() => ws.send(JSON.stringify({ janus: 'keepalive', session_id: api.sessionId, transaction: 'keepalive' })), 20_000);
    return api;
  }

  request(body: Record<string, unknown>): Promise<JanusMessage> {
    const transaction = `t${++this.n}`;
    return new Promise((resolve) => {
      this.waiting.set(transaction, resolve);
      this.ws.send(JSON.stringify({ ...(this.sessionId !== undefined ? { session_id: this.sessionId } : {}), ...body, transaction }));
    });
  }

  async attach(plugin = 'janus.plugin.audiobridge'): Promise<number> {
    return ((await this.request({ janus: 'attach', plugin })).data as { id: number }).id;
  }

  /** A plugin message on a handle; its answer (an event carrying the same transaction). */
  message(handle: number, body: Record<string, unknown>, jsep?: { type: 'offer' | 'answer'; sdp: string }): Promise<JanusMessage> {
    return this.request({ janus: 'message', handle_id: handle, body, ...(jsep ? { jsep: { ...jsep, trickle: false } } : {}) });
  }

  close(): void {
    clearInterval(this.keepalive);
    this.ws.close();
  }
}

export interface JanusMessage {
  janus: string;
  transaction?: string;
  sender?: number;
  data?: unknown;
  plugindata?: { plugin: string; data: Record<string, unknown> };
  jsep?: { type: 'offer' | 'answer'; sdp: string };
  error?: { code: number; reason: string };
}
