/**
 * The archive as a feature: with the Service's media download, recording and transcription
 * events are archived (the media lane's handlers) and the disk's health is on `/readyz`
 * (informational); the archive's routes are mounted either way.
 */
import type { Audit } from '../audit/trail.ts';
import type { Auth } from '../auth/index.ts';
import type { NumberScope } from '../auth/scope.ts';
import type { Config } from '../config/config.ts';
import type { Feature } from '../features/feature.ts';
import type { Logger } from '../log/logger.ts';
import type { Metrics } from '../ops/metrics.ts';
import type { Hub } from '../push/hub.ts';
import type { Calls } from '../service/resources/calls.ts';
import type { Store } from '../store/store.ts';
import { laneGroup } from '../webhooks/workers.ts';
import { createArchive, type ArchiveOutcome } from './index.ts';
import { createArchiveRoutes } from './routes.ts';

/**
 * What the archive tells history and asks it (undefined without history). history/ sits
 * above archive/ (its records link the archive's files), so it is handed in, not imported.
 */
export interface MediaHistory {
  /** An archived (or lost) recording, transcript or voicemail becomes history facts. */
  recorded(r: ArchiveOutcome): void;
  /** The business number of a call history knows. */
  businessNumberOf(wacid: string): Promise<string | undefined>;
}

export const archiveFeature: Feature<{
  config: Pick<Config, 'archiveDir'>;
  media: Pick<Calls, 'downloadMedia'> | undefined;
  auth: Auth;
  audit: { record: Audit };
  hub: Hub;
  store: Store;
  mediaHistory: MediaHistory | undefined;
  scope: NumberScope;
  metrics: Metrics;
  log: Logger;
}> = {
  name: 'archive',
  install(ctx) {
    const { config, mediaHistory, store, scope } = ctx;
    if (ctx.media) {
      const archive = createArchive({
        dir: config.archiveDir,
        calls: ctx.media,
        log: ctx.log.child({ part: 'archive' }),
        announce: { hub: ctx.hub, store },
        ...(mediaHistory ? { onArchived: (r) => mediaHistory.recorded(r) } : {}),
        // a disk that cannot be written makes events wait, not dead letters
        metrics: ctx.metrics,
        // Recording and transcription events belong to the media lane's consumer group.
        deadLetter: (entry, error) => store.deadLetter(laneGroup('media'), entry, error),
      });
      ctx.webhooks(archive.handlers);
      // The archive disk: reported (media wait for it), not failing readiness (calls do not need it).
      ctx.readiness({ name: 'archive', informational: true, check: archive.health });
      // After the workers stopped: what waits for the disk goes to the dead letters.
      ctx.lifecycle({ close: () => archive.close() });
    }
    ctx.routes(
      createArchiveRoutes({
        auth: ctx.auth,
        dir: config.archiveDir,
        audit: ctx.audit.record,
        store,
        // An agent plays a voicemail message when its call's business number is theirs (the call-back task's scope).
        ...(mediaHistory
          ? {
              voicemailFor: async (user: { name: string; roles: readonly string[] }, wacid: string) => {
                const businessNumber = await mediaHistory.businessNumberOf(wacid);
                return businessNumber !== undefined && (await scope.allows(user, businessNumber));
              },
            }
          : {}),
      }),
    );
  },
};
