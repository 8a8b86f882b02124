/**
 * Offers under a flood of message events. The server (`server/main.ts`,
 * a process of its own) with Redis and PostgreSQL history; a worker thread sends `--rate`
 * (default 500) signed `chat.message.updated` events a second, each about a message of its
 * own (a history write each), for `--seconds` (default 30); meanwhile calls arrive one
 * after another (a signed `chat.call.connect`, then its terminate once offered) and one
 * agent is offered each. Prints the offer latency (webhook POST started → `call.offered`
 * frame at the agent) p50 / p99 / max, goal p99 ≤ 20 ms, the message events sent and how
 * far the message handling fell behind (the `other` lane's lag at the end).
 *
 *   npx tsx bench/lanes.ts [--seconds 30] [--rate 500]
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { hashPassword } from '../server/auth/users.ts';
import { RedisStore } from '../server/store/redis.ts';
import { laneGroup } from '../server/webhooks/workers.ts';
import { signatureHeader, startEmulator } from '../test/emulator/index.ts';
import { PASSWORD, agentClient, fakeConnect, until } from '../test/e2e/harness.ts';
import { createTestDatabase } from '../test/support/postgres.ts';
import { freePort, startRedis } from '../test/support/redis.ts';
import { figure } from './figures.ts';
import { pct } from './stats.ts';

interface FloodData {
  url: string;
  secret: string;
  rate: number;
}

async function post(url: string, secret: string, body: string): Promise<number> {
  const r = await fetch(`${url}/webhooks/service`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'service-signature': signatureHeader(secret, body, Math.floor(Date.now() / 1000)) },
    body,
  }).catch(() => undefined);
  await r?.body?.cancel();
  return r?.status ?? 0;
}

/** The flood, in a process of its own (its sending never delays the measuring loop); stops when its stdin closes. */
async function flood({ url, secret, rate }: FloodData): Promise<void> {
  let on = true;
  let sent = 0;
  let refused = 0;
  process.stdin.on('close', () => (on = false));
  process.stdin.resume();
  const t0 = Date.now();
  const inFlight = new Set<Promise<void>>();
  while (on) {
    const due = Math.floor(((Date.now() - t0) / 1000) * rate);
    while (sent < due && inFlight.size < 256) {
      const m = sent++;
      const at = new Date().toISOString();
      const body = JSON.stringify({
        id: `evt_msg_${m}_${randomBytes(4).toString('hex')}`,
        type: 'chat.message.updated',
        apiVersion: 'v2',
        createTime: at,
        chatMessage: { id: `wamid.flood${m}.${randomBytes(3).toString('hex')}`, status: 'sent', updateTime: at, from: '+15550100001', to: `+1555${String(2_000_000 + (m % 100_000))}`, type: 'text', text: { body: `flood message ${m} ${'x'.repeat(200)}` }, createTime: at },
      });
      const p: Promise<void> = post(url, secret, body).then((s) => {
        if (s !== 200) refused++;
        inFlight.delete(p);
      });
      inFlight.add(p);
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  await Promise.all(inFlight);
  process.stdout.write(`${JSON.stringify({ sent, refused, seconds: (Date.now() - t0) / 1000 })}\n`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '30' }, rate: { type: 'string', default: '500' } }, strict: false, allowPositionals: true });
  const seconds = Number(values.seconds);
  const rate = Number(values.rate);
  const root = fileURLToPath(new URL('..', import.meta.url));
  const cleanups: Array<() => Promise<void> | void> = [];
  try {
    const [pg, redis] = await Promise.all([createTestDatabase('sb_bench'), startRedis()]);
    cleanups.push(() => redis.close(), () => pg.drop());
    const dir = mkdtempSync(join(tmpdir(), 'sb-bench-lanes-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    writeFileSync(join(dir, 'users.json'), JSON.stringify({ users: [{ name: 'agent1', roles: ['agent'], passwordHash: await hashPassword(PASSWORD) }] }));
    const secret = `whsec_${randomBytes(16).toString('hex')}`;
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    // The Service the server talks to; this bench sends the webhooks itself.
    const emu = await startEmulator({ webhookSecret: secret, webhookEndpoints: [] });
    cleanups.push(() => emu.close());
    const node = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        PORT: String(port),
        PUBLIC_URL: url,
        SERVICE_BASE_URL: emu.baseUrl,
        SERVICE_API_KEY: emu.apiKey,
        SERVICE_WEBHOOK_SECRETS: secret,
        SESSION_SECRET: randomBytes(24).toString('base64url'),
        USERS_FILE: join(dir, 'users.json'),
        REDIS_URL: redis.url,
        DATABASE_URL: pg.url,
        DATA_DIR: dir,
        RING_TIMEOUT_MS: '60000',
        ACCEPT_WINDOW_MS: '60000',
        WRAP_UP_MS: 'off',
        LOG_LEVEL: 'error',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    cleanups.push(() => void node.kill('SIGKILL'));
    await until('node healthy', async () => (await fetch(`${url}/healthz`).catch(() => undefined))?.ok, 60_000, 200);
    const agent = await agentClient(url, 'agent1');
    cleanups.push(() => agent.close());

    const flooder = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--flood', JSON.stringify({ url, secret, rate } satisfies FloodData)], { stdio: ['pipe', 'pipe', 'inherit'] });
    cleanups.push(() => void flooder.kill('SIGKILL'));
    let floodOut = '';
    flooder.stdout.on('data', (d: Buffer) => (floodOut += String(d)));
    const floodDone = new Promise<{ sent: number; refused: number; seconds: number }>((resolve) => flooder.once('exit', () => resolve(JSON.parse(floodOut.trim().split('\n').at(-1) ?? '{}'))));
    const iso = () => new Date().toISOString();
    const latencies: number[] = [];
    let lost = 0;
    await new Promise((r) => setTimeout(r, 1000)); // the flood first
    const end = Date.now() + seconds * 1000;
    for (let i = 0; Date.now() < end; i++) {
      const wacid = `wacid.lanes${i}.${randomBytes(3).toString('hex')}`;
      const from = agent.received.length;
      const t0 = performance.now();
      const offered = agent.next('call.offered', (m) => m.wacid === wacid, 20_000, from).then(() => performance.now());
      await post(url, secret, JSON.stringify({ id: `evt_c_${wacid}`, type: 'chat.call.connect', apiVersion: 'v2', createTime: iso(), callingConnect: fakeConnect(wacid) }));
      const at = await offered.catch(() => undefined);
      if (at === undefined) lost++;
      else latencies.push(at - t0);
      await post(url, secret, JSON.stringify({ id: `evt_t_${wacid}`, type: 'chat.call.terminate', apiVersion: 'v2', createTime: iso(), callingTerminate: { wacid, phoneId: 'phone-1', status: 'COMPLETED' } }));
      await agent.next('call.revoked', (m) => m.wacid === wacid, 20_000, from).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 50));
    }
    flooder.stdin.end();
    const f = await floodDone;
    const store = new RedisStore({ url: redis.url, prefix: 'sb:' });
    const otherLag = await store.streamLag(laneGroup('other')).catch(() => NaN);
    await store.close();
    process.stdout.write(
      `lanes: ${f.sent} message events in ${f.seconds.toFixed(1)} s (${(f.sent / f.seconds).toFixed(0)}/s, ${f.refused} not answered 200), ${latencies.length + lost} calls, other lane ${otherLag} behind at the end, load average ${loadavg()[0]!.toFixed(2)}\n`,
    );
    figure('lanes', `offer p50, ${rate} message events/s`, pct(latencies, 50), 'ms', { max: 3 });
    figure('lanes', `offer p99, ${rate} message events/s`, pct(latencies, 99), 'ms', { max: 20 });
    figure('lanes', `offer max, ${rate} message events/s`, Math.max(...latencies), 'ms');
    figure('lanes', 'calls lost', lost, 'calls', { max: 0 });
  } finally {
    for (const c of cleanups.reverse()) await c();
  }
}

const floodArg = process.argv.indexOf('--flood');
if (floodArg >= 0) {
  await flood(JSON.parse(process.argv[floodArg + 1]!) as FloodData);
  process.exit(0);
} else {
  await main();
  process.exit(0);
}
