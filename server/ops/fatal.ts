/**
 * The process's last resort for an error that escaped every handler. Such an error is a bug:
 * work nobody awaits goes through an error path of its own (`Applier.background` for call
 * work, a `.catch` that logs elsewhere), and the fix belongs there. This only decides what
 * the process does when one slips through anyway.
 *
 * Policy: the process's state is unknown then, so it is not kept running. The error is
 * logged through the logger — scrubbed of secrets, with the other lines (Node's default
 * prints the raw stack to stderr) — then the node stops the way a SIGTERM stops it (bounded
 * drain) and exits 1, so its supervisor starts it again. Live state is in Redis and the
 * webhook events it held are claimed by another node.
 */
import type { Logger } from '../log/logger.ts';

/** What the policy needs of `process` (tests pass an EventEmitter). */
export interface FatalProcess {
  on(event: 'unhandledRejection' | 'uncaughtException', listener: (err: unknown) => void): unknown;
  exit(code: number): void;
}

export interface FatalOptions {
  log: Logger;
  /** The graceful stop (the one SIGTERM runs); safe to call twice. */
  stop: () => Promise<void>;
  /** Exit 1 this long after the error even if the stop has not finished. Default 20 s. */
  hardStopMs?: number;
}

export function exitOnEscapedErrors(proc: FatalProcess, o: FatalOptions): void {
  let stopping = false;
  const onEscaped = (what: string) => (err: unknown) => {
    o.log.fatal({ err }, `${what}: an error escaped every handler (a bug); stopping this node`);
    if (stopping) return;
    stopping = true;
    // Not unref'd: a stop that hangs must still end in an exit.
    const hard = setTimeout(() => proc.exit(1), o.hardStopMs ?? 20_000);
    const exit = () => {
      clearTimeout(hard);
      proc.exit(1);
    };
    o.stop().then(exit, (stopErr: unknown) => {
      o.log.error({ err: stopErr }, 'stop after an escaped error failed');
      exit();
    });
  };
  proc.on('unhandledRejection', onEscaped('unhandled rejection'));
  proc.on('uncaughtException', onEscaped('uncaught exception'));
}
