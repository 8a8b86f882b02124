/**
 * One socket's flood: a logged-in agent's socket sends `call.hold` frames
 * as fast as the network takes them, reading every reply, for 5 s (60 s with
 * FAULTS_SIZE=full), against a real server process on Redis; whenever the node closes the
 * socket the flooder opens another and goes on. The node must refuse past its per-socket
 * bound (`BUSY` error frames, then close 4029), keep its memory (growth < 100 MB), stop
 * working for a socket once it is gone (no replies published to Redis after), keep
 * `/healthz` answering and answer SIGTERM within 10 s.
 */
import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { login, sleep } from '../e2e/harness.ts';
import { probeFromChild, startNode, sampleMax, type Node } from './node.ts';
import { printCounts, size } from './support.ts';

const cleanups: Array<() => Promise<void> | void> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

interface FloodResult {
  sent: number;
  replies: number;
  busy: number;
  notFound: number;
  /** Sockets opened (the flooder opens a new one whenever the node closed the last). */
  sockets: number;
  /** Close codes seen, with their counts. */
  closeCodes: Map<number, number>;
}

/**
 * Flood `call.hold` frames for `ms` on one socket at a time, reading every reply; when the
 * node closes the socket, open another with the same cookie and go on.
 */
async function flood(url: string, cookie: string, ms: number): Promise<FloodResult> {
  const r: FloodResult = { sent: 0, replies: 0, busy: 0, notFound: 0, sockets: 0, closeCodes: new Map() };
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/ws`, { headers: { cookie }, origin: url });
    r.sockets++;
    const closed = new Promise<void>((resolve) =>
      ws.once('close', (code) => {
        r.closeCodes.set(code, (r.closeCodes.get(code) ?? 0) + 1);
        resolve();
      }),
    );
    ws.on('message', (data) => {
      r.replies++;
      const s = String(data);
      if (s.includes('"BUSY"')) r.busy++;
      else if (s.includes('"NOT_FOUND"')) r.notFound++;
    });
    const opened = await new Promise<boolean>((resolve) => {
      ws.once('open', () => resolve(true));
      ws.once('error', () => resolve(false));
      ws.once('close', () => resolve(false));
    });
    while (opened && Date.now() < end && ws.readyState === ws.OPEN) {
      // As fast as the socket takes them, without piling up frames on our side.
      for (let i = 0; i < 500 && ws.bufferedAmount < 256 * 1024; i++) ws.send(`{"type":"call.hold","id":"h${r.sent++}","wacid":"wacid.flood.${r.sent % 64}"}`);
      await new Promise((res) => setImmediate(res));
    }
    if (ws.readyState !== ws.CLOSED) ws.terminate();
    await closed;
    if (!opened) await sleep(50);
  }
  return r;
}

describe('one socket floods the node', () => {
  it('refuses past the bound, closes the socket, keeps its memory, stops at once after the close and answers SIGTERM in 10 s', async () => {
    const ms = size(5_000, 60_000);
    const node: Node = await startNode();
    cleanups.push(() => node.close());
    const cookie = await login(node.url, 'agent1');
    // Replies published to the other nodes while and after the socket floods.
    const sub = new Redis(node.redisUrl);
    cleanups.push(() => void sub.disconnect());
    let published = 0;
    sub.on('pmessage', () => published++);
    await sub.psubscribe('*ws-push*');

    await sleep(1000);
    const rss0 = node.rssMb();
    const peak = sampleMax(() => node.rssMb());
    // /healthz asked every 100 ms meanwhile, from a process of its own: the slowest answer.
    const probe = probeFromChild(`${node.url}/healthz`);
    const cpu0 = node.cpuMs();
    const t0 = Date.now();
    const r = await flood(node.url, cookie, ms);
    const floodMs = Date.now() - t0;
    const nodeCpuMs = node.cpuMs() - cpu0;
    const health = await probe.stop();
    const healthzMaxMs = Math.round(Math.max(...health));
    // What the node still does for the socket once it is gone: counted from 0.5 s after the close, for 2 s.
    await sleep(500);
    const before = published;
    await sleep(2000);
    const publishedAfterClose = published - before;
    const rssPeak = peak.stop();
    const healthz = await fetch(`${node.url}/healthz`, { signal: AbortSignal.timeout(10_000) }).then((res) => res.status, () => 0);
    // SIGTERM in the middle of another flood.
    const again = flood(node.url, cookie, 4_000);
    await sleep(1_500);
    const termMs = await node.term(30_000);
    await again;

    printCounts('socket-flood', {
      floodMs,
      nodeCpuMs,
      framesSent: r.sent,
      replies: r.replies,
      busy: r.busy,
      notFound: r.notFound,
      sockets: r.sockets,
      closed4029: r.closeCodes.get(4029) ?? 0,
      closeCodes: [...r.closeCodes].map(([c, n]) => `${c}x${n}`).join(','),
      publishedAfterClose,
      rssStartMb: rss0,
      rssPeakMb: rssPeak,
      rssGrowthMb: rssPeak - rss0,
      healthz,
      healthzProbes: health.length,
      healthzMaxMs,
      sigtermExitMs: termMs,
      load1: loadavg()[0]!.toFixed(2),
    });
    expect(r.busy).toBeGreaterThan(0);
    expect(r.closeCodes.get(4029) ?? 0).toBeGreaterThan(0);
    expect(publishedAfterClose).toBeLessThan(10);
    expect(rssPeak - rss0).toBeLessThan(100);
    expect(healthz).toBe(200);
    expect(termMs).toBeLessThan(10_000);
  }, 180_000);
});

describe('SIGTERM under any load', () => {
  it('with Redis frozen (SIGSTOP) and a webhook body still arriving, the node exits within 10 s', async () => {
    const node: Node = await startNode();
    cleanups.push(() => node.close());
    // A webhook whose body never finishes: an HTTP request in flight for the drain to wait on.
    const slow = new AbortController();
    void fetch(`${node.url}/webhooks/service`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': '100000' },
      body: new ReadableStream({ start: (c) => c.enqueue(new TextEncoder().encode('{"id":')) }),
      duplex: 'half',
      signal: slow.signal,
    } as RequestInit).catch(() => undefined);
    cleanups.push(() => slow.abort());
    await sleep(300);
    node.redisSignal('SIGSTOP');
    const termMs = await node.term(60_000);
    node.redisSignal('SIGCONT');
    printCounts('sigterm-frozen-redis', { sigtermExitMs: termMs, exitCode: String(node.proc.exitCode), signal: String(node.proc.signalCode), load1: loadavg()[0]!.toFixed(2) });
    expect(termMs).toBeLessThan(10_000);
  }, 120_000);
});
