/**
 * "Reports" on the supervisor console: a range of whole days (today by
 * default: the server's today, from the first answer), the wallboard's figures per business
 * number and per agent over it (`GET /api/reports`), and a "Download CSV" link for each
 * table (`GET /api/reports.csv?by=number|agent`, an attachment the browser saves).
 *
 *   mountReports(document.getElementById('reports')!);
 */
import { t } from '../../i18n/index.ts';
import { describeRefusal, formatNumber, timeZoneName } from '../../format.ts';
import { Phone } from '../../ui/phone.tsx';
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { readTimer } from '../../backoff.ts';
import { z } from 'zod';
import { formatCaller, formatDuration } from '../../format.ts';

/** `GET /api/reports` (server/reports/index.ts), checked at the boundary. */
const Report = z.object({
  from: z.string(),
  to: z.string(),
  timeZone: z.string().optional(),
  slaSeconds: z.number(),
  numbers: z.array(
    z.object({ businessNumber: z.string(), offered: z.number(), answered: z.number(), abandoned: z.number(), missed: z.number(), serviceLevel: z.number(), asaMs: z.number(), ahtMs: z.number(), transfers: z.number() }),
  ),
  agents: z.array(z.object({ name: z.string(), callsHandled: z.number(), inbound: z.number(), outbound: z.number(), talkMs: z.number(), holdMs: z.number(), ahtMs: z.number(), transfers: z.number() })),
});
type Report = z.infer<typeof Report>;

const ErrorBody = z.object({ error: z.object({ code: z.string(), message: z.string(), params: z.record(z.string(), z.union([z.string(), z.number()])).optional() }) });
const pct = (x: number) => formatNumber(x, { style: 'percent', maximumFractionDigits: 0 });
const secs = (ms: number) => formatDuration(ms / 1000);
const qs = (from: string, to: string) => `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;

/** A refused report in words, from the refusal's code (a range too long, no history, a bad date). */
export function reportError(status: number, error: z.infer<typeof ErrorBody>['error'] | undefined): string {
  if (!error) return t('reports.unreadable', { status });
  if (error.code === 'TOO_LARGE') return t('reports.tooLarge');
  if (error.code === 'BAD_REQUEST') return t('reports.badRange');
  return t('reports.none', { why: describeRefusal(error, Date.now()) });
}

/** A report not read, in words, with the server's status (0: no answer). */
class ReportError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

async function fetchReport(from?: string, to?: string): Promise<Report> {
  const res = await fetch(from && to ? `/api/reports?${qs(from, to)}` : '/api/reports', { credentials: 'same-origin', headers: { accept: 'application/json' } }).catch(() => {
    throw new ReportError(t('error.NETWORK'), 0);
  });
  const body: unknown = await res.json().catch(() => undefined);
  if (!res.ok) throw new ReportError(reportError(res.status, ErrorBody.safeParse(body).data?.error), res.status);
  const r = Report.safeParse(body);
  if (!r.success) throw new Error(t('error.BAD_RESPONSE'));
  return r.data;
}

export function Reports() {
  const [report, setReport] = useState<Report | undefined>();
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  // A report the server could not give yet (503: history still opening after a restart, or
  // not answering; or no answer) is asked for again by itself, the same range, until it comes
  // or another range is asked for.
  const [reads] = useState(readTimer);
  const asked = useRef(0);

  const load = (f?: string, to?: string) => {
    reads.cancel();
    const n = ++asked.current;
    setBusy(true);
    fetchReport(f, to)
      .then((r) => {
        if (n !== asked.current) return;
        reads.succeeded();
        setReport(r);
        setFrom(r.from);
        setTo(r.to);
        setError(undefined);
      })
      .catch((e: Error) => {
        if (n !== asked.current) return;
        // The figures shown were for another range: they go, so the message is not read as about them.
        setReport(undefined);
        setError(e.message);
        reads.failed(e instanceof ReportError ? e.status : undefined, () => load(f, to));
      })
      .finally(() => n === asked.current && setBusy(false));
  };
  useEffect(() => {
    load();
    return () => {
      asked.current++;
      reads.cancel();
    };
  }, []);

  return (
    <>
      <h2 id="reports-title" class="card-title">
        {t('reports.title')}
      </h2>
      <form
        class="filters"
        data-testid="reports-form"
        onSubmit={(e) => {
          e.preventDefault();
          load(from, to);
        }}
      >
        <div class="filter">
          <label for="reports-from">{t('reports.from')}</label>
          <input id="reports-from" type="date" data-testid="reports-from" value={from} required onInput={(e) => setFrom(e.currentTarget.value)} />
        </div>
        <div class="filter">
          <label for="reports-to">{t('reports.to')}</label>
          <input id="reports-to" type="date" data-testid="reports-to" value={to} min={from} required onInput={(e) => setTo(e.currentTarget.value)} />
        </div>
        <div class="filter">
          <button class="btn" type="submit" data-testid="reports-show" disabled={busy}>
            {t('reports.show')}
          </button>
        </div>
      </form>
      <p class="warn" role="alert" data-testid="reports-error" hidden={!error}>
        {error}
      </p>
      {report && <ReportTables report={report} />}
    </>
  );
}

function ReportTables({ report: r }: { report: Report }) {
  const range = qs(r.from, r.to);
  return (
    <div data-testid="reports-tables" data-from={r.from} data-to={r.to}>
      <p class="sub" data-testid="reports-time-zone">
        {t('reports.timeZone', { zone: r.timeZone ?? timeZoneName() })}
      </p>
      <h3 class="wb-title">
        {t('reports.byNumber')}{' '}
        <a class="btn btn-quiet" data-testid="reports-csv-number" href={`/api/reports.csv?${range}&by=number`} download>
          {t('reports.csv')}
        </a>
      </h3>
      <p class="empty" hidden={r.numbers.length > 0}>
        {t('reports.noCalls')}
      </p>
      <div class="table-wrap" tabIndex={0} hidden={r.numbers.length === 0}>
        <table class="table" data-testid="reports-numbers">
          <thead>
            <tr>
              <th scope="col">{t('live.business')}</th>
              <th scope="col">{t('reports.offered')}</th>
              <th scope="col">{t('reports.answered')}</th>
              <th scope="col">{t('wb.abandoned')}</th>
              <th scope="col">{t('wb.missed')}</th>
              <th scope="col">{t('reports.slWithin', { seconds: r.slaSeconds })}</th>
              <th scope="col">{t('wb.asa')}</th>
              <th scope="col">{t('wb.aht')}</th>
              <th scope="col">{t('wb.transfers')}</th>
            </tr>
          </thead>
          <tbody>
            {r.numbers.map((n) => (
              <tr key={n.businessNumber} data-testid="reports-number" data-number={n.businessNumber}>
                <td data-label={t('live.business')}>
                  <Phone n={formatCaller(n.businessNumber)} />
                </td>
                <td data-label={t('reports.offered')}>{n.offered}</td>
                <td data-label={t('reports.answered')}>{n.answered}</td>
                <td data-label={t('wb.abandoned')}>{n.abandoned}</td>
                <td data-label={t('wb.missed')}>{n.missed}</td>
                <td data-label={t('wb.sl')}>{pct(n.serviceLevel)}</td>
                <td data-label={t('wb.asa')}>{secs(n.asaMs)}</td>
                <td data-label={t('wb.aht')}>{secs(n.ahtMs)}</td>
                <td data-label={t('wb.transfers')} data-testid="reports-transfers">
                  {n.transfers}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h3 class="wb-title">
        {t('reports.byAgent')}{' '}
        <a class="btn btn-quiet" data-testid="reports-csv-agent" href={`/api/reports.csv?${range}&by=agent`} download>
          {t('reports.csv')}
        </a>
      </h3>
      <p class="empty" hidden={r.agents.length > 0}>
        {t('reports.noneHandled')}
      </p>
      <div class="table-wrap" tabIndex={0} hidden={r.agents.length === 0}>
        <table class="table" data-testid="reports-agents">
          <thead>
            <tr>
              <th scope="col">{t('live.agent')}</th>
              <th scope="col">{t('reports.handled')}</th>
              <th scope="col">{t('reports.inbound')}</th>
              <th scope="col">{t('reports.outbound')}</th>
              <th scope="col">{t('reports.talk')}</th>
              <th scope="col">{t('reports.hold')}</th>
              <th scope="col">{t('wb.aht')}</th>
              <th scope="col">{t('wb.transfers')}</th>
            </tr>
          </thead>
          <tbody>
            {r.agents.map((g) => (
              <tr key={g.name} data-testid="reports-agent" data-name={g.name}>
                <td data-label={t('live.agent')}>{g.name}</td>
                <td data-label={t('reports.handled')}>{g.callsHandled}</td>
                <td data-label={t('reports.inbound')}>{g.inbound}</td>
                <td data-label={t('reports.outbound')}>{g.outbound}</td>
                <td data-label={t('reports.talk')}>{secs(g.talkMs)}</td>
                <td data-label={t('reports.hold')}>{secs(g.holdMs)}</td>
                <td data-label={t('wb.aht')}>{secs(g.ahtMs)}</td>
                <td data-label={t('wb.transfers')} data-testid="reports-transfers">
                  {g.transfers}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </div>
  );
}

export function mountReports(root: HTMLElement): void {
  render(<Reports />, root);
}
