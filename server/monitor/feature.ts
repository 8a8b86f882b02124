/**
 * Monitoring as a feature: a call that ends ends its monitors (a call bus listener). The
 * monitors themselves are a shared part (the gateway takes the supervisors' requests to them).
 */
import type { Feature } from '../features/feature.ts';
import type { Logger } from '../log/logger.ts';
import type { Monitors } from './index.ts';

export const monitorFeature: Feature<{ monitors: Pick<Monitors, 'callEnded' | 'callMoved'>; log: Logger }> = {
  name: 'monitor',
  install(ctx) {
    ctx.on('committed', 'call ended', (before, after) => {
      if (after.state === 'ended' && before?.state !== 'ended') ctx.monitors.callEnded(after.wacid).catch((err: Error) => ctx.log.warn({ wacid: after.wacid, err: err.message }, 'monitor end failed'));
    });
    // A call on the media anchor taken back by the agent's reloaded page (a new socket): its monitor follows it there.
    ctx.on('committed', 'call moved', (before, after) => {
      if (after.state === 'active' && before?.state === 'active' && after.anchor && after.agent && after.conn && before.conn !== after.conn && before.agent === after.agent) {
        ctx.monitors.callMoved(after.wacid, after.agent, after.conn).catch((err: Error) => ctx.log.warn({ wacid: after.wacid, err: err.message }, 'monitor did not follow the call'));
      }
    });
  },
};
