/**
 * The connect webhooks of bench/fleet.ts, sent from a process that does nothing else: the
 * bench process also runs the emulator (the Service's REST and its other deliveries), and
 * when its event loop is busy a webhook stamped "sent" would leave late and count as the
 * server's latency. Over IPC:
 *   ← { i, url, body, signature }   POST it now → { sent: i, at, status }   (`at`: epoch ms, µs precision, just before the request)
 *   ← 'report'                      → { report: { lagP99Ms, lagMaxMs } }   then ← 'close' ends it
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

const clock = () => performance.timeOrigin + performance.now();
const lag = monitorEventLoopDelay({ resolution: 10 });
lag.enable();

process.on('message', (m: { i: number; url: string; body: string; signature: string } | 'report' | 'close') => {
  if (m === 'close') return void process.disconnect();
  if (m === 'report') return void process.send!({ report: { lagP99Ms: lag.percentile(99) / 1e6, lagMaxMs: lag.max / 1e6 } });
  const at = clock();
  fetch(m.url, { method: 'POST', headers: { 'content-type': 'application/json', 'service-signature': m.signature }, body: m.body })
    .then(async (r) => {
      await r.body?.cancel();
      return r.status;
    })
    .catch(() => 0)
    .then((status) => process.send!({ sent: m.i, at, status }));
});
