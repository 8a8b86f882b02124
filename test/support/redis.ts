/**
 * A private `redis-server` for tests: its own free port, its own temporary directory,
 * killed when closed (and when the test process exits). Never touches the machine's
 * Redis on 6379.
 *
 *   const redis = await startRedis();            // --save '' --appendonly no
 *   const store = new RedisStore({ url: redis.url, prefix: uniquePrefix() });
 *   await redis.stop(); ...; await redis.start(); // same port, same dir
 *   await redis.close();
 *
 * With `{ durable: true }` the server runs `--appendonly yes --appendfsync always`, so a
 * stop/start (even a kill) keeps every acknowledged write.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serverProcess } from './server-process.ts';

export interface TestRedis {
  /** `redis://127.0.0.1:<port>/0` */
  readonly url: string;
  readonly port: number;
  /** The server's working directory (AOF files live here). */
  readonly dir: string;
  /** Stop the server (SIGTERM, then SIGKILL after 5 s). Data stays in `dir` when durable. */
  stop(opts?: { kill?: boolean }): Promise<void>;
  /** Start it again on the same port and directory. */
  start(): Promise<void>;
  /** Stop and delete the directory. Safe to call twice. */
  close(): Promise<void>;
  /** Send a signal to the running server (e.g. SIGSTOP / SIGCONT to freeze a replica). */
  signal(sig: NodeJS.Signals): void;
}

export interface StartRedisOptions {
  /** Append-only persistence with fsync on every write (default false). */
  durable?: boolean;
  /** Extra `redis-server` arguments, e.g. `['--maxmemory', '10mb']`. */
  args?: string[];
  /** `requirepass`: the server asks for it, and `url` carries it (`redis://:<password>@…`). */
  password?: string;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

export function redisServerAvailable(): boolean {
  return spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** A key prefix unique to one test run, e.g. `sbtest:3f9a1c:`. */
export function uniquePrefix(tag = 'sbtest'): string {
  return `${tag}:${randomBytes(6).toString('hex')}:`;
}

/**
 * True once the redis-server on `port` answers and is the process `pid` (INFO's
 * `process_id`): another test's server that took the port in between is not ours.
 */
export function answersAs(port: number, pid: number, password?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ port, host: '127.0.0.1' });
    let got = '';
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(500, () => done(false));
    sock.once('error', () => done(false));
    sock.once('connect', () => sock.write(`${password !== undefined ? `AUTH ${password}\r\n` : ''}INFO server\r\n`));
    sock.on('data', (d) => {
      got += d.toString();
      const m = /process_id:(\d+)\r\n/.exec(got);
      if (m) done(Number(m[1]) === pid);
      else if (got.startsWith('-') || got.includes('\r\n-')) done(false);
    });
  });
}

export async function startRedis(opts: StartRedisOptions = {}): Promise<TestRedis> {
  if (!redisServerAvailable()) {
    throw new Error('redis-server is not installed (apt-get install -y redis-server, or run .ci/run)');
  }
  const dir = mkdtempSync(join(tmpdir(), 'sb-redis-'));
  let closed = false;

  const serverOn = (port: number) =>
    serverProcess({
      name: `redis-server on port ${port}`,
      command: 'redis-server',
      args: [
        '--port', String(port),
        '--bind', '127.0.0.1',
        '--dir', dir,
        '--save', '',
        '--daemonize', 'no',
        '--protected-mode', 'yes',
        '--logfile', '',
        '--loglevel', 'warning',
        ...(opts.durable ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no']),
        ...(opts.password !== undefined ? ['--requirepass', opts.password] : []),
        ...(opts.args ?? []),
      ],
      ready: (pid) => answersAs(port, pid, opts.password),
    });

  // The free port is picked before redis-server binds it: another process may take it in
  // between. Then redis-server exits at start ("Address already in use") and another port
  // is tried; later restarts keep the port the server got.
  let port = 0;
  let server: ReturnType<typeof serverProcess> | undefined;
  for (let attempt = 1; !server; attempt++) {
    port = await freePort();
    const candidate = serverOn(port);
    try {
      await candidate.start();
      server = candidate;
    } catch (err) {
      await candidate.stop();
      if (attempt >= 5 || !/in use/i.test(String((err as Error)?.message))) {
        rmSync(dir, { recursive: true, force: true });
        throw err;
      }
    }
  }
  const started = server;
  const start = async (): Promise<void> => {
    if (closed) throw new Error('test redis is closed');
    await started.start();
  };
  const stop = (o: { kill?: boolean } = {}) => started.stop(o);

  return {
    url: `redis://${opts.password !== undefined ? `:${encodeURIComponent(opts.password)}@` : ''}127.0.0.1:${port}/0`,
    port,
    dir,
    start,
    stop,
    async close() {
      if (closed) return;
      started.signal('SIGCONT'); // a frozen server would not hear SIGTERM
      await stop();
      closed = true;
      rmSync(dir, { recursive: true, force: true });
    },
    signal: (sig) => started.signal(sig),
  };
}

/**
 * Redis high availability on loopback ports: a primary, `replicas` replicas and
 * `sentinels` sentinels (`redis-server <conf> --sentinel`) monitoring it as `name`, with
 * short detection times (down after `downAfterMs`, default 1000) so a failover takes a few
 * seconds. Every process has its own port and directory.
 *
 *   const ha = await startSentinelGroup();
 *   env REDIS_URL=ha.url REDIS_SENTINELS=ha.sentinelsEnv
 *   await ha.primary().stop({ kill: true }); await ha.waitForFailover();
 */
export interface SentinelGroup {
  readonly name: string;
  /** `redis://127.0.0.1:<first primary port>/0`: what REDIS_URL says (its host is not used in sentinel mode). */
  readonly url: string;
  readonly sentinels: Array<{ host: string; port: number }>;
  /** `127.0.0.1:p1,127.0.0.1:p2,...` for REDIS_SENTINELS. */
  readonly sentinelsEnv: string;
  /** Every data server (the first is the first primary). */
  readonly servers: TestRedis[];
  /** The server the sentinels call primary now. */
  primary(): Promise<TestRedis>;
  /** Resolves once the sentinels name a primary other than `old` (port), and it answers as master. */
  waitForFailover(oldPort: number, timeoutMs?: number): Promise<TestRedis>;
  close(): Promise<void>;
}

async function sendCommand(port: number, cmd: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = createConnection({ port, host: '127.0.0.1' });
    let got = '';
    sock.setTimeout(2000, () => {
      sock.destroy();
      reject(new Error(`no answer from 127.0.0.1:${port}`));
    });
    sock.once('error', reject);
    sock.once('connect', () => sock.write(`*${cmd.length}\r\n${cmd.map((c) => `$${Buffer.byteLength(c)}\r\n${c}\r\n`).join('')}`));
    sock.on('data', (d) => {
      got += d.toString();
      // Enough for the short answers used here (ROLE's first line, get-master-addr).
      if (/\r\n$/.test(got) && !/^\*\d+\r\n$/.test(got)) {
        sock.destroy();
        resolve(got);
      }
    });
  });
}

export async function startSentinelGroup(o: { replicas?: number; sentinels?: number; downAfterMs?: number; durable?: boolean } = {}): Promise<SentinelGroup> {
  const name = 'sbmaster';
  const primary = await startRedis({ durable: o.durable ?? true });
  const servers = [primary];
  for (let i = 0; i < (o.replicas ?? 1); i++) {
    servers.push(await startRedis({ durable: o.durable ?? true, args: ['--replicaof', '127.0.0.1', String(primary.port)] }));
  }
  // Replicas in sync before the sentinels look: they must know them to promote one.
  const deadline = Date.now() + 15_000;
  for (;;) {
    const info = await sendCommand(primary.port, ['INFO', 'replication']);
    const online = (info.match(/state=online/g) ?? []).length;
    if (online >= servers.length - 1) break;
    if (Date.now() > deadline) throw new Error(`replicas not in sync: ${info}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const sentinelProcs: ChildProcess[] = [];
  const sentinels: Array<{ host: string; port: number }> = [];
  const dirs: string[] = [];
  for (let i = 0; i < (o.sentinels ?? 3); i++) {
    const dir = mkdtempSync(join(tmpdir(), 'sb-sentinel-'));
    dirs.push(dir);
    const port = await freePort();
    const conf = join(dir, 'sentinel.conf');
    writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        'daemonize no',
        'logfile ""',
        'loglevel warning',
        `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
        `sentinel down-after-milliseconds ${name} ${o.downAfterMs ?? 1000}`,
        `sentinel failover-timeout ${name} 10000`,
        `sentinel parallel-syncs ${name} 1`,
        '',
      ].join('\n'),
    );
    const p = spawn('redis-server', [conf, '--sentinel'], { stdio: ['ignore', 'ignore', 'pipe'] });
    live.add(p);
    p.once('exit', () => live.delete(p));
    sentinelProcs.push(p);
    sentinels.push({ host: '127.0.0.1', port });
  }
  for (const [i, s] of sentinels.entries()) {
    const until = Date.now() + 10_000;
    while (!(await answersAs(s.port, sentinelProcs[i]!.pid ?? -1))) {
      if (Date.now() > until) throw new Error(`sentinel on port ${s.port} did not answer`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  const masterPort = async (): Promise<number | undefined> => {
    for (const s of sentinels) {
      try {
        const r = await sendCommand(s.port, ['SENTINEL', 'get-master-addr-by-name', name]);
        const m = /\$\d+\r\n[^\r]+\r\n\$\d+\r\n(\d+)\r\n/.exec(r);
        if (m) return Number(m[1]);
      } catch {
        // a sentinel being down is what they are for
      }
    }
    return undefined;
  };
  const byPort = (port: number | undefined) => servers.find((s) => s.port === port);
  // Sentinels must have found the replicas too, or a failover has no one to promote.
  const known = Date.now() + 15_000;
  for (;;) {
    const r = await sendCommand(sentinels[0]!.port, ['SENTINEL', 'replicas', name]).catch(() => '');
    if (servers.slice(1).every((s) => r.includes(String(s.port)))) break;
    if (Date.now() > known) throw new Error('sentinels did not discover the replicas');
    await new Promise((res) => setTimeout(res, 100));
  }
  return {
    name,
    url: primary.url,
    sentinels,
    sentinelsEnv: sentinels.map((s) => `${s.host}:${s.port}`).join(','),
    servers,
    async primary() {
      const s = byPort(await masterPort());
      if (!s) throw new Error('sentinels name no known primary');
      return s;
    },
    async waitForFailover(oldPort, timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const s = byPort(await masterPort());
        if (s && s.port !== oldPort) {
          const role = await sendCommand(s.port, ['ROLE']).catch(() => '');
          if (role.includes('master')) return s;
        }
        if (Date.now() > until) throw new Error(`no failover away from port ${oldPort} within ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async close() {
      for (const p of sentinelProcs) p.kill('SIGKILL');
      await Promise.all(servers.map((s) => s.close()));
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}
