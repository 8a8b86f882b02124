/**
 * A server process a test starts and stops (redis-server, turnserver, …): spawned with its
 * stderr kept, ready once `ready()` says so (or failing with what it printed), stopped with
 * SIGTERM then SIGKILL, started again on demand; every one still running is killed when the
 * test process exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const p of live) p.kill('SIGKILL');
});

export interface ServerProcess {
  /** Start it (no-op while it runs); resolves once `ready()` is true. */
  start(): Promise<void>;
  /** SIGTERM (or SIGKILL with `kill`), SIGKILL after `killAfterMs` if it lingers. */
  stop(o?: { kill?: boolean }): Promise<void>;
  /** A signal to the running process (SIGSTOP / SIGCONT). */
  signal(sig: NodeJS.Signals): void;
  running(): boolean;
}

export function serverProcess(o: {
  /** What it is, for messages: `redis-server on port 1234`. */
  name: string;
  command: string;
  args: readonly string[];
  /**
   * True once the process answers. Given the process id, so a check can tell this process from
   * another one that took the port in between (a free port is picked before it is bound).
   */
  ready: (pid: number) => Promise<boolean>;
  /** More to say when it exits at start (e.g. its log file). */
  exitDetail?: () => string;
  readyWithinMs?: number;
  killAfterMs?: number;
}): ServerProcess {
  let proc: ChildProcess | undefined;
  return {
    async start() {
      if (proc) return;
      const p = spawn(o.command, [...o.args], { stdio: ['ignore', 'ignore', 'pipe'] });
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
      const deadline = Date.now() + (o.readyWithinMs ?? 10_000);
      while (!(await o.ready(p.pid ?? -1))) {
        if (exited) throw new Error(`${o.name} exited at start: ${stderr.trim()}${o.exitDetail ? ` ${o.exitDetail()}` : ''}`);
        if (Date.now() > deadline) throw new Error(`${o.name} was not ready within ${o.readyWithinMs ?? 10_000} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async stop(s = {}) {
      const p = proc;
      if (!p) return;
      await new Promise<void>((resolve) => {
        if (p.exitCode !== null || p.signalCode !== null) return resolve();
        const t = setTimeout(() => p.kill('SIGKILL'), o.killAfterMs ?? 5000);
        p.once('exit', () => {
          clearTimeout(t);
          resolve();
        });
        p.kill(s.kill ? 'SIGKILL' : 'SIGTERM');
      });
      proc = undefined;
    },
    signal(sig) {
      proc?.kill(sig);
    },
    running: () => proc !== undefined,
  };
}
