/**
 * The emulator's messaging and management surface (everything of part 4 but the call
 * signaling and the phone-number `settings` endpoints). Mounted by the emulator core:
 * `routes` under `/v2`, `control` under `/_emulator`.
 */
import { Hono } from 'hono';
import type { EmulatorContext } from '../context.ts';
import type { Env } from '../http.ts';

export interface Messaging {
  routes: Hono<Env>;
  control: Hono<Env>;
}

export function createMessaging(_ctx: EmulatorContext): Messaging {
  return { routes: new Hono<Env>(), control: new Hono<Env>() };
}
