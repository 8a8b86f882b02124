/**
 * `/healthz` while many connections arrive at once, each a slow 1 MiB webhook body under a
 * well-formed signature with a wrong digest (1,200 of them by default, as an outside tester sent; the fault case
 * `test/faults/webhook-bodies.test.ts` with the same client, `slowPost`). Three targets, in
 * turn, `--runs` times:
 *
 *   1. a bare `node:http` server answering every webhook 503 at once (the least any server
 *      on one event loop can do with the burst: accept, headers, answer, close);
 *   2. the real node (`server/main.ts`, a private Redis), webhooks on its event loop;
 *   3. the same with `WEBHOOK_PORT`: webhooks on the intake thread, `/healthz` on the node's loop.
 *
 * Prints `/healthz`'s p50 and max during the burst (asked every 100 ms from a process of its
 * own), the answers' statuses and how long the burst took. Goal: max ≤ 50 ms.
 *
 *   npx tsx bench/webhook-burst.ts [--connections 1200] [--runs 2]
 */
import { loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { probeFromChild, slowPost, startNode } from '../test/faults/node.ts';
import { freePort } from '../test/support/redis.ts';
import { serverProcess } from '../test/support/server-process.ts';
import { figure } from './figures.ts';

const { values: args } = parseArgs({ options: { connections: { type: 'string', default: '1200' }, runs: { type: 'string', default: '2' } } });
const N = Number(args.connections);
const RUNS = Number(args.runs);

/** A bare node:http server on a free port, in a process of its own: 503 to every webhook, 200 to /healthz. */
async function bareServer(): Promise<{ url: string; close(): Promise<void> }> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const script = `
    require('node:http').createServer((req, res) => {
      if (req.url === '/healthz') return res.end('{"ok":true}');
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1', connection: 'close' });
      res.end('{"error":{"code":"UNAVAILABLE","message":"busy"}}');
    }).listen(${port}, '127.0.0.1');`;
  const proc = serverProcess({
    name: `a bare node:http server on port ${port}`,
    command: process.execPath,
    args: ['-e', script],
    ready: () => fetch(`${url}/healthz`).then((r) => r.ok, () => false),
  });
  await proc.start();
  return { url, close: () => proc.stop() };
}

interface Target {
  name: string;
  key: string;
  start(): Promise<{ url: string; webhookUrl: string; close(): Promise<void> }>;
}

const TARGETS: Target[] = [
  { name: 'bare node:http, 503 to every webhook', key: 'bare', start: async () => { const s = await bareServer(); return { ...s, webhookUrl: s.url }; } },
  { name: 'the node, webhooks on its event loop', key: 'node loop', start: () => startNode() },
  { name: 'the node, webhooks on the intake thread (WEBHOOK_PORT)', key: 'intake thread', start: async () => startNode({ WEBHOOK_PORT: String(await freePort()) }) },
];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

console.log(`/healthz during ${N} slow 1 MiB webhook bodies with a bad signature arriving at once (goal: max ≤ 50 ms), ${RUNS} runs`);
const maxes = new Map<string, number[]>(TARGETS.map((t) => [t.key, []]));
for (let run = 0; run < RUNS; run++) {
  for (const t of TARGETS) {
    const target = await t.start();
    try {
      await sleep(1000);
      const probe = probeFromChild(`${target.url}/healthz`);
      await sleep(500);
      const signature = `t=${Math.floor(Date.now() / 1000)},s=${'0'.repeat(64)}`;
      const t0 = Date.now();
      const statuses = await Promise.all(Array.from({ length: N }, () => slowPost(target.webhookUrl, signature)));
      const ms = Date.now() - t0;
      await sleep(300);
      const health = (await probe.stop()).sort((a, b) => a - b);
      const byStatus = new Map<number, number>();
      for (const s of statuses) byStatus.set(s, (byStatus.get(s) ?? 0) + 1);
      const max = health.at(-1) ?? NaN;
      maxes.get(t.key)!.push(max);
      console.log(
        `  ${t.name}: /healthz p50 ${health[health.length >> 1]?.toFixed(1)} ms, max ${max.toFixed(1)} ms (${health.length} asked); ` +
          `answers ${[...byStatus].map(([s, c]) => `${s || 'cut'}×${c}`).join(', ')} in ${ms} ms; load ${loadavg()[0]!.toFixed(2)}`,
      );
    } finally {
      await target.close();
    }
  }
}
for (const t of TARGETS) {
  const m = maxes.get(t.key)!;
  figure('webhook-burst', `/healthz max during ${N} slow bad-signature bodies, ${t.key} (worst run)`, Math.max(...m), 'ms', t.key === 'bare' ? {} : { max: 50 });
}
