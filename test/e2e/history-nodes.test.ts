/**
 * History with several nodes: two bridges on one Redis, one PostgreSQL database
 * (DATABASE_URL) and one ARCHIVE_DIR. A captured call answered through node A is recorded
 * and archived by whichever node's workers took its events, and both nodes answer its
 * history record and serve its recording.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { CallRecord } from '../../server/history/schema.ts';
import { createTestDatabase } from '../support/postgres.ts';
import { startRedis, uniquePrefix } from '../support/redis.ts';
import { agentClient, emulatorRequest, login, sleep, until } from './harness.ts';
import { programSuite } from './suite.ts';

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});
const suite = programSuite();

describe('history on several nodes', () => {
  it('a call taken through node A: both nodes answer its record and serve its recording', async () => {
    const [pg, redis, dir] = await Promise.all([createTestDatabase(), startRedis(), mkdtemp(join(tmpdir(), 'sb-shared-archive-'))]);
    cleanups.push(() => pg.drop(), () => redis.close(), () => rm(dir, { recursive: true, force: true }));
    const prefix = uniquePrefix('hnodes');
    const env = { DATABASE_URL: pg.url, ARCHIVE_DIR: dir, SESSION_SECRET: randomBytes(24).toString('base64url'), WRAP_UP_MS: 'off' };
    const a = await suite.startBridge({ agents: ['agent1'], history: true, redisUrl: redis.url, storePrefix: prefix, env, emulator: { announcementMs: 0 } });
    const b = await suite.startBridge({ agents: ['agent1'], history: true, redisUrl: redis.url, storePrefix: prefix, env, sharedEmulator: { emu: a.emu, secret: a.secret } });
    const number = [...a.emu.ctx.phoneNumbers.values()][0]!;
    await emulatorRequest(a.emu, 'POST', `${a.emu.baseUrl}/chat/phoneNumbers/${number.wabaId}/${encodeURIComponent(number.phoneNumber)}/settings`, {
      capture: { recordingEnabled: true, transcriptionEnabled: true, purpose: 'quality assurance', announcementLanguage: 'en' },
    });

    const agent = suite.track(await agentClient(a.url, 'agent1'));
    const wacid = (await emulatorRequest(a.emu, 'POST', '/calls', { audio: 'tone', from: '+15557770011' })).wacid as string;
    const offer = await agent.next('call.offered', (m) => m.wacid === wacid, 20_000);
    const host = await suite.peerHost();
    expect((await agent.request({ type: 'call.answer', wacid, sdp: await host.answer(wacid, offer.sdp) })).type).toBe('ack');
    await host.unmute(wacid);
    await sleep(1500);
    await emulatorRequest(a.emu, 'POST', `/calls/${encodeURIComponent(wacid)}/hangup`);
    await agent.next('media.available', (m) => m.wacid === wacid && m.kind === 'recording', 30_000);

    for (const node of [a, b]) {
      const cookie = await login(node.url, 'ops');
      const rec = await until(`node ${node.url}: the record with its recording`, async () => {
        const r = (await (await fetch(`${node.url}/api/history/calls/${encodeURIComponent(wacid)}`, { headers: { cookie } })).json()) as CallRecord;
        return r.outcome === 'answered' && r.media?.some((m) => m.kind === 'recording' && m.url) ? r : undefined;
      }, 30_000, 200);
      expect(rec).toMatchObject({ agent: 'agent1', customer: { phoneNumber: '+15557770011' } });
      const url = rec.media.find((m) => m.kind === 'recording')!.url!;
      const ogg = await fetch(`${node.url}${url}`, { headers: { cookie } });
      expect(ogg.status).toBe(200);
      expect(Buffer.from(await ogg.arrayBuffer()).subarray(0, 4).toString()).toBe('OggS');
    }
  }, 180_000);
});
