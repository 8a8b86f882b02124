/**
 * A private coturn (`turnserver`) for TURN tests: free loopback ports, a config
 * written into a temp dir and passed with `-c` (never /etc/turnserver.conf, never the
 * system's database), REST authentication (`use-auth-secret`) with a secret of its own, and
 * loopback peers allowed — in these tests every peer (Chromium, werift) is on 127.0.0.1.
 *
 * Relayed traffic is read from coturn's own log: each allocation that ends logs its counters
 * (`usage: realm=<…>, username=<…>, rp=…, rb=…, sp=…, sb=…`: packets and bytes received from
 * and sent to the client) and `peer usage` for the relay side.
 *
 * `stop()` leaves the ports known (a TURN server that is gone); `start()` brings it back on
 * them; `close()` ends it and removes its directory.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './redis.ts';
import { serverProcess } from './server-process.ts';

export const TURNSERVER = '/usr/bin/turnserver';

export function turnserverAvailable(): boolean {
  return existsSync(TURNSERVER) || spawnSync('sh', ['-c', 'command -v turnserver'], { stdio: 'ignore' }).status === 0;
}

/** One allocation's counters from its `usage` log line. */
export interface TurnUsage {
  username: string;
  /** Packets / bytes received from the client (what it sent to relay). */
  rp: number;
  rb: number;
  /** Packets / bytes sent to the client (what the relay received for it). */
  sp: number;
  sb: number;
}

export interface TestTurn {
  port: number;
  secret: string;
  realm: string;
  dir: string;
  /** `turn:127.0.0.1:<port>?transport=udp` and `…tcp`, and the STUN URL. */
  urls: { udp: string; tcp: string; stun: string };
  /** Switchboard env for this server: ICE_SERVERS (STUN + TURN UDP + TURN TCP), TURN_SECRET, ICE_TRANSPORT_POLICY. */
  env(policy?: 'all' | 'relay', which?: Array<'stun' | 'udp' | 'tcp'>): Record<string, string>;
  /** Its log so far. */
  log(): string;
  /** Counters of every allocation that has ended so far (coturn logs them at the end). */
  usage(): TurnUsage[];
  /** The relay side's counters of every ended allocation (`peer usage`: packets from / to the peers). */
  peerUsage(): TurnUsage[];
  /** Allocations made so far (`ALLOCATE processed, success`). */
  allocations(): number;
  /** Authentication refusals so far (401 after a credential was sent, e.g. an expired one). */
  refusals(): number;
  running(): boolean;
  start(): Promise<void>;
  stop(): Promise<void>;
  close(): Promise<void>;
}


/**
 * The start of a block of `size` relay ports: random, above the usual ephemeral start, so two
 * test servers rarely share one; coturn itself skips a port of its range that is taken.
 */
function relayRange(size: number): number {
  const base = 50_000 + Math.floor(Math.random() * 14_000);
  return base - (base % size);
}

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ port, host: '127.0.0.1' });
    sock.setTimeout(300, () => (sock.destroy(), resolve(false)));
    sock.once('connect', () => (sock.destroy(), resolve(true)));
    sock.once('error', () => resolve(false));
  });
}

export interface StartTurnOptions {
  /** Extra `name=value` (or bare flag) lines for the config file. */
  extra?: string[];
}

export async function startTurn(o: StartTurnOptions = {}): Promise<TestTurn> {
  if (!turnserverAvailable()) throw new Error('turnserver is not installed (apt-get install -y coturn, or run .ci/run)');
  const dir = mkdtempSync(join(tmpdir(), 'sb-coturn-'));
  const port = await freePort();
  const minPort = relayRange(64);
  const secret = randomBytes(24).toString('base64url');
  const realm = 'switchboard.test';
  const logFile = join(dir, 'turn.log');
  const conf = join(dir, 'turnserver.conf');
  writeFileSync(
    conf,
    [
      `listening-ip=127.0.0.1`,
      `relay-ip=127.0.0.1`,
      `listening-port=${port}`,
      `min-port=${minPort}`,
      `max-port=${minPort + 63}`,
      'fingerprint',
      'use-auth-secret',
      `static-auth-secret=${secret}`,
      `realm=${realm}`,
      // Every peer of these tests is on loopback: allowed here, denied in production (README).
      'allow-loopback-peers',
      'no-multicast-peers',
      'no-tls',
      'no-dtls',
      'no-cli',
      'no-rfc5780',
      `userdb=${join(dir, 'turndb')}`,
      `pidfile=${join(dir, 'turnserver.pid')}`,
      `log-file=${logFile}`,
      'simple-log',
      'no-stdout-log',
      'verbose',
      ...(o.extra ?? []),
    ].join('\n') + '\n',
  );
  let closed = false;

  const read = () => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };

  const server = serverProcess({ name: `turnserver on port ${port}`, command: TURNSERVER, args: ['-c', conf], ready: () => listening(port), exitDetail: () => read().slice(-2000), killAfterMs: 3000 });
  const start = async () => {
    if (closed) throw new Error('test coturn is closed');
    await server.start();
  };
  const stop = () => server.stop();

  await start();
  const urls = { udp: `turn:127.0.0.1:${port}?transport=udp`, tcp: `turn:127.0.0.1:${port}?transport=tcp`, stun: `stun:127.0.0.1:${port}` };
  return {
    port,
    secret,
    realm,
    dir,
    urls,
    env(policy = 'all', which = ['stun', 'udp', 'tcp']) {
      return { ICE_SERVERS: which.map((w) => urls[w]).join(','), TURN_SECRET: secret, ICE_TRANSPORT_POLICY: policy };
    },
    log: read,
    usage() {
      const out: TurnUsage[] = [];
      for (const m of read().matchAll(/\d: usage: realm=<[^>]*>, username=<([^>]*)>, rp=(\d+), rb=(\d+), sp=(\d+), sb=(\d+)/g)) {
        out.push({ username: m[1]!, rp: Number(m[2]), rb: Number(m[3]), sp: Number(m[4]), sb: Number(m[5]) });
      }
      return out;
    },
    peerUsage() {
      const out: TurnUsage[] = [];
      for (const m of read().matchAll(/: peer usage: realm=<[^>]*>, username=<([^>]*)>, rp=(\d+), rb=(\d+), sp=(\d+), sb=(\d+)/g)) {
        out.push({ username: m[1]!, rp: Number(m[2]), rb: Number(m[3]), sp: Number(m[4]), sb: Number(m[5]) });
      }
      return out;
    },
    allocations: () => (read().match(/ALLOCATE processed, success/g) ?? []).length,
    // The first 401 of every allocation is the normal challenge (no user yet): only refusals of a named user count.
    refusals: () => (read().match(/user <[^>]+>: incoming packet \w+ processed, error 401/g) ?? []).length,
    running: () => server.running(),
    start,
    stop,
    async close() {
      if (closed) return;
      await stop();
      closed = true;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
