/**
 * History as a feature: every stored transition becomes history facts (a call bus listener;
 * queued, the call never waits for them), and `/api/history/*` is mounted — without history
 * those routes say why (503), not "no route".
 */
import { Hono } from 'hono';
import type { Auth, AuthEnv } from '../auth/index.ts';
import type { Feature } from '../features/feature.ts';
import type { Logger } from '../log/logger.ts';
import { HttpUnavailable } from '../ops/errors.ts';
import type { History, HistoryFact } from './index.ts';
import { factsOfTransition } from './recorder.ts';
import { createHistoryRoutes } from './routes.ts';

export const historyFeature: Feature<{ auth: Auth; history: History | undefined; log: Logger; now: () => number }> = {
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
