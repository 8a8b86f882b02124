/**
 * Load generator for the benches, run as its own process (it must not share an event
 * loop with the servers under test): a fixed number of keep-alive HTTP/1.1 connections per
 * target, each sending signed webhook-shaped JSON POSTs back to back (one request in
 * flight per connection, no pipelining).
 *
 * Like wrk, it spends as little CPU per request as it can, so that on a small machine the
 * servers under test, not the generator, set the pace: requests (unique event id, signed
 * body) are built before each slice, written as prepared bytes on plain sockets, and a
 * response is parsed only as far as its status and length.
 *
 * Targets are measured in alternating slices (A B C, C B A, ...), so that a busy
 * neighbour on the machine, or the machine itself changing speed, slows every target
 * alike instead of skewing their ratios. A target is a URL at one concurrency: the same
 * server at several concurrencies is several targets, interleaved like any others.
 *
 * The CPU time (user + system, from /proc) of each target's `pids` is read at the start
 * and end of its slices, so it is the CPU those processes spent while that target was
 * measured, per request.
 *
 * argv[2]: JSON { targets: [{ url, connections, pids? }], sliceMs, rounds, secret, idPrefix, warmupMs }
 * stdout: one JSON line: per target { sent, requests, ok, errors, statuses, seconds, rps,
 * p50Ms, p99Ms, loadgenCpuUsPerRequest, cpuUsPerRequest (one per pid) }
 */
import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';

interface Options {
  targets: Array<{ url: string; connections: number; pids?: number[] }>;
  sliceMs: number;
  rounds: number;
  secret: string;
  idPrefix: string;
  warmupMs: number;
}
const o = JSON.parse(process.argv[2]!) as Options;

let seq = 0;
/** One complete signed request, as bytes. */
function buildRequest(host: string, path: string): Buffer {
  const id = `${o.idPrefix}_${seq++}`;
  const body = `{"id":"${id}","type":"chat.message.updated","apiVersion":"v2","createTime":"2026-01-01T00:00:00.000Z","chatMessage":{"id":"m_${id}","from":"+15550001111","to":"+15550002222","status":"delivered","totalPrice":0.0042,"currency":"USD"}}`;
  const t = Math.floor(Date.now() / 1000);
  const s = createHmac('sha256', o.secret).update(`${t}.`).update(body).digest('hex');
  return Buffer.from(
    `POST ${path} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json\r\nService-Signature: t=${t},s=${s}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

interface Acc {
  /** Every request answered, warm-up included (for CPU per request of the servers). */
  sent: number;
  lat: number[];
  statuses: Map<number, number>;
  errors: number;
  seconds: number;
  /** CPU time of this process (user + system) during the measured slices, in ms. */
  cpuMs: number;
  /** CPU time of the target's processes during its measured slices, in ms. */
  pidCpuMs: number[];
}

/** utime + stime of a process, in ms (Linux /proc; 0 elsewhere). */
function processCpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

const HEADER_END = Buffer.from('\r\n\r\n');
const CONTENT_LENGTH = /\r\ncontent-length:\s*(\d+)/i;

/**
 * One keep-alive connection. `send` writes a request and resolves with the status when the
 * whole response has arrived (Content-Length bodies; the servers here always send one).
 */
class Conn {
  private buf: Buffer = Buffer.alloc(0);
  private waiting: { resolve: (status: number) => void; reject: (err: Error) => void } | undefined;
  closed: Error | undefined;

  constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (d: Buffer) => {
      this.buf = this.buf.length === 0 ? d : Buffer.concat([this.buf, d]);
      this.parse();
    });
    const fail = (err: Error) => {
      this.closed = err;
      this.waiting?.reject(err);
      this.waiting = undefined;
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('connection closed')));
  }

  static open(port: number, host: string): Promise<Conn> {
    return new Promise((resolve, reject) => {
      const s = connect({ port, host }, () => resolve(new Conn(s)));
      s.once('error', reject);
    });
  }

  send(req: Buffer): Promise<number> {
    if (this.closed) return Promise.reject(this.closed);
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.socket.write(req);
    });
  }

  private parse(): void {
    const end = this.buf.indexOf(HEADER_END);
    if (end < 0) return;
    const head = this.buf.toString('latin1', 0, end);
    const m = CONTENT_LENGTH.exec(head);
    if (!m) {
      this.socket.destroy(new Error(`response without Content-Length: ${head.split('\r\n')[0]}`));
      return;
    }
    const total = end + 4 + Number(m[1]);
    if (this.buf.length < total) return;
    const status = Number(head.slice(9, 12));
    this.buf = this.buf.subarray(total);
    const w = this.waiting;
    this.waiting = undefined;
    w?.resolve(status);
  }

  close(): void {
    this.socket.destroy();
  }
}

async function slice(t: Target, ms: number, acc: Acc | undefined, all: Acc): Promise<void> {
  // A server may close a keep-alive connection that idled while other targets were measured
  // (Node's default keep-alive timeout is 5 s): open it again before the slice.
  t.conns = await Promise.all(t.conns.map((c) => (c.closed ? Conn.open(t.port, t.host) : c)));
  // Requests for this slice are built before it starts (more are built if it runs out).
  const ready: Buffer[] = [];
  for (let i = 0; i < t.prepare; i++) ready.push(buildRequest(t.hostHeader, t.path));
  const until = Date.now() + ms;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const p0 = t.pids.map(processCpuMs);
  let answered = 0;
  await Promise.all(
    t.conns.map(async (conn) => {
      while (Date.now() < until) {
        const req = ready.pop() ?? buildRequest(t.hostHeader, t.path);
        const start = performance.now();
        try {
          const status = await conn.send(req);
          answered++;
          all.sent++;
          if (acc) {
            acc.lat.push(performance.now() - start);
            acc.statuses.set(status, (acc.statuses.get(status) ?? 0) + 1);
          }
        } catch {
          if (acc) acc.errors++;
          return;
        }
      }
    }),
  );
  if (acc) {
    acc.seconds += (performance.now() - t0) / 1000;
    const c = process.cpuUsage(c0);
    acc.cpuMs += (c.user + c.system) / 1000;
    t.pids.forEach((pid, i) => (acc.pidCpuMs[i]! += processCpuMs(pid) - p0[i]!));
  }
  // Next time, prepare about as many as this slice used, plus a margin.
  t.prepare = Math.max(t.prepare, Math.ceil(answered * 1.3));
}

interface Target {
  port: number;
  host: string;
  path: string;
  hostHeader: string;
  conns: Conn[];
  pids: number[];
  prepare: number;
  acc: Acc;
}

const targets: Target[] = [];
for (const { url: u, connections, pids = [] } of o.targets) {
  const url = new URL(u);
  const conns = await Promise.all(Array.from({ length: connections }, () => Conn.open(Number(url.port), url.hostname)));
  targets.push({
    port: Number(url.port),
    host: url.hostname,
    path: url.pathname,
    hostHeader: url.host,
    conns,
    pids,
    prepare: 1000,
    acc: { sent: 0, lat: [], statuses: new Map(), errors: 0, seconds: 0, cpuMs: 0, pidCpuMs: pids.map(() => 0) },
  });
}

for (const t of targets) await slice(t, o.warmupMs, undefined, t.acc);
for (let r = 0; r < o.rounds; r++) {
  for (const t of r % 2 === 0 ? targets : [...targets].reverse()) await slice(t, o.sliceMs, t.acc, t.acc);
}

const results = targets.map(({ acc }) => {
  acc.lat.sort((a, b) => a - b);
  const q = (p: number) => acc.lat[Math.min(acc.lat.length - 1, Math.floor(p * acc.lat.length))] ?? NaN;
  const ok = [...acc.statuses.entries()].filter(([s]) => s >= 200 && s < 300).reduce((n, [, c]) => n + c, 0);
  return {
    sent: acc.sent,
    requests: acc.lat.length,
    ok,
    errors: acc.errors,
    statuses: Object.fromEntries(acc.statuses),
    seconds: acc.seconds,
    rps: ok / acc.seconds,
    p50Ms: q(0.5),
    p99Ms: q(0.99),
    loadgenCpuUsPerRequest: (acc.cpuMs * 1000) / Math.max(1, acc.lat.length),
    cpuUsPerRequest: acc.pidCpuMs.map((ms) => (ms * 1000) / Math.max(1, acc.lat.length)),
  };
});
process.stdout.write(JSON.stringify(results) + '\n');
for (const t of targets) for (const c of t.conns) c.close();
