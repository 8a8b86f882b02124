/**
 * Monitoring as a feature: a call that ends ends its monitors (a call bus listener). The
 * monitors themselves are a shared part (the gateway takes the supervisors' requests to them).
 */
import type { Feature } from '../features/feature.ts';
import type { Logger } from '../log/logger.ts';
import type { Monitors } from './index.ts';

export const monitorFeature: Feature<{ monitors: Pick<Monitors, 'callEnded'>; log: Logger }> = {
  name: 'monitor',
  install(ctx) {
    ctx.on('committed', 'call ended', (before, after) => {
      if (after.state === 'ended' && before?.state !== 'ended') ctx.monitors.callEnded(after.wacid).catch((err: Error) => ctx.log.warn({ wacid: after.wacid, err: err.message }, 'monitor end failed'));
    });
  },
};
