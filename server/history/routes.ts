/**
 * Call history over HTTP (design.md, "Wave 2 contracts"):
 *
 * - `GET /api/history/calls?from&to&customer&agent&businessNumber&direction&outcome&q&limit&cursor`
 *   → `{items: CallRecord[], cursor?}`, newest first (`from` inclusive, `to` exclusive);
 * - `GET /api/history/calls/:wacid` → one `CallRecord` with `timeline[]` and `media[]`.
 *
 * Searches: at most `searchesPerUser` (2) running per user on a node (429 with Retry-After);
 * on PostgreSQL they run on their own pool with a statement timeout (504 SEARCH_TIMEOUT).
 *
 * Roles: supervisor and ops see every call; an agent only the calls they held or had a leg
 * of (a transfer, a conference: `legs`; the `agent` filter is forced to them: asking for another agent's calls is 403, another
 * agent's call by wacid is 404, as an unknown one). Media carry `url` (the archive's
 * download route) for the roles that route serves (ops, supervisor) and only when the file
 * is in the archive; the server's file path never leaves the server.
 *
 * - `GET /api/ops/history-dead-letters?limit=N` (ops) → `{items: [{body, error, at}], total}`,
 *   newest first: facts the database refused to store (a data error), set aside by the
 *   writer so they never block the facts behind them (`limit` 1..1000, default 100).
 *
 * Errors in the API's shape (thrown `HttpError`s, rendered by `app.onError`): 400 BAD_REQUEST names the field and the rule
 * (unknown or repeated parameters too); 503 UNAVAILABLE when the history database does
 * not answer (calls go on: history is written once it is back).
 */
import { Hono } from 'hono';
import { z } from 'zod';
import type { User } from '../../shared/protocol.ts';
import type { Auth, AuthEnv } from '../auth/index.ts';
import { HttpError, HttpTooManyRequests } from '../ops/errors.ts';
import { archiveUrl } from '../archive/index.ts';
import { segment } from '../archive/index.ts';
import type { Logger } from '../log/logger.ts';
import { BSUID_RE, E164_RE } from '../service/validate.ts';
import { CallSearch, type CallRecord, type MediaKind, type MediaRecord } from './schema.ts';
import { HistoryQueryError, type HistoryStore } from './store.ts';
import type { HistoryWriter } from './writer.ts';
import { LIMIT_DEFAULT, LIMIT_MAX } from '../ops/query.ts';
import { limitParam, parseQuery } from '../ops/validate.ts';

export interface HistoryRoutesOptions {
  /** Searches one user may have running at once on this node (default 2); past it 429. */
  searchesPerUser?: number;
  auth: Auth;
  history: { store: Pick<HistoryStore, 'searchCalls' | 'getCall'>; writer?: Pick<HistoryWriter, 'deadLetters'> };
  log?: Pick<Logger, 'warn'>;
}

const FILE_EXTENSION: Record<MediaKind, string> = { recording: '.ogg', transcription: '.json' };

/** Supervisors and ops see all calls; everyone else (agents) their own. */
const seesAll = (u: User) => u.roles.includes('supervisor') || u.roles.includes('ops');
/** The agent held the call, or had a leg of it (a transfer, a conference): it is one of theirs. */
const tookPart = (call: CallRecord, agent: string) => call.agent === agent || (call.legs ?? []).some((l) => l.agent === agent);
/** The archive's download route serves these roles (server/archive/routes.ts). */
const mayDownload = (u: User) => u.roles.includes('supervisor') || u.roles.includes('ops');

/** The archive download URL of an asset (the file the archive writes for it). */
export function mediaUrl(wacid: string, mediaAssetId: string, kind: MediaKind): string | undefined {
  try {
    return archiveUrl(segment('wacid', wacid), `${segment('mediaAssetId', mediaAssetId)}${FILE_EXTENSION[kind]}`);
  } catch {
    return undefined; // an id the archive cannot use as a file name: it has no file
  }
}

function forClient(call: CallRecord, user: User): CallRecord {
  const media = call.media.map((m): MediaRecord => {
    const { path: _path, ...rest } = m;
    const url = m.status === 'available' && mayDownload(user) ? mediaUrl(call.wacid, m.mediaAssetId, m.kind) : undefined;
    return url !== undefined ? { ...rest, url } : rest;
  });
  return { ...call, media };
}

/** The search query: the fields of `CallSearch` only, each once, with the checks zod names best here. */
const SearchQuery = z.strictObject(CallSearch.shape).superRefine((q, ctx) => {
  if (q.customer !== undefined && !E164_RE.test(q.customer) && !BSUID_RE.test(q.customer)) {
    ctx.addIssue({ code: 'custom', path: ['customer'], message: 'must be an E.164 phone number (+ and 7 to 15 digits) or a BSUID (two uppercase letters, a period, then letters or digits)' });
  }
  if (q.from !== undefined && q.to !== undefined && Date.parse(q.from) >= Date.parse(q.to)) ctx.addIssue({ code: 'custom', path: ['to'], message: 'must be later than from' });
});

/** `GET` of the set-aside facts: `limit` (other parameters are ignored). */
const DeadLetterQuery = z.object({ limit: limitParam(LIMIT_DEFAULT, LIMIT_MAX) });

export function createHistoryRoutes(o: HistoryRoutesOptions): Hono<AuthEnv> {
  const app = new Hono<AuthEnv>();
  const guard = o.auth.requireUser('agent', 'supervisor', 'ops');
  const perUser = o.searchesPerUser ?? 2;
  const searching = new Map<string, number>();

  const unavailable = (err: unknown): HttpError => {
    o.log?.warn({ err: { message: (err as Error).message } }, 'history read failed');
    return new HttpError(503, 'UNAVAILABLE', 'the call history database is not answering; try again shortly');
  };

  app.get('/api/history/calls', guard, async (c) => {
    const user = c.get('user');
    let query: CallSearch = parseQuery(c, SearchQuery);
    if (!seesAll(user)) {
      if (query.agent !== undefined && query.agent !== user.name) throw new HttpError(403, 'FORBIDDEN', 'agent: agents see only their own calls');
      query = { ...query, agent: user.name };
    }
    // A user's searches in flight are bounded: slow searches (words matching nothing over many
    // rows) from one user cannot fill the search pool for everyone.
    const running = searching.get(user.name) ?? 0;
    if (running >= perUser) throw new HttpTooManyRequests(`you have ${running} searches running (at most ${perUser} at a time); try again when one has finished`, 1000);
    searching.set(user.name, running + 1);
    try {
      const page = await o.history.store.searchCalls(query);
      return c.json({ ...page, items: page.items.map((call) => forClient(call, user)) });
    } catch (err) {
      if (err instanceof HistoryQueryError) throw new HttpError(400, 'BAD_REQUEST', err.message);
      // PostgreSQL stopped it at the search statement timeout.
      if ((err as { code?: unknown }).code === '57014') throw new HttpError(504, 'SEARCH_TIMEOUT', 'the search took too long and was stopped; narrow it (a shorter date range, a customer, an agent)');
      throw unavailable(err);
    } finally {
      const n = (searching.get(user.name) ?? 1) - 1;
      if (n > 0) searching.set(user.name, n);
      else searching.delete(user.name);
    }
  });

  app.get('/api/history/calls/:wacid', guard, async (c) => {
    const user = c.get('user');
    const wacid = c.req.param('wacid');
    if (wacid.length > 300) throw new HttpError(400, 'BAD_REQUEST', 'wacid: must be at most 300 characters');
    let call;
    try {
      call = await o.history.store.getCall(wacid);
    } catch (err) {
      throw unavailable(err);
    }
    // Another agent's call answers as an unknown one: its existence is not theirs to learn.
    if (!call || (!seesAll(user) && !tookPart(call, user.name))) throw new HttpError(404, 'NOT_FOUND', `no call ${JSON.stringify(wacid)} in the history`);
    return c.json({ ...forClient(call, user), timeline: call.timeline });
  });

  app.get('/api/ops/history-dead-letters', o.auth.requireUser('ops'), async (c) => {
    const { limit } = parseQuery(c, DeadLetterQuery);
    if (!o.history.writer) return c.json({ items: [], total: 0 });
    let page;
    try {
      page = await o.history.writer.deadLetters(limit);
    } catch (err) {
      throw unavailable(err);
    }
    c.header('Cache-Control', 'private, no-store');
    return c.json(page);
  });

  return app;
}
