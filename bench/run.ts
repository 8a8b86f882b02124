/**
 * `npm run bench`: runs every benchmark in bench/ (each `*.ts` file except this runner
 * and helpers listed below), one after the other, each in its own process, then prints one
 * table of every headline figure they printed (bench/figures.ts format), each beside its
 * goal, and names the ones off goal. Arguments are passed to every bench.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseFigures, type Figure } from './figures.ts';

const HELPERS = new Set(['run.ts', 'loadgen.ts', 'figures.ts', 'calls-rig.ts', 'stats.ts']);
const dir = fileURLToPath(new URL('.', import.meta.url));
const benches = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.startsWith('_') && !HELPERS.has(f))
  .sort();

/** Run one bench, its output passed through as it comes and kept for the table. */
function run(file: string): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['--import', 'tsx', `${dir}${file}`, ...process.argv.slice(2)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    p.stdout.on('data', (d: Buffer) => {
      output += String(d);
      process.stdout.write(d);
    });
    p.once('exit', (status) => resolve({ status, output }));
  });
}

let failed = 0;
const figures: Figure[] = [];
for (const b of benches) {
  process.stdout.write(`\n=== bench/${b}\n`);
  const r = await run(b);
  figures.push(...parseFigures(r.output));
  if (r.status !== 0) {
    failed++;
    process.stdout.write(`bench/${b} failed (exit ${r.status})\n`);
  }
}

const rows = figures.map((f) => [f.bench, f.name, `${Number.isInteger(f.value) ? f.value : f.value.toFixed(2)} ${f.unit}`, f.goal, f.ok === undefined ? '' : f.ok ? 'ok' : 'OFF GOAL']);
const head = ['bench', 'figure', 'value', 'goal', ''];
const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
const line = (r: string[]) => r.map((c, i) => c.padEnd(width[i]!)).join('  ').trimEnd();
process.stdout.write(`\n=== every figure, beside its goal (load average ${loadavg().map((x) => x.toFixed(2)).join(' ')})\n${line(head)}\n${line(width.map((w) => '-'.repeat(w)))}\n${rows.map(line).join('\n')}\n`);
const off = figures.filter((f) => f.ok === false);
process.stdout.write(off.length === 0 ? 'every figure with a goal is on goal\n' : `off goal (${off.length}): ${off.map((f) => `${f.bench} ${f.name}`).join('; ')}\n`);
process.exit(failed ? 1 : 0);
