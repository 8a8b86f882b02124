/**
 * What one message-status event costs the bridge at a steady rate. A bridge (`server/main.ts`
 * as `npm start` runs it, a private Redis, no agents) gets `--rate` (default 1000) signed
 * `chat.message.updated` events a second for `--seconds` (default 10) from a process of its
 * own (bench/_flood.ts), for each history (`--history embedded,postgres`). Prints the
 * bridge's CPU per event (the whole process: with the embedded history its database thread
 * too; and its event-loop thread alone), measured once the `other` lane had handled every
 * event (how long after the flood that took is printed: a lane that fell behind shows there,
 * not as a cheaper event), and the event-loop delay over the flood.
 *
 * bench/ingest.ts measures the same events at saturation, where every batch is full; at a
 * steady 1,000 a second batches are small and each costs its round trips whatever its size:
 * bench/calls.ts's flood line is offers beside this load.
 *
 *   npx tsx bench/message-cost.ts [--rate 1000] [--seconds 10] [--history embedded,postgres]
 */
import { loadavg } from 'node:os';
import { startRedis } from '../test/support/redis.ts';
import { flood, loopDelay, spawnBridge, type HistoryKind } from './calls-rig.ts';
import { figure } from './figures.ts';
import { otherLaneBacklog } from './stats.ts';

const arg = (name: string, def: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : def;
};
const RATE = Number(arg('rate', '1000'));
const SECONDS = Number(arg('seconds', '10'));
const HISTORIES = arg('history', 'embedded,postgres').split(',').filter(Boolean) as HistoryKind[];
for (const h of HISTORIES) if (h !== 'embedded' && h !== 'postgres') throw new Error(`--history: embedded or postgres, not ${h}`);

async function measure(history: HistoryKind): Promise<void> {
  const redis = await startRedis();
  const bridge = await spawnBridge([], redis.url, history, ['--single-threaded-gc']);
  try {
    await flood(bridge.url, bridge.secret, Math.min(RATE, 200), 2); // warm-up
    await new Promise((res) => setTimeout(res, 3000));
    await loopDelay(bridge.url);
    const cpu0 = bridge.cpuMs();
    const loop0 = bridge.loopCpuMs();
    const sent = await flood(bridge.url, bridge.secret, RATE, SECONDS);
    const t0 = Date.now();
    let left = (await otherLaneBacklog(redis.url)).waiting;
    while (left > 0 && Date.now() - t0 < 60_000) {
      await new Promise((res) => setTimeout(res, 50));
      left = (await otherLaneBacklog(redis.url)).waiting;
    }
    const drained = Date.now() - t0;
    const perEvent = ((bridge.cpuMs() - cpu0) / sent.sent) * 1000;
    const loopPerEvent = ((bridge.loopCpuMs() - loop0) / sent.sent) * 1000;
    console.log(
      `  ${history} history: ${sent.ok}/${sent.sent} answered 2xx; bridge CPU ${perEvent.toFixed(0)} µs an event, ${loopPerEvent.toFixed(0)} µs of it on the event loop; ` +
        `the other lane ${left === 0 ? `done ${drained} ms after the flood` : `still ${left} behind a minute after the flood`}; ${await loopDelay(bridge.url)}`,
    );
    figure('message-cost', `bridge CPU a message event, ${history} history, ${RATE}/s`, perEvent, 'us');
    figure('message-cost', `event-loop CPU a message event, ${history} history, ${RATE}/s`, loopPerEvent, 'us');
  } finally {
    await bridge.close();
    await redis.close();
  }
}

console.log(`message-status events: ${RATE}/s for ${SECONDS} s, history ${HISTORIES.join(' and ')}, no agents`);
for (const h of HISTORIES) await measure(h);
console.log(`machine load average: ${loadavg().map((x) => x.toFixed(2)).join(' ')}`);
process.exit(0);
