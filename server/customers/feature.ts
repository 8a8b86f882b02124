/**
 * The customer panel as a feature: `/api/customers/*` over the Service's contacts, history's
 * calls, messages and call-back tasks, the permission book and the agent's live calls.
 */
import type { Auth } from '../auth/index.ts';
import type { NumberScope } from '../auth/scope.ts';
import { CallbackStore } from '../callbacks/store.ts';
import type { Callbacks } from '../callbacks/index.ts';
import type { CallEngine } from '../calls/engine.ts';
import type { Feature } from '../features/feature.ts';
import type { History } from '../history/index.ts';
import type { Logger } from '../log/logger.ts';
import { MessagingStore } from '../messaging/store.ts';
import type { Permissions } from '../permissions/index.ts';
import type { Store } from '../store/store.ts';
import { createCustomerRoutes, type CustomerRoutesOptions } from './routes.ts';

type Needs = {
  auth: Auth;
  contacts: CustomerRoutesOptions['contacts'];
  history: History | undefined;
  permissions: Pick<Permissions, 'book'>;
  engine: Pick<CallEngine, 'board'>;
  store: Store;
  scope: NumberScope;
  log: Logger;
  now: () => number;
};

/** `callbacks`: the call-back queue (its tasks carry their permission in words); undefined when off. */
export function customersFeature(callbacks: Pick<Callbacks, 'permissionOf'> | undefined): Feature<Needs> {
  return {
    name: 'customers',
    install(ctx) {
      const { history, store, engine } = ctx;
      ctx.routes(
        createCustomerRoutes({
          auth: ctx.auth,
          contacts: ctx.contacts,
          history: history ? { calls: history.store, messages: new MessagingStore(history.store.db), callbacks: new CallbackStore(history.store.db) } : undefined,
          permissions: ctx.permissions.book,
          taskPermission: callbacks?.permissionOf,
          log: ctx.log.child({ part: 'customers' }),
          now: ctx.now,
          store,
          scope: ctx.scope,
          liveCustomers: async (agent) => {
            const f = engine.board.facts(agent);
            const calls = await Promise.all([f.ringing, f.holding, f.wrapWacid].filter((w): w is string => !!w).map((w) => store.getCall(w)));
            return calls.flatMap((r) => (r ? [String(r.direction === 'USER_INITIATED' ? r.from : r.to)] : []));
          },
        }),
      );
    },
  };
}
