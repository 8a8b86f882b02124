/**
 * The wallboard: `GET /api/wallboard` (supervisors) and the `wallboard`
 * push to supervisors, every `periodMs` and soon after a call changes. The figures come
 * from `computeWallboard` over shared sources only (history's rows of today, the store's
 * live calls), so two nodes show the same board; no node's memory is counted, except the
 * agents' states (the board, which every node keeps in step over pub/sub).
 *
 * The periodic push is made by one node per period (a short lock in the store), so
 * supervisors get one frame per period however many nodes there are.
 */
import { Hono } from 'hono';
import type { ServerMsg, Wallboard } from '../../shared/protocol.ts';
import type { Auth, AuthEnv } from '../auth/index.ts';
import type { AgentBoard } from '../calls/agents.ts';
import type { History } from '../history/index.ts';
import type { Logger } from '../log/logger.ts';
import { HttpError } from '../ops/errors.ts';
import type { Hub } from '../push/hub.ts';
import type { CallRecord, Store } from '../store/store.ts';
import type { Feature } from '../features/feature.ts';
import { computeWallboard, startOfDay, type AgentInput, type DayCall, type DayTransfers, type LiveCall } from './compute.ts';

export interface WallboardOptions {
  auth: Pick<Auth, 'requireUser'>;
  store: Pick<Store, 'listLiveCalls' | 'setNX' | 'get' | 'set'>;
  history: Pick<History, 'store'> | undefined;
  hub: Pick<Hub, 'toRole' | 'node' | 'hasRole' | 'onJoin'>;
  /** Agents' states; default none. */
  agents?: (live: readonly CallRecord[], now: number) => AgentInput[];
  slaSeconds: number;
  log: Logger;
  now?: () => number;
  /** Push period (default 5 s); 0: no periodic push. */
  periodMs?: number;
}

/**
 * Set while a supervisor is connected to some node (each such node refreshes it): with
 * nobody watching, no node reads the day's history and every call record to build a board.
 */
const WATCHED_KEY = 'wallboard-watched';
const WATCHED_TTL_MS = 15_000;
const WATCHED_REFRESH_MS = 5_000;


/**
 * The calls history received in [from, to) (`to` open: until now), read in pages of 100 up
 * to `maxPages`; `complete` is false when more were left (the wallboard shows what it read;
 * reports refuse the range).
 */
export async function readCalls(history: Pick<History, 'store'>, range: { from: string; to?: string }, maxPages: number): Promise<{ calls: DayCall[]; complete: boolean }> {
  const out: DayCall[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < maxPages; page++) {
    const r = await history.store.searchCalls({ ...range, limit: 100, ...(cursor ? { cursor } : {}) });
    out.push(...r.items);
    if (!r.cursor) return { calls: out, complete: true };
    cursor = r.cursor;
  }
  return { calls: out, complete: false };
}

export function createWallboard(o: WallboardOptions) {
  const now = o.now ?? Date.now;
  const periodMs = o.periodMs ?? 5_000;
  let timer: NodeJS.Timeout | undefined;
  let soon: NodeJS.Timeout | undefined;
  let refresh: NodeJS.Timeout | undefined;
  let markedAt = -Infinity;

  /** This node holds a supervisor's socket: say so in the store (at most every few seconds). */
  function mark(force = false): void {
    if (!o.hub.hasRole('supervisor')) return;
    const t = Date.now();
    if (!force && t - markedAt < WATCHED_REFRESH_MS / 2) return;
    markedAt = t;
    o.store.set(WATCHED_KEY, o.hub.node, WATCHED_TTL_MS).catch((err: Error) => {
      markedAt = -Infinity;
      o.log.warn({ err: err.message }, 'wallboard: watchers not recorded');
    });
  }

  async function watched(): Promise<boolean> {
    return o.hub.hasRole('supervisor') || (await o.store.get(WATCHED_KEY)) !== null;
  }

  /** Today's calls from history, folded into groups (one statement, however busy the day). */
  async function today(t: number): Promise<DayCall[]> {
    if (!o.history) return [];
    return o.history.store.callGroups({ from: new Date(startOfDay(t)).toISOString() }, o.slaSeconds * 1000);
  }

  /** Today's transfers per number and agent (one statement). */
  async function todaysTransfers(t: number): Promise<DayTransfers[]> {
    if (!o.history) return [];
    return o.history.store.transferCounts({ from: new Date(startOfDay(t)).toISOString() });
  }

  async function current(): Promise<Wallboard> {
    const t = now();
    const [calls, transfers, recs] = await Promise.all([today(t), todaysTransfers(t), o.store.listLiveCalls()]);
    // listLiveCalls gives the calls not ended only.
    const live: LiveCall[] = recs.map((r) => ({
      businessNumber: String((r.direction === 'BUSINESS_INITIATED' ? r.from : r.to) ?? ''),
      direction: r.direction === 'BUSINESS_INITIATED' ? 'BUSINESS_INITIATED' : 'USER_INITIATED',
      state: String(r.state),
      createdAt: typeof r.createdAt === 'number' ? r.createdAt : t,
    }));
    return computeWallboard({ today: calls, transfers, live, agents: o.agents?.(recs, t) ?? [], now: t, slaSeconds: o.slaSeconds });
  }

  async function push(): Promise<void> {
    if (!(await watched())) return;
    const board = await current();
    o.hub.toRole('supervisor', { type: 'wallboard', ...board } satisfies ServerMsg);
  }

  const routes = new Hono<AuthEnv>();
  routes.get('/api/wallboard', o.auth.requireUser('supervisor'), async (c) => {
    try {
      return c.json(await current());
    } catch (err) {
      o.log.warn({ err: { message: (err as Error).message } }, 'wallboard failed');
      throw new HttpError(503, 'UNAVAILABLE', 'the wallboard sources (store, history) are not answering; try again shortly');
    }
  });

  return {
    routes,
    current,
    start(): void {
      if (!refresh) {
        o.hub.onJoin((role) => void (role === 'supervisor' && mark(true)));
        refresh = setInterval(() => mark(true), WATCHED_REFRESH_MS);
        refresh.unref();
      }
      if (periodMs <= 0 || timer) return;
      timer = setInterval(() => {
        // One node per period pushes (the lock lapses before the next period).
        void o.store
          .setNX('wallboard-push', o.hub.node, Math.max(100, periodMs - 200))
          .then((mine) => (mine ? push() : undefined))
          .catch((err: Error) => o.log.warn({ err: err.message }, 'wallboard push failed'));
      }, periodMs);
      timer.unref();
    },
    /** A call changed: push soon (debounced per node). */
    changed(): void {
      if (soon) return;
      soon = setTimeout(() => {
        soon = undefined;
        push().catch((err: Error) => o.log.warn({ err: err.message }, 'wallboard push failed'));
      }, 500);
      soon.unref();
    },
    close(): void {
      if (timer) clearInterval(timer);
      if (soon) clearTimeout(soon);
      if (refresh) clearInterval(refresh);
      timer = soon = refresh = undefined;
    },
  };
}

/**
 * The agents' states: ringing or on a call from the live calls (the store, so a call held
 * through another node counts); otherwise the board's own derivation (`agent.state`: offline
 * only with no connection on any node, after-call work, away with its reason, available).
 */
export function boardAgents(board: Pick<AgentBoard, 'views' | 'state'>): (live: readonly CallRecord[], now: number) => AgentInput[] {
  return (live, now) => {
    const byAgent = new Map<string, CallRecord>();
    for (const r of live) if (typeof r.agent === 'string' && r.state !== 'ended' && r.state !== 'queued') byAgent.set(r.agent, r);
    return [...board.views()].map((v): AgentInput => {
      const call = byAgent.get(v.name);
      if (call?.state === 'ringing') return { name: v.name, status: 'ringing', since: typeof call.createdAt === 'number' ? call.createdAt : now };
      if (call) return { name: v.name, status: 'on-call', since: typeof call.startedAt === 'number' ? call.startedAt : now };
      const s = board.state(v.name);
      return { name: v.name, status: s.status, ...(s.reason ? { reason: s.reason } : {}), since: s.since };
    });
  };
}

/** The wallboard as a feature: `/api/wallboard`, pushes on call changes and every `periodMs` (default 5 s; 0: on changes only). */
export function wallboardFeature(o: { periodMs?: number | undefined } = {}): Feature<{
  auth: WallboardOptions['auth'];
  store: WallboardOptions['store'];
  history: WallboardOptions['history'];
  hub: WallboardOptions['hub'];
  engine: { board: Pick<AgentBoard, 'views' | 'state'> };
  config: { slaSeconds: number };
  log: Logger;
  now: () => number;
}> {
  return {
    name: 'wallboard',
    install(ctx) {
      const board = createWallboard({
        auth: ctx.auth,
        store: ctx.store,
        history: ctx.history,
        hub: ctx.hub,
        agents: boardAgents(ctx.engine.board),
        slaSeconds: ctx.config.slaSeconds,
        log: ctx.log.child({ part: 'wallboard' }),
        now: ctx.now,
        ...(o.periodMs !== undefined ? { periodMs: o.periodMs } : {}),
      });
      ctx.routes(board.routes);
      ctx.on('committed', 'board', (before, after) => {
        if (before?.state !== after.state) board.changed();
      });
      ctx.lifecycle({ start: () => board.start(), close: () => board.close() });
    },
  };
}
