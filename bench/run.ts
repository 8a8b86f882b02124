/**
 * `npm run bench`: runs every benchmark in bench/ (each `*.ts` file except this runner
 * and helpers listed below), one after the other, each in its own process.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const HELPERS = new Set(['run.ts', 'loadgen.ts']);
const dir = fileURLToPath(new URL('.', import.meta.url));
const benches = readdirSync(dir)
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.startsWith('_') && !HELPERS.has(f))
  .sort();

let failed = 0;
for (const b of benches) {
  process.stdout.write(`\n=== bench/${b}\n`);
  const r = spawnSync(process.execPath, ['--import', 'tsx', `${dir}${b}`, ...process.argv.slice(2)], { stdio: 'inherit' });
  if (r.status !== 0) {
    failed++;
    process.stdout.write(`bench/${b} failed (exit ${r.status})\n`);
  }
}
process.exit(failed ? 1 : 0);
