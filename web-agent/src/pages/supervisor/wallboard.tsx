/**
 * The wallboard on the supervisor console: per business number, big
 * tiles (waiting, longest wait, service level, answered / offered, abandoned, missed, ASA,
 * AHT) that read from across a room and wrap to one column on a phone; then the agents.
 * The figures are the server's (`wallboard` frames, first from `GET /api/wallboard`).
 */
import type { Wallboard } from '../../../../shared/protocol.ts';
import { formatCaller, formatDuration } from '../../format.ts';
import { statusWords } from '../../desk/state.ts';

const pct = (x: number) => `${Math.round(x * 100)}%`;
const secs = (ms: number) => formatDuration(ms / 1000);


export function WallboardView({ board, now }: { board: Wallboard | undefined; now: number }) {
  if (!board) return <p class="empty">Loading the wallboard…</p>;
  return (
    <>
      <h2 id="wallboard-title" class="card-title">
        Today
      </h2>
      <p class="empty" hidden={board.numbers.length > 0}>
        No calls today yet.
      </p>
      {board.numbers.map((n) => (
        <section key={n.businessNumber} class="wb-number" data-testid="wb-number" data-number={n.businessNumber} aria-label={`Business number ${n.businessNumber}`}>
          <h3 class="wb-title">{formatCaller(n.businessNumber)}</h3>
          <div class="wb-tiles">
            <Tile label="Waiting" value={String(n.waiting)} id="waiting" alert={n.waiting > 0} />
            <Tile label="Ringing" value={String(n.ringing)} id="ringing" />
            <Tile label="Longest wait" value={secs(n.longestWaitMs)} id="longest" alert={n.longestWaitMs > 60_000} />
            <Tile label="Service level" value={pct(n.serviceLevel)} id="sl" />
            <Tile label="Answered / offered" value={`${n.answered} / ${n.offered}`} id="answered" />
            <Tile label="Abandoned" value={String(n.abandoned)} id="abandoned" />
            <Tile label="Missed" value={String(n.missed)} id="missed" />
            <Tile label="Avg. answer" value={secs(n.asaMs)} id="asa" />
            <Tile label="Avg. handle" value={secs(n.ahtMs)} id="aht" />
          </div>
        </section>
      ))}
      <h3 class="wb-title">Agents</h3>
      <ul class="wb-agents" data-testid="wb-agents">
        {board.agents.map((g) => (
          <li key={g.name} data-testid="wb-agent" data-name={g.name} data-status={g.status}>
            <span class="wb-agent-name">{g.name}</span>
            <span class={`wb-status wb-${g.status}`}>{`${statusWords(g.status)}${g.reason ? ` · ${g.reason}` : ''}`}</span>
            <span class="sub">{`${secs(Math.max(0, now - g.since))} · ${g.callsToday} ${g.callsToday === 1 ? 'call' : 'calls'}`}</span>
          </li>
        ))}
      </ul>
    </>
  );
}

function Tile({ label, value, id, alert }: { label: string; value: string; id: string; alert?: boolean }) {
  return (
    // --chars: the value's length sizes its font to the tile (style.css).
    <div class={`wb-tile${alert ? ' wb-alert' : ''}`} data-testid={`wb-${id}`} style={{ '--chars': String(Math.max(4, value.length)) }}>
      <div class="wb-value">{value}</div>
      <div class="wb-label">{label}</div>
    </div>
  );
}
