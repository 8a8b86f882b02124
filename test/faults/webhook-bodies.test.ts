/**
 * Memory before authentication: many connections at once, each POSTing a
 * 1 MiB webhook body slowly (64 KiB every 100 ms) under a well-formed, current
 * `Service-Signature` whose digest is wrong, against a real server process. 300 connections
 * (1,200 with FAULTS_SIZE=full). The node must keep its memory (growth < 100 MB), keep
 * `/healthz` fast (asked every 100 ms meanwhile from a process of its own: < 50 ms at the
 * full size with the intake thread; the quick size only catches a stall), and authenticate
 * nothing. Run once with webhooks on the node's loop, once on the intake thread (`WEBHOOK_PORT`).
 */
import { loadavg } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { sleep } from '../e2e/harness.ts';
import { BODY, probeFromChild, slowPost, startNode, sampleMax, type Node } from './node.ts';
import { FULL, printCounts, size } from './support.ts';
import { freePort } from '../support/redis.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

/**
 * Two ways to run a node: webhooks on its own event loop (the default), and on the intake
 * thread's port (`WEBHOOK_PORT`). `/healthz` is asked on the node's port either way.
 */
const MODES = [
  { name: 'on the node’s event loop', key: 'webhook-bodies', env: async (): Promise<Record<string, string>> => ({}), goalMs: FULL ? 1000 : 1000 },
  { name: 'on the intake thread (WEBHOOK_PORT)', key: 'webhook-bodies-intake', env: async () => ({ WEBHOOK_PORT: String(await freePort()) }), goalMs: FULL ? 50 : 250 },
];

describe('unauthenticated bodies', () => {
  for (const mode of MODES) {
    it(`${mode.name}: many slow 1 MiB bodies with a bad signature: memory kept, /healthz fast, nothing accepted`, async () => {
      const n = size(300, 1200);
      const node: Node = await startNode(await mode.env());
      cleanups.push(() => node.close());
      await sleep(1000);
      const rss0 = node.rssMb();
      const peak = sampleMax(() => node.rssMb());
      // /healthz with nothing else going on, for comparison (the machine's own load shows in it).
      const idleProbe = probeFromChild(`${node.url}/healthz`);
      await sleep(2000);
      const idle = [...(await idleProbe.stop())].sort((a, b) => a - b);
      const probe = probeFromChild(`${node.url}/healthz`);
      // Well-formed and current (it passes every check but the digest).
      const signature = `t=${Math.floor(Date.now() / 1000)},s=${'0'.repeat(64)}`;
      const cpu0 = node.cpuMs();
      const t0 = Date.now();
      const statuses = await Promise.all(Array.from({ length: n }, () => slowPost(node.webhookUrl, signature)));
      const ms = Date.now() - t0;
      const nodeCpuMs = node.cpuMs() - cpu0;
      const health = await probe.stop();
      const rssPeak = peak.stop();
      const byStatus = new Map<number, number>();
      for (const s of statuses) byStatus.set(s, (byStatus.get(s) ?? 0) + 1);
      const sorted = [...health].sort((a, b) => a - b);
      const p = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN);
      printCounts(mode.key, {
        connections: n,
        bodyBytes: BODY,
        ms,
        nodeCpuMs,
        statuses: [...byStatus].map(([s, c]) => `${s}x${c}`).join(','),
        rssStartMb: rss0,
        rssPeakMb: rssPeak,
        rssGrowthMb: rssPeak - rss0,
        healthzIdleP50Ms: Math.round(idle[Math.floor(idle.length / 2)] ?? NaN),
        healthzIdleMaxMs: Math.round(idle.at(-1) ?? NaN),
        healthzProbes: health.length,
        healthzP50Ms: p(0.5),
        healthzMaxMs: Math.round(sorted.at(-1) ?? NaN),
        load1: loadavg()[0]!.toFixed(2),
      });
      expect(byStatus.get(200) ?? 0).toBe(0);
      expect(byStatus.get(401) ?? 0, 'bodies read and refused (not all cut or turned away)').toBeGreaterThan(0);
      expect(rssPeak - rss0).toBeLessThan(100);
      // The goal is 50 ms (FAULTS_SIZE=full, on a quiet machine), met with the intake thread.
      // On the node's own loop the accept burst of 1,200 connections holds it for 0.4-0.8 s:
      // that mode, and the quick size run on a shared machine, only catch the node stalling
      // (the old code: 2 to 3 s).
      expect(sorted.at(-1)!).toBeLessThan(mode.goalMs);
    }, 180_000);
  }
});
