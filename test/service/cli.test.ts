/**
 * The `switchboard` CLI, spawned as a real process (bin/switchboard.mjs) against a real
 * local HTTP server, reading SERVICE_BASE_URL and SERVICE_API_KEY from its environment.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runBin } from './cli-run.ts';
import { json, serviceError, startServer, type TestServer } from './server.ts';

const KEY = 'sk_cli_SECRET_777';
let srv: TestServer;

const MEDIA = Buffer.alloc(300_000, 3);

beforeAll(async () => {
  srv = await startServer((req, res) => {
    const p = req.path;
    if (p === '/balance') return json(res, 200, { amount: 42.5, currency: 'EUR' });
    if (p === '/chat/messages' || p === '/chat/messages/sendDirectly') return json(res, 200, { id: 'msg_1', status: 'accepted', to: req.json.to, type: req.json.type });
    if (p === '/chat/messages/msg_9') return json(res, 200, { id: 'msg_9', status: 'delivered', to: '+14155550100', totalPrice: 0.01 });
    if (p === '/chat/messages/missing') return serviceError(res, 404, 'NOT_FOUND', 'message not found');
    if (p === '/chat/templates') return json(res, 200, { items: [{ name: 'welcome', language: 'en_US', category: 'UTILITY', status: req.query.get('filter.status') ?? 'APPROVED' }], offset: 0, limit: 10, length: 1 });
    if (p.startsWith('/chat/calls/media/')) {
      res.writeHead(200, { 'content-type': 'audio/ogg', 'content-length': String(MEDIA.length) });
      res.write(MEDIA.subarray(0, 100_000));
      setTimeout(() => res.end(MEDIA.subarray(100_000)), 150);
      return;
    }
    if (p === '/sms') return json(res, 200, { id: 'sms_1', externalId: req.json.externalId });
    if (p === '/emails') return json(res, 200, { id: 'em_1', totalRecipients: String(req.json.to).split(',').length });
    if (p === '/contact/contacts') return json(res, 200, { items: [{ id: 'c1', phoneNumber: '+14155550100', remarkName: 'Ada' }], offset: 0, limit: 10, length: 1 });
    serviceError(res, 404, 'NOT_FOUND', `no route ${p}`);
  });
});
afterAll(() => srv.close());
beforeEach(() => {
  srv.seen.length = 0;
});

const env = () => ({ SERVICE_BASE_URL: srv.baseUrl, SERVICE_API_KEY: KEY });
const run = (...args: string[]) => runBin(args, env());

// Each case spawns Node + tsx: seconds apiece on a busy 2-core machine.
describe('switchboard CLI', { timeout: 120_000 }, () => {
  it('--help lists every command and exits 0 without needing the environment', async () => {
    const r = await runBin(['--help'], {});
    expect(r.code).toBe(0);
    for (const c of ['balance', 'messages send-text', 'messages send-template', 'messages get', 'templates list', 'permissions request', 'calls media', 'sms send', 'emails send', 'contacts list', '--json']) {
      expect(r.stdout).toContain(c);
    }
  });

  it('`npx switchboard --help` resolves the package bin and prints the help', async () => {
    const { execFile } = await import('node:child_process');
    const root = join(import.meta.dirname, '../..');
    const out = await new Promise<{ code: number; stdout: string }>((done) =>
      execFile('npx', ['--no-install', 'switchboard', '--help'], { cwd: root, env: { ...process.env, SERVICE_API_KEY: '' } }, (err, stdout) =>
        done({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout }),
      ),
    );
    expect(out.code).toBe(0);
    expect(out.stdout).toContain('Usage: switchboard <command>');
  });

  it('balance prints a human line, and JSON with --json, sending the key as X-API-Key', async () => {
    const h = await run('balance');
    expect(h).toMatchObject({ code: 0, stdout: 'Balance: 42.5 EUR\n' });
    const j = await run('balance', '--json');
    expect(JSON.parse(j.stdout)).toEqual({ amount: 42.5, currency: 'EUR' });
    expect(srv.seen.every((s) => s.headers['x-api-key'] === KEY)).toBe(true);
    expect(h.stdout + h.stderr + j.stdout + j.stderr).not.toContain(KEY);
  });

  it('messages send-text queues a text message (or sends directly with --direct)', async () => {
    const r = await run('messages', 'send-text', '--from', '+4930123456', '--to', '+14155550100', '--body', 'hello', '--external-id', 'x1');
    expect(r.code).toBe(0);
    expect(r.stdout).toBe('Message msg_1 accepted to +14155550100\n');
    expect(srv.seen[0]!.path).toBe('/chat/messages');
    expect(srv.seen[0]!.json).toEqual({ from: '+4930123456', to: '+14155550100', type: 'text', text: { body: 'hello' }, externalId: 'x1' });
    const d = await run('messages', 'send-text', '--from', '+4930123456', '--to', '+14155550100', '--body', 'hi', '--direct');
    expect(d.code).toBe(0);
    expect(srv.seen[1]!.path).toBe('/chat/messages/sendDirectly');
  });

  it('messages send-template fills body parameters in order', async () => {
    const r = await run('messages', 'send-template', '--from', '+4930123456', '--to', '+14155550100', '--name', 'order', '--language', 'en_US', '--param', 'Ada', '--param', '42');
    expect(r.code).toBe(0);
    expect(srv.seen[0]!.json.template).toEqual({ name: 'order', language: { code: 'en_US' }, components: [{ type: 'body', parameters: [{ type: 'text', text: 'Ada' }, { type: 'text', text: '42' }] }] });
  });

  it('messages get prints the message fields', async () => {
    const r = await run('messages', 'get', 'msg_9');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('status: delivered');
    expect(r.stdout).toContain('totalPrice: 0.01');
  });

  it('templates list --status sends filter.status and prints one line per template', async () => {
    const r = await run('templates', 'list', '--status', 'ARCHIVED');
    expect(r.code).toBe(0);
    expect(srv.seen[0]!.query.get('filter.status')).toBe('ARCHIVED');
    expect(r.stdout).toBe('welcome  en_US  UTILITY  ARCHIVED\n');
  });

  it('permissions request sends an interactive call_permission_request', async () => {
    const r = await run('permissions', 'request', '--from', '+4930123456', '--recipient', 'US.abc123', '--body', 'May we call you?');
    expect(r.code).toBe(0);
    expect(srv.seen[0]!.json).toEqual({
      from: '+4930123456',
      recipient: 'US.abc123',
      type: 'interactive',
      interactive: { type: 'call_permission_request', action: { name: 'call_permission_request' }, body: { text: 'May we call you?' } },
    });
  });

  it('calls media streams the file to --out with progress on stderr', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sb-cli-'));
    const out = join(dir, 'rec.ogg');
    const r = await run('calls', 'media', 'asset+1', '--out', out);
    expect(r.code).toBe(0);
    expect((await readFile(out)).equals(MEDIA)).toBe(true);
    expect(srv.seen[0]!.url).toBe('/v2/chat/calls/media/asset%2B1');
    expect(r.stderr).toMatch(/downloaded .* of 293\.0 KB \(100%\)/);
    expect(r.stdout).toBe(`Saved 293.0 KB to ${out}\n`);
  });

  it('sms send, emails send and contacts list work', async () => {
    const s = await run('sms', 'send', '--to', '+14155550100', '--text', 'code 1234', '--external-id', 'e9', '--json');
    expect(s.code).toBe(0);
    expect(JSON.parse(s.stdout)).toEqual({ id: 'sms_1', externalId: 'e9' });
    const e = await run('emails', 'send', '--from', 'ops@example.com', '--to', 'a@example.com,b@example.com', '--subject', 'Hi', '--content', '<p>x</p>', '--content-type', 'text/html');
    expect(e).toMatchObject({ code: 0, stdout: 'Email em_1 accepted for 2 recipient(s)\n' });
    const c = await run('contacts', 'list');
    expect(c).toMatchObject({ code: 0, stdout: 'c1  +14155550100  Ada\n' });
  });

  it('a Service error prints "CODE: message (requestId …)" and exits 1', async () => {
    const r = await run('messages', 'get', 'missing');
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('NOT_FOUND: message not found (requestId req_body_1)\n');
  });

  it('a validation error names the field, exits 1 and sends nothing', async () => {
    const r = await run('messages', 'send-text', '--from', '030-123', '--to', '+14155550100', '--body', 'x');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^VALIDATION_ERROR: from: must be an E\.164 phone number/);
    expect(srv.seen).toHaveLength(0);
  });

  it('a missing SERVICE_API_KEY is named, exit 1, nothing sent', async () => {
    const r = await runBin(['balance'], { SERVICE_BASE_URL: srv.baseUrl });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe('CONFIG_ERROR: SERVICE_API_KEY is not set\n');
    expect(srv.seen).toHaveLength(0);
  });

  it('an unknown command or option is a usage error (exit 2)', async () => {
    expect((await run('frobnicate')).code).toBe(2);
    const st = await run('templates', 'list', '--status', 'approved');
    expect(st.code).toBe(2);
    expect(st.stderr).toContain('--status must be one of PENDING, APPROVED');
    const r = await run('balance', '--bogus');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^USAGE:/);
  });
});
