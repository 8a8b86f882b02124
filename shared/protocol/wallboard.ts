/** The wallboard (GET /api/wallboard returns the same object; `wallboard` frames push it). */
import { z } from 'zod';
import { userName } from './fields.ts';
import { AgentStatus } from './views.ts';

/** One business number's figures: live counts now, the rest for today (the server's TZ). */
export const WallboardNumber = z.object({
  businessNumber: z.string(),
  waiting: z.number().int().min(0),
  ringing: z.number().int().min(0),
  longestWaitMs: z.number().int().min(0),
  offered: z.number().int().min(0),
  answered: z.number().int().min(0),
  abandoned: z.number().int().min(0),
  missed: z.number().int().min(0),
  /** 0..1: the share of offered calls answered within SLA_SECONDS. */
  serviceLevel: z.number().min(0).max(1),
  asaMs: z.number().int().min(0),
  ahtMs: z.number().int().min(0),
  /** (added) transfers made in today's calls to this number (cold sent, warm completed). */
  transfers: z.number().int().min(0),
});
export type WallboardNumber = z.infer<typeof WallboardNumber>;
export const WallboardAgent = z.object({ name: userName, status: AgentStatus, reason: z.string().optional(), since: z.number(), callsToday: z.number().int().min(0), transfersToday: z.number().int().min(0) });
export type WallboardAgent = z.infer<typeof WallboardAgent>;
/** (added: `timeZone`) the IANA zone whose day "today" is (the server's), so the page can say so. */
export const Wallboard = z.object({ numbers: z.array(WallboardNumber), agents: z.array(WallboardAgent), at: z.number(), timeZone: z.string().max(100).optional() });
export type Wallboard = z.infer<typeof Wallboard>;
/** To supervisors, periodically and when calls change. */
export const WallboardMsg = Wallboard.extend({ type: z.literal('wallboard') });
