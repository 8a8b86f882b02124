/**
 * The wallboard on the supervisor console: per business number, big
 * tiles (waiting, longest wait, service level, answered / offered, abandoned, missed, ASA,
 * AHT, transfers) that read from across a room and wrap to one column on a phone; then the agents.
 * The figures are the server's (`wallboard` frames, first from `GET /api/wallboard`).
 */
import { t } from '../../i18n/index.ts';
import { Phone } from '../../ui/phone.tsx';
import type { Wallboard } from '../../../../shared/protocol.ts';
import { formatCaller, formatDuration, formatNumber, timeZoneName } from '../../format.ts';
import { statusWords } from '../../desk/state.ts';

const pct = (x: number) => formatNumber(x, { style: 'percent', maximumFractionDigits: 0 });
const secs = (ms: number) => formatDuration(ms / 1000);


export function WallboardView({ board, now }: { board: Wallboard | undefined; now: number }) {
  if (!board) return <p class="empty">{t('wb.loading')}</p>;
  return (
    <>
      <h2 id="wallboard-title" class="card-title">
        {t('wb.today')}
      </h2>
      <p class="sub" data-testid="wb-time-zone">
        {t('wb.timeZone', { zone: board.timeZone ?? timeZoneName() })}
      </p>
      <p class="empty" hidden={board.numbers.length > 0}>
        {t('wb.noCalls')}
      </p>
      {board.numbers.map((n) => (
        <section key={n.businessNumber} class="wb-number" data-testid="wb-number" data-number={n.businessNumber} aria-label={t('wb.number', { number: n.businessNumber })}>
          <h3 class="wb-title">
            <Phone n={formatCaller(n.businessNumber)} />
          </h3>
          <div class="wb-tiles">
            <Tile label={t('wb.waiting')} value={formatNumber(n.waiting)} id="waiting" alert={n.waiting > 0} />
            <Tile label={t('wb.ringing')} value={formatNumber(n.ringing)} id="ringing" />
            <Tile label={t('wb.longest')} value={secs(n.longestWaitMs)} id="longest" alert={n.longestWaitMs > 60_000} />
            <Tile label={t('wb.sl')} value={pct(n.serviceLevel)} id="sl" />
            <Tile label={t('wb.answered')} value={`${formatNumber(n.answered)} / ${formatNumber(n.offered)}`} id="answered" />
            <Tile label={t('wb.abandoned')} value={formatNumber(n.abandoned)} id="abandoned" />
            <Tile label={t('wb.missed')} value={formatNumber(n.missed)} id="missed" />
            <Tile label={t('wb.asa')} value={secs(n.asaMs)} id="asa" />
            <Tile label={t('wb.aht')} value={secs(n.ahtMs)} id="aht" />
            <Tile label={t('wb.transfers')} value={formatNumber(n.transfers)} id="transfers" />
          </div>
        </section>
      ))}
      <h3 class="wb-title">{t('wb.agents')}</h3>
      <ul class="wb-agents" data-testid="wb-agents">
        {board.agents.map((g) => (
          <li key={g.name} data-testid="wb-agent" data-name={g.name} data-status={g.status}>
            <span class="wb-agent-name">{g.name}</span>
            <span class={`wb-status wb-${g.status}`}>
              <span class="state-dot" aria-hidden="true" />
              {`${statusWords(g.status)}${g.reason ? ` · ${g.reason === 'Missed a call' ? t('line.missedACall') : g.reason}` : ''}`}
            </span>
            <span class="sub" data-testid="wb-agent-figures">{`${secs(Math.max(0, now - g.since))} · ${t('wb.calls', { count: g.callsToday })}${g.transfersToday > 0 ? ` · ${t('wb.transferCount', { count: g.transfersToday })}` : ''}`}</span>
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
      <div class="wb-value" dir="ltr">
        {value}
      </div>
      <div class="wb-label">{label}</div>
    </div>
  );
}
