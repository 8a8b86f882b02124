/**
 * History as a feature: every stored transition becomes history facts (a call bus listener;
 * queued, the call never waits for them), `/api/history/*` is mounted — without history
 * those routes say why (503), not "no route" — its health is on `/readyz` (informational:
 * its outage delays history, not calls), and the daily retention runs (rows past retention
 * and their files together; media lost before download reported).
 */
import { Hono } from 'hono';
import type { Auth, AuthEnv } from '../auth/index.ts';
import type { Config } from '../config/config.ts';
import type { Feature } from '../features/feature.ts';
import type { Logger } from '../log/logger.ts';
import { HttpUnavailable } from '../ops/errors.ts';
import type { Metrics } from '../ops/metrics.ts';
import type { History, HistoryFact } from './index.ts';
import { factsOfTransition } from './recorder.ts';
import { createRetention } from './retention.ts';
import { createHistoryRoutes } from './routes.ts';

export const historyFeature: Feature<{ auth: Auth; history: History | undefined; config: Pick<Config, 'archiveDir'>; metrics: Metrics; log: Logger; now: () => number }> = {
  name: 'history',
  install(ctx) {
    const { history, auth } = ctx;
    if (!history) {
      ctx.routes(historyOff(auth));
      return;
    }
    ctx.routes(createHistoryRoutes({ auth, history, log: ctx.log.child({ part: 'history' }) }));
    // The facts of one event-loop turn go as one queue entry (one XADD).
    const factsLater: HistoryFact[] = [];
    ctx.on('committed', 'facts', (before, after, event, version) => {
      if (factsLater.length === 0) queueMicrotask(() => history.enqueue(...factsLater.splice(0)));
      factsLater.push(...factsOfTransition(before, after, event, ctx.now(), { version }));
    });
    ctx.readiness({
      name: 'history',
      informational: true,
      check: async () => {
        const h = await history.health();
        if (!h.ok) throw new Error(h.reason ?? 'failing');
      },
    });
    const retention = createRetention({ history, archiveDir: ctx.config.archiveDir, log: ctx.log.child({ part: 'retention' }), metrics: ctx.metrics });
    ctx.lifecycle({ start: () => retention.start(), close: () => retention.stop() });
  },
};

/** Without history its routes say why (503), not "no route". */
function historyOff(auth: Auth): Hono<AuthEnv> {
  const routes = new Hono<AuthEnv>();
  const refuse = () => {
    throw new HttpUnavailable('call history is off on this server (it needs DATABASE_URL or DATA_DIR)');
  };
  for (const path of ['/api/history/calls', '/api/history/calls/*']) routes.get(path, auth.requireUser('agent', 'supervisor', 'ops'), refuse);
  return routes;
}
