/**
 * A private Janus (Debian's `janus` 1.1.x) with the AudioBridge plugin and the WebSocket API
 * only, from a configuration generated in a folder of its own (never /etc/janus): what demo
 * mode starts when a `janus` binary is on the PATH, and what the tests start inside a network
 * namespace (test/support/janus.ts). `reclaim_session_timeout` is set (the bridge claims its
 * session again after losing its control socket); the admin API is off; no `api_secret`
 * (the API listens on `wsIp` only: loopback in the demo, the test's namespace in tests).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Where Debian's package puts the plugins and transports. */
const LIB = '/usr/lib/x86_64-linux-gnu/janus';

export function janusAvailable(): boolean {
  // `janus --version` prints its version and exits 1.
  const r = spawnSync('janus', ['--version'], { encoding: 'utf8' });
  return !r.error && /Janus version/.test(r.stdout + r.stderr);
}

export interface PrivateJanusOptions {
  /** The API's address (loopback in the demo). */
  wsIp: string;
  wsPort: number;
  /** Janus's UDP media ports (`rtp_port_range`). Default 20000-29999. */
  rtpPorts?: string;
  /** Run Janus through this command first (tests: `ip netns exec <name>`). */
  prefix?: string[];
}

export interface PrivateJanus {
  url: string;
  /** The Janus process (its CPU and memory, for benches). */
  pid: number;
  /** What it printed so far. */
  log(): string;
  /** Resolves once the process exited. */
  readonly exited: Promise<void>;
  kill(signal: NodeJS.Signals): void;
  /** Stops it (SIGTERM, SIGKILL after 3 s) and removes its folder. */
  close(): Promise<void>;
}

function writeConfig(dir: string, o: PrivateJanusOptions): void {
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
  writeFileSync(join(dir, 'janus.transport.websockets.jcfg'), `general: {\n  json = "plain"\n  ws = true\n  ws_port = ${o.wsPort}\n  ws_ip = "${o.wsIp}"\n  wss = false\n}\nadmin: {\n  admin_ws = false\n}\n`);
  // No admin_key: rooms are created by whoever holds the API (the bridge; the API is never public).
  writeFileSync(join(dir, 'janus.plugin.audiobridge.jcfg'), 'general: {\n  events = false\n}\n');
}

function portOpen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host, port });
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

/** Starts Janus and waits (10 s at most) for its API to listen. */
export async function startPrivateJanus(o: PrivateJanusOptions): Promise<PrivateJanus> {
  if (!janusAvailable()) throw new Error('janus is not installed (apt-get install -y janus, or run .ci/run)');
  const dir = mkdtempSync(join(tmpdir(), 'sb-janus-'));
  writeConfig(dir, o);
  let out = '';
  const [cmd, ...args] = [...(o.prefix ?? []), 'janus', '-F', dir, '-C', join(dir, 'janus.jcfg'), '--disable-colors'];
  const proc: ChildProcess = spawn(cmd!, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout!.on('data', (d) => (out = (out + String(d)).slice(-100_000)));
  proc.stderr!.on('data', (d) => (out = (out + String(d)).slice(-100_000)));
  let done = false;
  const exited = new Promise<void>((r) => proc.once('exit', () => ((done = true), r())));
  const close = async () => {
    if (!done) {
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(t);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const until = Date.now() + 10_000;
  while (!(await portOpen(o.wsIp, o.wsPort))) {
    if (done || Date.now() > until) {
      await close();
      throw new Error(`janus did not open its API on ${o.wsIp}:${o.wsPort}:\n${out.slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: `ws://${o.wsIp}:${o.wsPort}`, pid: proc.pid!, log: () => out, exited, kill: (signal) => void (done || proc.kill(signal)), close };
}
