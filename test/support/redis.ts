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
import { mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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

function ping(port: number, password?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = createConnection({ port, host: '127.0.0.1' });
    let got = '';
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(500, () => done(false));
    sock.once('error', () => done(false));
    sock.once('connect', () => sock.write(`${password !== undefined ? `AUTH ${password}\r\n` : ''}PING\r\n`));
    sock.on('data', (d) => {
      got += d.toString();
      if (got.includes('+PONG')) done(true);
      else if (got.startsWith('-') || got.includes('\r\n-')) done(false);
    });
  });
}

export async function startRedis(opts: StartRedisOptions = {}): Promise<TestRedis> {
  if (!redisServerAvailable()) {
    throw new Error('redis-server is not installed (apt-get install -y redis-server, or run .ci/run)');
  }
  const dir = mkdtempSync(join(tmpdir(), 'sb-redis-'));
  const port = await freePort();
  let proc: ChildProcess | undefined;
  let closed = false;

  const args = [
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
  ];

  const start = async (): Promise<void> => {
    if (closed) throw new Error('test redis is closed');
    if (proc) return;
    const p = spawn('redis-server', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    p.stderr?.on('data', (d) => (stderr += String(d)));
    live.add(p);
    proc = p;
    let exited = false;
    p.once('exit', () => {
      exited = true;
      live.delete(p);
      if (proc === p) proc = undefined;
    });
    const deadline = Date.now() + 10_000;
    while (!(await ping(port, opts.password))) {
      if (exited) throw new Error(`redis-server on port ${port} exited at start: ${stderr.trim()}`);
      if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not answer within 10 s`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  const stop = async (o: { kill?: boolean } = {}): Promise<void> => {
    const p = proc;
    if (!p) return;
    await new Promise<void>((resolve) => {
      if (p.exitCode !== null || p.signalCode !== null) return resolve();
      const t = setTimeout(() => p.kill('SIGKILL'), 5000);
      p.once('exit', () => {
        clearTimeout(t);
        resolve();
      });
      p.kill(o.kill ? 'SIGKILL' : 'SIGTERM');
    });
    proc = undefined;
  };

  await start();
  return {
    url: `redis://${opts.password !== undefined ? `:${encodeURIComponent(opts.password)}@` : ''}127.0.0.1:${port}/0`,
    port,
    dir,
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
