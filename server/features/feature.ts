/**
 * How a feature plugs in. A feature is a folder with one `install(ctx)` that registers what
 * it adds — routes, webhook handlers, call bus listeners, readiness checks, start and close
 * steps — through the context; `server/switchboard.ts` lists the features and installs them
 * in order.
 *
 *   export const reportsFeature: Feature<{ auth: Auth; history: History | undefined; ... }> = {
 *     name: 'reports',
 *     install: (ctx) => ctx.routes(createReports({ auth: ctx.auth, history: ctx.history, ... })),
 *   };
 *
 * A feature's type names the shared parts it uses (`Feature<Needs>`); the wiring hands every
 * feature the same parts (`server/calling.ts`), and the compiler checks that they hold each
 * feature's needs. So this file imports none of the feature folders (audit/, history/,
 * webhooks/, …): they sit above it and import it. A part another feature made is not a
 * shared part: a feature needing one takes it as an argument of a function that makes the
 * feature (`wallboardFeature(...)`), so the wiring shows it.
 */
import type { Env, Hono } from 'hono';
import type { CallBusEvents } from '../calls/ports.ts';
import type { Bus } from '../events/bus.ts';
import type { HandlerRegistry } from '../events/handlers.ts';
import type { Logger } from '../log/logger.ts';
import type { ReadinessCheck } from '../ops/readiness.ts';

/** Start and close steps of one feature. */
export interface Steps {
  start?: () => Promise<void> | void;
  close?: () => Promise<void> | void;
}

/** What a feature registers through. */
export interface Registries {
  /** Routes, mounted on the app in the order the features are listed. */
  routes<E extends Env>(routes: Hono<E>): void;
  /** Webhook handlers by event type (a type handled twice is a wiring error: it throws). */
  webhooks(handlers: HandlerRegistry): void;
  /** A listener of the call bus: isolated (one that throws is logged and counted). */
  on: Bus<CallBusEvents>['on'];
  /** A `/readyz` check. */
  readiness(check: ReadinessCheck): void;
  /** Steps run when the server starts (in feature order, after the engine) and closes (in reverse order). */
  lifecycle(steps: Steps): void;
}

export type FeatureContext<Parts> = Parts & Registries;

export interface Feature<Needs> {
  name: string;
  install: (ctx: FeatureContext<Needs>) => void;
}

/** The registries a list of features filled: what the wiring mounts, hands to the workers and runs. */
export interface Installed {
  /** Mount every feature's routes on `app`, in feature order. */
  mount<A extends Env>(app: Hono<A>): void;
  handlers: HandlerRegistry;
  readiness: ReadinessCheck[];
  start(): Promise<void>;
  close(): Promise<void>;
}

/** Install `features` in order on the shared parts and the call bus. */
export function installFeatures<Parts extends { log: Pick<Logger, 'error'> }>(parts: Parts, bus: Bus<CallBusEvents>, features: ReadonlyArray<Feature<Parts>>): Installed {
  const mounts: Array<<A extends Env>(app: Hono<A>) => void> = [];
  const installed: Installed = { mount: (app) => mounts.forEach((m) => m(app)), handlers: {}, readiness: [], start, close };
  const steps: Array<Steps & { name: string }> = [];
  for (const f of features) {
    const registries: Registries = {
      routes: (r) => void mounts.push((app) => void app.route('/', r)),
      webhooks: (h) => {
        for (const type of Object.keys(h) as Array<keyof HandlerRegistry>) {
          if (installed.handlers[type]) throw new Error(`feature ${f.name}: webhook ${type} has a handler already`);
        }
        Object.assign(installed.handlers, h);
      },
      on: (event, name, listener) => bus.on(event, `${f.name}: ${name}`, listener),
      readiness: (check) => void installed.readiness.push(check),
      lifecycle: (s) => void steps.push({ name: f.name, ...s }),
    };
    f.install({ ...parts, ...registries });
  }
  async function start(): Promise<void> {
    for (const s of steps) await s.start?.();
  }
  async function close(): Promise<void> {
    for (const s of [...steps].reverse()) {
      try {
        await s.close?.();
      } catch (err) {
        parts.log.error({ err, feature: s.name }, 'feature close failed');
      }
    }
  }
  return installed;
}
