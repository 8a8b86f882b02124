/**
 * The one wiring function: `createSwitchboard(options)` lists the features (each registers its
 * routes, webhook handlers, call bus listeners, readiness checks and start/close steps), all
 * statically imported, and does nothing else: the foundation under them (the Service client,
 * history, the audit trail, the shared parts, the app and the webhook workers) is built by
 * `server/foundation.ts`. `main.ts` serves what it returns (`app.fetch`, `wss`) and adds only
 * the demo emulator (the one lazy import) and signal handling; end-to-end tests call it with
 * their own users, timings and parts.
 */
import { adminFeature } from './admin/wire.ts';
import { archiveFeature } from './archive/feature.ts';
import { auditFeature } from './audit/feature.ts';
import { messagingFeature } from './callbacks/wire.ts';
import { customersFeature } from './customers/feature.ts';
import { buildSwitchboard, type Switchboard } from './foundation.ts';
import { historyFeature } from './history/feature.ts';
import { languageFeature } from './language/index.ts';
import { monitorFeature } from './monitor/feature.ts';
import type { SwitchboardOptions } from './options.ts';
import { permissionsFeature } from './permissions/feature.ts';
import { reportsFeature } from './reports/index.ts';
import { wallboardFeature } from './wallboard/index.ts';
import { webFeature } from './web/index.ts';
import { deadLettersFeature } from './webhooks/dead-letters.ts';

export { withCalling, type Calling, type Switchboard } from './foundation.ts';
export type { ServiceParts, SwitchboardOptions } from './options.ts';

/**
 * The features, in the order their routes are mounted (the pages last: they answer what no
 * other route did), their start steps run and their listeners hear a transition.
 */
export function createSwitchboard(o: SwitchboardOptions): Promise<Switchboard> {
  return buildSwitchboard(o, (core) => [
    archiveFeature,
    historyFeature,
    messagingFeature(core.messaging, core.callbackQueue),
    customersFeature(core.callbackQueue.callbacks),
    deadLettersFeature,
    adminFeature,
    auditFeature(core.parts.auth.requireUser('ops', 'admin')),
    permissionsFeature,
    languageFeature,
    monitorFeature,
    wallboardFeature({ periodMs: o.wallboardMs }),
    reportsFeature,
    webFeature({ ws: core.gateway.routes, assets: core.assets, demo: o.demo }),
  ]);
}
