/**
 * Messaging and the call-back queue in the switchboard: messaging (message records, template catalog, opt-outs,
 * `POST /api/messages`) and the missed-call callback queue, built on the history database.
 * `createCallingCore` (server/calling.ts) calls `wireMessaging` once; without history (or
 * without a messaging client) the same routes answer 503 naming why, so a page knows the
 * feature is off and why.
 *
 *   const m = wireMessaging({ history, client, hub, log, config });   // before permissions
 *   createPermissions({ ..., onSent: m.recordSent });
 *   const cb = m.callbacks(permissions);                              // before the engine
 *   messagingFeature(m, cb)                                           // in the feature list
 */
import { Hono } from 'hono';
import type { Auth, AuthEnv } from '../auth/index.ts';
import type { NumberScope } from '../auth/scope.ts';
import type { Call } from '../calls/lifecycle.ts';
import type { Config } from '../config/config.ts';
import type { Feature } from '../features/feature.ts';
import type { History } from '../history/index.ts';
import { CallbackStore } from './store.ts';
import { MessagingStore } from '../messaging/store.ts';
import { callFact } from '../history/recorder.ts';
import type { Logger } from '../log/logger.ts';
import { createMessaging, type Messaging, type MessagingClient, type Push } from '../messaging/service.ts';
import { createMessagingRoutes } from '../messaging/routes.ts';
import { HttpUnavailable } from '../ops/errors.ts';
import type { Permissions } from '../permissions/index.ts';
import type { HandlerRegistry } from '../webhooks/workers.ts';
import type { Queues } from '../calls/routing.ts';
import { createCallbacks, type Callbacks } from './index.ts';
import { createCallbackRoutes } from './routes.ts';

export interface WireOptions {
  auth: Auth;
  history: History | undefined;
  client: MessagingClient | undefined;
  push: Push;
  log: Logger;
  config: Pick<Config, 'missedCallFollowup'>;
  now?: () => number;
  /** Which numbers each agent may use and see (QUEUES_FILE): messages and call-back tasks are scoped by it. */
  scope?: NumberScope | undefined;
}

/** The messaging event types whose handlers are messaging's alone. */
const MESSAGING_ONLY = [
  'chat.message.updated',
  'chat.echo_message.created',
  'chat.echo_message.updated',
  'chat.template.reviewed',
  'chat.template.quality_updated',
  'chat.template.category_updated',
  'contact.unsubscribe.created',
  'contact.unsubscribe.deleted',
] as const;

export interface MessagingWiring {
  /** Why messaging and the callback queue are off (undefined when on). */
  off: string | undefined;
  messaging: Messaging | undefined;
  /** For `createPermissions({ onSent })`: a sent permission request becomes a message record. */
  recordSent: Messaging['recordSent'] | undefined;
  /** Build the callback queue (it needs the permission book; `queues`: whose tasks go to which agents). */
  callbacks(permissions: Permissions, queues?: Queues): CallbackHook;
  routes: Hono<AuthEnv>;
  /** Messaging's handlers; `chat.inbound_message.received` runs the permission replies first, then messaging's record. */
  handlers(onInboundMessage: Permissions['onInboundMessage']): HandlerRegistry;
  /** After history opened: catalog sync and opt-out load (failures logged: the reconcile and webhooks catch up), then the reconcile loop. */
  start(): Promise<void>;
  stop(): void;
}

export interface CallbackHook {
  callbacks: Callbacks | undefined;
  /** The engine's commit hook: a call that just ended goes to the queue (never awaited by the call). */
  onCommitted(before: Call | null, after: Call | null, version: number): void;
}

export function wireMessaging(o: WireOptions): MessagingWiring {
  const log = o.log.child({ part: 'messaging' });
  const off = !o.history
    ? 'messaging and the callback queue need call history (DATABASE_URL or DATA_DIR), and history is off'
    : !o.client
      ? 'messaging and the callback queue need a Service client with messages, templates and unsubscribers'
      : undefined;
  const routes = new Hono<AuthEnv>();
  if (off || !o.history || !o.client) {
    const guard = o.auth.requireUser('agent', 'supervisor');
    const refuse = () => {
      throw new HttpUnavailable(off!);
    };
    for (const path of ['/api/messages', '/api/messages/*', '/api/templates', '/api/callbacks', '/api/callbacks/*']) routes.all(path, guard, refuse);
    return {
      off,
      messaging: undefined,
      recordSent: undefined,
      callbacks: () => ({ callbacks: undefined, onCommitted: () => undefined }),
      routes,
      handlers: (onInbound) => ({ 'chat.inbound_message.received': onInbound }),
      start: async () => undefined,
      stop: () => undefined,
    };
  }
  const { client, history } = o;
  const store = new MessagingStore(history.store.db);
  const messaging = createMessaging({ store, client, push: o.push, log, ...(o.now ? { now: o.now } : {}) });
  routes.route('/', createMessagingRoutes({ auth: o.auth, messaging, store, log, scope: o.scope }));
  let callbacks: Callbacks | undefined;
  // Mounted now, answering once the queue is built (createCallingCore builds it before serving).
  routes.route(
    '/',
    createCallbackRoutes({
      auth: o.auth,
      callbacks: {
        list: (s, viewer) => need().list(s, viewer),
        claim: (id, by) => need().claim(id, by),
        visible: (id, viewer) => need().visible(id, viewer),
        done: (id, outcome, by, sup) => need().done(id, outcome, by, sup),
      },
    }),
  );
  const need = (): Callbacks => {
    if (!callbacks) throw new HttpUnavailable('the callback queue is not built yet');
    return callbacks;
  };
  return {
    off: undefined,
    messaging,
    recordSent: (response, sent, by) => messaging.recordSent(response, sent, by),
    callbacks(permissions, queues) {
      // Business number → phone id, learned from the calls committed here (QUEUES_FILE names
      // phone ids, tasks carry the number). A number not seen yet goes to every agent.
      const phoneIds = new Map<string, string>();
      callbacks = createCallbacks({
        store: new CallbackStore(history.store.db),
        messages: store,
        messaging,
        client,
        book: permissions.book,
        push: o.push,
        log: o.log.child({ part: 'callbacks' }),
        followup: o.config.missedCallFollowup,
        onPermissionRequested: permissions.announce,
        ...(o.now ? { now: o.now } : {}),
        scope: o.scope,
        ...(queues
          ? {
              agentsFor: (n: string) => {
                const id = phoneIds.get(n);
                return id === undefined ? undefined : queues.agents(id);
              },
            }
          : {}),
      });
      const cb = callbacks;
      return {
        callbacks: cb,
        onCommitted(_before, after, version) {
          if (after) {
            const business = after.direction === 'USER_INITIATED' ? after.to : after.from;
            if (phoneIds.get(business) !== after.phoneId) phoneIds.set(business, after.phoneId);
          }
          // Every commit of an ended call (repeats change nothing; a late refinement is seen too).
          if (!after || after.state !== 'ended') return;
          // The same fact history records (recorder.ts), so the task's reason and the call's outcome agree.
          const fact = callFact(after, version);
          cb.take({ ...fact, customer: fact.customer ?? {} });
        },
      };
    },
    routes,
    handlers(onInbound) {
      const h: HandlerRegistry = {};
      for (const t of MESSAGING_ONLY) (h as Record<string, unknown>)[t] = (event: never, _entry: unknown, ctx: { signal: AbortSignal }) => (messaging.handlers[t] as (e: never, c: { signal: AbortSignal }) => Promise<void>)(event, ctx);
      h['chat.inbound_message.received'] = async (event, entry, ctx) => {
        // Both: the permission reply (if it is one) and the inbound message's record. Either failing retries both (both are idempotent).
        await onInbound(event, entry);
        await messaging.handlers['chat.inbound_message.received'](event, ctx);
      };
      return h;
    },
    async start() {
      await messaging.syncTemplates().catch((err: Error) => log.warn({ err: err.message }, 'template catalog not synced at start'));
      await messaging.loadUnsubscribers().catch((err: Error) => log.warn({ err: err.message }, 'opt-outs not loaded at start'));
      messaging.start();
    },
    stop() {
      messaging.stop();
    },
  };
}

/**
 * Messaging and the call-back queue as a feature (`wiring` is built with the shared parts:
 * the permissions need its `recordSent`): their routes, messaging's webhook handlers (an
 * inbound message goes to the permission replies first), the ended calls into the queue, and
 * the catalog, opt-outs and reconcile loop started after the engine.
 */
export function messagingFeature(wiring: MessagingWiring, queue: CallbackHook): Feature<{ permissions: Pick<Permissions, 'onInboundMessage'>; history: History | undefined }> {
  return {
    name: 'messaging',
    install(ctx) {
      ctx.routes(wiring.routes); // /api/messages, /api/templates, /api/callbacks
      ctx.webhooks(wiring.handlers(ctx.permissions.onInboundMessage));
      if (ctx.history) ctx.on('committed', 'call-back queue', (before, after, _event, version) => queue.onCommitted(before, after, version));
      ctx.lifecycle({ start: () => wiring.start(), close: () => wiring.stop() });
    },
  };
}
