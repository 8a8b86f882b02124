/**
 * Reports: the wallboard's history figures (offered, answered, abandoned,
 * missed, service level within SLA_SECONDS, ASA, AHT, transfers per number; calls handled,
 * AHT and transfers per agent) over a chosen range of whole days, as JSON and as CSV. The figures are
 * `computeFigures` (server/wallboard/compute.ts) over the rows `readCalls` reads: the same
 * definitions and the same reading as the wallboard, never a second copy.
 *
 * - `GET /api/reports?from=YYYY-MM-DD&to=YYYY-MM-DD` (supervisors) → `{from, to, fromAt, toAt,
 *   slaSeconds, numbers, agents}`; default today (server's time zone);
 * - `GET /api/reports.csv?from&to&by=number|agent` → one table as `text/csv`, a download.
 *
 * 400 BAD_REQUEST names the field and the rule; 413 when the range holds more calls than
 * one report reads (choose a shorter range); 503 when history does not answer.
 */
import { z } from 'zod';
import { Hono, type Context } from 'hono';
import { clientAddress, type Auth, type AuthEnv } from '../auth/index.ts';
import type { Audit } from '../audit/trail.ts';
import type { History } from '../history/index.ts';
import type { Logger } from '../log/logger.ts';
import { HttpError } from '../ops/errors.ts';
import { toCsv, type CsvColumn } from '../ops/csv.ts';
import { computeFigures, type AgentFigures, type NumberFigures } from '../wallboard/compute.ts';
import { readCalls } from '../wallboard/index.ts';
import { ReportQueryError, reportRange, type ReportRange } from './range.ts';
import { parseQuery } from '../ops/validate.ts';
import type { Feature } from '../features/feature.ts';
import type { PhoneNumbersResource } from '../service/resources/phoneNumbers.ts';

export interface ReportsOptions {
  auth: Pick<Auth, 'requireUser'>;
  history: Pick<History, 'store'> | undefined;
  slaSeconds: number;
  log: Pick<Logger, 'warn'>;
  now?: () => number;
  /**
   * The API key's business numbers (the Service's list, cached by the caller). A call's
   * business number comes from a webhook's `to`: one not in this list gets no row of its
   * own (its calls count under `unknown number`). Absent or failing: every number is shown.
   */
  businessNumbers?: () => Promise<readonly string[]>;
  /** The audit trail: every CSV export (who, which range, which table). */
  audit?: Audit | undefined;
}

/** The row of calls whose business number is not one of the known ones. */
export const UNKNOWN_NUMBER = 'unknown number';

export interface Report extends ReportRange {
  /** The IANA zone whose calendar days `from` and `to` are (the server's). */
  timeZone: string;
  slaSeconds: number;
  numbers: NumberFigures[];
  agents: AgentFigures[];
}

/** Pages of 100 rows one report reads at most (100 000 calls). */
const MAX_PAGES = 1_000;

const ReportQuery = z.strictObject({ from: z.string().optional(), to: z.string().optional() });
const CsvQuery = z.strictObject({ ...ReportQuery.shape, by: z.enum(['number', 'agent'], 'must be number or agent').default('number') });

/** Seconds with one decimal, as a spreadsheet reads them (the table shows the same time as m:ss). */
const seconds = (ms: number) => Math.round(ms / 100) / 10;
/** The per-number table's columns: the table's words and units (seconds, percent), not `asaMs` and `0.75`. */
export const numberColumns = (slaSeconds: number): CsvColumn<NumberFigures>[] => [
  { head: 'Business number', value: (r) => r.businessNumber },
  { head: 'Offered', value: (r) => r.offered },
  { head: 'Answered', value: (r) => r.answered },
  { head: 'Abandoned', value: (r) => r.abandoned },
  { head: 'Missed', value: (r) => r.missed },
  { head: `Service level (${slaSeconds} s) %`, value: (r) => Math.round(r.serviceLevel * 1000) / 10 },
  { head: 'Avg. answer (s)', value: (r) => seconds(r.asaMs) },
  { head: 'Avg. handle (s)', value: (r) => seconds(r.ahtMs) },
  { head: 'Transfers', value: (r) => r.transfers },
];
export const AGENT_COLUMNS: CsvColumn<AgentFigures>[] = [
  { head: 'Agent', value: (r) => r.name },
  { head: 'Calls handled', value: (r) => r.callsHandled },
  { head: 'Inbound', value: (r) => r.inbound },
  { head: 'Outbound', value: (r) => r.outbound },
  { head: 'Talk time (s)', value: (r) => seconds(r.talkMs) },
  { head: 'Hold time (s)', value: (r) => seconds(r.holdMs) },
  { head: 'Avg. handle (s)', value: (r) => seconds(r.ahtMs) },
  { head: 'Transfers', value: (r) => r.transfers },
];

export { toCsv, type CsvColumn };

export function createReports(o: ReportsOptions): Hono<AuthEnv> {
  const now = o.now ?? Date.now;
  const app = new Hono<AuthEnv>();
  const guard = o.auth.requireUser('supervisor');

  async function report(q: { from?: string | undefined; to?: string | undefined }): Promise<Report> {
    let range: ReportRange;
    try {
      range = reportRange({ from: q.from, to: q.to }, now());
    } catch (err) {
      if (err instanceof ReportQueryError) throw new HttpError(400, 'BAD_REQUEST', err.message);
      throw err;
    }
    if (!o.history) throw new HttpError(503, 'UNAVAILABLE', 'reports need call history, and this server has none');
    let read;
    let transfers;
    try {
      [read, transfers] = await Promise.all([readCalls(o.history, { from: range.fromAt, to: range.toAt }, MAX_PAGES), o.history.store.transferCounts({ from: range.fromAt, to: range.toAt })]);
    } catch (err) {
      o.log.warn({ err: { message: (err as Error).message } }, 'report read failed');
      throw new HttpError(503, 'UNAVAILABLE', 'the call history database is not answering; try again shortly');
    }
    if (!read.complete) throw new HttpError(413, 'TOO_LARGE', `from: the range holds more than ${MAX_PAGES * 100} calls; choose a shorter range`);
    let calls = read.calls;
    const known = await o.businessNumbers?.().then(
      (list) => new Set(list),
      (err: unknown) => void o.log.warn({ err: { message: (err as Error).message } }, 'report: business numbers not known; every number shown'),
    );
    const numberOf = <T extends { businessNumber?: string | undefined }>(c: T): T => (c.businessNumber === undefined || !known || known.has(c.businessNumber) ? c : { ...c, businessNumber: UNKNOWN_NUMBER });
    if (known) {
      calls = calls.map(numberOf);
      transfers = transfers.map(numberOf);
    }
    return { ...range, timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone, slaSeconds: o.slaSeconds, ...computeFigures(calls, o.slaSeconds, [], transfers) };
  }

  app.get('/api/reports', guard, async (c) => c.json(await report(parseQuery(c, ReportQuery))));

  app.get('/api/reports.csv', guard, async (c) => {
    const q = parseQuery(c, CsvQuery);
    const by = q.by;
    const r = await report(q);
    const body = by === 'number' ? toCsv(numberColumns(r.slaSeconds), r.numbers) : toCsv(AGENT_COLUMNS, r.agents);
    o.audit?.({ action: 'report.export', actor: c.get('user').name, target: `${r.from}..${r.to}`, address: clientAddress(c), detail: { by, from: r.from, to: r.to } });
    return c.body(body, 200, {
      'content-type': 'text/csv; charset=utf-8',
      'content-disposition': `attachment; filename="switchboard-${by}s-${r.from}_${r.to}.csv"`,
      'cache-control': 'no-store',
    });
  });

  return app;
}

/** The API key's business numbers, cached 60 s (a webhook's `to` not among them gets no row). */
function businessNumbersOf(numbers: Pick<PhoneNumbersResource, 'iterate'>): () => Promise<readonly string[]> {
  let cache: { at: number; list: Promise<string[]> } | undefined;
  return () => {
    if (!cache || Date.now() - cache.at >= 60_000) {
      const list = (async () => {
        const out: string[] = [];
        for await (const n of numbers.iterate()) if (typeof n.phoneNumber === 'string') out.push(n.phoneNumber);
        return out;
      })();
      cache = { at: Date.now(), list };
      list.catch(() => (cache = undefined));
    }
    return cache.list;
  };
}

/** Reports as a feature: `/api/reports`, `/api/reports.csv`. */
export const reportsFeature: Feature<{
  auth: ReportsOptions['auth'];
  history: ReportsOptions['history'];
  config: { slaSeconds: number };
  log: Logger;
  now: () => number;
  audit: { record: Audit };
  numbers: Parameters<typeof businessNumbersOf>[0] | undefined;
}> = {
  name: 'reports',
  install(ctx) {
    ctx.routes(
      createReports({
        auth: ctx.auth,
        history: ctx.history,
        slaSeconds: ctx.config.slaSeconds,
        log: ctx.log.child({ part: 'reports' }),
        now: ctx.now,
        audit: ctx.audit.record,
        ...(ctx.numbers ? { businessNumbers: businessNumbersOf(ctx.numbers) } : {}),
      }),
    );
  },
};
