/**
 * Call signaling (part 4 "Calls"), simulated chat users with real WebRTC, capture
 * settings and call media. Filled in by the calls work; mounted by the core.
 */
import { Hono } from 'hono';
import type { EmulatorModule } from '../app.ts';
import type { EmulatorContext } from '../context.ts';
import type { Env } from '../http.ts';

export function createCalls(_ctx: EmulatorContext): EmulatorModule {
  return { routes: new Hono<Env>(), control: new Hono<Env>() };
}
