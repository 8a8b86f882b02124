/**
 * Agents of bench/fleet.ts, in a child process of their own (several such children share
 * the agents), so the frames thousands of agents receive are not read by the process that
 * sends the webhooks and keeps time. An agent answers each call it is offered (`call.answer`
 * with a fixed SDP answer the Service's rules accept; the callers are signaling-only), talks
 * `talkMs` and hangs up (`call.hangup`); with WRAP_UP_MS=off it is available again at once.
 * Calls from numbers starting with `abandonPrefix` are not answered: their caller hangs up
 * while it rings (the bench does that at the Service). Over IPC:
 *   ← { agents: [{ url, cookie, node }], talkMs, abandonPrefix }   connect each (protocol v1), set available
 *   → { ready: true }                          all connected and available
 *   → { offer: wacid, at, node }               a `call.offered` arrived (`at`: epoch ms, µs precision)
 *   ← 'start'   the measured load begins (event-loop delay and CPU counted from here)
 *   ← 'report'  → { report: { lagP99Ms, lagMaxMs, cpuMs, closed: {code: sockets}, answered, hungUp, errors: {code: n} } }   then ← 'close' ends it
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import WebSocket from 'ws';

interface Job {
  agents: Array<{ url: string; cookie: string; node: number }>;
  talkMs: number;
  abandonPrefix: string;
}

/** An SDP answer the Service's rules accept (Opus, a SHA-256 fingerprint); no media follows. */
const ANSWER = [
  'v=0',
  'o=- 4242 1 IN IP4 127.0.0.1',
  's=-',
  't=0 0',
  'a=group:BUNDLE 0',
  'm=audio 9 UDP/TLS/RTP/SAVPF 111',
  'c=IN IP4 127.0.0.1',
  'a=mid:0',
  'a=ice-ufrag:flt1',
  'a=ice-pwd:fleetagentfleetagentfleet',
  `a=fingerprint:sha-256 ${Array.from({ length: 32 }, (_, i) => (i * 7).toString(16).padStart(2, '0').toUpperCase()).join(':')}`,
  'a=setup:active',
  'a=rtcp-mux',
  'a=sendrecv',
  'a=rtpmap:111 opus/48000/2',
  '',
].join('\r\n');

/** Epoch milliseconds with sub-millisecond precision, comparable across this machine's processes. */
const clock = () => performance.timeOrigin + performance.now();
const WANTED = new Set(['welcome', 'ack', 'error', 'call.offered', 'ping']);
const send = (m: unknown) => process.send!(m);
const sockets: WebSocket[] = [];
const lag = monitorEventLoopDelay({ resolution: 10 });
let cpu0 = process.cpuUsage();
/** Sockets the server closed (a client too slow to answer pings is cut: its agent stops taking calls). */
const closed = new Map<number, number>();
let answered = 0;
let hungUp = 0;
/** Refused `call.answer` / `call.hangup` requests, by error code. */
const errors = new Map<string, number>();
let job: Pick<Job, 'talkMs' | 'abandonPrefix'> = { talkMs: 1000, abandonPrefix: '+1556' };

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
      const m = JSON.parse(text) as { type: string; wacid?: string; id?: string; from?: string; code?: string; t?: number };
      if (m.type === 'welcome') ws.send(JSON.stringify({ type: 'presence.set', id: 'p', status: 'available' }));
      else if (m.type === 'ack' && m.id === 'p') resolve();
      else if (m.type === 'call.offered' && m.wacid) {
        send({ offer: m.wacid, at, node: a.node });
        if (!m.from?.startsWith(job.abandonPrefix)) ws.send(JSON.stringify({ type: 'call.answer', id: `a ${m.wacid}`, wacid: m.wacid, sdp: ANSWER }));
      } else if (m.type === 'ack' && m.id?.startsWith('a ')) {
        answered++;
        const wacid = m.id.slice(2);
        setTimeout(() => ws.send(JSON.stringify({ type: 'call.hangup', id: `h ${wacid}`, wacid })), job.talkMs);
      } else if (m.type === 'ack' && m.id?.startsWith('h ')) hungUp++;
      else if (m.type === 'error' && m.id !== undefined) {
        const k = `${m.id[0] === 'a' ? 'answer' : m.id[0] === 'h' ? 'hangup' : m.id} ${m.code}`;
        errors.set(k, (errors.get(k) ?? 0) + 1);
      } else if (m.type === 'ping') ws.send(JSON.stringify({ type: 'pong', t: m.t }));
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
    send({ report: { lagP99Ms: lag.percentile(99) / 1e6, lagMaxMs: lag.max / 1e6, cpuMs: (c.user + c.system) / 1000, closed: Object.fromEntries(closed), answered, hungUp, errors: Object.fromEntries(errors) } });
    return;
  }
  job = { talkMs: m.talkMs, abandonPrefix: m.abandonPrefix };
  void (async () => {
    for (let i = 0; i < m.agents.length; i += 100) await Promise.all(m.agents.slice(i, i + 100).map(connect));
    send({ ready: true });
  })().catch((err: Error) => {
    process.stderr.write(`agents: ${err.message}\n`);
    process.exit(1);
  });
});
