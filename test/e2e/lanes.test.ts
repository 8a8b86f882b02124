/**
 * Webhook lanes end to end: 20 recording downloads hanging at the Service (the emulator's
 * `mediaDownloadHang` fault) do not delay a call: its connect is offered to an available
 * agent within 1 s. Real bridge, real Redis, real emulator over HTTP. (Deadlines and the
 * bounded stop: server/webhooks/workers.test.ts, test/foundation/main.test.ts.)
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../support/redis.ts';
import { agentClient, fakeConnect, postEvent, until } from './harness.ts';
import { programSuite } from './suite.ts';

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.close();
});
let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});
const suite = programSuite();

describe('webhook lanes', () => {
  it('20 media downloads hanging at the Service: a connect is offered to an available agent within 1 s', async () => {
    dir = await mkdtemp(join(tmpdir(), 'sb-lanes-'));
    const b = await suite.startBridge({ agents: ['agent1'], redisUrl: redis.url, env: { ARCHIVE_DIR: dir }, emulator: { faults: { mediaDownloadHang: 'headers' } } });
    const a1 = suite.track(await agentClient(b.url, 'agent1'));

    for (let i = 0; i < 20; i++) {
      const status = await postEvent(b, 'chat.call.recording.updated', 'callingMedia', { wacid: `wacid.rec${i}`, phoneId: 'phone-1', type: 'recording', result: 'AVAILABLE', status: 'AVAILABLE', mediaAssetId: `cma_hang${i}` });
      expect(status).toBe(200);
    }
    // The downloads are under way and stuck at the Service.
    await until('downloads hanging at the Service', () => b.emu.capture.hangingDownloads() >= 4, 10_000, 20);
    await new Promise((r) => setTimeout(r, 300));

    const t0 = Date.now();
    expect(await postEvent(b, 'chat.call.connect', 'callingConnect', fakeConnect('wacid.lane-connect'))).toBe(200);
    const offered = await a1.next('call.offered', (m) => m.wacid === 'wacid.lane-connect', 5_000);
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(offered.wacid).toBe('wacid.lane-connect');
    // Nothing half-written by the stuck downloads.
    const files = await readdir(dir, { recursive: true });
    expect(files.filter((f) => String(f).endsWith('.ogg') || String(f).endsWith('.part'))).toEqual([]);
  }, 30_000);
});
