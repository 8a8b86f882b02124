/**
 * The audit trail end to end, on embedded PGlite and on PostgreSQL: every
 * audited action done once through the real bridge (HTTP, WebSocket, a real call answered
 * by a program agent with recording and transcription on) makes exactly one row, with who
 * did it to whom; no row holds a password, a secret or a session id; the search and the
 * CSV are for ops and admins only and refuse bad input naming the field.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts';
import { agentClient, emulatorRequest, login, PASSWORD, sleep, until, type Bridge } from './harness.ts';
import { programSuite } from './suite.ts';
import type { AuditEntry } from '../../server/audit/index.ts';
import { runBin } from '../service/cli-run.ts';
import pgClient from 'pg';

let dir: string | undefined;
let pg: TestDatabase | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  await pg?.drop();
  dir = undefined;
  pg = undefined;
});
const suite = programSuite();

const WRONG = 'Not-The-Password-7731';

async function auditRows(b: Bridge, cookie: string, query = ''): Promise<AuditEntry[]> {
  await b.sb.audit.trail.flush();
  const r = await fetch(`${b.url}/api/audit?limit=500${query}`, { headers: { cookie } });
  expect(r.status).toBe(200);
  return ((await r.json()) as { items: AuditEntry[] }).items;
}

const post = (b: Bridge, path: string, cookie: string, body?: unknown) =>
  fetch(`${b.url}${path}`, { method: 'POST', headers: { cookie, origin: b.url, 'content-type': 'application/json' }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });

describe.each([
  ['PGlite', false],
  ['PostgreSQL', true],
])('audit trail on %s', (_engine, postgres) => {
  it('each audited action makes exactly one row; none holds a password, secret or session id', async () => {
    dir = await mkdtemp(join(tmpdir(), 'sb-audit-'));
    if (postgres) pg = await createTestDatabase('sb_audit');
    const b = await suite.startBridge({
      agents: ['agent1', 'agent2'],
      supervisors: ['boss'],
      admins: ['root'],
      history: true,
      env: { ARCHIVE_DIR: dir, ...(pg ? { DATABASE_URL: pg.url } : {}) },
      emulator: { announcementMs: 0 },
    });
    const number = [...b.emu.ctx.phoneNumbers.values()][0]!;
    await emulatorRequest(b.emu, 'POST', `${b.emu.baseUrl}/chat/phoneNumbers/${number.wabaId}/${encodeURIComponent(number.phoneNumber)}/settings`, {
      capture: { recordingEnabled: true, transcriptionEnabled: true, purpose: 'quality assurance', announcementLanguage: 'en' },
    });
    const cookies: string[] = [];
    const track = (c: string) => (cookies.push(c), c);

    // Logins: agent1, boss (their protocol clients), ops, root, agent2; one failure.
    const a1 = suite.track(await agentClient(b.url, 'agent1'));
    const boss = suite.track(await agentClient(b.url, 'boss', { available: false }));
    const ops = track(await login(b.url, 'ops'));
    const root = track(await login(b.url, 'root'));
    track(await login(b.url, 'agent2'));
    const failed = await fetch(`${b.url}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json', origin: b.url }, body: JSON.stringify({ name: 'agent1', password: WRONG }) });
    expect(failed.status).toBe(401);

    // A real call, monitored: start (listen), mode (whisper), stop.
    const wacid = (await emulatorRequest(b.emu, 'POST', '/calls', { audio: 'tone' })).wacid as string;
    const offer = await a1.next('call.offered', (m) => m.wacid === wacid);
    const host = await suite.peerHost();
    expect(await a1.request({ type: 'call.answer', wacid, sdp: await host.answer(wacid, offer.sdp) })).toMatchObject({ type: 'ack' });
    await host.unmute(wacid);
    await host.connectedAt(wacid);
    const started = await boss.request({ type: 'monitor.start', wacid, mode: 'listen' });
    if (started.type !== 'ack' || typeof started.monitorId !== 'string') throw new Error(`monitor.start refused: ${JSON.stringify(started)}`);
    const monitorId = started.monitorId;
    expect(await boss.request({ type: 'monitor.mode', monitorId, mode: 'whisper' })).toMatchObject({ type: 'ack' });
    expect(await boss.request({ type: 'monitor.signal', monitorId, kind: 'end' })).toMatchObject({ type: 'ack' });
    await sleep(1000);
    await emulatorRequest(b.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/hangup`);
    const recording = await a1.next('media.available', (m) => m.wacid === wacid && m.kind === 'recording', 20_000);
    const transcription = await a1.next('media.available', (m) => m.wacid === wacid && m.kind === 'transcription', 20_000);

    // A play is one row however many range requests the player makes; a download one each.
    for (const range of ['bytes=0-', 'bytes=100-', 'bytes=0-']) {
      expect((await fetch(`${b.url}${recording.url}?use=play`, { headers: { cookie: ops, range } })).status).toBe(206);
    }
    expect((await fetch(`${b.url}${recording.url}`, { headers: { cookie: ops } })).status).toBe(200);
    expect((await fetch(`${b.url}${transcription.url}?use=view`, { headers: { cookie: ops } })).status).toBe(200);
    expect((await fetch(`${b.url}${transcription.url}?use=view`, { headers: { cookie: ops } })).status).toBe(200);
    expect((await fetch(`${b.url}${transcription.url}`, { headers: { cookie: ops } })).status).toBe(200);

    // A report export, a dead-letter replay, an admin ending agent2's sessions, a logout.
    const bossCookie = track(await login(b.url, 'boss'));
    const today = new Date().toISOString().slice(0, 10);
    expect((await fetch(`${b.url}/api/reports.csv?by=agent`, { headers: { cookie: bossCookie } })).status).toBe(200);
    expect((await post(b, '/api/ops/dead-letters/replay', ops, { all: true })).status).toBe(200);
    expect(await (await post(b, '/api/users/agent2/sessions/end-all', root)).json()).toEqual({ ended: 1 });
    expect((await post(b, '/api/logout', root)).status).toBe(204);

    const rows = await auditRows(b, ops);
    const count = (action: string, actor: string) => rows.filter((r) => r.action === action && r.actor === actor).length;
    const table: Array<[string, string, number]> = [
      ['login.success', 'agent1', 1],
      ['login.success', 'boss', 2],
      ['login.success', 'ops', 1],
      ['login.success', 'root', 1],
      ['login.success', 'agent2', 1],
      ['login.failure', 'agent1', 1],
      ['monitor.start', 'boss', 1],
      ['monitor.mode', 'boss', 1],
      ['monitor.stop', 'boss', 1],
      ['recording.play', 'ops', 1],
      ['recording.download', 'ops', 1],
      ['transcript.view', 'ops', 1],
      ['transcript.download', 'ops', 1],
      ['report.export', 'boss', 1],
      ['dead-letters.replay', 'ops', 1],
      ['sessions.revoked', 'root', 1],
      ['logout', 'root', 1],
    ];
    expect(table.map(([action, actor]) => [action, actor, count(action, actor)])).toEqual(table);
    expect(rows).toHaveLength(table.reduce((n, [, , k]) => n + k, 0));

    // Who did what to whom.
    const one = (action: string) => rows.find((r) => r.action === action)!;
    expect(one('monitor.start')).toMatchObject({ actor: 'boss', subject: 'agent1', target: wacid, detail: { mode: 'listen' } });
    expect(one('monitor.mode')).toMatchObject({ subject: 'agent1', target: wacid, detail: { mode: 'whisper', from: 'listen' } });
    expect(one('monitor.stop')).toMatchObject({ subject: 'agent1', target: wacid, detail: { reason: 'stopped' } });
    expect(one('recording.play')).toMatchObject({ target: wacid, address: '127.0.0.1' });
    expect(one('sessions.revoked')).toMatchObject({ actor: 'root', subject: 'agent2', detail: { count: 1, scope: 'all' } });
    expect(one('login.failure')).toMatchObject({ actor: 'agent1', detail: { reason: 'wrong name or password' } });
    expect(one('report.export')).toMatchObject({ target: `${today}..${today}`, detail: { by: 'agent' } });

    // Nothing secret in any row: passwords, the session, API and webhook secrets, session ids.
    const text = JSON.stringify(rows);
    const sids = [...cookies, bossCookie].map((c) => c.split('=')[1]!.split('.')[0]!);
    for (const secret of [PASSWORD, WRONG, b.secret, b.emu.apiKey, ...sids]) {
      expect(secret.length).toBeGreaterThan(8);
      expect(text).not.toContain(secret);
    }
  }, 120_000);
});

describe('audit writes never hold up the action', () => {
  it('PostgreSQL with the audit table locked: logins answer at once, the rows wait and are written once it is free', async () => {
    pg = await createTestDatabase('sb_audit_lock');
    const b = await suite.startBridge({ agents: ['agent1'], history: true, env: { DATABASE_URL: pg.url } });
    await until('history open', async () => (await b.sb.history!.health()).ok);
    const locker = new pgClient.Client({ connectionString: pg.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE audit_log IN ACCESS EXCLUSIVE MODE');
      const times: number[] = [];
      for (let i = 0; i < 3; i++) {
        const t = performance.now();
        await login(b.url, 'agent1');
        times.push(performance.now() - t);
      }
      // A login is a scrypt check and a few store commands; a wait for the database would be seconds.
      expect(Math.max(...times)).toBeLessThan(1000);
      await sleep(500);
      expect(b.sb.audit.trail.written).toBe(0);
      await locker.query('ROLLBACK');
    } finally {
      await locker.end();
    }
    const ops = await login(b.url, 'ops');
    await until('the rows written', async () => (await auditRows(b, ops, '&action=login.success&user=agent1')).length === 3, 20_000, 200);
  }, 60_000);
});

describe('audit search', () => {
  it('is for ops and admins; bad input answers 400 naming the field; the CSV holds the rows', async () => {
    const b = await suite.startBridge({ agents: ['agent1'], admins: ['root'], history: true });
    const agent = await login(b.url, 'agent1');
    const root = await login(b.url, 'root');
    expect((await fetch(`${b.url}/api/audit`, { headers: { cookie: agent } })).status).toBe(403);
    expect((await fetch(`${b.url}/api/audit`)).status).toBe(401);
    for (const [q, field] of [
      ['action=nope', 'action'],
      ['from=yesterday', 'from'],
      ['limit=9999', 'limit'],
      ['cursor=x', 'cursor'],
      ['who=me', 'who'],
    ]) {
      const r = await fetch(`${b.url}/api/audit?${q}`, { headers: { cookie: root } });
      expect(r.status).toBe(400);
      expect(((await r.json()) as { error: { message: string } }).error.message).toMatch(new RegExp(`^${field}: `));
    }
    await until('both logins in the trail', async () => (await auditRows(b, root, '&action=login.success')).length === 2);
    const csv = await fetch(`${b.url}/api/audit.csv?action=login.success`, { headers: { cookie: root } });
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const lines = (await csv.text()).trim().split('\r\n');
    expect(lines[0]).toBe('at,actor,action,subject,target,address,detail');
    expect(lines.slice(1).map((l) => l.split(',')[1]).sort()).toEqual(['agent1', 'root']);
    const page = await fetch(`${b.url}/api/audit?action=login.success&limit=1`, { headers: { cookie: root } });
    const first = (await page.json()) as { items: AuditEntry[]; cursor: string };
    expect(first.items.map((e) => e.actor)).toEqual(['root']);
    const next = (await (await fetch(`${b.url}/api/audit?action=login.success&limit=1&cursor=${first.cursor}`, { headers: { cookie: root } })).json()) as { items: AuditEntry[]; cursor?: string };
    expect(next.items.map((e) => e.actor)).toEqual(['agent1']);

    // `switchboard audit` over the running server (logged in as root; the login is itself a row).
    const env = { SWITCHBOARD_URL: b.url, SWITCHBOARD_USER: 'root', SWITCHBOARD_PASSWORD: PASSWORD };
    const json = await runBin(['audit', '--action', 'login.failure', '--json'], env);
    expect(json).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(json.stdout)).toEqual({ items: [] });
    const human = await runBin(['audit', '--user', 'agent1'], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^\d{4}-\d{2}-\d{2} [\d:]+Z  agent1 +login\.success +- +- +127\.0\.0\.1\s*$/);
    const csvOut = await runBin(['audit', '--action', 'login.success', '--user', 'agent1', '--csv'], env);
    expect(csvOut.stdout.split('\r\n')[0]).toBe('at,actor,action,subject,target,address,detail');
    const bad = await runBin(['audit', '--action', 'nope'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^BAD_REQUEST: action: must be one of/);
    expect(bad.stdout + bad.stderr + human.stdout + json.stdout).not.toContain(PASSWORD);
  }, 60_000);
});
