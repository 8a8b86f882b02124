/**
 * A network namespace joined to this machine by a veth pair, for tests that must run a
 * browser the way a user's machine would (no loopback candidates) while keeping its traffic
 * on this machine: the namespace has its loopback and the veth end only (no route out), the
 * host end carries a private /30.
 *
 * Needs root and iproute2 (`ip`). Without them `createNetns` throws saying so: such a test
 * fails, it is never skipped (CI runs as root).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromiumPath } from './chromium.ts';

export interface Netns {
  name: string;
  /** The veth end on this machine's side (servers listen here). */
  hostAddress: string;
  /** The veth end inside the namespace (the browser's only non-loopback address). */
  nsAddress: string;
  /** An executable that runs Chromium inside the namespace (playwright's `executablePath`). */
  chromium: string;
  /**
   * Forwards `127.0.0.1:port` inside the namespace to `hostAddress:port`, so pages load from
   * a loopback origin (a secure context: `getUserMedia` works) while WebRTC uses the veth.
   */
  forward(port: number): Promise<void>;
  /**
   * The namespace's link goes down (`up: false`: every path through the veth breaks, as when
   * a network goes away) or comes back.
   */
  setLink(up: boolean): void;
  /** Deletes the namespace (and with it the veth pair) and stops the forwarders. Safe twice. */
  close(): Promise<void>;
}

function ip(...args: string[]): void {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  if (r.error) throw new Error(`\`ip ${args.join(' ')}\` could not run (${r.error.message}): this test needs iproute2 and root`);
  if (r.status !== 0) throw new Error(`\`ip ${args.join(' ')}\` failed: ${r.stderr.trim()}`);
}

/** A /30 in 10.237.0.0/16 that no interface of this machine uses. */
function freeSubnet(): number {
  const used = new Set(Object.values(networkInterfaces()).flatMap((l) => (l ?? []).map((i) => i.address)));
  for (let tries = 0; tries < 100; tries++) {
    const n = Math.floor(Math.random() * 16384);
    if (!used.has(`10.237.${n >> 6}.${(n & 63) * 4 + 1}`)) return n;
  }
  throw new Error('no free 10.237.x.y/30 subnet');
}

const FORWARDER = `
const net = require('node:net');
const [port, host] = process.argv.slice(1);
net.createServer((c) => {
  const u = net.connect(Number(port), host);
  c.pipe(u).pipe(c);
  c.on('error', () => u.destroy());
  u.on('error', () => c.destroy());
}).listen(Number(port), '127.0.0.1', () => process.stdout.write('listening\\n'));
`;

export async function createNetns(): Promise<Netns> {
  if (process.getuid?.() !== 0) {
    throw new Error('this test runs Chromium in a network namespace it creates (`ip netns add`): it needs root (CI runs as root); it is not skipped');
  }
  const id = `${process.pid.toString(36)}${Math.floor(Math.random() * 1296).toString(36)}`;
  const name = `sbns${id}`;
  const hostIf = `sbh${id}`;
  const nsIf = `sbn${id}`;
  const n = freeSubnet();
  const base = `10.237.${n >> 6}.${(n & 63) * 4}`;
  const hostAddress = base.replace(/\.\d+$/, (m) => `.${Number(m.slice(1)) + 1}`);
  const nsAddress = base.replace(/\.\d+$/, (m) => `.${Number(m.slice(1)) + 2}`);
  const dir = mkdtempSync(join(tmpdir(), 'sb-netns-'));
  const forwarders: ChildProcess[] = [];
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    for (const f of forwarders) if (f.exitCode === null) f.kill('SIGTERM');
    // Deleting the namespace destroys its veth end, and with it the host end.
    spawnSync('ip', ['netns', 'del', name]);
    spawnSync('ip', ['link', 'del', hostIf]);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    ip('netns', 'add', name);
    ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', nsIf);
    ip('link', 'set', nsIf, 'netns', name);
    ip('addr', 'add', `${hostAddress}/30`, 'dev', hostIf);
    ip('link', 'set', hostIf, 'up');
    ip('netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up');
    ip('netns', 'exec', name, 'ip', 'addr', 'add', `${nsAddress}/30`, 'dev', nsIf);
    ip('netns', 'exec', name, 'ip', 'link', 'set', nsIf, 'up');
  } catch (err) {
    await close();
    throw err;
  }
  const chromium = join(dir, 'chromium-in-netns');
  writeFileSync(chromium, `#!/bin/sh\nexec ip netns exec ${name} ${chromiumPath()} "$@"\n`);
  chmodSync(chromium, 0o755);
  const setLink = (up: boolean) => ip('netns', 'exec', name, 'ip', 'link', 'set', nsIf, up ? 'up' : 'down');
  return {
    name,
    hostAddress,
    nsAddress,
    chromium,
    setLink,
    forward: (port) =>
      new Promise((resolve, reject) => {
        const p = spawn('ip', ['netns', 'exec', name, process.execPath, '-e', FORWARDER, String(port), hostAddress], { stdio: ['ignore', 'pipe', 'inherit'] });
        forwarders.push(p);
        p.once('error', reject);
        p.once('exit', (code) => reject(new Error(`the forwarder in ${name} exited (${code})`)));
        p.stdout!.once('data', () => resolve());
      }),
    close,
  };
}

/** Whether a network interface of this name still exists (teardown checks). */
export function linkExists(name: string): boolean {
  return spawnSync('ip', ['link', 'show', name]).status === 0;
}
