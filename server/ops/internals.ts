/**
 * The library and runtime internals the server relies on, all here, each pinned by
 * internals.test.ts to the versions it was checked against (a dependency update that moves
 * one fails that test, not a call in production).
 *
 * - `socketOf(ws)`: the network socket under a `ws` WebSocket (ws 8 keeps it in `_socket`;
 *   no public accessor). The gateway corks it around a beat's two pings and a flush's
 *   frames (one write to the network instead of one per frame), writes frames built once for
 *   every socket of a role (server/push/frame.ts: framed once, not once per socket), and
 *   watches its unsent bytes (`writableLength`) to pause a socket whose reader is slow.
 * - `exposedGc()`: V8's `gc` function without starting Node with `--expose-gc`, through
 *   `v8.setFlagsFromString` (the flag only adds the function). The Service client runs a
 *   young-generation collection every MiB of a streamed download: measured (bench/history.ts),
 *   a 50 MB recording grew RSS by ~39 MB without it and under ~10 MB with it.
 */
import type { Socket } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { WebSocket } from 'ws';

/** The network socket under a `ws` socket; undefined once ws dropped it (closed). */
export function socketOf(raw: WebSocket): Socket | undefined {
  const s = (raw as WebSocket & { _socket?: Socket })._socket;
  return s ?? undefined;
}

export type GcFn = (options?: { type?: 'minor' | 'major' }) => void;

/** V8's `gc` (the global one under `--expose-gc`, else exposed once here); undefined when neither works. */
export function exposedGc(): GcFn | undefined {
  const own = (globalThis as { gc?: GcFn }).gc;
  if (typeof own === 'function') return own;
  try {
    setFlagsFromString('--expose-gc');
    const fn: unknown = runInNewContext('gc');
    return typeof fn === 'function' ? (fn as GcFn) : undefined;
  } catch {
    return undefined;
  }
}
