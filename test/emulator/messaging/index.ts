/**
 * The emulator's messaging and management surface (everything of part 4 but the call
 * signaling and the phone-number `settings` endpoints). Mounted by the emulator core:
 * `routes` under `/v2` (after auth and rate limits), `control` under `/_emulator`.
 *
 * NOTE FOR THE CORE: timers run on `ctx.setTimer`, so `ctx.close()` already cancels
 * them. `close()` (safe to call twice) is there for a messaging module closed on its
 * own; calling it from the core's close is harmless.
 *
 * Seeding: if `ctx.phoneNumbers` is empty when `createMessaging` runs, it registers one
 * business account with two numbers (see SEED in state.ts); otherwise it builds the
 * business accounts from the numbers already registered there.
 *
 * Paths, knobs and payload shapes are listed in README.md beside this file.
 */
import { Hono } from 'hono';
import type { EmulatorContext } from '../context.ts';
import type { Env } from '../http.ts';
import { accountRoutes } from './accounts.ts';
import { channelRoutes } from './channels.ts';
import { chatMessageRoutes } from './chat-messages.ts';
import { controlRoutes } from './control.ts';
import { customerDataRoutes } from './customer-data.ts';
import { groupRoutes } from './groups.ts';
import { defaultKnobs, Knobs } from './knobs.ts';
import { Scheduler } from './scheduler.ts';
import { createState, type Runtime } from './state.ts';
import { templateRoutes } from './templates.ts';

export { Knobs, defaultKnobs } from './knobs.ts';
export { PERMISSION_LIMIT_CODE } from './chat-messages.ts';
export { SEED } from './state.ts';

export interface Messaging {
  routes: Hono<Env>;
  control: Hono<Env>;
  /** Clears pending timers; safe to call twice. Added for the core to call on close. */
  close(): void;
}

export interface MessagingOptions {
  /** Initial knobs (see knobs.ts); the rest take their defaults. */
  knobs?: Partial<Knobs>;
}

export function createMessaging(ctx: EmulatorContext, options: MessagingOptions = {}): Messaging {
  const knobs: Knobs = Knobs.parse({ ...defaultKnobs(), ...options.knobs });
  const sched = new Scheduler(ctx);
  const iso = () => new Date(ctx.clock.now()).toISOString();
  const rt: Runtime = { ctx, knobs, sched, state: createState(ctx, iso()), iso };

  const routes = new Hono<Env>();
  routes.route('/', channelRoutes(rt));
  routes.route('/', chatMessageRoutes(rt));
  routes.route('/', templateRoutes(rt));
  routes.route('/', accountRoutes(rt));
  routes.route('/', groupRoutes(rt));
  routes.route('/', customerDataRoutes(rt));

  return { routes, control: controlRoutes(rt), close: () => sched.close() };
}
