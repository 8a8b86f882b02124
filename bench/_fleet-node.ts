/**
 * One node of bench/fleet.ts: the whole server (`startSwitchboard`, the public wiring),
 * configured by the environment the bench gives it. Prints `{"url":…}` once it serves;
 * answers each `stats` line on stdin with `{"rss":bytes,"cpuUs":µs}` (after a GC when
 * run with --expose-gc, so RSS is what stays, not garbage).
 */
import { createInterface } from 'node:readline';
import { loadConfig } from '../server/config/config.ts';
import { startSwitchboard } from '../server/main.ts';

// --no-history: the node without call history (bench/history.ts: the offer latency with it on and off).
const running = await startSwitchboard(loadConfig(process.env), process.argv.includes('--no-history') ? { history: null } : {});
process.stdout.write(`${JSON.stringify({ url: running.url })}\n`);
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() !== 'stats') return;
  (globalThis as { gc?: () => void }).gc?.();
  const cpu = process.cpuUsage();
  process.stdout.write(`${JSON.stringify({ rss: process.memoryUsage().rss, cpuUs: cpu.user + cpu.system })}\n`);
});
process.stdin.once('end', () => void running.close().then(() => process.exit(0)));
