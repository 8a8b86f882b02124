/**
 * One real server process (`server/main.ts`) for the flood cases: its own Redis, the
 * emulator as its Service, one agent. Reads the process's resident memory from /proc and
 * times its exit after a signal.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { request } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hashPassword } from '../../server/auth/users.ts';
import { startEmulator } from '../emulator/index.ts';
import { PASSWORD, sleep, until } from '../e2e/harness.ts';
import { freePort, startRedis } from '../support/redis.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

export interface Node {
  url: string;
  /** Where webhooks go: `url`, or the intake thread's own port when started with `WEBHOOK_PORT`. */
  webhookUrl: string;
  secret: string;
  redisUrl: string;
  /** Send a signal to the node's Redis (SIGSTOP / SIGCONT freeze and thaw it). */
  redisSignal(sig: NodeJS.Signals): void;
  proc: ChildProcess;
  /** Resident memory of the server process, in MB. */
  rssMb(): number;
  /** CPU time (user + system) the server process has used so far, in ms (at 100 clock ticks a second). */
  cpuMs(): number;
  /** SIGTERM, then the ms until the process exited (SIGKILL and Infinity after `maxMs`). */
  term(maxMs: number): Promise<number>;
  close(): Promise<void>;
}

export async function startNode(env: Record<string, string> = {}): Promise<Node> {
  const cleanups: Array<() => Promise<void> | void> = [];
  const redis = await startRedis();
  cleanups.push(() => {
    redis.signal('SIGCONT');
    return redis.close();
  });
  const dir = mkdtempSync(join(tmpdir(), 'sb-flood-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const hash = await hashPassword(PASSWORD);
  writeFileSync(join(dir, 'users.json'), JSON.stringify({ users: ['agent1', 'agent2'].map((name) => ({ name, roles: ['agent'], passwordHash: hash })) }));
  const secret = `whsec_${randomBytes(16).toString('hex')}`;
  const emu = await startEmulator({ webhookSecret: secret });
  cleanups.push(() => emu.close());
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  // FAULT_NODE_ARGS: extra node flags for a look inside (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
  const extra = (process.env.FAULT_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const proc = spawn(process.execPath, [...extra, '--import', 'tsx', 'server/main.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_URL: url,
      SERVICE_BASE_URL: emu.baseUrl,
      SERVICE_API_KEY: emu.apiKey,
      SERVICE_WEBHOOK_SECRETS: secret,
      SESSION_SECRET: randomBytes(24).toString('base64url'),
      USERS_FILE: join(dir, 'users.json'),
      REDIS_URL: redis.url,
      LOG_LEVEL: process.env.FLOOD_LOG_LEVEL ?? 'error',
      DATA_DIR: dir,
      ...env,
    },
    stdio: ['ignore', process.env.FLOOD_LOG_LEVEL ? 'inherit' : 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  cleanups.push(async () => {
    // With FAULT_NODE_ARGS the node gets a moment to exit on its own (a profile is written then).
    if (extra.length > 0 && proc.exitCode === null) {
      proc.kill('SIGTERM');
      await Promise.race([exited, sleep(10_000)]);
    }
    proc.kill('SIGKILL');
    return exited;
  });
  const close = async () => {
    for (const c of cleanups.reverse()) await c();
    cleanups.length = 0;
  };
  try {
    // Ready: started (its signal handlers are set a moment after), not only listening.
    await until('node ready', async () => (await fetch(`${url}/readyz`).catch(() => undefined))?.ok === true, 60_000, 200);
    await sleep(200);
  } catch (err) {
    await close();
    throw err;
  }
  return {
    url,
    webhookUrl: env.WEBHOOK_PORT ? `http://127.0.0.1:${env.WEBHOOK_PORT}` : url,
    secret,
    redisUrl: redis.url,
    redisSignal: (sig) => redis.signal(sig),
    proc,
    rssMb: () => {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${proc.pid}/status`, 'utf8'));
      return m ? Math.round(Number(m[1]) / 1024) : NaN;
    },
    cpuMs: () => {
      // /proc/<pid>/stat: fields 14 and 15 (utime, stime) after the command name in parentheses.
      const fields = readFileSync(`/proc/${proc.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      return (Number(fields[11]) + Number(fields[12])) * 10;
    },
    async term(maxMs) {
      const t0 = Date.now();
      proc.kill('SIGTERM');
      const done = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), maxMs))]);
      if (!done) proc.kill('SIGKILL');
      return done ? Date.now() - t0 : Infinity;
    },
    close,
  };
}

/** Sample `f` every `ms` until stopped; the highest value seen. */
export function sampleMax(f: () => number, ms = 200): { stop(): number } {
  let max = f();
  const t = setInterval(() => {
    try {
      max = Math.max(max, f());
    } catch {
      // the process has gone
    }
  }, ms);
  return {
    stop() {
      clearInterval(t);
      return max;
    },
  };
}

/**
 * Ask `url` every `everyMs` from a process of its own (the load the test makes in its own
 * process does not delay the probe): the answer times in ms (10 000 for a failed probe).
 */
export function probeFromChild(url: string, everyMs = 100): { stop(): Promise<number[]> } {
  const script = `
    const times = [];
    let on = true;
    process.on('message', () => { on = false; });
    (async () => {
      // One unmeasured ask first: the probe's own first connection and warm-up.
      await fetch(${JSON.stringify(url)}).then((r) => r.text(), () => undefined);
      while (on) {
        const t = performance.now();
        const ok = await fetch(${JSON.stringify(url)}, { signal: AbortSignal.timeout(10000) }).then((r) => r.ok, () => false);
        times.push(ok ? performance.now() - t : 10000);
        await new Promise((r) => setTimeout(r, ${everyMs}));
      }
      process.send(times, () => process.exit(0));
    })();`;
  const p = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const result = new Promise<number[]>((resolve) => p.once('message', (m) => resolve(m as number[])));
  return {
    stop() {
      p.send('stop');
      return result;
    },
  };
}

/** The size of `slowPost`'s body: 1 MiB, sent 64 KiB every 100 ms. */
export const BODY = 1024 * 1024;
const CHUNK = Buffer.alloc(64 * 1024, 0x20);

/**
 * One slow webhook POST (`BODY` bytes declared, 64 KiB every 100 ms) to `url`'s
 * `/webhooks/service` under `signature`; resolves with its status (0: no answer, the
 * connection was cut).
 */
export function slowPost(url: string, signature: string): Promise<number> {
  return new Promise((resolve) => {
    const u = new URL(`${url}/webhooks/service`);
    const req = request({
      host: u.hostname,
      port: u.port,
      path: u.pathname,
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': String(BODY), 'service-signature': signature },
    });
    let sent = 0;
    let done = false;
    const finish = (status: number) => {
      if (done) return;
      done = true;
      clearInterval(t);
      req.destroy();
      resolve(status);
    };
    req.on('response', (res) => {
      res.resume();
      finish(res.statusCode ?? 0);
    });
    req.on('error', () => finish(0));
    const t = setInterval(() => {
      if (sent >= BODY) return;
      req.write(CHUNK);
      sent += CHUNK.length;
      if (sent >= BODY) req.end();
    }, 100);
    setTimeout(() => finish(0), 60_000).unref();
  });
}
