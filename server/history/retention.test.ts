/**
 * The daily retention job over a real history (PGlite) and a real archive directory: rows
 * and files go together; announced media never downloaded within the Service's 30 days is
 * logged once and counted.
 */
import { mkdtempSync, rmSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config.ts';
import { createLogger, memoryDestination } from '../log/logger.ts';
import { Metrics } from '../ops/metrics.ts';
import { openHistory } from './index.ts';
import { createRetention } from './retention.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tmp = (p: string) => {
  const d = mkdtempSync(join(tmpdir(), p));
  dirs.push(d);
  return d;
};

describe('retention', () => {
  it('deletes rows past HISTORY_RETENTION_DAYS / ARCHIVE_RETENTION_DAYS with their files; media lost before download is logged once and counted', async () => {
    const archiveDir = tmp('sb-archive-');
    const history = await openHistory(loadConfig({ DATA_DIR: tmp('sb-data-'), HISTORY_RETENTION_DAYS: '365', ARCHIVE_RETENTION_DAYS: '90' }));
    const dest = memoryDestination();
    const log = createLogger({ level: 'info', destination: dest });
    const metrics = new Metrics();
    try {
      const file = (wacid: string, name: string) => {
        mkdirSync(join(archiveDir, wacid), { recursive: true });
        const p = join(archiveDir, wacid, name);
        writeFileSync(p, 'OggS');
        return p;
      };
      const oldRec = file('old', 'cma_old.ogg'); // call 400 days old: row and file go
      const midRec = file('mid', 'cma_mid.ogg'); // call 100 days old: kept, its media (past 90 days) goes
      const newRec = file('new', 'cma_new.ogg'); // kept
      const day = (d: number) => new Date(Date.now() - d * 86_400_000).toISOString();
      const call = (wacid: string, d: number) => ({ type: 'call', wacid, phoneId: 'ph1', direction: 'inbound', outcome: 'answered', receivedAt: day(d), customer: { phoneNumber: '+15550123456' } }) as const;
      const media = (wacid: string, id: string, d: number, path?: string) =>
        ({ type: 'media', wacid, mediaAssetId: id, kind: 'recording', status: path ? 'available' : 'announced', at: day(d), ...(path ? { path } : {}) }) as const;
      for (const f of [
        call('old', 400), media('old', 'cma_old', 400, oldRec),
        call('mid', 100), media('mid', 'cma_mid', 100, midRec),
        call('new', 1), media('new', 'cma_new', 1, newRec),
        call('lost', 40), media('lost', 'cma_lost', 40), // announced, never downloaded, 40 days ago
      ]) await history.store.record(f);

      const retention = createRetention({ history, archiveDir, log, metrics });
      const run = await retention.runOnce();
      expect(run).toEqual({ calls: 1, media: 2, filesDeleted: 2, expired: 1 });
      expect([existsSync(oldRec), existsSync(midRec), existsSync(newRec)]).toEqual([false, false, true]);
      expect(await history.store.getCall('old')).toBeNull();
      expect((await history.store.getCall('mid'))?.media).toEqual([]);
      expect((await history.store.getCall('new'))?.media.map((m) => m.status)).toEqual(['available']);
      expect((await history.store.getCall('lost'))?.media.map((m) => m.status)).toEqual(['missing']);
      expect(metrics.counter('switchboard_archive_media_expired_total', '', ['kind']).get({ kind: 'recording' })).toBe(1);
      const lines = dest.lines.filter((l) => /never downloaded/.test(l));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('cma_lost');

      // Again: nothing more to delete, the lost asset is not reported twice.
      expect(await retention.runOnce()).toEqual({ calls: 0, media: 0, filesDeleted: 0, expired: 0 });
      expect(dest.lines.filter((l) => /never downloaded/.test(l))).toHaveLength(1);
    } finally {
      await history.close();
    }
  });
});
