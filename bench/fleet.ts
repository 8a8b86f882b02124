/**
 * Fleet benchmark: N nodes (each its own process, the whole server through
 * `startSwitchboard`) on one Redis, A agents spread over them (WebSocket clients speaking
 * protocol v1, logged in through sessions minted in the shared store), and the Service
 * played by this process: the emulator's signaling-only callers (no media stack: thousands
 * of WebRTC users do not fit one machine; the signaling rules are the Service's), their
 * signed `chat.call.connect` webhooks sent by this process at R calls/s for S seconds,
 * round-robin over the nodes, as a load balancer in front of them would. The emulator
 * delivers its other events (terminate) to node 0.
 *
 * Calls are handled as on a contact centre's floor: the offered agent answers (`call.answer`,
 * preAccept + accept at the emulator), talks --talk-ms and hangs up (terminate, the
 * emulator's terminate event; WRAP_UP_MS=off frees the agent); a share --abandon of callers
 * hang up while ringing (each such call makes a callback task, pushed to its line's agents
 * and every supervisor as `callback.updated`). The default, `--abandon 1`, has every caller
 * hang up while it rings: answering 100 calls/s takes at least 200 requests/s to the call
 * endpoints (preAccept, accept), which is the Service's whole quota for them (part 8: 200
 * rps and 10,000 an hour, shared with the other management APIs); the emulator answers the
 * excess 429, and the retries, not the server, would be what is measured. It is also the
 * heaviest push load: every call makes a task.
 *
 * Prints, each beside its goal:
 *   offer latency p50 / p99   webhook POST sent → `call.offered` received by an agent
 *   lost                      calls never offered to any agent within 10 s
 *   RSS per idle agent        per node: (RSS with its agents connected − RSS before) / agents, after a GC
 *                             (and, printed beside it, the growth over the second half of them alone)
 *   CPU per call              all nodes' CPU time during the load / calls sent
 * and what became of the calls at the Service (answered, completed, abandoned, not ended).
 *
 *   npx tsx bench/fleet.ts [--nodes 3] [--agents 5000] [--rate 100] [--seconds 60] [--warmup 5] [--agent-procs 2]
 *     [--talk-ms T]      how long an answered call lasts (default: half the agents busy on average, at most 10 s)
 *     [--abandon 0.05]   share of callers hanging up while it rings (0 to 1)
 *     [--numbers K]      business numbers (lines), each with its own queue of agents/K agents
 *                        (QUEUES_FILE); calls spread evenly over them (default 50; 1: one queue of every agent)
 *     [--cpu-prof DIR]   node 0 writes a V8 CPU profile into DIR when it exits
 *     [--parallel-gc]    nodes with V8's parallel GC helper threads (default: --single-threaded-gc, as `npm start`)
 *   The agents live in --agent-procs child processes (bench/_fleet-agents.ts) that stamp each
 *   `call.offered` as it is read; the connect webhooks leave from a child process of their own
 *   (bench/_fleet-sender.ts) that stamps each as it sends it. Latency is printed split by
 *   whether the agent sat on the webhook's node, and each process's own event-loop delay.
 *     [--history postgres|pglite|off]   call history: one PostgreSQL database for all nodes
 *     (the default, as README's several-node setup; created for the run, dropped after),
 *     PGlite per node (a node without DATABASE_URL), or none (bench/history.ts compares on and off)
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Sessions, SESSION_COOKIE } from '../server/auth/session.ts';
import { hashPassword } from '../server/auth/users.ts';
import { RedisStore } from '../server/store/redis.ts';
import { signatureHeader, startEmulator } from '../test/emulator/index.ts';
import { createTestDatabase } from '../test/support/postgres.ts';
import { freePort, startRedis } from '../test/support/redis.ts';
import { figure } from './figures.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  const v = i > 0 ? Number(process.argv[i + 1]) : def;
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name}: a positive number, got ${process.argv[i + 1]}`);
  return v;
};
const NODES = arg('nodes', 3);
/** Child processes hosting the agents (bench/_fleet-agents.ts). */
const AGENT_PROCS = arg('agent-procs', 2);
const AGENTS = arg('agents', 5000);
/** Business numbers (lines), each answered by its own queue of agents. */
/**
 * A 5,000-agent floor is lines of 100 agents (QUEUES_FILE), not one queue: each missed
 * call's task goes to its line's agents. `--numbers 1` puts every agent in one queue, where
 * every task goes to all of them (100 tasks/s × 5,000 sockets = 500,000 frames a second).
 */
const DEFAULT_NUMBERS = 50;
const NUMBERS = arg('numbers', DEFAULT_NUMBERS);
const RATE = arg('rate', 100);
const SECONDS = arg('seconds', 60);
/** Seconds of the same load before the measured one (JIT, pools, first routing): not counted. */
const WARMUP = process.argv.includes('--warmup') ? Number(process.argv[process.argv.indexOf('--warmup') + 1]) : 5;
const LOST_AFTER_MS = 10_000;
const HISTORY = process.argv.includes('--history') ? process.argv[process.argv.indexOf('--history') + 1] : 'postgres';
if (HISTORY !== 'pglite' && HISTORY !== 'postgres' && HISTORY !== 'off') throw new Error(`--history: pglite, postgres or off, got ${HISTORY}`);
/** Share of callers hanging up while it rings (0 to 1). */
const ABANDON = process.argv.includes('--abandon') ? Number(process.argv[process.argv.indexOf('--abandon') + 1]) : 1;
if (!(ABANDON >= 0 && ABANDON <= 1)) throw new Error(`--abandon: a share from 0 to 1, got ${process.argv[process.argv.indexOf('--abandon') + 1]}`);
/** How long an answered call lasts: by default half the agents are on a call on average, at most 10 s. */
const TALK_MS = process.argv.includes('--talk-ms') ? arg('talk-ms', 1) : Math.min(10_000, Math.round((0.5 * AGENTS * 1000) / RATE));
/** Callers whose number starts with this hang up while it rings; the agents do not answer them. */
const ABANDON_PREFIX = '+1556';
/** Figures named with the history mode unless it is the default, and the call mix unless it is. */
const label = (name: string) => {
  const tags = [...(HISTORY === 'postgres' ? [] : [`history ${HISTORY}`]), ...(ABANDON === 1 ? [] : [`${Math.round(ABANDON * 100)} % abandoned`]), ...(NUMBERS === DEFAULT_NUMBERS ? [] : [`${NUMBERS} queue${NUMBERS > 1 ? 's' : ''}`])];
  return tags.length ? `${name} (${tags.join(', ')})` : name;
};

/**
 * The nodes run as `npm start` runs the server: `--single-threaded-gc` (V8's garbage
 * collection on the event-loop thread only; see README "Performance"). `--parallel-gc`
 * runs them with V8's default helper threads instead, to compare.
 */
const GC_FLAGS = process.argv.includes('--parallel-gc') ? [] : ['--single-threaded-gc'];

/** --cpu-prof DIR: node 0 writes a V8 CPU profile there when it exits (hot spots of one node under the load). */
const CPU_PROF = process.argv.includes('--cpu-prof') ? process.argv[process.argv.indexOf('--cpu-prof') + 1] : undefined;

/** Log lines of the nodes (warn and up), by message. */
const nodeLogs = new Map<string, number>();
/** Epoch ms with sub-millisecond precision, comparable with the agent processes' timestamps. */
const clock = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Node {
  url: string;
  proc: ChildProcess;
  agents: number;
  stats(): Promise<{ rss: number; cpuUs: number; lagMs: { p99: number; max: number } }>;
}

async function startNode(env: Record<string, string>, prof = false): Promise<Node> {
  const script = fileURLToPath(new URL('./_fleet-node.ts', import.meta.url));
  const proc = spawn(process.execPath, ['--expose-gc', ...GC_FLAGS, ...(prof && CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF] : []), '--import', 'tsx', script, ...(HISTORY === 'off' ? ['--no-history'] : [])], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: proc.stdout! });
  const waiting: Array<(l: string) => void> = [];
  // The node's stdout carries its log lines (warn and up) too: counted by message, printed at the end.
  lines.on('line', (l) => {
    if (l.startsWith('{"url"') || l.startsWith('{"rss"')) return waiting.shift()?.(l);
    const msg = /"msg":"([^"]*)"/.exec(l)?.[1] ?? l.slice(0, 80);
    nodeLogs.set(msg, (nodeLogs.get(msg) ?? 0) + 1);
  });
  const nextLine = () => new Promise<string>((r) => waiting.push(r));
  const first = JSON.parse(await nextLine()) as { url: string };
  return {
    url: first.url,
    proc,
    agents: 0,
    async stats() {
      const p = nextLine();
      proc.stdin!.write('stats\n');
      return JSON.parse(await p) as { rss: number; cpuUs: number; lagMs: { p99: number; max: number } };
    },
  };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function main(): Promise<void> {
  const redis = await startRedis({ args: ['--appendonly', 'yes', '--appendfsync', 'everysec'] });
  const secret = `whsec_${randomBytes(16).toString('hex')}`;
  const sessionSecret = randomBytes(24).toString('base64url');
  // The Service: its events other than the connects this process sends (terminates) go to
  // node 0, many at once (one at a time would queue behind a busy node).
  // Lines 1..K; agent i is in the queue of line i % K.
  const lines = Array.from({ length: NUMBERS }, (_, k) => ({ id: String(100000000000001 + k), phoneNumber: `+1555010${String(k + 1).padStart(4, '0')}`, wabaId: '200000000000001' }));
  const emu = await startEmulator({ webhookSecret: secret, deliveryConcurrency: 64, prewarm: false, businessNumbers: lines });
  const dir = mkdtempSync(join(tmpdir(), 'sb-fleet-'));
  const names = Array.from({ length: AGENTS }, (_, i) => `fa${i}`);
  const hash = await hashPassword(randomBytes(12).toString('hex')); // never checked: sessions are minted
  writeFileSync(join(dir, 'users.json'), JSON.stringify({ users: names.map((name) => ({ name, roles: ['agent'], passwordHash: hash })) }));
  writeFileSync(join(dir, 'queues.json'), JSON.stringify(Object.fromEntries(lines.map((l, k) => [l.id, names.filter((_, i) => i % NUMBERS === k)]))));

  const pg = HISTORY === 'postgres' ? await createTestDatabase('sb_bench') : undefined;
  const nodes: Node[] = [];
  for (let i = 0; i < NODES; i++) {
    const port = await freePort();
    nodes.push(
      await startNode({
        PORT: String(port),
        PUBLIC_URL: `http://127.0.0.1:${port}`,
        SERVICE_BASE_URL: emu.baseUrl,
        SERVICE_API_KEY: emu.apiKey,
        SERVICE_WEBHOOK_SECRETS: secret,
        SESSION_SECRET: sessionSecret,
        USERS_FILE: join(dir, 'users.json'),
        ...(NUMBERS > 1 ? { QUEUES_FILE: join(dir, 'queues.json') } : {}),
        REDIS_URL: redis.url,
        WRAP_UP_MS: 'off',
        LOG_LEVEL: 'warn',
        DATA_DIR: join(dir, `node${i}`),
        ...(pg ? { DATABASE_URL: pg.url } : {}),
      }, i === 0),
    );
  }
  emu.webhooks.addEndpoint({ url: `${nodes[0]!.url}/webhooks/service` });
  const before = await Promise.all(nodes.map((n) => n.stats()));

  // Sessions minted in the shared store (a login runs scrypt and is rate-limited per address: not what is measured here).
  const store = new RedisStore({ url: redis.url });
  const sessions = new Sessions(store, sessionSecret);
  const offeredAt = new Map<string, number>();
  /** Calls whose caller hangs up as soon as an agent is offered it (the rest are answered by the agent). */
  const abandoning = new Set<string>();
  const sentAt = new Map<string, number>();
  /** The measured calls (the others are the warm-up's). */
  const measured = new Set<string>();
  const sentOn = new Map<string, number>();
  let onWarmOffer: (wacid: string) => void = () => undefined;
  /** Which node's agent got each call (the webhook went to node i % NODES): the latency split per pair. */
  const offeredOn = new Map<string, number>();
  const onOffer = (wacid: string, at: number, node: number) => {
    if (!measured.has(wacid)) return onWarmOffer(wacid);
    if (offeredAt.has(wacid)) return;
    offeredAt.set(wacid, at);
    offeredOn.set(wacid, node);
    if (abandoning.delete(wacid)) emu.calls.hangup(wacid);
  };
  // The agents live in AGENT_PROCS child processes (bench/_fleet-agents.ts): reading every
  // agent's frames here would put this process's lag into the figures as the server's.
  const agentsScript = fileURLToPath(new URL('./_fleet-agents.ts', import.meta.url));
  const children = Array.from({ length: AGENT_PROCS }, () => fork(agentsScript, [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }));
  const reports: Array<{ lagP99Ms: number; lagMaxMs: number; cpuMs: number; closed: Record<string, number>; answered: number; hungUp: number; errors: Record<string, number> }> = [];
  const jobs: Array<Array<{ url: string; cookie: string; node: number }>> = children.map(() => []);
  const t0 = Date.now();
  for (let i = 0; i < names.length; i++) {
    const node = i % nodes.length;
    jobs[i % children.length]!.push({ url: nodes[node]!.url, cookie: `${SESSION_COOKIE}=${await sessions.create(names[i]!)}`, node });
    nodes[node]!.agents++;
  }
  const waiting = new Map<ChildProcess, { resolve: () => void; reject: (e: Error) => void }>();
  children.forEach((child) => {
    child.on('message', (m: { ready?: true; offer?: string; at?: number; node?: number; report?: (typeof reports)[number] }) => {
      if (m.ready) waiting.get(child)?.resolve();
      else if (m.offer !== undefined) onOffer(m.offer, m.at!, m.node!);
      else if (m.report) reports.push(m.report);
    });
    child.once('exit', (code) => waiting.get(child)?.reject(new Error(`agents process exited (${code})`)));
  });
  /** Each child connects its share of `part` and makes them available. */
  const connect = (part: (j: typeof jobs[number]) => typeof jobs[number]) =>
    Promise.all(
      children.map(
        (child, k) =>
          new Promise<void>((resolve, reject) => {
            waiting.set(child, { resolve, reject });
            child.send({ agents: part(jobs[k]!), talkMs: TALK_MS, abandonPrefix: ABANDON_PREFIX });
          }),
      ),
    );
  // Agents connect in two halves: RSS is read after each (see the RSS figures below).
  const half = (j: typeof jobs[number]) => j.slice(0, Math.floor(j.length / 2));
  await connect(half);
  await sleep(2000);
  const mid = await Promise.all(nodes.map((n) => n.stats()));
  const secondHalf = nodes.map(() => 0);
  for (const j of jobs) for (const a of j.slice(Math.floor(j.length / 2))) secondHalf[a.node]!++;
  await connect((j) => j.slice(Math.floor(j.length / 2)));
  process.stdout.write(`${AGENTS} agents connected and available over ${NODES} nodes in ${((Date.now() - t0) / 1000).toFixed(1)} s (${AGENT_PROCS} agent processes)\n`);
  await sleep(2000);
  const idle = await Promise.all(nodes.map((n) => n.stats()));

  // The connect webhooks leave from a process of their own, stamped as they go.
  const sender = fork(fileURLToPath(new URL('./_fleet-sender.ts', import.meta.url)), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const replies = new Map<number, (r: { at: number; status: number }) => void>();
  let senderReport: { lagP99Ms: number; lagMaxMs: number } | undefined;
  sender.on('message', (m: { sent?: number; at?: number; status?: number; report?: { lagP99Ms: number; lagMaxMs: number } }) => {
    if (m.report) senderReport = m.report;
    else if (m.sent !== undefined) replies.get(m.sent)?.({ at: m.at!, status: m.status! }), replies.delete(m.sent);
  });
  let sends = 0;
  /** A signed connect webhook, POSTed by the sender: when it left (epoch ms) and the status (0: no answer). */
  function postConnect(url: string, payload: Record<string, unknown>): Promise<{ at: number; status: number }> {
    const body = JSON.stringify({ id: `evt_${randomBytes(8).toString('hex')}`, type: 'chat.call.connect', apiVersion: 'v2', createTime: new Date().toISOString(), callingConnect: payload });
    const i = sends++;
    return new Promise((resolve) => {
      replies.set(i, resolve);
      sender.send({ i, url: `${url}/webhooks/service`, body, signature: signatureHeader(secret, body, Math.floor(Date.now() / 1000)) });
    });
  }

  const total = Math.round(RATE * SECONDS);
  let non2xx = 0;
  /**
   * A call at the Service: a signaling-only caller, abandoning (hangs up once offered) at
   * the share ABANDON spread evenly over the run; the connect event is ours to deliver.
   */
  let placed = 0;
  const call = async (i: number) => {
    const abandons = Math.floor((placed + 1) * ABANDON) > Math.floor(placed * ABANDON);
    placed++;
    const from = `${abandons ? ABANDON_PREFIX : '+1555'}${String(i % 10_000_000).padStart(7, '0')}`;
    const c = await emu.calls.start({ signalingOnly: true, deliverConnect: false, from, phoneId: lines[i % NUMBERS]!.id });
    if (abandons) abandoning.add(c.wacid);
    return c;
  };
  const wacids: string[] = [];
  // Warm-up: the same load, its calls handled like the others, not counted.
  onWarmOffer = (wacid) => {
    if (abandoning.delete(wacid)) emu.calls.hangup(wacid);
  };
  const warmStart = performance.now();
  for (let i = 0; i < Math.round(RATE * WARMUP); i++) {
    const wait = warmStart + (i * 1000) / RATE - performance.now();
    if (wait > 1) await sleep(wait);
    const c = await call(9_000_000 + i);
    wacids.push(c.wacid);
    void postConnect(nodes[i % nodes.length]!.url, c.connect);
  }
  await sleep(1000);
  const benchCpu0 = process.cpuUsage();
  // This process plays the Service (the agents' processes take their own timestamps): when
  // its event loop lags, webhooks leave late (printed, so it is not mistaken for the nodes').
  const loopLag = monitorEventLoopDelay({ resolution: 10 });
  loopLag.enable();
  for (const c of children) c.send('start');
  const start = performance.now();
  const startClock = clock();
  const posts: Array<Promise<void>> = [];
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    const c = await call(i);
    wacids.push(c.wacid);
    measured.add(c.wacid);
    sentOn.set(c.wacid, i % nodes.length);
    posts.push(
      postConnect(nodes[i % nodes.length]!.url, c.connect).then(({ at, status }) => {
        sentAt.set(c.wacid, at);
        if (status < 200 || status >= 300) non2xx++;
      }),
    );
  }
  await Promise.all(posts);
  const sendSeconds = (performance.now() - start) / 1000;
  const until = Date.now() + LOST_AFTER_MS;
  while (offeredAt.size < total && Date.now() < until) await sleep(100);
  const after = await Promise.all(nodes.map((n) => n.stats()));
  // What became of every call (warm-up included) at the Service, once the last ones had time to end.
  const endBy = Date.now() + TALK_MS + 10_000;
  while (wacids.some((w) => emu.calls.get(w)?.state !== 'ended') && Date.now() < endBy) await sleep(200);
  const fate = new Map<string, number>();
  for (const w of wacids) {
    const v = emu.calls.get(w);
    const k = v?.state !== 'ended' ? `not ended (${v?.state})` : `${v.terminate!.status} ${v.terminate!.reason}`;
    fate.set(k, (fate.get(k) ?? 0) + 1);
  }
  loopLag.disable();
  for (const c of children) c.send('report');
  sender.send('report');
  while (reports.length < children.length || !senderReport) await sleep(20);
  const benchCpu = process.cpuUsage(benchCpu0);

  const lat = [...offeredAt].map(([w, t]) => t - sentAt.get(w)!).sort((a, b) => a - b);
  // The tail over time: a p99 that grows with the run points at work that grows with the
  // calls stored (sweeps), a flat one at steady costs (GC, scheduling).
  const slices = new Map<number, number[]>();
  for (const [w, t] of offeredAt) {
    const k = Math.floor((sentAt.get(w)! - startClock) / 10_000);
    (slices.get(k) ?? slices.set(k, []).get(k)!).push(t - sentAt.get(w)!);
  }
  process.stdout.write(
    `offer latency per 10 s of the load (p50 / p99 / max ms): ${[...slices.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([, xs]) => {
        xs.sort((a, b) => a - b);
        return `${percentile(xs, 50).toFixed(1)}/${percentile(xs, 99).toFixed(1)}/${xs[xs.length - 1]!.toFixed(0)}`;
      })
      .join('  ')}\n`,
  );
  // Same node (webhook and agent on one node) against across nodes (routing hint + pub/sub push).
  const split = { same: [] as number[], across: [] as number[] };
  for (const [w, t] of offeredAt) split[offeredOn.get(w) === sentOn.get(w) ? 'same' : 'across'].push(t - sentAt.get(w)!);
  for (const [k, xs] of Object.entries(split)) {
    xs.sort((a, b) => a - b);
    process.stdout.write(`offer latency, ${k === 'same' ? 'agent on the webhook\'s node' : 'agent on another node'}: ${xs.length} calls, p50 ${percentile(xs, 50).toFixed(1)} / p99 ${percentile(xs, 99).toFixed(1)} ms\n`);
  }
  const lost = total - offeredAt.size;
  const cpuMs = after.reduce((s, a, i) => s + (a.cpuUs - idle[i]!.cpuUs), 0) / 1000;
  process.stdout.write(
    `this process (the Service's REST and deliveries): ${(((benchCpu.user + benchCpu.system) / 1000 / ((performance.now() - start) || 1)) * 100).toFixed(0)} % of a core, event-loop delay p99 ${(loopLag.percentile(99) / 1e6).toFixed(1)} ms, max ${(loopLag.max / 1e6).toFixed(1)} ms; the webhook sender: event-loop delay p99 ${senderReport!.lagP99Ms.toFixed(1)} ms, max ${senderReport!.lagMaxMs.toFixed(1)} ms\n`,
  );
  const loadMs = performance.now() - start;
  reports.forEach((r, k) =>
    process.stdout.write(`agents process ${k}: ${((r.cpuMs / loadMs) * 100).toFixed(0)} % of a core, event-loop delay p99 ${r.lagP99Ms.toFixed(1)} ms, max ${r.lagMaxMs.toFixed(1)} ms, sockets closed by the server ${JSON.stringify(r.closed)}\n`),
  );
  process.stdout.write(`${total} calls sent in ${sendSeconds.toFixed(1)} s (${(total / sendSeconds).toFixed(1)}/s), ${non2xx} webhooks not answered 2xx\n`);
  const sum = (f: (r: (typeof reports)[number]) => number) => reports.reduce((s, r) => s + f(r), 0);
  const refused = new Map<string, number>();
  for (const r of reports) for (const [k, n] of Object.entries(r.errors)) refused.set(k, (refused.get(k) ?? 0) + n);
  process.stdout.write(
    `calls at the Service (${wacids.length} with the warm-up; talk ${TALK_MS} ms, ${Math.round(ABANDON * 100)} % abandoning): ${[...fate].map(([k, n]) => `${n} ${k}`).join(', ')}; agents answered ${sum((r) => r.answered)} and hung up ${sum((r) => r.hungUp)}, refused ${JSON.stringify(Object.fromEntries(refused))}\n`,
  );
  nodes.forEach((n, i) => {
    process.stdout.write(
      `node ${i}: ${n.agents} agents, RSS ${(before[i]!.rss / 1048576).toFixed(0)} MB before → ${(mid[i]!.rss / 1048576).toFixed(0)} MB with half of them → ${(idle[i]!.rss / 1048576).toFixed(0)} MB idle with all → ${(after[i]!.rss / 1048576).toFixed(0)} MB after the load; event-loop delay during the load p99 ${after[i]!.lagMs.p99.toFixed(1)} ms, max ${after[i]!.lagMs.max.toFixed(1)} ms\n`,
    );
  });
  // The figure counts everything the node grew by since before its first agent (an upper
  // bound: its first seconds of work are in it); the growth over the second half alone (what
  // one socket more costs, a lower bound: pages the first half made the heap commit are
  // reused) is printed beside it.
  const perAgentKb = nodes.map((n, i) => (idle[i]!.rss - before[i]!.rss) / 1024 / Math.max(1, n.agents));
  const marginalKb = nodes.map((_, i) => (idle[i]!.rss - mid[i]!.rss) / 1024 / Math.max(1, secondHalf[i]!));
  process.stdout.write(`RSS per idle agent, all agents since before the first / the second half only: ${nodes.map((_, i) => `node ${i} ${perAgentKb[i]!.toFixed(1)} / ${marginalKb[i]!.toFixed(1)} KB`).join(', ')}\n`);
  if (nodeLogs.size > 0) process.stdout.write(`nodes logged: ${[...nodeLogs].map(([m, n]) => `${n}× ${m}`).join('; ')}\n`);
  figure('fleet', label('offer latency p50'), percentile(lat, 50), 'ms');
  figure('fleet', label('offer latency p99'), percentile(lat, 99), 'ms', { max: 20 });
  figure('fleet', 'calls lost', lost, 'calls', { max: 0 });
  perAgentKb.forEach((kb, i) => figure('fleet', `RSS per idle agent, node ${i}`, kb, 'KB', { max: 40 }));
  figure('fleet', 'CPU per call (all nodes)', cpuMs / total, 'ms');
  process.stdout.write(`(${NODES} nodes, ${AGENTS} agents in ${NUMBERS} queue${NUMBERS > 1 ? 's' : ''}, ${RATE} calls/s for ${SECONDS} s; machine: 2 CPUs shared, load average ${loadavg().map((x) => x.toFixed(2)).join(' ')})\n`);

  for (const c of children) c.send('close');
  sender.send('close');
  for (const n of nodes) n.proc.stdin!.end();
  await Promise.all(nodes.map((n) => new Promise((r) => (n.proc.exitCode !== null ? r(null) : n.proc.once('exit', r)))));
  await store.close();
  await emu.close();
  await redis.close();
  await pg?.drop();
  rmSync(dir, { recursive: true, force: true });
}

await main();
