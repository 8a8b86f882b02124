/** Small measuring helpers the benches share: percentiles and a process's CPU time. */
import { readFileSync } from 'node:fs';

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
