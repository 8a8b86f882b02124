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
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import type { Netns } from './netns.ts';

export interface TestJanus {
  /** The WebSocket API (`janus-protocol`), on the namespace's address. */
  url: string;
  /** Its log so far (what it printed). */
  log(): string;
  /** `kill -9`: Janus dies at once, its sessions, rooms and legs with it (the fault tests). Resolves once it exited. */
  crash(): Promise<void>;
  close(): Promise<void>;
}

/** Where Debian's package puts the plugins and transports. */
const LIB = '/usr/lib/x86_64-linux-gnu/janus';

export function janusAvailable(): boolean {
  // `janus --version` prints its version and exits 1.
  const r = spawnSync('janus', ['--version'], { encoding: 'utf8' });
  return !r.error && /Janus version/.test(r.stdout + r.stderr);
}

function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host, port });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

export async function startJanus(ns: Pick<Netns, 'name' | 'nsAddress'>, o: { port?: number; rtpPorts?: string } = {}): Promise<TestJanus> {
  if (!janusAvailable()) throw new Error('janus is not installed (apt-get install -y janus, or run .ci/run)');
  const dir = mkdtempSync(join(tmpdir(), 'sb-janus-'));
  const port = o.port ?? 8188; // the namespace is the test's own: no other process listens there
  writeFileSync(
    join(dir, 'janus.jcfg'),
    `general: {
  configs_folder = "${dir}"
  plugins_folder = "${LIB}/plugins"
  transports_folder = "${LIB}/transports"
  events_folder = "${LIB}/events"
  loggers_folder = "${LIB}/loggers"
  debug_level = 4
  reclaim_session_timeout = 30
}
media: {
  rtp_port_range = "${o.rtpPorts ?? '20000-29999'}"
}
nat: {
  ice_lite = false
  ice_tcp = false
}
plugins: {
  disable = "libjanus_duktape.so,libjanus_lua.so,libjanus_echotest.so,libjanus_nosip.so,libjanus_recordplay.so,libjanus_sip.so,libjanus_streaming.so,libjanus_textroom.so,libjanus_videocall.so,libjanus_videoroom.so,libjanus_voicemail.so"
}
transports: {
  disable = "libjanus_http.so,libjanus_mqtt.so,libjanus_nanomsg.so,libjanus_pfunix.so,libjanus_rabbitmq.so"
}
events: {
  broadcast = false
}
loggers: {
  disable = "libjanus_jsonlog.so"
}
`,
  );
  writeFileSync(join(dir, 'janus.transport.websockets.jcfg'), `general: {\n  json = "plain"\n  ws = true\n  ws_port = ${port}\n  ws_ip = "${ns.nsAddress}"\n  wss = false\n}\nadmin: {\n  admin_ws = false\n}\n`);
  // No admin_key: rooms are created by whoever holds the API (the bridge; the API is never public).
  writeFileSync(join(dir, 'janus.plugin.audiobridge.jcfg'), 'general: {\n  events = false\n}\n');
  let out = '';
  const proc: ChildProcess = spawn('ip', ['netns', 'exec', ns.name, 'janus', '-F', dir, '-C', join(dir, 'janus.jcfg'), '--disable-colors'], { stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout!.on('data', (d) => (out += String(d)));
  proc.stderr!.on('data', (d) => (out += String(d)));
  let exited = false;
  const gone = new Promise<void>((r) => proc.once('exit', () => ((exited = true), r())));
  const close = async () => {
    if (!exited) {
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 3000);
      await gone;
      clearTimeout(t);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const until = Date.now() + 10_000;
  while (!(await portOpen(ns.nsAddress, port))) {
    if (exited || Date.now() > until) {
      await close();
      throw new Error(`janus did not open its API on ${ns.nsAddress}:${port}:\n${out.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  const crash = async () => {
    if (!exited) proc.kill('SIGKILL'); // `ip netns exec` execs janus: the same process
    await gone;
  };
  return { url: `ws://${ns.nsAddress}:${port}`, log: () => out, crash, close };
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
