/**
 * Per (business number, user) rules of business-initiated calls the provider enforces
 * (calling-facts.md), kept by the emulated Service:
 * - at most `maxConnectedPerDay` (default 5) connected calls per 24 hours to one user: one
 *   more connect is refused 400 `BAD_REQUEST` with `chatApiError.code` 138012 and
 *   `nextAllowedTime` (the interface names no code or status for this; our choice, shaped
 *   like the permission-request limit's 138009 refusal);
 * - unanswered calls in a row: at 2 the user is prompted to review the permission (the
 *   provider's message to the user; the interface shows no event for the business, so it is
 *   only visible through the control API), at 4 the permission is revoked (connect → 138006);
 *   an answered call resets the run.
 *
 * The emulator keeps its own figures on purpose (it plays the Service; sharing the bridge's
 * constants would hide a wrong one on both sides).
 */
import { Hono } from 'hono';
import type { EmulatorContext } from '../context.ts';
import { badRequest, type Env } from '../http.ts';
import { readJson } from '../webhooks.ts';

const DAY = 24 * 3600 * 1000;
/** Provider code of the connected-calls-per-day refusal (our choice; the interface names none). */
export const DAILY_CALL_LIMIT_CODE = 138012;
export const DEFAULT_MAX_CONNECTED_PER_DAY = 5;
export const UNANSWERED_REVIEW_AT = 2;
export const UNANSWERED_REVOKE_AT = 4;

interface PairRecord {
  /** Emulated epoch ms of connected calls (the user answered) in the last 24 h. */
  connected: number[];
  unansweredInARow: number;
  /** When the run reached the review prompt (cleared by an answered call). */
  reviewPromptedAt?: number;
  /** When the run revoked the permission (cleared by a new grant or an answered call). */
  revokedAt?: number;
}

export interface UserLimits {
  /** The refusal of a new connect to this user, or undefined when it may go. */
  refusal(business: string, user: string): { status: 400; code: 'BAD_REQUEST'; message: string; chatApiError: { code: number; message: string; nextAllowedTime: string } } | undefined;
  /** The user answered a business-initiated call. */
  answered(business: string, user: string): void;
  /** A business-initiated call rang out unanswered; revokes the permission at the 4th in a row. */
  unanswered(business: string, user: string): void;
  /** Why there is no permission when the run revoked it (for the 138006 message). */
  revokedWhy(business: string, user: string): string | undefined;
  control: Hono<Env>;
}

export function createUserLimits(ctx: EmulatorContext): UserLimits {
  const pairs = new Map<string, PairRecord>();
  let maxConnectedPerDay = DEFAULT_MAX_CONNECTED_PER_DAY;
  const key = (business: string, user: string) => `${business}|${user}`;
  const rec = (business: string, user: string) => {
    const k = key(business, user);
    let r = pairs.get(k);
    if (!r) pairs.set(k, (r = { connected: [], unansweredInARow: 0 }));
    r.connected = r.connected.filter((t) => t > ctx.clock.now() - DAY);
    return r;
  };

  const view = (business: string, user: string) => {
    const r = rec(business, user);
    return {
      business,
      user,
      maxConnectedPerDay,
      connectedLast24h: r.connected.length,
      connected: r.connected.map((t) => new Date(t).toISOString()),
      unansweredInARow: r.unansweredInARow,
      reviewPrompted: r.reviewPromptedAt !== undefined,
      ...(r.reviewPromptedAt !== undefined ? { reviewPromptedAt: new Date(r.reviewPromptedAt).toISOString() } : {}),
      revoked: r.revokedAt !== undefined && !ctx.permissions.has(key(business, user)),
      ...(r.revokedAt !== undefined ? { revokedAt: new Date(r.revokedAt).toISOString() } : {}),
    };
  };

  const control = new Hono<Env>();
  control.get('/callLimits', (c) => {
    const business = c.req.query('business');
    const user = c.req.query('user');
    if (!business || !user) return badRequest(c, 'business, user: required query parameters');
    return c.json(view(business, user));
  });
  control.patch('/callLimits', async (c) => {
    const b = await readJson(c.req.raw);
    if (!b) return badRequest(c, 'body: must be a JSON object');
    const m = b.maxConnectedPerDay;
    if (typeof m !== 'number' || !Number.isInteger(m) || m < 1) return badRequest(c, 'maxConnectedPerDay: an integer >= 1');
    maxConnectedPerDay = m;
    return c.json({ maxConnectedPerDay });
  });

  return {
    refusal(business, user) {
      const r = rec(business, user);
      if (r.connected.length < maxConnectedPerDay) return undefined;
      const nextAt = r.connected[r.connected.length - maxConnectedPerDay]! + DAY;
      const next = new Date(nextAt).toISOString();
      return {
        status: 400,
        code: 'BAD_REQUEST',
        message: `to: business-initiated call limit reached for ${business} and this user (${maxConnectedPerDay} connected calls per 24 hours); next call allowed at ${next}`,
        chatApiError: { code: DAILY_CALL_LIMIT_CODE, message: 'Business-initiated calls limit reached for this user', nextAllowedTime: next },
      };
    },
    answered(business, user) {
      const r = rec(business, user);
      r.connected.push(ctx.clock.now());
      r.unansweredInARow = 0;
      delete r.reviewPromptedAt;
      delete r.revokedAt;
    },
    unanswered(business, user) {
      const r = rec(business, user);
      r.unansweredInARow++;
      if (r.unansweredInARow >= UNANSWERED_REVIEW_AT && r.reviewPromptedAt === undefined) r.reviewPromptedAt = ctx.clock.now();
      if (r.unansweredInARow >= UNANSWERED_REVOKE_AT) {
        ctx.permissions.delete(key(business, user));
        r.revokedAt = ctx.clock.now();
        // The revocation uses up the run: a new grant starts counting afresh.
        r.unansweredInARow = 0;
        delete r.reviewPromptedAt;
      }
    },
    revokedWhy(business, user) {
      const r = pairs.get(key(business, user));
      return r?.revokedAt !== undefined ? `the permission was revoked after ${UNANSWERED_REVOKE_AT} unanswered calls in a row` : undefined;
    },
    control,
  };
}
