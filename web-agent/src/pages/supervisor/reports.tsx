/**
 * "Reports" on the supervisor console: a range of whole days (today by
 * default: the server's today, from the first answer), the wallboard's figures per business
 * number and per agent over it (`GET /api/reports`), and a "Download CSV" link for each
 * table (`GET /api/reports.csv?by=number|agent`, an attachment the browser saves).
 *
 *   mountReports(document.getElementById('reports')!);
 */
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { z } from 'zod';
import { formatCaller, formatDuration } from '../../format.ts';

/** `GET /api/reports` (server/reports/index.ts), checked at the boundary. */
const Report = z.object({
  from: z.string(),
  to: z.string(),
  slaSeconds: z.number(),
  numbers: z.array(
    z.object({ businessNumber: z.string(), offered: z.number(), answered: z.number(), abandoned: z.number(), missed: z.number(), serviceLevel: z.number(), asaMs: z.number(), ahtMs: z.number() }),
  ),
  agents: z.array(z.object({ name: z.string(), callsHandled: z.number(), inbound: z.number(), outbound: z.number(), talkMs: z.number(), holdMs: z.number(), ahtMs: z.number() })),
});
type Report = z.infer<typeof Report>;

const ErrorBody = z.object({ error: z.object({ message: z.string() }) });
const pct = (x: number) => `${Math.round(x * 100)}%`;
const secs = (ms: number) => formatDuration(ms / 1000);
const qs = (from: string, to: string) => `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;

/**
 * A refused report in words: the server's message names the query field it is
 * about (`from: …`), which a person reading the page does not need.
 */
export function reportError(status: number, message: string | undefined): string {
  if (!message) return `The report could not be read (the server answered ${status}).`;
  const words = message.replace(/^[a-z]+: /, '');
  return `No report: ${words.charAt(0).toLowerCase()}${words.slice(1)}${/[.!?]$/.test(words) ? '' : '.'}`;
}

async function fetchReport(from?: string, to?: string): Promise<Report> {
  const res = await fetch(from && to ? `/api/reports?${qs(from, to)}` : '/api/reports', { credentials: 'same-origin', headers: { accept: 'application/json' } });
  const body: unknown = await res.json().catch(() => undefined);
  if (!res.ok) throw new Error(reportError(res.status, ErrorBody.safeParse(body).data?.error.message));
  const r = Report.safeParse(body);
  if (!r.success) throw new Error('The server answered /api/reports with an unexpected shape.');
  return r.data;
}

export function Reports() {
  const [report, setReport] = useState<Report | undefined>();
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);

  const load = (f?: string, t?: string) => {
    setBusy(true);
    fetchReport(f, t)
      .then((r) => {
        setReport(r);
        setFrom(r.from);
        setTo(r.to);
        setError(undefined);
      })
      .catch((e: Error) => {
        // The figures shown were for another range: they go, so the message is not read as about them.
        setReport(undefined);
        setError(e.message);
      })
      .finally(() => setBusy(false));
  };
  useEffect(() => load(), []);

  return (
    <>
      <h2 id="reports-title" class="card-title">
        Reports
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
          <label for="reports-from">From</label>
          <input id="reports-from" type="date" data-testid="reports-from" value={from} required onInput={(e) => setFrom(e.currentTarget.value)} />
        </div>
        <div class="filter">
          <label for="reports-to">To</label>
          <input id="reports-to" type="date" data-testid="reports-to" value={to} min={from} required onInput={(e) => setTo(e.currentTarget.value)} />
        </div>
        <div class="filter">
          <button class="btn" type="submit" data-testid="reports-show" disabled={busy}>
            Show
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
      <h3 class="wb-title">
        By business number{' '}
        <a class="btn btn-quiet" data-testid="reports-csv-number" href={`/api/reports.csv?${range}&by=number`} download>
          Download CSV
        </a>
      </h3>
      <p class="empty" hidden={r.numbers.length > 0}>
        No calls in this range.
      </p>
      <div class="table-wrap" hidden={r.numbers.length === 0}>
        <table class="table" data-testid="reports-numbers">
          <thead>
            <tr>
              <th scope="col">Business number</th>
              <th scope="col">Offered</th>
              <th scope="col">Answered</th>
              <th scope="col">Abandoned</th>
              <th scope="col">Missed</th>
              <th scope="col">{`Service level (${r.slaSeconds} s)`}</th>
              <th scope="col">Avg. answer</th>
              <th scope="col">Avg. handle</th>
            </tr>
          </thead>
          <tbody>
            {r.numbers.map((n) => (
              <tr key={n.businessNumber} data-testid="reports-number" data-number={n.businessNumber}>
                <td data-label="Business number">{formatCaller(n.businessNumber)}</td>
                <td data-label="Offered">{n.offered}</td>
                <td data-label="Answered">{n.answered}</td>
                <td data-label="Abandoned">{n.abandoned}</td>
                <td data-label="Missed">{n.missed}</td>
                <td data-label="Service level">{pct(n.serviceLevel)}</td>
                <td data-label="Avg. answer">{secs(n.asaMs)}</td>
                <td data-label="Avg. handle">{secs(n.ahtMs)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <h3 class="wb-title">
        By agent{' '}
        <a class="btn btn-quiet" data-testid="reports-csv-agent" href={`/api/reports.csv?${range}&by=agent`} download>
          Download CSV
        </a>
      </h3>
      <p class="empty" hidden={r.agents.length > 0}>
        No calls handled in this range.
      </p>
      <div class="table-wrap" hidden={r.agents.length === 0}>
        <table class="table" data-testid="reports-agents">
          <thead>
            <tr>
              <th scope="col">Agent</th>
              <th scope="col">Calls handled</th>
              <th scope="col">Inbound</th>
              <th scope="col">Outbound</th>
              <th scope="col">Talk time</th>
              <th scope="col">Hold time</th>
              <th scope="col">Avg. handle</th>
            </tr>
          </thead>
          <tbody>
            {r.agents.map((g) => (
              <tr key={g.name} data-testid="reports-agent" data-name={g.name}>
                <td data-label="Agent">{g.name}</td>
                <td data-label="Calls handled">{g.callsHandled}</td>
                <td data-label="Inbound">{g.inbound}</td>
                <td data-label="Outbound">{g.outbound}</td>
                <td data-label="Talk time">{secs(g.talkMs)}</td>
                <td data-label="Hold time">{secs(g.holdMs)}</td>
                <td data-label="Avg. handle">{secs(g.ahtMs)}</td>
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
