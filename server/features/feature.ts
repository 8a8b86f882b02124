/**
 * How a feature plugs in. A feature is a folder with one `install(ctx)` that registers what
 * it adds — routes, webhook handlers, call bus listeners, start and close steps — through
 * the context; `server/switchboard.ts` lists the features and installs them in order.
 *
 *   export const reports: Feature = {
 *     name: 'reports',
 *     install(ctx) {
 *       ctx.routes(createReports({ auth: ctx.auth, history: ctx.history, ... }));
 *     },
 *   };
 *
 * The context holds the shared parts (config, store, log, metrics, clock, auth, hub, the
 * call engine, history, the audit trail, the Service's numbers) and the registries. A part
 * another feature made is not in it: a feature needing one takes it as an argument of a
 * function that makes the feature (`wallboardFeature(...)`), so the wiring shows it.
 */
import type { Hono } from 'hono';
import type { AuditService } from '../audit/index.ts';
import type { Auth, AuthEnv } from '../auth/index.ts';
import type { CallEngine } from '../calls/engine.ts';
import type { Config } from '../config/config.ts';
import type { CallBusEvents } from '../calls/apply.ts';
import type { Bus } from '../events/bus.ts';
import type { History } from '../history/index.ts';
import type { Logger } from '../log/logger.ts';
import type { Metrics } from '../ops/metrics.ts';
import type { Hub } from '../push/hub.ts';
import type { PhoneNumbersResource } from '../service/resources/phoneNumbers.ts';
import type { Store } from '../store/store.ts';
import type { HandlerRegistry } from '../webhooks/workers.ts';

export interface FeatureContext {
  config: Config;
  store: Store;
  log: Logger;
  metrics: Metrics;
  now: () => number;
  auth: Auth;
  hub: Hub;
  engine: CallEngine;
  /** The system of record (undefined when the server runs without one). */
  history: History | undefined;
  audit: AuditService;
  /** The Service's business numbers (undefined without a Service client). */
  numbers: Pick<PhoneNumbersResource, 'iterate'> | undefined;

  /** Routes, mounted on the app in the order the features are listed. */
  routes(routes: Hono<AuthEnv>): void;
  /** Webhook handlers by event type (a type handled twice is a wiring error: it throws). */
  webhooks(handlers: HandlerRegistry): void;
  /** A listener of the call bus: isolated (one that throws is logged and counted). */
  on: Bus<CallBusEvents>['on'];
  /** Steps run when the server starts (in feature order) and closes (in reverse order). */
  lifecycle(steps: { start?: () => Promise<void> | void; close?: () => Promise<void> | void }): void;
}

export interface Feature {
  name: string;
  install(ctx: FeatureContext): void;
}

/** The registries a list of features filled: what the wiring mounts, hands to the workers and runs. */
export interface Installed {
  routes: Array<Hono<AuthEnv>>;
  handlers: HandlerRegistry;
  start(): Promise<void>;
  close(): Promise<void>;
}

/** Install `features` in order on the shared parts and the call bus. */
export function installFeatures(parts: Omit<FeatureContext, 'routes' | 'webhooks' | 'on' | 'lifecycle'>, bus: Bus<CallBusEvents>, features: readonly Feature[]): Installed {
  const routes: Array<Hono<AuthEnv>> = [];
  const handlers: HandlerRegistry = {};
  const steps: Array<{ name: string; start?: () => Promise<void> | void; close?: () => Promise<void> | void }> = [];
  for (const f of features) {
    const ctx: FeatureContext = {
      ...parts,
      routes: (r) => void routes.push(r),
      webhooks: (h) => {
        for (const type of Object.keys(h) as Array<keyof HandlerRegistry>) {
          if (handlers[type]) throw new Error(`feature ${f.name}: webhook ${type} has a handler already`);
        }
        Object.assign(handlers, h);
      },
      on: (event, name, listener) => bus.on(event, `${f.name}: ${name}`, listener),
      lifecycle: (s) => void steps.push({ name: f.name, ...s }),
    };
    f.install(ctx);
  }
  return {
    routes,
    handlers,
    async start() {
      for (const s of steps) await s.start?.();
    },
    async close() {
      for (const s of [...steps].reverse()) {
        try {
          await s.close?.();
        } catch (err) {
          parts.log.error({ err, feature: s.name }, 'feature close failed');
        }
      }
    },
  };
}
