import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { createLogger, memoryDestination } from '../log/logger.ts';
import { exitOnEscapedErrors } from './fatal.ts';

/** A stand-in for `process`: the two events, and the exit codes asked for. */
function fakeProcess() {
  const em = new EventEmitter();
  const exits: number[] = [];
  return Object.assign(em, { exits, exit: (code: number) => void exits.push(code) });
}

describe('an error that escaped every handler', () => {
  it('is logged (fatal, scrubbed), then the node stops as on SIGTERM and exits 1; a second one is logged, the stop runs once', async () => {
    const dest = memoryDestination();
    const log = createLogger({ level: 'info', destination: dest, secrets: ['key-0123456789'] });
    const proc = fakeProcess();
    let stops = 0;
    let stopped!: () => void;
    exitOnEscapedErrors(proc, { log, stop: () => (stops++, new Promise<void>((r) => (stopped = r))) });

    proc.emit('unhandledRejection', new Error('Command timed out (key-0123456789)'));
    proc.emit('unhandledRejection', new Error('second'));
    expect(stops).toBe(1);
    expect(proc.exits).toEqual([]); // not before the stop has drained
    stopped();
    await new Promise((r) => setImmediate(r));
    expect(proc.exits).toEqual([1]);

    const lines = dest.records();
    expect(lines.map((l) => [l.level, (l.err as { message?: string }).message])).toEqual([
      ['fatal', 'Command timed out ([redacted])'],
      ['fatal', 'second'],
    ]);
    expect(dest.text()).not.toContain('key-0123456789');
  });

  it('an uncaught exception the same way; a stop that hangs still ends in exit 1', async () => {
    const log = createLogger({ level: 'silent' });
    const proc = fakeProcess();
    exitOnEscapedErrors(proc, { log, stop: () => new Promise<void>(() => {}), hardStopMs: 20 });
    proc.emit('uncaughtException', new Error('boom'));
    await new Promise((r) => setTimeout(r, 60));
    expect(proc.exits).toEqual([1]);
  });
});
