/**
 * Call signaling (part 4 "Calls"), simulated chat users with real WebRTC, phone number
 * `settings` (calling, capture) and call media. Mounted by the core under `/v2` and
 * `/_emulator`.
 */
import { Hono } from 'hono';
import type { EmulatorModule } from '../app.ts';
import type { EmulatorContext } from '../context.ts';
import type { Env } from '../http.ts';
import { createCapture, type Capture } from './capture.ts';
import { createCalls as createCallEngine } from './calls.ts';
import type { Calls } from './model.ts';

export type { CallView, StartCallOptions, TerminatePayload, EndReason, CallState, Direction } from './model.ts';
export type { MediaStats } from './peer.ts';
export type { AudioSource } from './audio.ts';

export interface CallsModule extends EmulatorModule {
  calls: Calls;
  capture: Capture;
}

export function createCalls(ctx: EmulatorContext): CallsModule {
  const capture = createCapture(ctx);
  const calls = createCallEngine(ctx, capture);
  const routes = new Hono<Env>();
  routes.route('/', capture.routes);
  routes.route('/', calls.routes);
  const control = new Hono<Env>();
  control.route('/', capture.control);
  control.route('/', calls.control);
  return { routes, control, calls, capture };
}
