/**
 * Load generator for the benches, run as its own process (it must not share an event
 * loop with the servers under test): a fixed number of keep-alive connections per target,
 * each sending signed webhook-shaped JSON POSTs back to back.
 *
 * Targets are measured in alternating slices (A B A B ...), so that a busy neighbour on
 * the machine slows both alike instead of skewing the ratio.
 *
 * argv[2]: JSON { targets: string[], sliceMs, rounds, connections, secret, idPrefix, warmupMs }
 * stdout: one JSON line: per target { requests, ok, errors, statuses, seconds, rps, p50Ms, p99Ms }
 */
import { createHmac } from 'node:crypto';
import { Pool } from 'undici';

interface Options {
  targets: string[];
  sliceMs: number;
  rounds: number;
  connections: number;
  secret: string;
  idPrefix: string;
  warmupMs: number;
}
const o = JSON.parse(process.argv[2]!) as Options;

let seq = 0;
function nextRequest() {
  const id = `${o.idPrefix}_${seq++}`;
  const body = `{"id":"${id}","type":"chat.message.updated","apiVersion":"v2","createTime":"2026-01-01T00:00:00.000Z","chatMessage":{"id":"m_${id}","from":"+15550001111","to":"+15550002222","status":"delivered","totalPrice":0.0042,"currency":"USD"}}`;
  const t = Math.floor(Date.now() / 1000);
  const s = createHmac('sha256', o.secret).update(`${t}.`).update(body).digest('hex');
  return { body, headers: { 'content-type': 'application/json', 'service-signature': `t=${t},s=${s}` } };
}

interface Acc {
  /** Every request sent, warm-up included (for CPU per request). */
  sent: number;
  lat: number[];
  statuses: Map<number, number>;
  errors: number;
  seconds: number;
}

async function slice(pool: Pool, path: string, ms: number, acc: Acc | undefined, all: Acc): Promise<void> {
  const until = Date.now() + ms;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: o.connections }, async () => {
      while (Date.now() < until) {
        const { body, headers } = nextRequest();
        const start = process.hrtime.bigint();
        try {
          const res = await pool.request({ path, method: 'POST', body, headers });
          await res.body.dump();
          all.sent++;
          if (acc) {
            acc.lat.push(Number(process.hrtime.bigint() - start) / 1e6);
            acc.statuses.set(res.statusCode, (acc.statuses.get(res.statusCode) ?? 0) + 1);
          }
        } catch {
          if (acc) acc.errors++;
        }
      }
    }),
  );
  if (acc) acc.seconds += (performance.now() - t0) / 1000;
}

const targets = o.targets.map((u) => {
  const url = new URL(u);
  return {
    path: url.pathname,
    pool: new Pool(url.origin, { connections: o.connections, pipelining: 1, keepAliveTimeout: 60_000 }),
    acc: { sent: 0, lat: [], statuses: new Map(), errors: 0, seconds: 0 } as Acc,
  };
});

for (const t of targets) await slice(t.pool, t.path, o.warmupMs, undefined, t.acc);
for (let r = 0; r < o.rounds; r++) {
  for (const t of r % 2 === 0 ? targets : [...targets].reverse()) await slice(t.pool, t.path, o.sliceMs, t.acc, t.acc);
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
  };
});
process.stdout.write(JSON.stringify(results) + '\n');
await Promise.all(targets.map((t) => t.pool.close()));
