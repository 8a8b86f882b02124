/**
 * The one format every benchmark prints its headline figures in, so `npm run bench`
 * (bench/run.ts) can gather them into one table beside their goals:
 *
 *   figure <bench> | <name> | <value> <unit> | goal <= 20
 *
 * A figure without a goal is printed for information ("goal -").
 */
export interface Goal {
  /** The figure must be at most this. */
  max?: number;
  /** The figure must be at least this. */
  min?: number;
}

export function figure(bench: string, name: string, value: number, unit: string, goal: Goal = {}): void {
  const g = goal.max !== undefined ? `<= ${goal.max}` : goal.min !== undefined ? `>= ${goal.min}` : '-';
  const v = Number.isInteger(value) ? String(value) : value.toFixed(value < 10 ? 2 : 1);
  process.stdout.write(`figure ${bench} | ${name} | ${v} ${unit} | goal ${g}\n`);
}

export interface Figure {
  bench: string;
  name: string;
  value: number;
  unit: string;
  goal: string;
  /** undefined when there is no goal */
  ok: boolean | undefined;
}

/** The figures in a bench's output (lines written by `figure`). */
export function parseFigures(output: string): Figure[] {
  const out: Figure[] = [];
  for (const line of output.split('\n')) {
    const m = /^figure (\S+) \| (.+?) \| (\S+) (\S*) \| goal (.+)$/.exec(line.trim());
    if (!m) continue;
    const value = Number(m[3]);
    const goal = m[5]!;
    const g = /^(<=|>=) (\S+)$/.exec(goal);
    const ok = !g ? undefined : Number.isNaN(value) ? false : g[1] === '<=' ? value <= Number(g[2]) : value >= Number(g[2]);
    out.push({ bench: m[1]!, name: m[2]!, value, unit: m[4]!, goal, ok });
  }
  return out;
}
