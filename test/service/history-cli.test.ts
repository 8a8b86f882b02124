/**
 * `switchboard history calls` and `switchboard archive get`, spawned as real processes
 * (bin/switchboard.mjs) against a real running Switchboard (auth, history and archive
 * routes on 127.0.0.1; sessions in a private redis-server; history in PGlite; media
 * archived by the real archive handler from a local media server), and with `--database`
 * straight against a PGlite history directory.
 */
import { errorHandler } from '../../server/app.ts';
import { parseEvent } from '../../shared/events.ts';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Hono } from 'hono';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createArchive, type MediaEvent } from '../../server/archive/index.ts';
import { createArchiveRoutes } from '../../server/archive/routes.ts';
import { createAuth, demoUsers, Sessions, type AuthEnv } from '../../server/auth/index.ts';
import { openHistory, type History } from '../../server/history/index.ts';
import { factsOfMedia } from '../../server/history/recorder.ts';
import { createHistoryRoutes } from '../../server/history/routes.ts';
import type { HistoryFact } from '../../server/history/schema.ts';
import { createLogger, memoryDestination } from '../../server/log/logger.ts';
import { createServiceClient } from '../../server/service/index.ts';
import { RedisStore } from '../../server/store/redis.ts';
import { muxOggOpus } from '../emulator/calls/ogg.ts';
import { listen } from '../foundation/helpers.ts';
import { login } from '../e2e/harness.ts';
import { openTestHistory, type TestHistory } from '../support/history.ts';
import { startRedis, uniquePrefix, type TestRedis } from '../support/redis.ts';
import { runBin } from './cli-run.ts';
import { startServer, type TestServer } from './server.ts';

const OGG = muxOggOpus(Array.from({ length: 200 }, (_, i) => Buffer.alloc(80, i)));
const TRANSCRIPT = Buffer.from(JSON.stringify({ segments: [{ speaker: 'user', text: 'my parcel never arrived' }] }));
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const PASSWORD_MARK = 'supervisor'; // the demo password of user "supervisor"

let redis: TestRedis;
let store: RedisStore;
let h: TestHistory;
let media: TestServer;
let sb: { url: string; close(): Promise<void> };
let archiveDir: string;
let dataDir: string;
const tmp: string[] = [];

const call = (wacid: string, min: number, extra: Record<string, unknown> = {}): HistoryFact =>
  ({
    type: 'call',
    wacid,
    phoneId: 'ph1',
    businessNumber: '+15550100001',
    customer: { phoneNumber: '+15550123456' },
    direction: 'inbound',
    outcome: 'answered',
    receivedAt: new Date(Date.parse('2026-06-01T10:00:00.000Z') + min * 60_000).toISOString(),
    ...extra,
  }) as HistoryFact;

const CALLS = [call('c-one', 0, { agent: 'agent1', talkMs: 95_000 }), call('c-two', 5, { outcome: 'missed' }), call('c-three', 10, { agent: 'agent2', direction: 'outbound', outcome: 'no-answer', customer: { userId: 'US.abc123' } })];

beforeAll(async () => {
  redis = await startRedis();
  store = new RedisStore({ url: redis.url, prefix: uniquePrefix() });
  h = await openTestHistory();
  archiveDir = await mkdtemp(join(tmpdir(), 'sb-cli-archive-'));
  tmp.push(archiveDir);
  for (const f of CALLS) await h.store.record(f);

  // The archive handler downloads real files; what it reports becomes history (the wiring).
  media = await startServer((req, res) => {
    const body = req.path.endsWith('/cma_rec') ? OGG : TRANSCRIPT;
    res.writeHead(200, { 'content-length': String(body.length) });
    res.end(body);
  });
  const archive = createArchive({ dir: archiveDir, calls: createServiceClient({ baseUrl: media.baseUrl, apiKey: 'k' }).calls });
  const ev = (type: string, id: string): MediaEvent => {
    const e = parseEvent({ id: `e_${id}`, type, apiVersion: 'v2', createTime: new Date().toISOString(), callingMedia: { wacid: 'c-one', result: 'AVAILABLE', mediaAssetId: id } });
    if (!e.known || (e.type !== 'chat.call.recording.updated' && e.type !== 'chat.call.transcription.updated')) throw new Error(`not a media event: ${type}`);
    return e;
  };
  for (const r of [await archive.archive(ev('chat.call.recording.updated', 'cma_rec')), await archive.archive(ev('chat.call.transcription.updated', 'cma_tr'))]) {
    for (const f of factsOfMedia(r!, Date.now())) await h.store.record(f);
  }

  const log = createLogger({ level: 'warn', destination: memoryDestination() });
  const auth = createAuth({ users: await demoUsers(), sessions: new Sessions(store, 'history_cli_session_secret'), store, log, origin: { bindHost: '127.0.0.1' } });
  const app = new Hono<AuthEnv>();
  app.onError(errorHandler(log));
  app.route('/', auth.routes);
  app.route('/', createHistoryRoutes({ auth, history: h, log }));
  app.route('/', createArchiveRoutes({ auth, dir: archiveDir }));
  sb = await listen(app.fetch);

  // A history directory of its own for --database (PGlite is single-process: closed before the CLI opens it).
  dataDir = await mkdtemp(join(tmpdir(), 'sb-cli-data-'));
  tmp.push(dataDir);
  const offline: History = await openHistory({ dataDir, databaseUrl: undefined, redisUrl: undefined, historyRetentionDays: 365, archiveRetentionDays: 90 });
  for (const f of CALLS) await offline.store.record(f);
  const r = await archive.archive(ev('chat.call.recording.updated', 'cma_rec'));
  for (const f of factsOfMedia(r!, Date.now())) await offline.store.record(f);
  await offline.close();
}, 120_000);

afterAll(async () => {
  await sb?.close();
  await media?.close();
  await store?.close();
  await redis?.close();
  await h?.close();
  for (const d of tmp) await rm(d, { recursive: true, force: true });
});

const env = (user = 'supervisor', password = user) => ({ SWITCHBOARD_URL: sb.url, SWITCHBOARD_USER: user, SWITCHBOARD_PASSWORD: password });
const run = (args: string[], e: Record<string, string | undefined> = env()) => runBin(args, e);

// Each case spawns Node + tsx: seconds apiece on a busy 2-core machine.
describe('switchboard history / archive', { timeout: 120_000 }, () => {
  it('history calls: one line per call, newest first; --json is the API page; filters and the cursor', async () => {
    const human = await run(['history', 'calls']);
    expect(human.code, human.stderr).toBe(0);
    const lines = human.stdout.trim().split('\n');
    expect(lines.map((l) => l.split(/\s+/).at(-1))).toEqual(['c-three', 'c-two', 'c-one']);
    expect(lines[2]).toMatch(/^2026-06-01 10:00:00Z\s+inbound\s+answered\s+\+15550123456\s+agent1\s+1m35s\s+c-one$/);

    const json = await run(['history', 'calls', '--outcome', 'missed', '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ items: [{ wacid: 'c-two', outcome: 'missed' }] });

    const paged = await run(['history', 'calls', '--limit', '1', '--q', 'parcel', '--json']);
    expect(JSON.parse(paged.stdout).items.map((c: { wacid: string }) => c.wacid)).toEqual(['c-one']);
    const first = await run(['history', 'calls', '--limit', '2']);
    const cursor = /more: --cursor (\S+)/.exec(first.stdout)![1]!;
    const next = await run(['history', 'calls', '--limit', '2', '--cursor', cursor, '--json']);
    expect(JSON.parse(next.stdout).items.map((c: { wacid: string }) => c.wacid)).toEqual(['c-one']);
  });

  it('an agent sees only their own calls', async () => {
    const r = await run(['history', 'calls', '--json'], env('agent2'));
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).items.map((c: { wacid: string }) => c.wacid)).toEqual(['c-three']);
  });

  it('archive get saves the call’s recording and transcription, checked against the history’s SHA-256', async () => {
    const out = join(archiveDir, '..', `sb-cli-out-${process.pid}`);
    tmp.push(out);
    const r = await run(['archive', 'get', 'c-one', '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`sha256 ${sha(OGG)}`);
    expect((await readdir(out)).sort()).toEqual(['cma_rec.ogg', 'cma_tr.json']);
    expect((await readFile(join(out, 'cma_rec.ogg'))).equals(OGG)).toBe(true);
    expect((await readFile(join(out, 'cma_tr.json'))).equals(TRANSCRIPT)).toBe(true);
  });

  it('errors are CODE: message, exit 1; the password is never printed', async () => {
    const wrong = await run(['history', 'calls'], env('supervisor', 'hunter2-WRONG'));
    expect(wrong).toMatchObject({ code: 1, stdout: '' });
    expect(wrong.stderr).toMatch(/^UNAUTHORIZED: wrong name or password/);
    expect(wrong.stderr).not.toContain('hunter2');

    const bad = await run(['history', 'calls', '--customer', '0123']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^BAD_REQUEST: customer: must be an E\.164 phone number/);
    expect(bad.stdout + bad.stderr).not.toContain(`"${PASSWORD_MARK}"`);

    const none = await run(['archive', 'get', 'c-two', '--out', join(archiveDir, 'x')]);
    expect(none.stderr).toBe('NOT_FOUND: call c-two has no archived media\n');

    const unset = await run(['history', 'calls'], { SWITCHBOARD_USER: 'ops', SWITCHBOARD_PASSWORD: 'ops' });
    expect(unset).toMatchObject({ code: 1, stderr: 'CONFIG_ERROR: SWITCHBOARD_URL is not set\n' });
  });

  it('the archive download answers byte ranges (206, Accept-Ranges) so the page’s <audio> streams and seeks', async () => {
    const cookie = await login(sb.url, 'supervisor', 'supervisor');
    const url = `${sb.url}/api/archive/c-one/cma_rec.ogg`;
    const get = (range?: string) => fetch(url, { headers: { cookie, ...(range ? { range } : {}) } });
    const whole = await get();
    expect(whole.status).toBe(200);
    expect(whole.headers.get('accept-ranges')).toBe('bytes');
    expect(Buffer.from(await whole.arrayBuffer()).equals(OGG)).toBe(true);

    const part = await get('bytes=100-199');
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 100-199/${OGG.length}`);
    expect(part.headers.get('content-length')).toBe('100');
    expect(Buffer.from(await part.arrayBuffer()).equals(OGG.subarray(100, 200))).toBe(true);

    const open = await get('bytes=50-');
    expect(open.status).toBe(206);
    expect(Buffer.from(await open.arrayBuffer()).equals(OGG.subarray(50))).toBe(true);
    const tail = await get('bytes=-10');
    expect(tail.headers.get('content-range')).toBe(`bytes ${OGG.length - 10}-${OGG.length - 1}/${OGG.length}`);
    expect(Buffer.from(await tail.arrayBuffer()).equals(OGG.subarray(OGG.length - 10))).toBe(true);

    const past = await get(`bytes=${OGG.length}-`);
    expect(past.status).toBe(416);
    expect(past.headers.get('content-range')).toBe(`bytes */${OGG.length}`);
    // Not for other users' eyes either way.
    expect((await fetch(url, { headers: { range: 'bytes=0-9' } })).status).toBe(401);
  });

  it('--database reads the history database itself (PGlite under DATA_DIR), no server needed', async () => {
    const r = await run(['history', 'calls', '--database', '--json'], { DATA_DIR: dataDir });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).items.map((c: { wacid: string }) => c.wacid)).toEqual(['c-three', 'c-two', 'c-one']);
    const out = join(dataDir, 'out');
    const g = await run(['archive', 'get', 'c-one', '--out', out, '--database'], { DATA_DIR: dataDir });
    expect(g.code, g.stderr).toBe(0);
    expect((await readFile(join(out, 'cma_rec.ogg'))).equals(OGG)).toBe(true);
    const bad = await run(['history', 'calls', '--database', '--limit', '500'], { DATA_DIR: dataDir });
    expect(bad).toMatchObject({ code: 1, stderr: 'BAD_REQUEST: limit: must be an integer from 1 to 100\n' });
  });
});
