/**
 * Burst figures for the Service client's rate limiter: prints, doesn't assert.
 *   npx tsx bench/client-burst.ts
 * Each run: N concurrent chat sends from one sender against a local server that answers 429
 * above its per-sender rps (sliding 1 s window, Retry-After: 1).
 */
import { createServiceClient, noRetry } from '../server/service/index.ts';
import { perSenderLimitedSends, startServer } from '../test/service/server.ts';

async function run(label: string, n: number, serverRps: number, direct: boolean, opts: { shaped: boolean; directSendRps?: number }) {
  const limited = perSenderLimitedSends(serverRps);
  const srv = await startServer(limited.handler);
  const c = createServiceClient({
    baseUrl: srv.baseUrl,
    apiKey: 'bench_key',
    limits: opts.shaped ? { directSendRps: opts.directSendRps } : { disabled: true },
    ...(opts.shaped ? {} : { retry: noRetry }),
  });
  const t0 = performance.now();
  const results = await Promise.allSettled(
    Array.from({ length: n }, async (_, i) => {
      const input = { from: '+4930123456', to: '+14155550100', type: 'text', text: { body: `n${i}` } };
      return direct ? c.messages.sendDirectly(input) : c.messages.send(input);
    }),
  );
  const ms = performance.now() - t0;
  const ok = results.filter((r) => r.status === 'fulfilled').length;
  // Largest silence between two arrivals at the server: shows the pacing is smooth, not lumpy.
  const gaps = srv.seen.slice(1).map((s, i) => s.at - srv.seen[i]!.at);
  const maxGap = gaps.length ? Math.max(...gaps) : 0;
  console.log(
    `${label.padEnd(52)} ${String(n).padStart(5)} sends  ${(ms / 1000).toFixed(2).padStart(6)} s  ${(n / (ms / 1000)).toFixed(0).padStart(5)} rps  accepted ${ok}  server 429s ${limited.stats.rejected429}  max arrival gap ${maxGap} ms`,
  );
  await srv.close();
}

console.log(`load average ${(await import('node:os')).loadavg().map((l) => l.toFixed(2)).join(' ')}`);
await run('queued, shaped (200 rps/sender server)', 500, 200, false, { shaped: true });
await run('queued, limiter off, no retry (200 rps/sender)', 500, 200, false, { shaped: false });
await run('direct, shaped at default 80 rps (80 rps server)', 200, 80, true, { shaped: true });
await run('direct, shaped at upgraded 1000 rps (1000 rps server)', 2000, 1000, true, { shaped: true, directSendRps: 1000 });
