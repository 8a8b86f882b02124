/**
 * Bounds per socket: requests
 * queued or in flight, a socket that floods, a client that does not read, sockets per login
 * session. The full-size flood against a server process is test/faults/socket-flood.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { socketOf } from '../../server/ops/internals.ts';
import { MAX_PENDING_REQUESTS, MAX_SOCKETS_PER_SESSION } from '../../shared/protocol.ts';
import { ProtocolClient, login, sleep, startBridge, until, type Bridge } from './harness.ts';

let b: Bridge;
beforeAll(async () => {
  b = await startBridge({
    agents: ['agent1', 'agent2', 'agent3', 'agent4'],
    socketLimits: { readPauseBytes: 32 * 1024, maxBufferedBytes: 128 * 1024 },
    // A long list: a refused away reason is answered with it (about 3.8 KB a reply).
    env: { AWAY_REASONS: Array.from({ length: 60 }, (_, i) => `Away reason number ${i} `.padEnd(60, 'x')).join(',') },
  });
});
afterAll(async () => {
  await b?.close();
});

/** A raw socket that has had its welcome. */
async function open(cookie: string): Promise<{ ws: WebSocket; frames: string[]; closed: Promise<{ code: number; reason: string }> }> {
  const ws = new WebSocket(`${b.url.replace(/^http/, 'ws')}/ws`, { headers: { cookie }, origin: b.url });
  const frames: string[] = [];
  ws.on('message', (d) => frames.push(String(d)));
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: String(reason) })));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  await until('welcome', () => frames.some((f) => f.startsWith('{"type":"welcome"')), 10_000, 20);
  return { ws, frames, closed };
}

/** `n` call.hold requests written in one go (one TCP write): ids h0 … h(n-1). */
function burst(ws: WebSocket, n: number, from = 0): void {
  const socket = socketOf(ws)!;
  socket.cork();
  for (let i = from; i < from + n; i++) ws.send(JSON.stringify({ type: 'call.hold', id: `h${i}`, wacid: `wacid.burst.${i}` }));
  socket.uncork();
}

const replies = (frames: string[]) => frames.map((f) => JSON.parse(f) as { type: string; id?: string; code?: string }).filter((m) => m.type === 'ack' || m.type === 'error');

describe('bounds per socket', () => {
  it(`requests past ${MAX_PENDING_REQUESTS} queued or in flight are refused at once with BUSY and their id; every request is answered; the socket stays open`, async () => {
    const { ws, frames } = await open(await login(b.url, 'agent1'));
    const n = MAX_PENDING_REQUESTS + 8;
    burst(ws, n);
    await until('every request answered', () => replies(frames).length >= n, 10_000, 20);
    const r = replies(frames);
    const busy = r.filter((m) => m.code === 'BUSY');
    expect(busy.length).toBeGreaterThan(0);
    expect(busy.every((m) => typeof m.id === 'string' && /^h\d+$/.test(m.id))).toBe(true);
    expect(new Set(r.map((m) => m.id)).size).toBe(n);
    // The rest were handled (no such call).
    expect(r.filter((m) => m.code === 'NOT_FOUND').length).toBe(n - busy.length);
    // Once answered, the socket takes requests again.
    burst(ws, 1, n);
    await until('the next request answered', () => replies(frames).some((m) => m.id === `h${n}`), 10_000, 20);
    expect(replies(frames).find((m) => m.id === `h${n}`)?.code).toBe('NOT_FOUND');
    expect(ws.readyState).toBe(ws.OPEN);
    ws.close();
  });

  it('a socket that keeps sending past the bound is closed with 4029 and its queue is dropped', async () => {
    const { ws, frames, closed } = await open(await login(b.url, 'agent2'));
    burst(ws, 2000);
    const c = await closed;
    expect(c.code).toBe(4029);
    expect(c.reason).toBe('too many requests');
    await sleep(500);
    // At most the bound were handled: the rest were refused or dropped with the socket.
    expect(replies(frames).filter((m) => m.code === 'NOT_FOUND').length).toBeLessThanOrEqual(MAX_PENDING_REQUESTS);
  });

  it('oversize and binary frames count as refusals: a few get their error frame, a stream of them closes the socket with 4029', async () => {
    const { ws, frames, closed } = await open(await login(b.url, 'agent2'));
    const big = JSON.stringify({ type: 'call.hold', id: 'big', wacid: 'w'.repeat(70 * 1024) });
    ws.send(big);
    ws.send(Buffer.from([1, 2, 3]), { binary: true });
    await until('two error frames', () => frames.filter((f) => f.includes('"TOO_LARGE"') || f.includes('text frames only')).length === 2, 10_000, 20);
    expect(ws.readyState).toBe(ws.OPEN);
    for (let i = 0; i < 100; i++) ws.send(big);
    const c = await closed;
    expect(c.code).toBe(4029);
  });

  it('a client that does not read: the node stops reading it (its requests wait), its unsent output stays bounded, and the heartbeat cuts it', async () => {
    const { ws } = await open(await login(b.url, 'agent3'));
    ws.pause();
    const rss0 = process.memoryUsage().rss;
    let rssMax = rss0;
    let maxBuffered = 0;
    let sent = 0;
    const connected = () => b.sb.hub.connsOf('agent3').length > 0;
    const t0 = Date.now();
    // A few requests at a time (within the bound), each answered with a large error frame,
    // never reading the answers.
    while (connected() && Date.now() - t0 < 15_000) {
      const socket = socketOf(ws)!;
      socket.cork();
      for (let i = 0; i < 16; i++) ws.send(JSON.stringify({ type: 'presence.set', id: `a${sent++}`, status: 'away', reason: 'no such reason' }));
      socket.uncork();
      await sleep(2);
      maxBuffered = Math.max(maxBuffered, b.sb.gateway.stats?.().bufferedBytes ?? 0);
      rssMax = Math.max(rssMax, process.memoryUsage().rss);
    }
    const cutAfterMs = Date.now() - t0;
    const rssGrowthMb = Math.round((rssMax - rss0) / 1e6);
    process.stdout.write(`socket not reading: requests sent ${sent}, node's unsent bytes at most ${maxBuffered}, rss growth ${rssGrowthMb} MB, cut after ${cutAfterMs} ms\n`);
    expect(rssGrowthMb).toBeLessThan(50);
    expect(maxBuffered).toBeLessThan(32 * 1024 + 16 * 1024);
    expect(connected()).toBe(false);
    ws.terminate();
  });
});

describe('sockets per login session', () => {
  it(`a session's socket past ${MAX_SOCKETS_PER_SESSION} on one node is closed at once with 4002 and a reason; the open ones keep working`, async () => {
    const cookie = await login(b.url, 'agent4');
    const first = await Promise.all(Array.from({ length: MAX_SOCKETS_PER_SESSION }, () => open(cookie)));
    const extra = new ProtocolClient(b.url, cookie);
    const c = await extra.closed;
    expect(c).toBe(4002);
    expect(extra.received.some((m) => m.type === 'welcome')).toBe(false);
    // The open ones still answer.
    const probe = new ProtocolClient(b.url, await login(b.url, 'agent4'));
    await probe.next('welcome');
    first[0]!.ws.send(JSON.stringify({ type: 'presence.set', id: 'p1', status: 'available' }));
    await until('presence acked', () => replies(first[0]!.frames).some((m) => m.id === 'p1' && m.type === 'ack'), 10_000, 20);
    // One closed: the session may open one again.
    first[1]!.ws.close();
    await first[1]!.closed;
    await until('the closed socket gone', () => b.sb.gateway.stats().sockets <= MAX_SOCKETS_PER_SESSION + 1, 10_000, 20);
    const again = await open(cookie);
    expect(again.ws.readyState).toBe(again.ws.OPEN);
    for (const s of [...first, again]) s.ws.close();
    probe.close();
  });
});
