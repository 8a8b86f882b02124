/**
 * The calling permissions as a feature: their routes, the permission budget (connected and
 * unanswered business calls count against it: a call bus listener) and the expiry timers
 * stopped at close. The permissions themselves are a shared part (the engine checks dials).
 */
import type { Feature } from '../features/feature.ts';
import type { Permissions } from './index.ts';

export const permissionsFeature: Feature<{ permissions: Permissions }> = {
  name: 'permissions',
  install(ctx) {
    const { permissions } = ctx;
    ctx.routes(permissions.routes);
    ctx.on('committed', 'budget', (before, after) => permissions.onCommitted(before, after));
    ctx.lifecycle({ close: () => permissions.close() });
  },
};
