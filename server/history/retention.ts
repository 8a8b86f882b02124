/**
 * The daily retention job (started by server/switchboard.ts with history):
 * - `history.purge()` deletes calls past `HISTORY_RETENTION_DAYS` and media past
 *   `ARCHIVE_RETENTION_DAYS` (rows first, in one transaction), then their files here;
 * - media the Service announced that we never downloaded before its 30 days ran out is
 *   marked `missing`, logged once each and counted
 *   (`switchboard_archive_media_expired_total`): it can no longer be fetched.
 *
 * Every node may run it: the deletes are idempotent and a file already gone is fine.
 */
import { rm } from 'node:fs/promises';
import { relative, resolve, isAbsolute } from 'node:path';
import type { Logger } from '../log/logger.ts';
import type { Metrics } from '../ops/metrics.ts';
import type { History } from './index.ts';

export const RETENTION_EVERY_MS = 24 * 3600 * 1000;
/** How long the Service keeps a media asset (service-interface-v2: 30 days). */
export const SERVICE_MEDIA_DAYS = 30;

export interface RetentionRun {
  calls: number;
  media: number;
  filesDeleted: number;
  expired: number;
}

export interface RetentionOptions {
  history: Pick<History, 'purge' | 'store'>;
  archiveDir: string;
  log: Pick<Logger, 'info' | 'warn' | 'error'>;
  metrics?: Metrics;
  /** Default daily; the first run is one period after start (a restart loop does not purge in a loop). */
  everyMs?: number;
  now?: () => Date;
}

/** A path under `dir`, or undefined (a row never names a file outside the archive). */
function inside(dir: string, path: string): string | undefined {
  const full = resolve(dir, path);
  const rel = relative(resolve(dir), full);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? full : undefined;
}

export function createRetention(o: RetentionOptions) {
  const expiredTotal = o.metrics?.counter('switchboard_archive_media_expired_total', 'Announced media never downloaded before the Service dropped it (30 days).', ['kind']);
  const now = o.now ?? (() => new Date());
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> | undefined;

  async function runOnce(): Promise<RetentionRun> {
    const at = now();
    const { calls, media, paths } = await o.history.purge(at);
    let filesDeleted = 0;
    for (const p of paths) {
      const file = inside(o.archiveDir, p);
      if (!file) {
        o.log.warn({ path: p }, 'retention: a media row names a file outside ARCHIVE_DIR; not deleted');
        continue;
      }
      await rm(file, { force: true });
      filesDeleted++;
    }
    const expired = await o.history.store.expireUndownloaded({ now: at, days: SERVICE_MEDIA_DAYS });
    for (const e of expired) {
      expiredTotal?.inc({ kind: e.kind });
      o.log.warn({ wacid: e.wacid, mediaAssetId: e.mediaAssetId, kind: e.kind }, `media never downloaded before the Service's ${SERVICE_MEDIA_DAYS} days ran out: lost`);
    }
    if (calls + media + expired.length > 0) o.log.info({ calls, media, filesDeleted, expired: expired.length }, 'retention done');
    return { calls, media, filesDeleted, expired: expired.length };
  }

  return {
    runOnce,
    start() {
      timer = setInterval(() => {
        if (running) return;
        running = runOnce()
          .catch((err: unknown) => o.log.error({ err: { message: (err as Error).message } }, 'retention failed; tried again next period'))
          .finally(() => (running = undefined));
      }, o.everyMs ?? RETENTION_EVERY_MS);
      timer.unref();
    },
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
