/**
 * Dead-lettered webhook events over HTTP, for ops (role `ops`; 401 without a session, 403
 * for other roles, errors in the Service's shape):
 *
 * - `GET /api/ops/dead-letters?limit=N` → `{ items: [...] }`, newest first; `limit` is an
 *   integer 1..1000, default 100. Each item: `streamId` (what replay takes), `eventId`,
 *   `type`, `error`, `at` (epoch ms it was dead-lettered), `attempts` (null when not
 *   recorded), `deliveries`, `receivedAt`, `replayOf` (when it was itself a replay), `body`
 *   (the raw event JSON the Service sent; headers, and so the signature, are never stored).
 * - `POST /api/ops/dead-letters/replay` with `{"streamIds": [...]}` or `{"all": true}` →
 *   `{ replayed: [{ streamId, newStreamId, eventId, type }], notFound: [...] }`. Each dead
 *   letter goes back on the event stream and leaves the dead list in one atomic store step
 *   (`DeadLetters.replayDeadLetters`); the workers then handle it like a new delivery.
 *
 * Known secret values (API key, webhook and session secrets) are scrubbed from every answer
 * as a second line of defence; an item where that happened says `redacted: true`.
 */
import { z } from 'zod';
import { Hono, type Context } from 'hono';
import { clientAddress, type Auth, type AuthEnv } from '../auth/index.ts';
import type { Audit } from '../audit/trail.ts';
import { secretsOf, type Config } from '../config/config.ts';
import type { Feature } from '../features/feature.ts';
import { LIMIT_DEFAULT, LIMIT_MAX } from '../ops/query.ts';
import { secretScrubber, type Logger } from '../log/logger.ts';
import { eventTypeLabel, type Metrics } from '../ops/metrics.ts';
import type { DeadLetter, DeadLetters } from '../store/event-log.ts';
import { limitParam, parseBody, parseQuery } from '../ops/validate.ts';

export const DEAD_LETTERS_PATH = '/api/ops/dead-letters';
export { LIMIT_DEFAULT, LIMIT_MAX } from '../ops/query.ts';
/** Most stream ids one replay request may name. */
export const REPLAY_MAX_IDS = 1000;

const STREAM_ID = /^\d{1,20}-\d{1,20}$/;

export interface DeadLetterItem {
  streamId: string;
  eventId: string;
  type: string;
  error: string;
  at: number;
  attempts: number | null;
  deliveries: number;
  receivedAt: number;
  replayOf?: string;
  body: string;
  redacted?: true;
}

export interface DeadLetterRoutesOptions {
  auth: Auth;
  store: Pick<DeadLetters, 'listDeadLetters' | 'replayDeadLetters'>;
  log: Logger;
  /** Where `switchboard_webhook_replayed_total{type}` lives (the app's registry). */
  metrics?: Metrics;
  /** Secret values never to answer with (scrubbed, like the logger does). */
  secrets?: readonly string[];
  /** The audit trail: every replay (who, which, how many). */
  audit?: Audit | undefined;
}


const REPLAY_BODY = `must be {"streamIds": ["<stream id>", ...]} (1 to ${REPLAY_MAX_IDS} ids) or {"all": true}`;

/** The replay request: the ids (or `'all'`), or the message of the 400. */
/** The replay request: every dead letter, or 1 to REPLAY_MAX_IDS stream ids (repeats once). */
export const ReplayBody = z
  .strictObject({
    all: z.literal(true, 'must be true').optional(),
    streamIds: z
      .array(z.string({ error: 'must be a stream id like "1700000000000-0"' }).regex(STREAM_ID, 'must be a stream id like "1700000000000-0"'), `must be an array of 1 to ${REPLAY_MAX_IDS} stream ids`)
      .min(1, `must be an array of 1 to ${REPLAY_MAX_IDS} stream ids`)
      .max(REPLAY_MAX_IDS, `must be an array of 1 to ${REPLAY_MAX_IDS} stream ids`)
      .optional(),
  })
  .superRefine((b, ctx) => {
    if ((b.all === undefined) === (b.streamIds === undefined)) ctx.addIssue({ code: 'custom', path: [], message: REPLAY_BODY });
  })
  .transform((b): readonly string[] | 'all' => (b.all ? 'all' : [...new Set(b.streamIds)]));

/** `GET` of the list: `limit` (other parameters are ignored). */
const ListQuery = z.object({ limit: limitParam(LIMIT_DEFAULT, LIMIT_MAX) });

export function createDeadLetterRoutes(o: DeadLetterRoutesOptions): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  const guard = o.auth.requireUser('ops');
  const scrub = secretScrubber(o.secrets ?? []) ?? ((s: string) => s);
  const replayed = o.metrics?.counter('switchboard_webhook_replayed_total', 'Dead-lettered webhook events put back on the stream by ops, by type.', ['type']);

  const item = (d: DeadLetter): DeadLetterItem => {
    const e = d.entry;
    const body = scrub(e.body);
    const error = scrub(d.error);
    return {
      streamId: e.streamId,
      eventId: e.eventId,
      type: e.type,
      error,
      at: d.at,
      attempts: typeof d.attempts === 'number' ? d.attempts : null,
      deliveries: e.deliveries,
      receivedAt: e.receivedAt,
      ...(e.replayOf !== undefined ? { replayOf: e.replayOf } : {}),
      body,
      ...(body !== e.body || error !== d.error ? { redacted: true as const } : {}),
    };
  };

  const noStore = (c: Context) => c.header('Cache-Control', 'private, no-store');

  app.get(DEAD_LETTERS_PATH, guard, async (c) => {
    const { limit } = parseQuery(c, ListQuery);
    const items = (await o.store.listDeadLetters(limit)).map(item);
    noStore(c);
    return c.json({ items });
  });

  app.post(`${DEAD_LETTERS_PATH}/replay`, o.auth.sameOriginWrites, guard, async (c) => {
    const which = await parseBody(c, ReplayBody, '{"streamIds": [...]} or {"all": true}');
    const res = await o.store.replayDeadLetters(which);
    for (const r of res.replayed) replayed?.inc({ type: eventTypeLabel(r.type) });
    const log = o.log.child({ requestId: c.get('requestId') });
    log.info(
      { user: c.get('user').name, all: which === 'all', replayed: res.replayed, notFound: res.notFound },
      'dead letters replayed',
    );
    o.audit?.({
      action: 'dead-letters.replay',
      actor: c.get('user').name,
      target: which === 'all' ? 'all' : which.slice(0, 20).join(' ') + (which.length > 20 ? ` (+${which.length - 20})` : ''),
      address: clientAddress(c),
      detail: { all: which === 'all', replayed: res.replayed.length, notFound: res.notFound.length, types: [...new Set(res.replayed.map((r) => r.type))] },
    });
    noStore(c);
    return c.json(res);
  });

  return app;
}

/** The dead-letter routes as a feature (ops: list and replay). */
export const deadLettersFeature: Feature<{ auth: Auth; store: DeadLetterRoutesOptions['store']; log: Logger; config: Config; metrics: Metrics; audit: { record: Audit } }> = {
  name: 'dead letters',
  install(ctx) {
    ctx.routes(createDeadLetterRoutes({ auth: ctx.auth, store: ctx.store, log: ctx.log.child({ part: 'ops' }), secrets: secretsOf(ctx.config), metrics: ctx.metrics, audit: ctx.audit.record }));
  },
};
