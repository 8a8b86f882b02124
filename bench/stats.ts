/** Small measuring helpers the benches share: percentiles and a process's CPU time. */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { laneGroup } from '../server/webhooks/lanes.ts';

/** The `p`th percentile (0–100) of `xs` (nearest rank); NaN when there are none. */
export const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
};

/** utime + stime of a process (or of one of its threads), in ms (Linux /proc; NaN elsewhere). */
export function processCpuMs(pid: number, tid?: number): number {
  try {
    const fields = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return NaN;
  }
}

/**
 * A bridge's event stream (default prefix `sb:`) on the Redis at `url`: its length, and how
 * many of its entries the `other` lane (whose handlers take `chat.message.updated`; each lane
 * reads through a group of its own) has not finished, read or not.
 */
export async function otherLaneBacklog(url: string): Promise<{ length: number; waiting: number }> {
  const r = new Redis(url);
  try {
    const length = Number(await r.xlen('sb:events'));
    const groups = (await r.xinfo('GROUPS', 'sb:events')) as unknown[][];
    const g = groups.map((x) => Object.fromEntries(Array.from({ length: x.length / 2 }, (_, i) => [x[2 * i], x[2 * i + 1]])) as Record<string, unknown>).find((x) => x.name === laneGroup('other'));
    return { length, waiting: Number(g?.lag ?? length) + Number(g?.pending ?? 0) };
  } finally {
    r.disconnect();
  }
}
