/**
 * The audit trail's routes as a feature: `/api/audit` and `/api/audit.csv` behind `guard`
 * (the wiring passes `auth.requireUser('ops', 'admin')`: auth records into the trail, so the
 * trail takes its guard rather than importing auth). The trail itself is a shared part: every
 * feature records into it.
 */
import type { MiddlewareHandler } from 'hono';
import type { Feature } from '../features/feature.ts';
import type { AuditService } from './index.ts';
import type { AuditEnv } from './routes.ts';

export function auditFeature<E extends AuditEnv>(guard: MiddlewareHandler<E>): Feature<{ audit: Pick<AuditService, 'routes'> }> {
  return {
    name: 'audit',
    install: (ctx) => ctx.routes(ctx.audit.routes(guard)),
  };
}
