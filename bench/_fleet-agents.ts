/**
 * Agents of bench/fleet.ts, in a child process of their own (several such children share
 * the agents), so the frames thousands of agents receive are not read by the process that
 * sends the webhooks and keeps time. Over IPC:
 *   ← { agents: [{ url, cookie, node }] }   connect each (protocol v1), set available
 *   → { ready: true }                          all connected and available
 *   → { offer: wacid, at, node }               a `call.offered` arrived (`at`: epoch ms, µs precision)
 *   ← 'start'   the measured load begins (event-loop delay and CPU counted from here)
 *   ← 'report'  → { report: { lagP99Ms, lagMaxMs, cpuMs, closed: {code: sockets} } }   then ← 'close' ends it
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import WebSocket from 'ws';

interface Job {
  agents: Array<{ url: string; cookie: string; node: number }>;
}

/** Epoch milliseconds with sub-millisecond precision, comparable across this machine's processes. */
const clock = () => performance.timeOrigin + performance.now();
const WANTED = new Set(['welcome', 'ack', 'call.offered', 'ping']);
const send = (m: unknown) => process.send!(m);
const sockets: WebSocket[] = [];
const lag = monitorEventLoopDelay({ resolution: 10 });
let cpu0 = process.cpuUsage();
/** Sockets the server closed (a client too slow to answer pings is cut: its agent stops taking calls). */
const closed = new Map<number, number>();

function connect(a: Job['agents'][number]): Promise<void> {
  const ws = new WebSocket(`${a.url.replace(/^http/, 'ws')}/ws`, { headers: { cookie: a.cookie }, origin: a.url });
  sockets.push(ws);
  ws.once('close', (code) => closed.set(code, (closed.get(code) ?? 0) + 1));
  return new Promise<void>((resolve, reject) => {
    ws.once('error', reject);
    ws.once('unexpected-response', (_q, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    ws.on('message', (data) => {
      const at = clock();
      // Frames this agent does not act on (callback.updated, agent.state …) are not parsed.
      const text = String(data);
      const type = /^\{"type":"([^"]+)"/.exec(text)?.[1];
      if (type !== undefined && !WANTED.has(type)) return;
      const m = JSON.parse(text) as { type: string; wacid?: string; id?: string };
      if (m.type === 'welcome') ws.send(JSON.stringify({ type: 'presence.set', id: 'p', status: 'available' }));
      else if (m.type === 'ack' && m.id === 'p') resolve();
      else if (m.type === 'call.offered' && m.wacid) send({ offer: m.wacid, at, node: a.node });
      else if (m.type === 'ping') ws.send(JSON.stringify({ type: 'pong' }));
    });
  });
}

process.on('message', (m: Job | 'start' | 'report' | 'close') => {
  if (m === 'start') {
    lag.reset();
    lag.enable();
    cpu0 = process.cpuUsage();
    return;
  }
  if (m === 'close') {
    for (const s of sockets) s.terminate();
    process.disconnect();
    return;
  }
  if (m === 'report') {
    lag.disable();
    const c = process.cpuUsage(cpu0);
    send({ report: { lagP99Ms: lag.percentile(99) / 1e6, lagMaxMs: lag.max / 1e6, cpuMs: (c.user + c.system) / 1000, closed: Object.fromEntries(closed) } });
    return;
  }
  void (async () => {
    for (let i = 0; i < m.agents.length; i += 100) await Promise.all(m.agents.slice(i, i + 100).map(connect));
    send({ ready: true });
  })().catch((err: Error) => {
    process.stderr.write(`agents: ${err.message}\n`);
    process.exit(1);
  });
});
