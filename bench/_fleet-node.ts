/**
 * One node of bench/fleet.ts: the whole server (`startSwitchboard`, the public wiring),
 * configured by the environment the bench gives it. Prints `{"url":…}` once it serves;
 * answers each `stats` line on stdin with `{"rss":bytes,"cpuUs":µs,"lagMs":{p99,max}}` (event-loop delay since the previous one) (after a GC when
 * run with --expose-gc, so RSS is what stays, not garbage).
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { loadConfig } from '../server/config/config.ts';
import { startSwitchboard } from '../server/main.ts';

// --no-history: the node without call history (bench/history.ts: the offer latency with it on and off).
const running = await startSwitchboard(loadConfig(process.env), process.argv.includes('--no-history') ? { history: null } : {});
process.stdout.write(`${JSON.stringify({ url: running.url })}\n`);
// Event-loop delay since the last `stats` (resolution 1 ms): a stall here delays every offer the node makes.
const lag = monitorEventLoopDelay({ resolution: 1 });
lag.enable();
createInterface({ input: process.stdin }).on('line', (line) => {
  if (line.trim() !== 'stats') return;
  const lagMs = { p99: lag.percentile(99) / 1e6, max: lag.max / 1e6 };
  lag.reset();
  (globalThis as { gc?: () => void }).gc?.();
  const cpu = process.cpuUsage();
  process.stdout.write(`${JSON.stringify({ rss: process.memoryUsage().rss, cpuUs: cpu.user + cpu.system, lagMs })}\n`);
});
process.stdin.once('end', () => void running.close().then(() => process.exit(0)));
