/**
 * Secrets never reach the logs: a full round with the Service emulator (a call's signed
 * connect webhook in, our Service client's reject out with X-API-Key, the terminate
 * webhook in, plus a forged delivery), everything logged at trace level, and the output
 * searched for the API key, the webhook secrets and the session secret.
 *
 * The logger here has NO secret-scrubbing list: this proves the code and the path
 * redaction keep secrets out on their own (the scrubber in production is a second layer).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../server/app.ts';
import { hashPassword } from '../../server/auth/users.ts';
import { startSwitchboard } from '../../server/main.ts';
import { createLogger, memoryDestination } from '../../server/log/logger.ts';
import { Metrics, foundationMetrics } from '../../server/ops/metrics.ts';
import { createServiceClient } from '../../server/service/index.ts';
import { MemoryStore } from '../../server/store/memory.ts';
import { createWorkers } from '../../server/webhooks/workers.ts';
import { startEmulator, type Emulator } from '../emulator/index.ts';
import { PASSWORD, ProtocolClient, agentClient, fakeConnect, login, postEvent } from '../e2e/harness.ts';
import { freePort, startRedis } from '../support/redis.ts';
import { API_KEY, SECRET_A, SECRET_B, event, listen, signed, testConfig, until } from './helpers.ts';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: [API_KEY], webhookSecret: SECRET_A, timeScale: 0.001 });
});
afterAll(async () => {
  await emu?.close();
});

describe('secrets in logs', () => {
  it('a full webhook + Service client round at trace level logs neither the API key nor any secret', async () => {
    const config = testConfig({ SERVICE_BASE_URL: emu.baseUrl, LOG_LEVEL: 'trace' });
    const logs = memoryDestination();
    const log = createLogger({ level: 'trace', destination: logs, secrets: [] });
    const store = new MemoryStore();
    const client = createServiceClient({ baseUrl: emu.baseUrl, apiKey: API_KEY, logger: log.child({ part: 'service' }) });
    const metrics = new Metrics();
    const app = createApp({ config, store, log, metrics });
    const ended: string[] = [];
    const workers = createWorkers({
      store,
      log: log.child({ part: 'workers' }),
      metrics: foundationMetrics(metrics),
      maxAttempts: 3,
      blockMs: 50,
      handlers: {
        'chat.call.connect': async (e) => {
          const c = e.payload;
          log.info({ wacid: c.wacid }, 'rejecting the test call');
          await client.calls.reject({ phoneId: c.phoneId, wacid: c.wacid });
        },
        'chat.call.terminate': async (e) => {
          ended.push(e.id);
        },
      },
    });
    const srv = await listen(app.fetch);
    await workers.start();
    try {
      emu.webhooks.addEndpoint({ url: `${srv.url}/webhooks/service`, secret: SECRET_A });
      const started = await fetch(`${emu.controlUrl}/calls`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-API-Key': API_KEY },
        body: JSON.stringify({ audio: 'silence' }),
      });
      expect(started.status).toBe(200);
      await until(() => ended.length > 0, 20_000, 'terminate webhook');

      // A forged delivery and one with the API key where it does not belong.
      const body = JSON.stringify(event());
      await fetch(`${srv.url}/webhooks/service`, { method: 'POST', body, headers: signed(body, 'whsec_forged_secret_000000') });
      await fetch(`${srv.url}/webhooks/service`, { method: 'POST', body, headers: { ...signed(body), 'X-API-Key': API_KEY, Cookie: `sid=${config.sessionSecret}` } });

      const text = logs.text();
      // The round really was logged...
      expect(text).toContain('service request');
      expect(text).toContain('rejecting the test call');
      expect(text).toContain('webhook signature refused');
      // ...and no secret is in it.
      for (const secret of [API_KEY, SECRET_A, SECRET_B, config.sessionSecret]) expect(text).not.toContain(secret);
    } finally {
      await workers.stop();
      await srv.close();
      await store.close();
    }
  }, 40_000);

  it('the whole server: a Redis password, a password typed as a name and a Service error echoing the API key reach no log, frame, stored reason or API answer', async () => {
    const redisPassword = 'redis-pw-Very-Secret-42';
    const typedPassword = 'hunter2-Typed-As-Name!';
    const redis = await startRedis({ password: redisPassword });
    const dir = mkdtempSync(join(tmpdir(), 'sb-secrets-'));
    const usersFile = join(dir, 'users.json');
    const hash = await hashPassword(PASSWORD);
    writeFileSync(usersFile, JSON.stringify({ users: [{ name: 'boss', roles: ['supervisor', 'agent'], passwordHash: hash }, { name: 'agent1', roles: ['agent'], passwordHash: hash }] }));
    const port = await freePort();
    const config = testConfig({
      SERVICE_BASE_URL: emu.baseUrl,
      SERVICE_WEBHOOK_SECRETS: SECRET_A,
      REDIS_URL: redis.url,
      USERS_FILE: usersFile,
      PORT: String(port),
      PUBLIC_URL: `http://127.0.0.1:${port}`,
      ARCHIVE_DIR: join(dir, 'archive'),
      LOG_LEVEL: 'trace',
    });
    expect(config.redisUrl).toContain(redisPassword);
    const logs = memoryDestination();
    // No scrubbing list: the code itself must keep the secrets out.
    const log = createLogger({ level: 'trace', destination: logs, secrets: [] });
    const running = await startSwitchboard(config, { log, drainMs: 1000 });
    const clients: ProtocolClient[] = [];
    try {
      emu.webhooks.addEndpoint({ url: `${running.url}/webhooks/service`, secret: SECRET_A });
      // A password typed into the name field.
      const failed = await fetch(`${running.url}/api/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', origin: running.url },
        body: JSON.stringify({ name: typedPassword, password: 'whatever' }),
      });
      expect(failed.status).toBe(401);
      // A known user's failure still names them.
      expect((await fetch(`${running.url}/api/login`, { method: 'POST', headers: { 'content-type': 'application/json', origin: running.url }, body: JSON.stringify({ name: 'agent1', password: 'wrong' }) })).status).toBe(401);

      const boss = new ProtocolClient(running.url, await login(running.url, 'boss'));
      clients.push(boss);
      await boss.opened;
      await boss.next('welcome');
      // The Service refuses a dial and echoes the key in its message and chatApiError.
      await fetch(`${emu.controlUrl}/faults`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', 'x-api-key': API_KEY },
        body: JSON.stringify({ endpoints: { 'POST /chat/calls/connect': { kind: 'echoKey', times: 1 }, 'POST /chat/calls/preAccept': { kind: 'echoKey', times: 1 } } }),
      });
      const dialed = await boss.request({ type: 'call.dial', from: '+15550100001', to: '+15550123777', sdp: 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n' });
      expect(dialed).toMatchObject({ type: 'error', code: 'SERVICE_ERROR' });
      expect((dialed as { message: string }).message).toMatch(/echoed key \[redacted\]/);

      // An incoming call whose preAccept is refused the same way: the reason is stored and listed.
      const agent = await agentClient(running.url, 'agent1');
      clients.push(agent);
      const wacid = `wacid.secrets${Date.now()}`;
      expect(await postEvent({ url: running.url, secret: SECRET_A }, 'chat.call.connect', 'callingConnect', fakeConnect(wacid))).toBe(200);
      const offered = await agent.next('call.offered', (m) => m.wacid === wacid, 15_000);
      const answered = await agent.request({ type: 'call.answer', wacid: offered.wacid, sdp: 'v=0\r\no=- 2 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n' });
      expect(answered).toMatchObject({ type: 'error', code: 'SERVICE_ERROR' });
      const stored = await running.store.getCall(wacid);
      expect(String(stored?.reason)).toMatch(/echoed key \[redacted\]/);
      const listed = await fetch(`${running.url}/api/calls`, { headers: { cookie: await login(running.url, 'boss') } });
      const listedText = await listed.text();
      expect(listed.status).toBe(200);
      expect(listedText).toContain(wacid);

      const frames = JSON.stringify([...boss.received, ...agent.received]);
      const text = logs.text();
      // It all happened and was logged...
      expect(text).toContain('switchboard started');
      expect(text).toContain('login failed');
      expect(text).toContain('"user":"unknown user"');
      expect(text).toContain('"user":"agent1"');
      expect(text).toContain(':[redacted]@127.0.0.1');
      // ...and no secret is anywhere.
      for (const secret of [API_KEY, SECRET_A, config.sessionSecret, redisPassword, encodeURIComponent(redisPassword), typedPassword]) {
        expect(text).not.toContain(secret);
        expect(frames).not.toContain(secret);
        expect(listedText).not.toContain(secret);
        expect(JSON.stringify(stored)).not.toContain(secret);
      }
    } finally {
      for (const c of clients) c.close();
      await running.close();
      await redis.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);

  it.each([
    ['TURN_SECRET (coturn REST)', { ICE_SERVERS: 'stun:turn.example.com:3478,turn:turn.example.com:3478?transport=udp', TURN_SECRET: 'turn-REST-Secret-0123456789abcdef' }, 'turn-REST-Secret-0123456789abcdef'],
    ['a static TURN_PASSWORD', { ICE_SERVERS: 'turn:turn.example.com:3478', TURN_USERNAME: 'agents', TURN_PASSWORD: 'Static-Turn-Pass-42!' }, 'Static-Turn-Pass-42!'],
  ])('%s: in no log line, no page source, no frame but the logged-in user\'s own credential', async (_what, env, secret) => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-turn-secrets-'));
    const usersFile = join(dir, 'users.json');
    const hash = await hashPassword(PASSWORD);
    writeFileSync(usersFile, JSON.stringify({ users: [{ name: 'boss', roles: ['supervisor', 'agent'], passwordHash: hash }, { name: 'agent1', roles: ['agent'], passwordHash: hash }] }));
    const port = await freePort();
    const config = testConfig({ SERVICE_BASE_URL: emu.baseUrl, SERVICE_WEBHOOK_SECRETS: SECRET_A, USERS_FILE: usersFile, PORT: String(port), PUBLIC_URL: `http://127.0.0.1:${port}`, ARCHIVE_DIR: join(dir, 'archive'), LOG_LEVEL: 'trace', ...env });
    const logs = memoryDestination();
    // No scrubbing list: the code itself must keep the secrets out.
    const log = createLogger({ level: 'trace', destination: logs, secrets: [] });
    const running = await startSwitchboard(config, { log, drainMs: 1000 });
    const clients: ProtocolClient[] = [];
    try {
      const bossCookie = await login(running.url, 'boss');
      const agentCookie = await login(running.url, 'agent1');
      const boss = new ProtocolClient(running.url, bossCookie);
      const agent = new ProtocolClient(running.url, agentCookie);
      clients.push(boss, agent);
      const [bw, aw] = await Promise.all([boss.next('welcome'), agent.next('welcome')]);
      const cred = (w: typeof bw) => w.ice?.iceServers.find((x) => x.urls.some((u) => u.startsWith('turn')));
      const bossCred = cred(bw)!;
      const agentCred = cred(aw)!;
      expect(agentCred.credential).toBeTruthy();
      // Each page gets its own credential (REST: the username names the user and its expiry).
      if ('TURN_SECRET' in env) {
        expect(agentCred.username).toMatch(/^\d+:agent1$/);
        expect(bossCred.username).toMatch(/^\d+:boss$/);
        expect(JSON.stringify(agent.received)).not.toContain(bossCred.credential!);
        expect(JSON.stringify(boss.received)).not.toContain(agentCred.credential!);
      } else {
        expect(agentCred.credential).toBe(secret); // the static password is the credential itself: logged-in pages only
      }
      // Page sources (HTML and the scripts they load), logged in and not.
      const sources: string[] = [];
      for (const [path, cookie] of [['/login', ''], ['/', agentCookie], ['/supervisor', bossCookie], ['/archive', bossCookie]] as const) {
        const r = await fetch(`${running.url}${path}`, { headers: cookie ? { cookie } : {} });
        const html = await r.text();
        sources.push(html);
        for (const m of html.matchAll(/<script[^>]+src="([^"]+)"/g)) sources.push(await (await fetch(new URL(m[1]!, running.url), { headers: cookie ? { cookie } : {} })).text());
      }
      expect(sources.length).toBeGreaterThan(4);
      const text = logs.text();
      expect(text).toContain('switchboard started');
      for (const s of [secret, agentCred.credential!, bossCred.credential!]) {
        expect(text).not.toContain(s);
        for (const src of sources) expect(src).not.toContain(s);
      }
      if ('TURN_SECRET' in env) expect(JSON.stringify([...boss.received, ...agent.received])).not.toContain(secret);
    } finally {
      for (const c of clients) c.close();
      await running.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
